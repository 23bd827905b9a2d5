"""Run verl's own preprocessing script for a scenario's ``data:`` section, once.

verl's nightly jobs each start with ``python examples/data_preprocess/gsm8k.py
--local_dataset_path ...`` from the repository root, because nothing persists between jobs.
This does the same for a scenario, and skips it when the outputs are there and nothing that made
them changed: a stamp beside the outputs records the signature of the inputs (the script's
bytes, the command, and the dataset folder's file names, sizes and modification times).
The script runs in a session of its own with a process tag of its own: when it ends (or times
out, or the wait is interrupted), every process carrying that tag -- its children and theirs,
whatever group they joined -- ends with it.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from workbook import interpreter
from workbook.command.builder import verl_pythonpath
from workbook.core.quoting import cut
from workbook.errors import InputError, ParamsError, RunError
from workbook.launch.processes import run_tagged
from workbook.params.schema import Scenario

STAMP = ".workbook-data.json"
LOG = ".workbook-data.log"
MAX_DATASET_FILES = 100_000  # a dataset folder's listing is hashed, not its bytes


@dataclass(frozen=True)
class Prepared:
    """What :func:`prepare_data` did: ``ran`` False when the cached outputs were kept."""

    ran: bool
    save_dir: Path
    outputs: tuple[Path, ...]
    command: tuple[str, ...]


def checkout_of(s: Scenario) -> Path | None:
    """The verl checkout the script is relative to: ``verl.path``, else the repository an
    installed verl was installed from in editable mode (its package folder's parent)."""
    if s.verl.path:
        return Path(s.verl.path)
    try:  # the training interpreter's verl, never this environment's
        found = interpreter.ask(interpreter.choose(s.profile, s.launcher, s.python)).verl_dir
    except InputError:
        return None
    if found is None:
        return None
    root = Path(found).parent
    return root if (root / "examples").is_dir() else None


def script_of(s: Scenario) -> Path | None:
    """The preprocessing script's path, None when a relative one has no checkout to be in."""
    if not s.data.script:
        return None
    script = Path(s.data.script)
    if script.is_absolute():
        return script
    checkout = checkout_of(s)
    return checkout / script if checkout else None


def outputs_of(s: Scenario) -> tuple[Path, ...]:
    if not s.data.local_save_dir:
        return ()
    return tuple(Path(s.data.local_save_dir) / name for name in s.data.outputs)


def prepare_command(s: Scenario, python: str) -> tuple[list[str], Path | None, dict[str, str]]:
    """``(argv, working directory, extra env)`` of verl's script for ``s`` (pure).

    The working directory is the checkout (verl's jobs run from its root) and the checkout is
    first on PYTHONPATH (``gsm8k.py`` imports ``verl.utils``).
    """
    script, d = script_of(s), s.data
    if script is None or not d.local_save_dir:
        raise ParamsError([("data.script", "needs local_save_dir and a verl checkout "
                            "(verl.path) to find a relative script in")])
    argv = [python, str(script)]
    if d.local_dataset_path:
        argv += ["--local_dataset_path", d.local_dataset_path]
    argv += ["--local_save_dir", d.local_save_dir, *d.args]
    checkout = checkout_of(s)
    env = {}
    if checkout is not None:
        env["PYTHONPATH"] = verl_pythonpath(str(checkout), os.environ.get("PYTHONPATH", ""))
    return argv, checkout, env


def signature(s: Scenario, argv: list[str]) -> str:
    """A hash of everything that decides the outputs: script bytes, command, dataset listing."""
    digest = hashlib.sha256()
    script = script_of(s)
    digest.update(json.dumps(argv[1:]).encode())
    if script is not None and script.is_file():
        digest.update(script.read_bytes())
    dataset = Path(s.data.local_dataset_path) if s.data.local_dataset_path else None
    if dataset is not None and dataset.exists():
        for count, (name, size, mtime) in enumerate(_listing(dataset)):
            if count >= MAX_DATASET_FILES:
                raise ParamsError([("data.local_dataset_path", f"{cut(str(dataset))} holds more "
                                    f"than {MAX_DATASET_FILES} files: point at the dataset itself")])
            digest.update(f"{name}\0{size}\0{mtime}\n".encode())
    return digest.hexdigest()


def _listing(root: Path) -> list[tuple[str, int, int]]:
    if root.is_file():
        st = root.stat()
        return [(root.name, st.st_size, st.st_mtime_ns)]
    found = []
    for folder, dirs, names in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            path = Path(folder) / name
            try:
                st = path.stat()
            except OSError:
                continue
            found.append((str(path.relative_to(root)), st.st_size, st.st_mtime_ns))
            if len(found) > MAX_DATASET_FILES:
                return found
    return found


def is_prepared(s: Scenario, argv: list[str]) -> bool:
    """The outputs exist and the stamp beside them holds the inputs' current signature."""
    stamp = Path(s.data.local_save_dir or ".") / STAMP
    if not all(p.is_file() for p in outputs_of(s)) or not stamp.is_file():
        return False
    try:
        recorded = json.loads(stamp.read_text(encoding="utf-8")).get("signature")
    except (OSError, ValueError, AttributeError):
        return False
    return bool(recorded) and recorded == signature(s, argv)


def input_problems(s: Scenario) -> list[tuple[str, str]]:
    """What must exist on this machine before the script can run."""
    problems: list[tuple[str, str]] = []
    script = script_of(s)
    if script is None:
        problems.append(("data.script", f"{cut(str(s.data.script))} is relative, and there is no "
                         "verl checkout to find it in: set verl.path (or --verl PATH)"))
    elif not script.is_file():
        problems.append(("data.script", f"no such preprocessing script: {cut(str(script))}"))
    dataset = s.data.local_dataset_path
    if dataset and not Path(dataset).exists():
        problems.append(("data.local_dataset_path", f"no such dataset: {cut(dataset)} (the raw "
                         "dataset must be on this machine: nothing is downloaded)"))
    return problems


def prepare_data(s: Scenario, *, python: str, force: bool = False) -> Prepared | None:
    """Run the ``data:`` script unless its outputs are current; None without a ``data:`` section.

    ParamsError (exit 2) when an input is missing; RunError (exit 3) when the script fails,
    times out or does not write its outputs (the tail of its output is quoted; all of it is
    in ``<local_save_dir>/.workbook-data.log``).
    """
    if not s.data.enabled:
        return None
    problems = input_problems(s)
    if problems:
        raise ParamsError(problems)
    argv, cwd, env = prepare_command(s, python)
    save_dir, outputs = Path(str(s.data.local_save_dir)), outputs_of(s)
    if not force and is_prepared(s, argv):
        return Prepared(False, save_dir, outputs, tuple(argv))
    save_dir.mkdir(parents=True, exist_ok=True)
    log = save_dir / LOG
    try:
        code = _run_script(argv, cwd, {**os.environ, **env}, log, s.data.timeout_s)
    except subprocess.TimeoutExpired:
        raise RunError(f"data preparation did not finish within {s.data.timeout_s:g} s "
                       f"({_tail(log)}; log: {log})") from None
    except OSError as exc:
        raise RunError(f"data preparation could not start {cut(argv[0])}: {exc}") from None
    missing = [str(p) for p in outputs if not p.is_file()]
    if code != 0 or missing:
        why = f"exit {code}" if code else f"it wrote no {', '.join(missing)}"
        raise RunError(f"data preparation failed ({why}): {_tail(log)} (log: {log})")
    stamp = {"signature": signature(s, argv), "command": argv, "outputs": [str(p) for p in outputs]}
    (save_dir / STAMP).write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
    return Prepared(True, save_dir, outputs, tuple(argv))


def _run_script(argv: list[str], cwd: Path | None, env: dict[str, str], log: Path,
                timeout_s: float) -> int:
    """The script's exit code; TimeoutExpired after ``timeout_s`` (every process it started is
    ended either way: :func:`workbook.launch.processes.run_tagged`)."""
    code = run_tagged(argv, cwd=cwd, env=env, log=log, timeout_s=timeout_s)
    if code is None:
        raise subprocess.TimeoutExpired(argv, timeout_s)
    return code


def _tail(log: Path) -> str:
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return "no output"
    return cut(" | ".join(lines[-3:]), 400) if lines else "no output"


