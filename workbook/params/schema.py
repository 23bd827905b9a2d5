"""The scenario schema, a pydantic model (as are its `checks:` section and a suite's `retry:`).

A scenario is flat on purpose: the fields people tweak (clip ratios, batch sizes, steps) are
top-level keys, so ``-s clip_ratio_high=6e-4`` and a notebook parameter name the same thing.
Anything else verl accepts goes into ``overrides:`` as raw Hydra ``key=value`` strings.
(The Kubernetes pod-template objects of the ``kuberay:`` section are typed beside it, in
:mod:`workbook.params.pod_template`.)
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Annotated, Any, Literal

import annotated_types
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic.fields import FieldInfo

from workbook.core.quoting import cut, short
from workbook.params.pod_template import DeletionRule, PodSettings

Profile = Literal["npu", "cuda", "cpu"]
# local: a process group here; ray: a job on a Ray cluster; kuberay: a RayJob on Kubernetes
LauncherName = Literal["local", "ray", "kuberay"]
LossAgg = Literal[
    "token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"
]
SubmissionMode = Literal["K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode"]

MAX_COUNT = 2**31 - 1  # counts and sizes go to verl as int32-sized config values
# A run directory is <runs root>/<name>/<id>: the name is one plain path component.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
# KubeRay: a RayJob name is a DNS-1035 label of at most 47 characters (its RayCluster's name, at
# most 53, is the job's plus a suffix): ValidateRayJobMetadata in ray-operator. A job is named
# <prefix>-<the run id's last RAYJOB_SUFFIX characters>, so no name is ever reused.
MAX_RAYJOB_NAME, RAYJOB_SUFFIX = 47, 6
_DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def rayjob_name_problem(name: str) -> str | None:
    """Why KubeRay would refuse ``name`` for a RayJob (None when it would not)."""
    if len(name) > MAX_RAYJOB_NAME:
        return f"is {len(name)} characters long; KubeRay allows at most {MAX_RAYJOB_NAME}"
    if not _DNS_1035.match(name):
        return ("is not a DNS-1035 label: lowercase letters, digits and '-', starting with a "
                "letter and ending with a letter or digit")
    return None


def rule(ok: Callable[[Any], bool], text: str) -> BeforeValidator:
    """A field's check and its message (``text, got <the value>``) when ``ok(value)`` is false
    (the ``checks:`` section's and a baseline file's fields)."""
    def check(value: Any) -> Any:
        if not ok(value):
            raise ValueError(f"{text}, got {short(value)}")
        return value
    return BeforeValidator(check)


def _env_scalar(value: Any) -> Any:
    """One clear problem per bad ``env`` value (instead of one per member of the union)."""
    if not isinstance(value, (str, int, float, bool)):
        raise ValueError(f"an environment value must be a string, number or boolean, "
                         f"got {short(value)}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"an environment value must be a finite number, got {value}")
    return value


def _no_bool(value: Any) -> Any:
    """``nodes: yes`` is a mistake, not 1 node (pydantic's lax mode would read it as 1)."""
    if isinstance(value, bool):
        raise ValueError(f"must be an integer, got {value}")
    return value


def _cpu(value: Any) -> Any:
    """A pod's CPU request: a Kubernetes quantity (``"500m"``) or a whole number of CPUs >= 1."""
    if isinstance(value, bool) or type(value) is int and value < 1:
        raise ValueError(f"must be a CPU count >= 1 or a quantity such as '500m', got {value}")
    return value


EnvValue = Annotated[str | int | float | bool, BeforeValidator(_env_scalar)]
CpuRequest = Annotated[str | int, BeforeValidator(_cpu)]
Count = Annotated[int, Field(ge=1, le=MAX_COUNT), BeforeValidator(_no_bool)]
Seed = Annotated[int, Field(ge=0, le=2**32 - 1), BeforeValidator(_no_bool)]
Seconds = Annotated[float, Field(gt=0)]
Ratio = Annotated[float, Field(gt=0, lt=1)]  # a clip ratio, an lr: inside (0, 1)


class _Strict(BaseModel):
    # allow_inf_nan=False: nan and inf are refused wherever a float is expected
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False, allow_inf_nan=False)


class RaySettings(_Strict):
    """Where ``launcher: ray`` submits: the dashboard/job server (else ``$RAY_ADDRESS``), or a
    local cluster of ``local_nodes`` nodes on this machine that the run starts and stops."""

    address: str | None = None
    local_nodes: Count | None = None


class RolloutSettings(_Strict):
    """Rollout replay through verl's rollout skip (``skip.rollout_tq`` on the default trainer).

    ``replay``: a dump folder (relative to the scenario's folder) made once and kept with the
    baseline; the run replays its rollouts instead of generating, so the training side is
    repeatable and its checks can be tight. ``record``: dump this run's rollouts into its run
    directory (``<run>/rollouts``), to pin them. ``steps``: which steps (default: every step).
    """

    replay: str | None = None
    record: bool = False
    steps: list[Count] | None = None

    @property
    def enabled(self) -> bool:
        return bool(self.replay) or self.record


# An extended resource name (``huawei.com/ascend-1980``): a DNS subdomain prefix, then a name.
RESOURCE_NAME = (r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/"
                 r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


class KubeRaySettings(_Strict):
    """How ``launcher: kuberay`` (and ``workbook rayjob``) builds the RayJob: pods, devices,
    cleanup (see the manifest module).

    ``image`` is required there (no CPU fallback image without verl); ``name`` prefixes the
    RayJob's name (``workbook rayjob --name``; default: the scenario's); ``device_resource`` is the
    device plugin's resource name (default per profile: Huawei CCE's ``huawei.com/ascend-1980``;
    MindCluster's device plugin advertises ``huawei.com/Ascend910``). ``pod`` adds pod-template
    fields to every Ray pod, ``worker_pod`` to the workers only (lists appended, maps merged),
    ``submitter_pod`` to K8sJobMode's submitter pod.
    """

    image: str | None = Field(default=None, min_length=1)
    # the RayJob's name before "-" and the run id's end: with them, a name KubeRay accepts
    name: str | None = Field(default=None, min_length=1, pattern=r"^[a-z][-a-z0-9]*$",
                             max_length=MAX_RAYJOB_NAME - 1 - RAYJOB_SUFFIX)
    namespace: str = Field(default="default", pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
                           max_length=63)
    cpu: CpuRequest = 8
    memory: str = "32Gi"
    shared_memory: str = "16Gi"
    head_cpu: CpuRequest = 4
    head_memory: str = "16Gi"
    submission_mode: SubmissionMode = "K8sJobMode"
    shutdown_after_job_finishes: bool = True
    ttl_seconds_after_finished: int = Field(default=600, ge=0)
    deletion_rules: list[DeletionRule] | None = Field(default=None, min_length=1)
    service_account: str | None = None
    device_resource: str | None = Field(default=None, pattern=RESOURCE_NAME, max_length=253)
    pod: PodSettings = Field(default_factory=PodSettings)
    worker_pod: PodSettings = Field(default_factory=PodSettings)
    submitter_pod: PodSettings = Field(default_factory=PodSettings)
    on_interrupt: Literal["delete", "suspend"] = "delete"
    apply_timeout_s: Seconds | None = None

    def as_settings(self) -> dict[str, Any]:
        """The settings the manifest builder takes: pod-template fields in Kubernetes spelling."""
        out = self.model_dump(exclude={"pod", "worker_pod", "submitter_pod", "deletion_rules",
                                        "name"})
        out.update(pod=self.pod.as_k8s(), worker_pod=self.worker_pod.as_k8s(),
                   submitter_pod=self.submitter_pod.as_k8s())
        out["deletion_rules"] = [r.model_dump(by_alias=True, exclude_none=True)
                                 for r in self.deletion_rules or []] or None
        return out


class VerlSettings(_Strict):
    """The verl under test: ``path`` is a verl checkout (its repository root). The run imports
    verl from it (put first on PYTHONPATH), validation composes that checkout's Hydra config,
    and provenance records its commit. Unset: the verl installed where the run runs."""

    path: str | None = Field(default=None, min_length=1)


class EntrySettings(_Strict):
    """What the command starts: verl's PPO trainer unless a job runs a recipe's own entry
    (DAPO: ``recipe.dapo.main_dapo`` with ``--config-path=config --config-name=...``), which is
    then run from the verl checkout the recipe lives in (``verl.path``)."""

    module: str = Field(default="verl.trainer.main_ppo",
                        pattern=r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
    config_path: str | None = Field(default=None, min_length=1, max_length=200)
    config_name: str | None = Field(default=None, min_length=1, max_length=200)

    @property
    def is_default(self) -> bool:
        return (self.module, self.config_path, self.config_name) == (
            "verl.trainer.main_ppo", None, None)


class DataSettings(_Strict):
    """Data the run prepares before launch with verl's own preprocessing script.

    ``script`` (relative to the verl checkout, as verl's jobs run it from the repo root, or
    absolute) is run as ``python SCRIPT --local_dataset_path DATASET --local_save_dir SAVE_DIR
    ARGS...``; ``outputs`` are the files it writes into ``local_save_dir``. It is skipped when
    the outputs exist and the script, dataset and arguments are unchanged since it last ran.
    """

    script: str | None = Field(default=None, min_length=1)
    local_dataset_path: str | None = Field(default=None, min_length=1)
    local_save_dir: str | None = Field(default=None, min_length=1)
    args: list[str] = Field(default_factory=list)
    outputs: list[Annotated[str, Field(pattern=r"^[^/\x00]+$")]] = Field(
        default_factory=lambda: ["train.parquet", "test.parquet"], min_length=1)
    timeout_s: Seconds = 3600.0

    @property
    def enabled(self) -> bool:
        return self.script is not None


Percent = Annotated[float, Field(ge=0)]  # a threshold in %; finite (allow_inf_nan=False)


class AlignmentSettings(_Strict):
    """What ``workbook align`` judges when this scenario's run is the reference (run A): the
    largest mean relative error, in %, each metric may show (``thresholds``, on top of the
    defaults: pg_loss 2, rewards/mean 4), more metrics to report (``metrics``), and the smallest
    throughput ratio B/A over the first 4 steps (``min_throughput_ratio``; unset: reported only).
    The command line's ``--threshold``/``--metric``/``--min-throughput-ratio`` win over these."""

    thresholds: dict[Annotated[str, Field(min_length=1)], Percent] = Field(default_factory=dict)
    metrics: list[Annotated[str, Field(min_length=1)]] = Field(default_factory=list)
    min_throughput_ratio: float | None = Field(default=None, gt=0)


class Scenario(_Strict):
    """A fully resolved scenario (after ``defaults:`` and overrides)."""

    name: str = Field(pattern=NAME_PATTERN)
    description: str = ""
    profile: Profile
    launcher: LauncherName = "local"
    nodes: Count = 1
    devices_per_node: Count = 1
    timeout_s: Seconds | None = None
    # The training interpreter verl runs with (a path or a name on PATH), where the command
    # runs; --python and $WORKBOOK_PYTHON win over it (workbook.interpreter.choose).
    python: str | None = Field(default=None, min_length=1)

    model_path: str
    critic_model_path: str | None = None
    train_files: str
    val_files: str

    adv_estimator: str = "grpo"
    policy_loss: str = "vanilla"
    loss_agg_mode: LossAgg | None = None
    clip_ratio_low: Ratio | None = None
    clip_ratio_high: Ratio | None = None
    clip_ratio_c: float | None = Field(default=None, gt=1, description="the dual-clip bound")
    lr: Ratio = 1e-6
    critic_lr: Ratio | None = None
    total_training_steps: Count = 1
    total_epochs: Count | None = None
    train_batch_size: Count = 8
    ppo_mini_batch_size: Count = 8
    rollout_n: Count = 1
    max_prompt_length: Count = 512
    max_response_length: Count = 512
    sequence_parallel_size: Count = 1
    rollout_tp: Count = 1
    rollout_memory_utilization: float = Field(default=0.5, gt=0, le=1)
    seed: Seed | None = None
    # Run-to-run determinism (workbook.command.determinism): data in file order, the seed in
    # every seed key, verl's full_determinism switches, the profile's deterministic libraries.
    # Strict: ``deterministic: 1`` or ``"yes"`` is a mistake to name, not a truth value.
    deterministic: Annotated[bool, Field(strict=True)] = False
    project_name: str = "verl-workbook"
    experiment_name: str | None = None

    env: dict[str, EnvValue] = Field(default_factory=dict)
    overrides: list[str] = Field(default_factory=list)
    ray: RaySettings = Field(default_factory=RaySettings)
    rollouts: RolloutSettings = Field(default_factory=RolloutSettings)
    # validated when left out too: launcher: kuberay needs its image
    kuberay: KubeRaySettings = Field(default_factory=KubeRaySettings, validate_default=True)
    verl: VerlSettings = Field(default_factory=VerlSettings)
    entry: EntrySettings = Field(default_factory=EntrySettings)
    data: DataSettings = Field(default_factory=DataSettings)
    checks: dict[str, Any] | None = None
    alignment: AlignmentSettings = Field(default_factory=AlignmentSettings)

    @field_validator("kuberay")
    @classmethod
    def _image_to_run(cls, kuberay: KubeRaySettings, info: ValidationInfo) -> KubeRaySettings:
        """A scenario that runs on KubeRay says which verl image its pods run (fields are
        validated in order: ``launcher`` is known here)."""
        if info.data.get("launcher") == "kuberay" and not (kuberay.image or "").strip():
            raise ValueError("needs an image with launcher: kuberay: kuberay.image is the verl "
                             "image the pods run (with verl, its accelerator stack and Ray), "
                             "e.g. -s kuberay.image=REGISTRY/verl:TAG")
        return kuberay

    @property
    def uses_critic(self) -> bool:
        return self.adv_estimator == "gae"

    @property
    def world_size(self) -> int:
        return self.nodes * self.devices_per_node


FIELDS = frozenset(Scenario.model_fields)


def parse_scenario(data: dict[str, Any]) -> tuple[Scenario | None, list[tuple[str, str]]]:
    """Type-check ``data``; every problem comes back as ``(field path, message)``.

    Messages quote at most a short prefix of the value (pydantic's own would format all of it),
    and a range says the whole range (``must be inside (0, 1)``), not only the bound missed.
    """
    try:
        return Scenario.model_validate(data), []
    except ValidationError as exc:
        problems = []
        for err in exc.errors(include_url=False):
            path = ".".join(cut(str(p)) for p in err["loc"])
            problems.append((path, _message(err)))
        return None, problems


_RANGE_ERRORS = ("greater_than", "greater_than_equal", "less_than", "less_than_equal")


def _message(err: Any) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "missing":
        return "required"
    got = f" (got {short(err['input'])})" if "input" in err else ""
    if kind in _RANGE_ERRORS:
        info = _field_info(err["loc"])
        if info is not None:
            return f"must be {_range_text(info)}{got}"
    if kind in ("bool_type", "bool_parsing"):
        return f"must be true or false{got}"
    if kind == "finite_number":
        return f"must be a finite number{got}"
    if kind == "string_pattern_mismatch" and err["loc"][-1:] == ("name",):
        return ("must be a plain name: letters, digits, '.', '_' and '-', starting with a "
                f"letter or digit, at most 100 characters, no '/'{got}")
    if kind == "value_error":
        return str(err["msg"]).removeprefix("Value error, ")
    return f"{err['msg']}{got}"


def _field_info(loc: tuple[Any, ...]) -> FieldInfo | None:
    """The schema field an error's location points at (through nested settings)."""
    model: Any = Scenario
    info: FieldInfo | None = None
    for part in loc:
        if not isinstance(part, str) or model is None or part not in model.model_fields:
            break
        info = model.model_fields[part]
        annotation = info.annotation
        model = annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) \
            else None
    return info


def _range_text(info: FieldInfo) -> str:
    """``inside (0, 1)``, ``> 1``, ``a positive integer (>= 1, <= 2147483647)``."""
    bounds: dict[str, Any] = {}
    for item in _metadata(info):
        for name in ("gt", "ge", "lt", "le"):
            if getattr(item, name, None) is not None:
                bounds[name] = getattr(item, name)
    low = ("(", bounds["gt"]) if "gt" in bounds else ("[", bounds["ge"]) if "ge" in bounds else None
    high = (")", bounds["lt"]) if "lt" in bounds else ("]", bounds["le"]) if "le" in bounds else None
    integer = _is_int(info)
    if integer and low == ("[", 1):
        text = "a positive integer (>= 1" + (f", <= {high[1]})" if high else ")")
    elif low and high:
        text = f"{'an integer within' if integer else 'inside'} {low[0]}{low[1]}, {high[1]}{high[0]}"
    elif low:
        text = f"{'>' if low[0] == '(' else '>='} {low[1]}"
    elif high:
        text = f"{'<' if high[0] == ')' else '<='} {high[1]}"
    else:
        text = "in range"
    return f"{text}: {info.description}" if info.description else text


def _metadata(info: FieldInfo) -> list[Any]:
    """Constraints on the field and inside its annotation (``Count | None``, ``list[Count]``)."""
    found = list(info.metadata)
    pending = list(getattr(info.annotation, "__args__", ()))
    while pending:
        member = pending.pop()
        for item in getattr(member, "__metadata__", ()):
            found += [item, *getattr(item, "metadata", ())]
        pending += list(getattr(member, "__args__", ()))
    return [m for m in found if isinstance(m, annotated_types.BaseMetadata)]


def _is_int(info: FieldInfo) -> bool:
    pending: list[Any] = [info.annotation]
    while pending:
        member = pending.pop()
        if member is int or getattr(member, "__origin__", None) is int:
            return True
        pending += list(getattr(member, "__args__", ()))
    return False
