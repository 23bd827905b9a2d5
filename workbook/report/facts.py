"""What a run ran with, as its report shows it: the resolved parameters and exact command, the
versions, commits and hardware, and the Ray launcher's pre-flight."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from workbook import provenance
from workbook.core.layout import RunRef
from workbook.report.section import Facts, Section, kept_section
from workbook.report.view import RunView


@dataclass(frozen=True)
class Parameters:
    command: str
    env: Facts
    params: str


@dataclass(frozen=True)
class Reproducibility:
    facts: Facts
    npu_smi: str = ""


@dataclass(frozen=True)
class Node:
    ip: str
    head: bool
    node_id: str
    alive: bool
    resources: str


@dataclass(frozen=True)
class Required:
    nodes: str
    devices_per_node: str
    device_resource: str
    address: str


@dataclass(frozen=True)
class Preflight:
    recorded: bool  # False: no pre-flight result in run.json
    nodes: tuple[Node, ...] = ()
    required: Required | None = None


def parameters(run: RunRef) -> Section[Parameters]:
    """The resolved parameters and the exact command (environment included), redacted."""
    return kept_section("parameters", run, _parameters)


def reproducibility(run: RunRef) -> Section[Reproducibility]:
    """Versions, commits, OS, Python, host and hardware the run ran with."""
    return kept_section("reproducibility", run, _reproducibility)


def preflight(run: RunRef) -> Section[Preflight]:
    """The Ray launcher's pre-flight: the nodes it found, their resources, what was required."""
    return kept_section("preflight", run, _preflight)


def _parameters(v: RunView) -> Parameters:
    command = v.command()
    env = command.get("env") or {}
    shell = v.text("command_sh") or " ".join(str(a) for a in command.get("argv") or [])
    return Parameters(
        command=shell or "not recorded",
        env=tuple((str(k), str(val)) for k, val in sorted(env.items())),
        params=v.text("params") or "not recorded",
    )


def hardware_text(run: dict[str, Any]) -> str:
    """This machine's hardware, or for a run in pods what they were given (never this one's)."""
    if run.get("hardware"):
        return provenance.describe(run)
    pods = (run.get("machines") or {}).get("pods")
    if isinstance(pods, dict):
        size = f"{run.get('nodes')} x {run.get('devices_per_node')} {run.get('profile') or ''}"
        return f"KubeRay pods ({size.strip()}), image {pods.get('image') or 'unknown'}"
    return "unknown"


def _reproducibility(v: RunView) -> Reproducibility:
    r = v.run
    hw = r.get("hardware") or {}
    rows: list[tuple[str, Any]] = [("workbook", (r.get("versions") or {}).get("verl-workbook"))]
    rows += [(f"{k} commit", c) for k, c in (r.get("commits") or {}).items()]
    rows += [(k, ver) for k, ver in (r.get("versions") or {}).items() if k != "verl-workbook"]
    rows += [
        ("python", r.get("python")),
        ("os", r.get("os")),
        ("host", r.get("host")),
        ("cpu", hw.get("cpu")),
        ("cpus", hw.get("cpus")),
        ("memory (GB)", hw.get("memory_gb")),
        ("gpus", ", ".join(hw.get("gpus") or [])),
        ("CANN", r.get("cann_version")),
        ("launcher", r.get("launcher")),
        ("profile", r.get("profile")),
        ("metrics from", v.metrics.origin.text() if v.metrics.origin else None),
        (
            "nodes x devices",
            f"{r.get('nodes')} x {r.get('devices_per_node')}" if r.get("nodes") else None,
        ),
    ]
    for machine, group in (r.get("machines") or {}).items():  # a KubeRay run: by machine
        if isinstance(group, dict):
            rows += [(f"{machine}: {k}", val) for k, val in group.items()
                     if k != "about" and isinstance(val, (str, int, float))]
    facts = tuple((k, str(val)) for k, val in rows if val not in (None, ""))
    return Reproducibility(facts, str(r["npu_smi"]) if r.get("npu_smi") else "")


def _preflight(v: RunView) -> Preflight:
    info = v.run
    found = next(
        (
            d
            for d in (
                info.get("preflight"),
                (info.get("ray_job") or {}).get("preflight"),
                (info.get("launch_details") or {}).get("preflight"),
            )
            if d
        ),
        None,
    )
    if not isinstance(found, dict):
        return Preflight(recorded=False)
    nodes = tuple(
        Node(
            ip=str(n.get("ip", "")),
            head=bool(n.get("is_head")),
            node_id=str(n.get("node_id", ""))[:12],
            alive=bool(n.get("alive")),
            resources=_resources(n.get("resources") or {}),
        )
        for n in found.get("nodes") or []
        if isinstance(n, dict)
    )
    need = found.get("required") or {}
    required = Required(
        nodes=str(need.get("nodes")),
        devices_per_node=str(need.get("devices_per_node")),
        device_resource=str(need.get("device_resource", "device")),
        address=str(found.get("address", "")),
    ) if need else None
    return Preflight(recorded=True, nodes=nodes, required=required)


def _resources(resources: dict[str, Any]) -> str:
    """CPU, GPU/NPU and memory first; Ray's per-node bookkeeping resources left out."""
    shown = {k: v for k, v in resources.items() if not k.startswith(("node:", "accelerator_type"))}
    parts = []
    for key, value in sorted(
        shown.items(), key=lambda kv: (kv[0] not in ("CPU", "GPU", "NPU"), kv[0])
    ):
        if "memory" in key and isinstance(value, (int, float)):
            parts.append(f"{key} {value / 1024**3:.1f} GB")
        else:
            parts.append(
                f"{key} {value:g}" if isinstance(value, (int, float)) else f"{key} {value}"
            )
    return ", ".join(parts)


