"""Reproducibility facts of the machine a run ran on, captured into ``run.json``.

A report must say enough to reproduce a run: package versions (without importing them: torch
takes seconds to import and may not even work on the host that renders the report), the commits
of the workbook and of verl when installed from a checkout, the OS, Python, host and hardware.
verl runs with the training interpreter, not necessarily the workbook's (:mod:`workbook.interpreter`):
its packages' versions, its Python and how its verl was installed are asked of it (``interpreter``
says which one it was); the workbook's own version is this environment's.
On Ascend, the CANN version and ``npu-smi info`` are captured when present, never required.
The container image the run ran in is recorded when something says which it is (``image``:
``$WORKBOOK_IMAGE``, else the container's own hints; see :func:`image`). Every probe is best
effort: a missing tool leaves its field out, it never fails a run.

A run that ran elsewhere (``launcher: kuberay``: in Kubernetes pods) is described by
:func:`submitted` instead, which says which machine each fact is about.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from workbook import interpreter
from workbook.core import project
from workbook.errors import InputError

WORKBOOK = "verl-workbook"
# Distributions whose versions a reader needs to reproduce a run (absent ones are left out).
PACKAGES = (WORKBOOK, *interpreter.PACKAGES)

# The image a run's container was started from, as whoever started it names it (a CI job, a pod
# spec, a wrapper script): ``repo/name:tag`` or ``repo/name@sha256:<digest>``.
IMAGE_ENV = "WORKBOOK_IMAGE"
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
# a container's id in /proc/self/cgroup or mountinfo: docker, containerd (Kubernetes), CRI-O, podman
_CONTAINER_ID = re.compile(r"(?:docker|cri-containerd|crio|libpod|containers)[-/]([0-9a-f]{64})")

# Which machine each group of :func:`submitted`'s facts is about (its ``about``).
SUBMITTER = "the machine that built the command and the RayJob, submitted it and judged its log"
PODS = "the Kubernetes pods KubeRay started for the run: verl ran there"

_CANN_INFO = (  # where CANN writes its version, newest layout first
    "ascend-toolkit/latest/version.cfg",
    "ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info",
    "ascend-toolkit/latest/x86_64-linux/ascend_toolkit_install.info",
    "cann/version.cfg",
)


def collect(verl_path: str | Path | None = None, python: str | None = None) -> dict[str, Any]:
    """Everything below, as ``{"host", "hardware", "versions", "os", "python", ...}``.

    ``verl_path`` is the verl checkout the run imports (a scenario's ``verl.path``): its commit
    is verl's, and ``verl_checkout`` says where it is and whether it had uncommitted changes.
    ``python`` is the training interpreter (default: this one): ``versions`` and ``python`` are
    its, ``interpreter`` says which file it is (or why it could not say).
    """
    trainer = training_facts(python or sys.executable)
    facts: dict[str, Any] = {
        "host": socket.gethostname(),
        "hardware": hardware(),
        "versions": versions(trainer),
        "os": f"{platform.system()} {platform.release()} ({_os_name()})",
    }
    if isinstance(trainer, interpreter.Facts):
        facts.update(python=trainer.version, interpreter=trainer.record())
    else:  # unknown: this environment's Python is not the run's
        facts["interpreter"] = {"python": python or sys.executable, "error": trainer}
    checkout = checkout_facts(Path(verl_path)) if verl_path else None
    if checkout and checkout.get("version"):
        # the run imports the checkout's verl, not the installed one the metadata describes
        facts["versions"]["verl"] = checkout["version"]
    installed = trainer.verl_direct_url if isinstance(trainer, interpreter.Facts) else None
    commits = {
        "workbook": git_commit(project.root()),
        "verl": checkout["commit"] if checkout else verl_commit(installed),
    }
    facts["commits"] = {k: v for k, v in commits.items() if v}
    if checkout:
        facts["verl_checkout"] = checkout
    cann = cann_version()
    if cann:
        facts["cann_version"] = cann
    found = image()
    if found:
        facts["image"] = found
    npu = _run(["npu-smi", "info"])
    if npu:
        facts["npu_smi"] = npu
    return facts


def submitted(pods: Mapping[str, Any], *, tools: Mapping[str, str | None] | None = None
              ) -> dict[str, Any]:
    """Provenance of a run whose command ran in pods, not here, as run.json fields.

    ``machines`` holds the facts by machine, each group saying in ``about`` which one it is:
    ``submitter`` (this machine: host, OS, Python, the workbook and ``tools`` such as kubectl)
    and ``pods`` (what they run: image, namespace, ... as given). At the top, where reports
    read a run's provenance, only what is true of the run wherever it ran: the workbook that
    built its command and judges it (its version and commit). This machine's hardware and its
    verl, torch or CANN are left out on purpose: they are not the run's, and a report would
    show them (and compare the run's timings by them) as if they were.
    """
    workbook = versions().get("verl-workbook")
    commit = git_commit(project.root())
    here: dict[str, Any] = {
        "about": SUBMITTER,
        "host": socket.gethostname(),
        "os": f"{platform.system()} {platform.release()} ({_os_name()})",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "versions": {k: v for k, v in {"verl-workbook": workbook, **(tools or {})}.items() if v},
        "commits": {"workbook": commit} if commit else {},
    }
    return {
        "versions": {"verl-workbook": workbook} if workbook else {},
        "commits": {"workbook": commit} if commit else {},
        "machines": {"submitter": here, "pods": {"about": PODS, **pods}},
    }


def training_facts(python: str) -> interpreter.Facts | str:
    """What the training interpreter says of itself, or why it could not say (a run's
    provenance is best effort: it never fails the run)."""
    try:
        return interpreter.ask(python)
    except InputError as exc:
        return exc.message


def versions(trainer: interpreter.Facts | str | None = None) -> dict[str, str]:
    """The workbook's version (this environment's) and the training environment's versions of
    :data:`PACKAGES` (``trainer``; None: this environment's), read from package metadata, never
    by importing them."""
    found: dict[str, str] = {}
    own = PACKAGES if trainer is None else (WORKBOOK,)
    for name in own:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    if isinstance(trainer, interpreter.Facts):
        found.update(trainer.versions)
    return found


def hardware() -> dict[str, Any]:
    """CPU model and count, memory, and accelerators when a vendor tool reports them."""
    info: dict[str, Any] = {
        "machine": platform.machine(),
        "cpu": _cpu_model(),
        "cpus": os.cpu_count(),
    }
    memory = _memory_gb()
    if memory:
        info["memory_gb"] = memory
    gpus = _run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"])
    if gpus:
        info["gpus"] = gpus.splitlines()
    return info


def describe(facts: dict[str, Any]) -> str:
    """One line for a report banner: accelerators if any, else CPU model and count."""
    hw = facts.get("hardware") or {}
    if hw.get("gpus"):
        return f"{len(hw['gpus'])} x {hw['gpus'][0]}"
    if facts.get("npu_smi"):
        return "Ascend NPU" + (
            f" (CANN {facts['cann_version']})" if facts.get("cann_version") else ""
        )
    parts = [str(hw.get("cpu") or hw.get("machine") or "unknown CPU")]
    if hw.get("cpus"):
        parts.append(f"{hw['cpus']} cores")
    if hw.get("memory_gb"):
        parts.append(f"{hw['memory_gb']} GB RAM")
    return ", ".join(parts)


def hardware_key(facts: dict[str, Any]) -> dict[str, Any]:
    """What makes time, throughput and memory comparable: profile, device model, device count.

    ``facts`` is a run.json (or its provenance). Accelerator runs are keyed by the accelerator
    model and the devices the run used; CPU runs by the CPU model and its core count.
    """
    hw = facts.get("hardware") or {}
    profile = facts.get("profile") or ("cuda" if hw.get("gpus") else None)
    devices = None
    if facts.get("nodes") and facts.get("devices_per_node"):
        devices = int(facts["nodes"]) * int(facts["devices_per_node"])
    if profile == "cuda" and hw.get("gpus"):
        return {"profile": profile, "device": str(hw["gpus"][0]), "count": devices}
    if profile == "npu":
        return {"profile": profile, "device": _npu_model(facts.get("npu_smi")), "count": devices}
    return {"profile": profile or "cpu", "device": str(hw.get("cpu") or "unknown CPU"),
            "count": hw.get("cpus")}


def same_hardware(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool | None:
    """Whether two hardware keys match; None when either is unknown."""
    if not a or not b:
        return None
    return all(a.get(k) == b.get(k) for k in ("profile", "device", "count"))


def _npu_model(npu_smi: Any) -> str:
    """The chip name ``npu-smi info`` prints first (e.g. ``910B3``), else ``Ascend NPU``."""
    for token in str(npu_smi or "").split():
        if token.startswith(("910", "310", "Ascend910", "Ascend310")):
            return token
    return "Ascend NPU"


def git_commit(folder: Path) -> str | None:
    """HEAD of the git checkout holding ``folder`` (with ``-dirty``), None outside git."""
    if not (folder / ".git").exists() or not shutil.which("git"):
        return None
    head = _run(["git", "-C", str(folder), "rev-parse", "HEAD"])
    if not head:
        return None
    dirty = _run(["git", "-C", str(folder), "status", "--porcelain", "--untracked-files=no"])
    return head + ("-dirty" if dirty else "")


def git_commit_date(folder: Path, path: str | None = None) -> str | None:
    """When the last commit of the checkout at ``folder`` (touching ``path``, if given) was
    made, ISO 8601; None outside git."""
    if not (folder / ".git").exists():
        return None
    return _run(["git", "-C", str(folder), "log", "-1", "--format=%cI", *(["--", path] if path else [])])


def checkout_facts(path: Path) -> dict[str, Any]:
    """Where a verl checkout is, its HEAD and whether it is dirty (tracked files changed), and
    the version its own ``verl/version/version`` file declares (what ``verl.__version__`` says
    when the run imports it; None when the file is absent); ``commit`` is None outside git (a
    copied tree, as verl's multinode job makes)."""
    commit = git_commit(path)
    facts: dict[str, Any] = {"path": str(path), "commit": commit,
                             "dirty": commit.endswith("-dirty") if commit else None}
    version = _first_line(path / "verl" / "version" / "version")
    if version:
        facts["version"] = version
    return facts


def _first_line(path: Path, limit: int = 200) -> str | None:
    """The first line of a small text file, None when it is absent or unreadable."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            line = handle.read(limit).splitlines()
    except OSError:
        return None
    return line[0].strip() or None if line else None


def verl_commit(info: Mapping[str, Any] | None = None) -> str | None:
    """verl's commit when installed from a VCS URL or an editable checkout (PEP 610): ``info``
    is its ``direct_url.json`` as the training interpreter read it (None: this environment's)."""
    if info is None:
        try:
            direct = metadata.distribution("verl").read_text("direct_url.json")
        except metadata.PackageNotFoundError:
            return None
        if not direct:
            return None
        info = json.loads(direct)
    commit = (info.get("vcs_info") or {}).get("commit_id")
    if commit:
        return str(commit)
    url = str(info.get("url", ""))
    if url.startswith("file://"):
        return git_commit(Path(url[len("file://") :]))
    return None


def cann_version() -> str | None:
    """The CANN toolkit version from its install info files, if CANN is installed."""
    roots = [
        os.environ.get("ASCEND_HOME_PATH", ""),
        os.environ.get("ASCEND_TOOLKIT_HOME", ""),
        "/usr/local/Ascend",
    ]
    for root in filter(None, roots):
        for rel in _CANN_INFO:
            path = Path(root) / rel
            if path.is_file():
                for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                    key, _, value = line.partition("=")
                    if key.strip().lower() in ("version", "toolkit_installed_version"):
                        return value.strip().strip('"[]')
    return None


def image(environ: Mapping[str, str] | None = None, root: Path = Path("/")
          ) -> dict[str, Any] | None:
    """The container image the run ran in, as far as anything says; None outside a container.

    ``$WORKBOOK_IMAGE`` (in ``environ``, default this process's environment) names it, with its
    digest when written ``name@sha256:...``. Else podman's ``/run/.containerenv`` may name the
    image and its id. Else a container is only recognised (``/.dockerenv``, or a container id in
    ``/proc/self/cgroup`` or ``mountinfo``): its id is kept, its image is unknown. Only ``ref``,
    ``digest`` and ``id`` say which image; ``container`` changes with every container started.
    ``root`` is where those files are looked for.
    """
    env = os.environ if environ is None else environ
    named = str(env.get(IMAGE_ENV) or "").strip()
    if named:
        return named_image(named)
    containerenv = root / "run" / ".containerenv"
    podman = _key_values(containerenv)
    container = _container_id(root)
    if podman.get("image"):
        return {"ref": podman["image"], "digest": _digest_in(podman["image"]),
                "id": podman.get("imageid") or None, "container": container,
                "source": "/run/.containerenv"}
    if container or (root / ".dockerenv").exists() or containerenv.exists():
        return {"ref": None, "digest": None, "container": container,
                "source": "container hints (/.dockerenv, /proc/self/cgroup)"}
    return None


def named_image(ref: str) -> dict[str, Any]:
    """The image ``$WORKBOOK_IMAGE`` names (its digest when the name carries one)."""
    return {"ref": ref, "digest": _digest_in(ref), "source": IMAGE_ENV}


def versions_of(run: Mapping[str, Any]) -> dict[str, str]:
    """The package versions a run recorded (run.json's ``versions``), CANN's as ``CANN``: what
    two nights, or the runs of one baseline, are compared by; a package without one is left out."""
    versions = _object(run.get("versions"))
    found = {str(k): str(v) for k, v in versions.items() if v}
    if run.get("cann_version"):
        found["CANN"] = str(run["cann_version"])
    return found


def image_of(run: Mapping[str, Any], env: Mapping[str, Any] | None = None
             ) -> dict[str, Any] | None:
    """A run's image from its run.json (``run``): what :func:`image` recorded, unless that is
    only a hint and the run's own environment (``env``, its command's) names one; a KubeRay
    run's is its pods' spec."""
    recorded = _object(run.get("image"))
    named = str((env or {}).get(IMAGE_ENV) or "").strip()
    if named and not (recorded.get("ref") or recorded.get("digest")):  # more than a hint
        return named_image(named)
    if recorded:
        return dict(recorded)
    pods = _object(_object(run.get("machines")).get("pods"))
    if pods.get("image"):
        return {"ref": str(pods["image"]), "digest": _digest_in(str(pods["image"])),
                "source": "the RayJob's pods"}
    return None


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _digest_in(text: str) -> str | None:
    found = _DIGEST.search(text)
    return found.group(0) if found else None


def _key_values(path: Path) -> dict[str, str]:
    """``key="value"`` lines (podman's /run/.containerenv), {} when unreadable."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return {}
    pairs = (line.partition("=") for line in lines)
    return {k.strip(): v.strip().strip('"') for k, sep, v in pairs if sep and v.strip('" ')}


def _container_id(root: Path) -> str | None:
    """The container id in this process's cgroup (v1, or v2 under a scope), else in what the
    engine mounted over its /etc/hostname, hosts or resolv.conf (cgroup v2 shows only ``/``).
    A host's mount table lists its containers' folders too, so only those mount points count."""
    proc = root / "proc" / "self"
    try:
        found = _CONTAINER_ID.search((proc / "cgroup").read_text(encoding="utf-8",
                                                                 errors="replace"))
        if found:
            return found.group(1)
    except OSError:
        pass
    try:
        lines = (proc / "mountinfo").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if len(fields) > 4 and fields[4] in ("/etc/hostname", "/etc/hosts", "/etc/resolv.conf"):
            found = _CONTAINER_ID.search(fields[3])
            if found:
                return found.group(1)
    return None


def cpu_identity() -> str | None:
    """The CPU's model name with its vendor, family and model numbers, e.g. ``AMD EPYC
    (AuthenticAMD family 25 model 17)``; None where /proc/cpuinfo cannot be read.

    A cloud VM's model name is often masked (``AMD EPYC``), so the numbers are what tell one
    generation from another: two machines with the same name can run the same step at speeds
    far apart.
    """
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if not line.strip():
                break  # the first processor's block is enough
            key, _, value = line.partition(":")
            fields.setdefault(key.strip().lower(), value.strip())
    except OSError:
        return None
    name = fields.get("model name") or fields.get("cpu model") or fields.get("hardware") or ""
    numbers = " ".join(part for part in (
        fields.get("vendor_id", ""),
        f"family {fields['cpu family']}" if fields.get("cpu family") else "",
        f"model {fields['model']}" if fields.get("model") else "",
        f"part {fields['cpu part']}" if fields.get("cpu part") else "") if part)
    if not name and not numbers:
        return None
    return f"{name} ({numbers})" if name and numbers else name or numbers


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.lower().startswith(("model name", "cpu model", "hardware")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024**2, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def _os_name() -> str:
    try:
        for line in Path("/etc/os-release").read_text(encoding="utf-8").splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip('"')
    except OSError:
        pass
    return sys.platform


def _run(argv: list[str]) -> str | None:
    """A tool's stdout, or None when it is missing, fails or hangs (bounded at 10 s)."""
    if not shutil.which(argv[0]):
        return None
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    out = done.stdout.strip()
    return out if done.returncode == 0 and out else None
