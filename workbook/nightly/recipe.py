"""verl's nightly baselines as verl-ascend-recipe keeps them, against the scenarios' copies.

A job's check step runs ``check_npu.py --base run_x/baseline_x.txt`` in the runner's
``nightly_log`` folder, which the recipe fills from ``baseline/<a2|a3>/nightly_log/``; the
hardware is the runner's (``linux-aarch64-a2b3-8`` is a2). A scenario's copy is the baseline its
``checks:`` name, imported from that text (``params/baselines/ascend/<name>.<hw>.txt``, then
JSON with where it came from: repository, commit, path and the date the recipe last changed it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from workbook.checks.baseline import Baseline, import_ascend_text, load_baseline, read_baseline_text
from workbook.checks.baseline_rules import IMPORTED
from workbook.checks.spec import parse_checks
from workbook.core.atomic import write_atomic
from workbook.core.project import params_dir
from workbook.params import Scenario
from workbook.provenance import git_commit, git_commit_date

RECIPE = "verl-project/verl-ascend-recipe"
ASCEND_DIR = Path("baselines") / "ascend"  # inside the params folder: the recipe's text, as read


@dataclass(frozen=True)
class RecipeBaseline:
    """One baseline file of the recipe: where, its text and what it holds."""

    path: str  # relative to the recipe checkout
    hardware: str
    text: str
    baseline: Baseline

    def origin(self, recipe: Path) -> tuple[str, str | None]:
        """``repository@commit:path`` and the date the recipe last changed the file."""
        commit = git_commit(recipe) or "unknown-commit"
        return f"{RECIPE}@{commit}:{self.path}", git_commit_date(recipe, self.path)


def recipe_baseline(recipe: Path, hardware: str, base: str) -> RecipeBaseline | None:
    """The recipe's baseline a job's ``--base`` names on its hardware; None when the recipe
    holds no such file (BaselineError when it holds one that cannot be read)."""
    path = f"baseline/{hardware}/nightly_log/{base}"
    if ".." in PurePosixPath(path).parts or not (Path(recipe) / path).is_file():
        return None
    text = read_baseline_text(Path(recipe) / path)
    return RecipeBaseline(path, hardware, text, import_ascend_text(text, source=path,
                                                                   hardware=hardware))


def scenario_baseline(scenario: Scenario, folder: Path) -> tuple[Path | None, Baseline | None]:
    """The baseline file the scenario's checks name (relative to ``folder``, its params
    folder) and what it holds; (None, None) without one, (path, None) when it is missing."""
    spec, _ = parse_checks(scenario.checks, params_dir=folder)
    if spec.baseline is None:
        return None, None
    return spec.baseline, load_baseline(spec.baseline) if spec.baseline.is_file() else None


def is_imported(baseline: Baseline | None) -> bool:
    return baseline is not None and baseline.provenance.get("source") == IMPORTED


def value_differences(ours: Baseline, theirs: Baseline) -> list[tuple[str, float | None, float | None]]:
    """(metric, our value, the recipe's) for each metric whose value differs or that only one has."""
    return [(name, ours.value(name), theirs.value(name))
            for name in sorted(set(ours.metrics) | set(theirs.metrics))
            if ours.value(name) != theirs.value(name)]


def import_baseline(found: RecipeBaseline, recipe: Path, scenario: str, json_path: Path,
                    text_name: str | None = None) -> Path:
    """Write the recipe's text beside the other Ascend copies (``text_name``, else
    ``<file stem>.<hardware>.txt``) and the baseline JSON the scenario reads, recording where
    the numbers came from; returns the JSON's path."""
    name = text_name or f"{Path(found.path).stem}.{found.hardware}.txt"
    text_path = params_dir() / ASCEND_DIR / name
    write_atomic(text_path, found.text)
    where, when = found.origin(recipe)
    shown = text_path.relative_to(params_dir().parent).as_posix()
    baseline = import_ascend_text(found.text, source=shown, hardware=found.hardware,
                                  scenario=scenario, origin=where)
    baseline.provenance["origin_date"] = when
    baseline.save(json_path)
    return json_path
