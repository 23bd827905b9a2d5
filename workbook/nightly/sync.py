"""``workbook nightly sync``: every job of verl's Ascend nightly against the scenario that
reproduces it, job by job: a new job, a removed one, a changed entry, override, environment
variable or script, and (with a verl-ascend-recipe checkout) a changed baseline value.

Which scenario reproduces which job is what the script facts record (``params/nightly/
<scenario>.script.json``, field ``job``). With ``write`` the facts of each job that drifted are
rewritten from the checkout and each baseline that moved is imported again from the recipe;
the scenarios themselves are left for a person to change (the golden tests then say where).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbook.core.atomic import write_atomic
from workbook.core.project import nightly_dir, params_dir
from workbook.core.textfile import read_text
from workbook.core.values import number_text
from workbook.errors import InputError, WorkbookError
from workbook.nightly.fidelity import differences
from workbook.nightly.recipe import (
    RecipeBaseline,
    import_baseline,
    is_imported,
    recipe_baseline,
    scenario_baseline,
    value_differences,
)
from workbook.nightly.standin import FAKE_HOME, TIMEOUT_S, script_facts
from workbook.nightly.workflow import NightlyJob, nightly_jobs
from workbook.params import Scenario
from workbook.provenance import git_commit
from workbook.scenario import load_scenario

FACTS_SUFFIX = ".script.json"
FACTS_KEYS = ("scenario", "verl_commit", "script", "job", "how", "inputs", "entry", "overrides", "env")


@dataclass
class JobDrift:
    """One job of the nightly (or one the scenarios still reproduce) and how it moved."""

    job: str
    scenario: str | None  # None: no scenario reproduces the job
    script: str | None  # None: verl's nightly no longer runs the job
    differences: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # what --write imports: the recipe's file, the scenario's baseline JSON, its text copy's name
    moved_baseline: tuple[RecipeBaseline, Path, str | None] | None = None

    @property
    def state(self) -> str:
        if self.scenario is None:
            return "new"
        if self.script is None:
            return "removed"
        return "changed" if self.differences else "unchanged"


@dataclass
class SyncReport:
    verl: Path
    verl_commit: str | None
    recipe: Path | None
    recipe_commit: str | None
    jobs: list[JobDrift]
    written: list[Path] = field(default_factory=list)

    @property
    def drifted(self) -> list[JobDrift]:
        return [j for j in self.jobs if j.state != "unchanged"]

    def text(self) -> str:
        """The report, as Markdown (a pull request's body)."""
        head = (f"# verl nightly sync: {len(self.drifted)} of {len(self.jobs)} jobs drifted"
                if self.drifted else f"# verl nightly sync: all {len(self.jobs)} jobs as reproduced")
        lines = [head, "", f"- verl: `{self.verl}` at {self.verl_commit or 'an unknown commit'}"]
        lines.append(f"- verl-ascend-recipe: `{self.recipe}` at {self.recipe_commit or 'an unknown commit'}"
                     if self.recipe else "- verl-ascend-recipe: not given; baselines not compared")
        for job in self.drifted:
            target = f" -> `{job.scenario}`" if job.scenario else ""
            lines += ["", f"## {job.state}: `{job.job}`{target}", ""]
            if job.state == "new":
                lines.append(f"- runs `{job.script}`; no scenario reproduces it")
            elif job.state == "removed":
                lines.append("- verl's nightly no longer runs it; the scenario still reproduces it")
            else:
                lines.append(f"- script `{job.script}`")
            lines += [f"- {d}" for d in job.differences] + [f"- note: {n}" for n in job.notes]
        same = [j for j in self.jobs if j.state == "unchanged"]
        if same:
            lines += ["", f"## unchanged ({len(same)})", ""]
            lines += [f"- `{j.job}` -> `{j.scenario}`" + "".join(f" (note: {n})" for n in j.notes)
                      for j in same]
        if self.written:
            lines += ["", "## written", ""] + [f"- `{_shown(p)}`" for p in self.written]
        return "\n".join(lines) + "\n"


def sync(verl: Path, recipe: Path | None = None, *, write: bool = False,
         timeout_s: float = TIMEOUT_S) -> SyncReport:
    """Derive every nightly job's script facts from ``verl`` (and its baseline from ``recipe``)
    and compare them with the scenarios; InputError, naming every problem, when a checkout is
    missing or a job cannot be read."""
    for name, path in (("--verl", verl), ("--recipe", recipe)):
        if path is not None and not Path(path).is_dir():
            raise InputError(f"{name} {path}: not a folder (a checkout of the repository)")
    verl = Path(verl).resolve()
    known = _known_facts()
    jobs = nightly_jobs(verl)
    derived: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    for job in jobs:
        try:
            derived[job.name] = script_facts(verl, job, timeout_s=timeout_s)
        except WorkbookError as exc:
            problems.append(exc.message)
    if problems:
        raise InputError("verl's nightly scripts cannot be read:\n" + "\n".join(
            f"  - {p}" for p in problems))
    recipe = Path(recipe).resolve() if recipe is not None else None
    report = SyncReport(verl, git_commit(verl), recipe, git_commit(recipe) if recipe else None, [])
    for job in jobs:
        scenario = known.get(job.name, (None, {}))[0]
        drift = JobDrift(job.name, scenario, job.script)
        if job.named:
            drift.notes.append(f"verl's job names `{job.named}`, which the checkout does not "
                               f"hold (its job would not find it); compared with `{job.script}`")
        if scenario is not None:
            _compare(drift, job, known[job.name][1], derived[job.name], recipe)
        report.jobs.append(drift)
    present = {job.name for job in jobs}
    report.jobs += [JobDrift(name, scenario, None) for name, (scenario, _) in known.items()
                    if name not in present]
    if write:
        report.written = _write(report, derived)
    return report


def _compare(drift: JobDrift, job: NightlyJob, recorded: dict[str, Any], facts: dict[str, Any],
             recipe: Path | None) -> None:
    assert drift.scenario is not None
    path = params_dir() / f"{drift.scenario}.yaml"
    if not path.is_file():
        drift.differences.append(f"scenario file `{path.name}` is missing")
        return
    scenario = load_scenario(path, check_files=False, variables={"HOME": FAKE_HOME})
    if recorded.get("script") != facts["script"]:
        drift.differences.append(f"script: was `{recorded.get('script')}`, now `{facts['script']}`")
    drift.differences += [str(d) for d in differences(scenario, facts)]
    if recipe is not None:
        _compare_baseline(drift, job, scenario, path.parent, recipe)


def _compare_baseline(drift: JobDrift, job: NightlyJob, scenario: Scenario, folder: Path,
                      recipe: Path) -> None:
    """The baseline verl's job checks against (the recipe's) against the scenario's copy."""
    json_path, ours = scenario_baseline(scenario, folder)
    found = recipe_baseline(recipe, job.hardware, job.baseline) if job.baseline and job.hardware else None
    if job.baseline and found is None:
        drift.differences.append(f"baseline: verl's job checks against `{job.baseline}` on "
                                 f"{job.hardware or 'an unknown hardware'}; the recipe holds no such file")
    elif found is None:
        if is_imported(ours):
            drift.differences.append("baseline: verl's job checks against none any more; the "
                                     "scenario still judges against verl's")
    elif json_path is None or ours is None:
        drift.differences.append(f"baseline: verl's job checks against `{found.path}`; the "
                                 "scenario has no baseline")
    elif not is_imported(ours):
        drift.notes.append(f"judged against its own blessed baseline; `{found.path}` not compared")
    else:
        moved = value_differences(ours, found.baseline)
        drift.differences += [f"baseline {found.hardware} {name}: the scenario's {_number(a)}, "
                              f"the recipe's {_number(b)} (`{found.path}`)" for name, a, b in moved]
        if moved:
            kept = ours.provenance.get("imported_from")
            drift.moved_baseline = (found, json_path, Path(kept).name if kept else None)


def _write(report: SyncReport, derived: dict[str, dict[str, Any]]) -> list[Path]:
    """What ``--write`` records: the drifted jobs' facts, the moved baselines (from the recipe)."""
    written = []
    for drift in report.jobs:
        if drift.state == "changed" and drift.scenario:
            written.append(_write_facts(drift.scenario, derived[drift.job], report.verl_commit))
        if drift.moved_baseline and report.recipe is not None:
            found, json_path, text_name = drift.moved_baseline
            written.append(import_baseline(found, report.recipe, str(drift.scenario), json_path,
                                           text_name))
    return written


def _shown(path: Path) -> str:
    """A written file as the project names it (params/...), else as it is."""
    try:
        return path.resolve().relative_to(params_dir().parent).as_posix()
    except ValueError:
        return str(path)


def _number(value: float | None) -> str:
    return number_text(value, 6, absent="nothing")


def _known_facts() -> dict[str, tuple[str, dict[str, Any]]]:
    """job -> (scenario, its recorded facts), from the facts folder; InputError naming a file
    that cannot be read or a job two files claim."""
    folder = nightly_dir()
    if not folder.is_dir():
        raise InputError(f"{folder}: no script facts folder (params/nightly/*{FACTS_SUFFIX})")
    known: dict[str, tuple[str, dict[str, Any]]] = {}
    problems = []
    for path in sorted(folder.glob(f"*{FACTS_SUFFIX}")):
        try:
            facts = json.loads(read_text(path, what="script facts"))
        except (ValueError, InputError) as exc:
            problems.append(f"{path}: {getattr(exc, 'message', exc)}")
            continue
        job = facts.get("job") if isinstance(facts, dict) else None
        scenario = path.name.removesuffix(FACTS_SUFFIX)
        if not isinstance(job, str) or job in known:
            problems.append(f"{path}: " + ("no job named" if not isinstance(job, str) else
                                           f"job {job} is also {known[job][0]}'s"))
            continue
        known[job] = (scenario, facts)
    if problems:
        raise InputError("script facts cannot be read:\n" + "\n".join(f"  - {p}" for p in problems))
    return known


def _write_facts(scenario: str, facts: dict[str, Any], commit: str | None) -> Path:
    record = {**facts, "scenario": scenario, "verl_commit": commit}
    path = nightly_dir() / f"{scenario}{FACTS_SUFFIX}"
    return write_atomic(path, json.dumps({k: record[k] for k in FACTS_KEYS}, indent=1,
                                         ensure_ascii=False) + "\n")
