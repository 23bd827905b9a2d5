"""The jobs of verl's Ascend nightly, read from its workflow files: which script each job runs,
with what, on which runner, and which baseline its check step compares against.

A nightly workflow is a ``.github/workflows/*nightly*`` file of the checkout naming ``ascend`` or
``npu``. A job belongs to the nightly when one of its ``run:`` steps names a script of the
checkout's ``tests/`` tree. Run there by ``bash`` (``[VAR=value ...] bash tests/...sh``), the
script gets the workflow's, job's and step's ``env:`` and the step's ``export`` lines before it;
handed to another launcher instead (a RayJob submitter), it gets only what it sets itself.
Read from the file, never run: nothing of a workflow executes here.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from workbook.core.serialization import load_yaml_text
from workbook.core.textfile import read_text
from workbook.errors import InputError

WORKFLOWS_DIR = Path(".github") / "workflows"
# Job environment that steers the job's own installs and downloads (pip and uv indexes, the Hub
# mirror), not the training: the workbook's job installs for itself and its scenarios read
# models and data from local paths, so these never belong to a scenario's env.
INSTALL_ENV = ("HF_ENDPOINT", "HF_HUB_ENABLE_HF_TRANSFER")
INSTALL_ENV_PREFIXES = ("UV_", "PIP_")
_SCRIPT = re.compile(r"(?:^|(?<=[\s\"'=/]))(tests/[\w./-]+\.sh)(?=$|[\s\"';|&)])")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_BASE = re.compile(r"--base[=\s]+(\S+)")
_HARDWARE = re.compile(r"-(a\d)")  # linux-aarch64-a2b3-8 -> a2, linux-aarch64-a3-16 -> a3


@dataclass(frozen=True)
class NightlyJob:
    """One job of the nightly as its workflow file states it."""

    name: str
    workflow: str  # the file, relative to the checkout
    script: str  # relative to the checkout
    direct: bool  # run by `bash` in the job's own step, not handed to another launcher
    inputs: dict[str, str] = field(default_factory=dict)  # VAR=value before `bash script`
    env: dict[str, str] = field(default_factory=dict)  # workflow/job/step env reaching the script
    exports: tuple[str, ...] = ()  # the step's `export` lines before the script, as written
    args: tuple[str, ...] = ()
    runner: str = ""
    baseline: str | None = None  # what its check step passes as --base (run_x/baseline_x.txt)
    named: str | None = None  # the path the workflow names, when the checkout holds none there


    @property
    def hardware(self) -> str | None:
        """The Ascend generation of the job's runner label (a2, a3), None when it names none."""
        found = _HARDWARE.search(self.runner)
        return found.group(1) if found else None


def nightly_workflows(checkout: Path) -> list[Path]:
    """The checkout's nightly Ascend workflow files; InputError when there is none."""
    folder = Path(checkout) / WORKFLOWS_DIR
    found = sorted(p for p in folder.glob("*.y*ml") if p.suffix in (".yml", ".yaml")
                   and "nightly" in p.name.lower()
                   and any(word in p.name.lower() for word in ("ascend", "npu")))
    if not found:
        raise InputError(f"{checkout}: no nightly Ascend workflow under {WORKFLOWS_DIR} "
                         "(a *nightly* file naming ascend or npu); is it a verl checkout?")
    return found


def nightly_jobs(checkout: Path) -> list[NightlyJob]:
    """Every job of the checkout's nightly workflows that runs a script, in file order;
    InputError listing each job that runs more than one (one job, one scenario)."""
    jobs: list[NightlyJob] = []
    problems: list[str] = []
    for path in nightly_workflows(checkout):
        workflow = load_yaml_text(read_text(path, what="workflow"), str(path))
        if not isinstance(workflow, dict) or not isinstance(workflow.get("jobs"), dict):
            problems.append(f"{path}: not a workflow (no jobs)")
            continue
        where = str(path.relative_to(checkout))
        for name, job in workflow["jobs"].items():
            found = list(_script_steps(job))
            if len(found) > 1:
                problems.append(f"{where}: job {name} runs {len(found)} scripts "
                                f"({', '.join(f[1] for f in found)}); one job maps to one scenario")
            elif found:
                jobs.append(_located(checkout, _job(str(name), where, workflow, job, *found[0]),
                                     problems))
    if problems:
        raise InputError("verl's nightly cannot be read:\n" + "\n".join(f"  - {p}" for p in problems))
    return jobs


def _located(checkout: Path, job: NightlyJob, problems: list[str]) -> NightlyJob:
    """The job with the script the checkout holds: where the workflow names it, else the one
    file of that name under ``tests/`` (verl's multinode job has named a path its script was
    never at); a problem when there is none or more than one."""
    if ".." in PurePosixPath(job.script).parts:
        problems.append(f"{job.workflow}: job {job.name} runs {job.script}, outside the checkout")
        return job
    if (Path(checkout) / job.script).is_file():
        return job
    name = PurePosixPath(job.script).name
    found = sorted(p.relative_to(checkout).as_posix() for p in Path(checkout).glob(f"tests/**/{name}"))
    if len(found) != 1:
        problems.append(f"{job.workflow}: job {job.name} runs {job.script}, which the checkout "
                        f"does not hold" + (f" (files of that name: {', '.join(found)})" if found else ""))
        return job
    return replace(job, script=found[0], named=job.script)


def _script_steps(job: Any) -> Iterator[tuple[dict[str, Any], str, int, list[str]]]:
    """(step, script, index of its line, the run block's logical lines) per script named."""
    steps = job.get("steps") if isinstance(job, dict) else None
    for step in steps if isinstance(steps, list) else []:
        run = step.get("run") if isinstance(step, dict) else None
        if not isinstance(run, str):
            continue
        lines = run.replace("\\\n", " ").splitlines()
        for index, line in enumerate(lines):
            for script in dict.fromkeys(_SCRIPT.findall(line.split(" #", 1)[0])):
                yield step, script, index, lines


def _job(name: str, where: str, workflow: dict[str, Any], job: dict[str, Any],
         step: dict[str, Any], script: str, index: int, lines: list[str]) -> NightlyJob:
    inputs, args, direct = _invocation(lines[index], script)
    env: dict[str, str] = {}
    exports: tuple[str, ...] = ()
    if direct:
        for scope in (workflow, job, step):
            env.update(_env(scope.get("env")))
        exports = tuple(line.strip() for line in lines[:index]
                        if line.strip().startswith("export "))
    runner = job.get("runs-on")
    return NightlyJob(name=name, workflow=where, script=script, direct=direct, inputs=inputs,
                      env=env, exports=exports, args=args,
                      runner=runner if isinstance(runner, str) else str(runner or ""),
                      baseline=_baseline(job))


def _invocation(line: str, script: str) -> tuple[dict[str, str], tuple[str, ...], bool]:
    """(inputs, arguments, run directly) of the line naming the script."""
    try:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:  # unbalanced quotes: not a plain command line
        return {}, (), False
    inputs: dict[str, str] = {}
    while words and _ASSIGNMENT.match(words[0]):
        key, _, value = words.pop(0).partition("=")
        inputs[key] = value
    if len(words) < 2 or words[0] not in ("bash", "sh") or words[1].lstrip("./") != script:
        return {}, (), False
    args: list[str] = []
    for word in words[2:]:
        if word[:1] in ("|", "&", ";", ">", "<"):
            break
        args.append(word)
    return inputs, tuple(args), True


def _env(section: Any) -> dict[str, str]:
    """An ``env:`` section as the job's processes see it, less the install-only keys."""
    if not isinstance(section, Mapping):
        return {}
    return {str(k): _text(v) for k, v in section.items()
            if str(k) not in INSTALL_ENV and not str(k).startswith(INSTALL_ENV_PREFIXES)}


def _text(value: Any) -> str:
    """A YAML scalar as GitHub hands it to a process (true, not True)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def _baseline(job: dict[str, Any]) -> str | None:
    for step in job.get("steps") or []:
        run = step.get("run") if isinstance(step, dict) else None
        found = _BASE.search(run) if isinstance(run, str) else None
        if found:
            return found.group(1).strip("\"'")
    return None
