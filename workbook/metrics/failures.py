"""The vocabulary of failures in verl logs: the categories a failure falls into, and its lines.

A failed verl run leaves its cause somewhere in Ray's noise: a worker's traceback, a Ray wrapper
around it (``RayTaskError(OutOfMemoryError)``), Hydra's short config message, an Ascend error
code (``EL0004``, ``EI0002``), a kill signal in the exit code. Some are not the run's fault at
all: a device's ECC error, a full disk, a Ray node that never started, a link HCCL or NCCL could
not open, a port another process on the node already holds are ``infrastructure`` (a suite may
retry those), each cause named. This module holds only the data that recognises them: the
categories with their rank and labels, the patterns, the shapes of exception, config-frame and
Ray-wrapper lines, and the substring prefilter in front of them. A new form of failure is a change here; ``diagnosis`` keeps the logic.
"""

from __future__ import annotations

import re

INFRASTRUCTURE = "infrastructure"
# The machine, its disks, its ports, Ray or the links between devices broke, not the run: the
# causes an infrastructure failure names (a summary says which), each a kind of signal of its own.
CAUSES = {
    "device_error": "device hardware error",
    "disk_full": "disk full or over quota",
    "ray_startup": "Ray node start-up failure",
    "link_failure": "HCCL/NCCL connection failure",
    "port_in_use": "network port already in use on the node",
}
# Most specific first: the first kind present among fatal signals is the root cause. A broken
# device, a full disk, a Ray that never came up or a rendezvous port another process holds
# makes the other ranks time out and their actors die, so it ranks above those; a connection
# that could not be made ranks below a collective timeout and above a Python exception (the
# exception is how the failure surfaces).
RANKS = (
    "config_error",
    "import_error",
    "oom",
    "device_error",
    "disk_full",
    "ray_startup",
    "port_in_use",
    "collective_timeout",
    "link_failure",
    "python_exception",
    "worker_died",
    "killed",
)


def category_of(kind: str) -> str:
    """The diagnosis category of a kind of signal (an infrastructure cause is ``infrastructure``)."""
    return INFRASTRUCTURE if kind in CAUSES else kind


PRIORITY = tuple(dict.fromkeys(category_of(kind) for kind in RANKS))
CATEGORIES = PRIORITY + ("timeout", "stopped", "diverged", "unknown", "none")
LABELS = {
    "oom": "Out of memory",
    "collective_timeout": "Collective communication failed or timed out",
    "worker_died": "A Ray worker/actor died",
    "config_error": "Configuration error",
    "import_error": "Import failed",
    INFRASTRUCTURE: "Infrastructure failure",
    "python_exception": "Python exception",
    "killed": "Killed",
    "timeout": "Timed out",
    "stopped": "Stopped by the user",
    "diverged": "Training diverged",
    "unknown": "Failed without a recognisable error in the log",
    "none": "No failure",
}
KILL_EXIT_CODES = {
    -9: "SIGKILL",
    -15: "SIGTERM",
    -2: "SIGINT",
    130: "SIGINT",
    137: "SIGKILL",
    143: "SIGTERM",
}

# Each line is the first kind whose pattern it matches (an infrastructure cause before the
# collective timeout it also reads as: a watchdog that died of an ECC error is the ECC error).
PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "config_error",
        re.compile(
            r"Could not override '|Could not append to config|is not in struct|Key '[^']+' not in '"
            r"|omegaconf\.errors\.\w+|ConfigKeyError|ConfigAttributeError|ConfigTypeError"
            r"|ConfigCompositionException|OverrideParseException|Error parsing override"
            r"|Error merging override|MissingConfigException|Cannot find primary config"
            r"|Missing mandatory value|could not be converted to (?:Integer|Float|Boolean)"
            r"|Total available [GN]PUs \d+ is less than total desired [GN]PUs \d+"
        ),
    ),
    (
        "oom",
        re.compile(
            r"OutOfMemoryError|CUDA out of memory|NPU out of memory|CUDA error: out of memory"
            r"|out of memory\. Tried to allocate|killed due to the node running low on memory"
            r"|killed due to memory pressure|No available memory for the cache blocks"
            r"|\bEL0004\b|^(?:\w+\.)*MemoryError\b"
        ),
    ),
    # CUDA's and Ascend's words for broken device memory: an uncorrectable ECC error, the ACL
    # runtime's 507053 (device memory UCE), 507054 (HBM multi-bit ECC), torch_npu's "UCE ERROR"
    (
        "device_error",
        re.compile(
            r"uncorrectable ECC error|ECC_UNCORRECTABLE|[Mm]ulti-bit ECC"
            r"|error code is 50705[34]\b|\bUCE ERROR\b"
        ),
    ),
    ("disk_full", re.compile(r"No space left on device|Disk quota exceeded|StorageFull")),
    (
        "ray_startup",
        re.compile(
            # Ray's own node never came up (raylet/GCS start-up on an overloaded host), or the
            # node could not join the cluster it was pointed at
            r"The current node timed out during startup|Failed to connect to GCS\b"
            r"|Unable to register worker with raylet"
        ),
    ),
    (
        "port_in_use",
        re.compile(
            # A socket could not bind its port: another process on the node holds it (torch's
            # TCPStore rendezvous picks a free port, which something else took before it
            # listened; Gloo, ZMQ and vLLM's servers say it the same way: errno 98, EADDRINUSE)
            r"\bEADDRINUSE\b|[Aa]ddress already in use"
        ),
    ),
    (
        "link_failure",
        re.compile(
            # NCCL could not open a socket to a peer; HCCL could not set up its transport (EI0009);
            # the ACL runtime's 507056 (inter-device link error)
            r"NCCL WARN .{0,120}Connect to \S+ failed|\bEI0009\b|Transport init error"
            r"|error code is 507056\b"
        ),
    ),
    (
        "collective_timeout",
        re.compile(
            r"Watchdog caught collective operation timeout"
            r"|watchdog thread terminated with exception|\bEI000[2-6]\b"
            r"|NCCL communicator was aborted|Some NCCL operations have failed or timed out"
            r"|ProcessGroup[NH]CCL.{0,200}(?:[Tt]imed? ?out|[Tt]imeout)|\[c10d\].{0,200}timed out"
            r"|DistStoreError.{0,200}[Tt]imed out|socket has timed out|Socket Timeout"
            r"|ncclSystemError|ncclInternalError|ncclRemoteError|HCCL.{0,80}[Tt]ime ?out"
            r"|wait socket establish timeout"
        ),
    ),
    (
        "worker_died",
        re.compile(
            r"ActorDiedError|RayActorError|The actor died unexpectedly|The actor is dead because"
            r"|A worker died or was killed while executing a task|WorkerCrashedError|NodeDiedError"
            r"|marked dead because the detector has missed too many heartbeats|LocalRayletDiedError"
            r"|ActorUnavailableError|Worker exit type: SYSTEM_ERROR"
        ),
    ),
    ("killed", re.compile(r"^Killed\s*$|^Terminated\s*$|received signal SIGTERM|Received SIGTERM")),
)
IMPORT_RE = re.compile(
    r"^(?:ModuleNotFoundError|ImportError)\b|RayTaskError\((?:ModuleNotFoundError|ImportError)\)"
)
EXCEPTION_RE = re.compile(
    r"^(?P<type>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Failure|Iteration))"
    r"(?:\((?P<inner>[\w.]+)\))?(?::|$)"
)
# Frames of verl's config validation: an exception raised there is a bad setting, not a bug.
CONFIG_FRAME_RE = re.compile(
    r"/verl/(?:utils/config\.py|workers/config/|trainer/config/)"
    r"|in (?:validate_config|omega_conf_to_dataclass)\b"
)
WRAPPER_RE = re.compile(r"^ray\.exceptions\.RayTaskError\b|^Error executing job with overrides")
TASK_RE = re.compile(r"ray::([\w.<>]+)\(")
# Every pattern above contains one of these; a line with none of them is skipped cheaply
# (substring tests run at memory speed, a regex alternation does not).
KEYWORDS = (
    "rror", "xception", "Traceback", "Exit", "Interrupt", "Failure", "Iteration",
    "out of memory", "OutOfMemory", "low on memory", "memory pressure", "available memory",
    "EI00", "EL00", "imed out", "ime out", "imeout", "atchdog", "NCCL", "nccl", "HCCL",
    "died", "dead", "SYSTEM_ERROR", "verride", "struct", "not in '", "config", "mandatory",
    "converted to", "GPUs", "NPUs", "Killed", "Terminated", "SIGTERM",
    "ECC", "UCE", "space left", "quota", "StorageFull", "GCS", "register worker",
    "EADDRINUSE", "already in use",
)  # fmt: skip
