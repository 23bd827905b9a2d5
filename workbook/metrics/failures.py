"""The vocabulary of failures in verl logs: the categories a failure falls into, and its lines.

A failed verl run leaves its cause somewhere in Ray's noise: a worker's traceback, a Ray wrapper
around it (``RayTaskError(OutOfMemoryError)``), Hydra's short config message, an Ascend error
code (``EL0004``, ``EI0002``), a kill signal in the exit code. This module holds only the data
that recognises them: the categories with their rank and labels, the patterns that name each,
the shapes of exception, config-frame and Ray-wrapper lines, and the substring prefilter in
front of them. A new form of failure is a change here; ``diagnosis`` keeps the logic.
"""

from __future__ import annotations

import re

# Most specific first: the first category present among fatal signals is the root cause.
PRIORITY = (
    "config_error",
    "import_error",
    "oom",
    "collective_timeout",
    "python_exception",
    "worker_died",
    "killed",
)
CATEGORIES = PRIORITY + ("timeout", "stopped", "diverged", "unknown", "none")
LABELS = {
    "oom": "Out of memory",
    "collective_timeout": "Collective communication failed or timed out",
    "worker_died": "A Ray worker/actor died",
    "config_error": "Configuration error",
    "import_error": "Import failed",
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
            # Ray's own node never came up (raylet/GCS start-up on an overloaded host)
            r"|The current node timed out during startup"
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
)  # fmt: skip
