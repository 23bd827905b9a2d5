"""What a nightly script hands ``python3``: its argv and environment, recorded by running the
script with ``HOME=/home/ci`` and a ``python3`` stand-in that writes down what it was given.

The script runs in a temporary folder holding only a copy of it, under bash with a ``PATH`` of
stand-ins and nothing else: ``python3`` (and ``python``) records its call and succeeds (an import
probe such as ``python3 -c 'import torch_npu'`` answers as on an Ascend runner); ``bash`` and
``sh`` are bash, so the script can start another; ``basename``, ``dirname`` and ``date`` are the
real ones (they only compute text); every other command does nothing and succeeds (bash's
``command_not_found_handle``), so ``mkdir``, ``rm``, ``sed -i``, ``tee`` and ``ray stop`` touch
nothing. What bash does itself is not stood in for: a command named by an absolute path would
run and a redirection would write where it points (verl's nightly scripts do neither; their logs
go through ``tee``). The run is bounded in time and its output in size.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from workbook.core.textfile import read_bytes
from workbook.errors import InputError
from workbook.launch.processes import TAG_VARIABLE, run_tagged
from workbook.nightly.workflow import NightlyJob

FAKE_HOME = "/home/ci"
HOW = ("argv and environment the script hands python3, recorded by running it with "
       "HOME=/home/ci and a python3 stand-in")
TIMEOUT_S = 60.0
SCRIPT_MAX_BYTES = 1 << 20
RECORD_MAX_BYTES = 8 << 20
# Tools the script may run for real: they only turn text into text.
PURE_TOOLS = ("basename", "dirname", "date")
# What bash, the stand-ins and the workbook's process tag put into every environment: not the
# script's doing.
NOT_THE_SCRIPTS = ("PATH", "HOME", "PWD", "OLDPWD", "SHLVL", "_", TAG_VARIABLE, "SPT_NOENV")
_NOTHING = "() {  return 0\n}"  # bash's command_not_found_handle: an unknown command succeeds
# The environment as the stand-in was started with (/proc: Python itself adds LC_CTYPE to
# os.environ when it coerces the C locale).
_RECORDER = """#!{python} -IS
import json, os, sys
try:
    with open("/proc/self/environ", "rb") as found:
        pairs = [item.decode("utf-8", "replace").partition("=") for item in found.read().split(b"\\0") if item]
    env = {{key: value for key, _, value in pairs}}
except OSError:
    env = dict(os.environ)
with open({record!r}, "a", encoding="utf-8") as out:
    out.write(json.dumps({{"argv": sys.argv[1:], "env": env}}) + "\\n")
"""


def script_facts(checkout: Path, job: NightlyJob, *, timeout_s: float = TIMEOUT_S) -> dict[str, Any]:
    """The job's script facts: ``{"script", "job", "how", "inputs", "entry", "overrides", "env"}``
    (``entry``: ``-m MODULE`` and the ``--config-*`` options after it; ``env``: what the job and
    the script set, the inputs left out). InputError when the script is missing or starts no
    ``python3 -m ...`` in ``timeout_s``."""
    source = Path(checkout) / job.script
    text = read_bytes(source, max_bytes=SCRIPT_MAX_BYTES, what=f"script of job {job.name}")
    with tempfile.TemporaryDirectory(prefix="wb-nightly-") as tmp:
        folder = Path(tmp)
        work, bin_dir, record = folder / "work", folder / "bin", folder / "calls.jsonl"
        (work / job.script).parent.mkdir(parents=True)
        (work / job.script).write_bytes(text)
        _stand_ins(bin_dir, record)
        calls, code, tail = _run(folder, work, bin_dir, record, job, timeout_s)
    runs = [c for c in calls if c["argv"][:1] == ["-m"] and len(c["argv"]) > 1]
    if not runs:
        raise InputError(f"job {job.name}: {job.script} started no `python3 -m ...` "
                         f"(exit {code}); its last output:\n{tail}")
    argv, env = runs[-1]["argv"], runs[-1]["env"]
    cut = 2
    while cut < len(argv) and argv[cut].startswith("--"):
        cut += 1
    return {"script": job.script, "job": job.name, "how": HOW, "inputs": dict(job.inputs),
            "entry": argv[:cut], "overrides": argv[cut:],
            "env": {k: v for k, v in sorted(env.items()) if k not in NOT_THE_SCRIPTS
                    and not k.startswith("BASH_FUNC_") and job.inputs.get(k) != v}}


def _stand_ins(bin_dir: Path, record: Path) -> None:
    bin_dir.mkdir()
    recorder = _RECORDER.format(python=sys.executable, record=str(record))
    for name in ("python3", "python"):
        (bin_dir / name).write_text(recorder, encoding="utf-8")
        (bin_dir / name).chmod(0o755)
    bash = shutil.which("bash")
    if bash is None:
        raise InputError("bash is needed to read verl's nightly scripts; none on PATH")
    for name in ("bash", "sh"):
        (bin_dir / name).symlink_to(bash)
    for name in PURE_TOOLS:
        found = shutil.which(name)
        if found:
            (bin_dir / name).symlink_to(found)


def _run(folder: Path, work: Path, bin_dir: Path, record: Path, job: NightlyJob,
         timeout_s: float) -> tuple[list[dict[str, Any]], int | None, str]:
    """Run the job's invocation of its script; (calls recorded, exit code, output's tail)."""
    line = " ".join([*(f"{k}={shlex.quote(v)}" for k, v in job.inputs.items()), "bash",
                     shlex.quote(job.script), *map(shlex.quote, job.args)])
    (folder / "job.sh").write_text("\n".join([*job.exports, line, ""]), encoding="utf-8")
    env = {**job.env, "PATH": str(bin_dir), "HOME": FAKE_HOME,
           "BASH_FUNC_command_not_found_handle%%": _NOTHING}
    log = folder / "output.log"
    code = run_tagged([str(bin_dir / "bash"), "--noprofile", "--norc", str(folder / "job.sh")],
                      cwd=work, env=env, log=log, timeout_s=timeout_s, grace_s=2)
    tail = _tail(log)
    if code is None:
        raise InputError(f"job {job.name}: {job.script} did not finish in {timeout_s:.0f} s "
                         f"under the stand-ins; its last output:\n{tail}")
    return _calls(record), code, tail


def _calls(record: Path) -> list[dict[str, Any]]:
    if not record.exists():
        return []
    lines = read_bytes(record, max_bytes=RECORD_MAX_BYTES, what="record of python3 calls")
    return [json.loads(line) for line in lines.decode("utf-8").splitlines() if line.strip()]


def _tail(log: Path, size: int = 2000) -> str:
    with open(log, "rb") as handle:
        handle.seek(max(0, os.path.getsize(log) - size))
        return handle.read().decode("utf-8", "replace").strip() or "(nothing)"
