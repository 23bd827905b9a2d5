"""The scenario schema: the one module that imports pydantic.

A scenario is flat on purpose: the fields people tweak (clip ratios, batch sizes, steps) are
top-level keys, so ``-s clip_ratio_high=6e-4`` and a notebook parameter name the same thing.
Anything else verl accepts goes into ``overrides:`` as raw Hydra ``key=value`` strings.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

Profile = Literal["npu", "cuda", "cpu"]
LauncherName = Literal["local", "ray"]
LossAgg = Literal[
    "token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm"
]
SubmissionMode = Literal["K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode"]
EnvValue = str | int | float | bool


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)


class RaySettings(_Strict):
    """Where ``launcher: ray`` submits: the dashboard/job server (else ``$RAY_ADDRESS``), or a
    local cluster of ``local_nodes`` nodes on this machine that the run starts and stops."""

    address: str | None = None
    local_nodes: int | None = Field(default=None, ge=1)


class RolloutSettings(_Strict):
    """Rollout replay through verl's rollout skip (``skip.rollout_tq`` on the default trainer).

    ``replay``: a dump folder (relative to the scenario's folder) made once and kept with the
    baseline; the run replays its rollouts instead of generating, so the training side is
    repeatable and its checks can be tight. ``record``: dump this run's rollouts into its run
    directory (``<run>/rollouts``), to pin them. ``steps``: which steps (default: every step).
    """

    replay: str | None = None
    record: bool = False
    steps: list[int] | None = None

    @property
    def enabled(self) -> bool:
        return bool(self.replay) or self.record


class KubeRaySettings(_Strict):
    """How ``workbook rayjob`` sizes the RayJob's pods."""

    image: str | None = None
    namespace: str = "default"
    cpu: str | int = 8
    memory: str = "32Gi"
    shared_memory: str = "16Gi"
    head_cpu: str | int = 4
    head_memory: str = "16Gi"
    submission_mode: SubmissionMode = "K8sJobMode"
    shutdown_after_job_finishes: bool = True
    ttl_seconds_after_finished: int = Field(default=600, ge=0)
    service_account: str | None = None


class Scenario(_Strict):
    """A fully resolved scenario (after ``defaults:`` and overrides)."""

    name: str
    description: str = ""
    profile: Profile
    launcher: LauncherName = "local"
    nodes: int = 1
    devices_per_node: int = 1
    timeout_s: float | None = None

    model_path: str
    critic_model_path: str | None = None
    train_files: str
    val_files: str

    adv_estimator: str = "grpo"
    policy_loss: str = "vanilla"
    loss_agg_mode: LossAgg | None = None
    clip_ratio_low: float | None = None
    clip_ratio_high: float | None = None
    clip_ratio_c: float | None = None
    lr: float = 1e-6
    critic_lr: float | None = None
    total_training_steps: int = 1
    total_epochs: int | None = None
    train_batch_size: int = 8
    ppo_mini_batch_size: int = 8
    rollout_n: int = 1
    max_prompt_length: int = 512
    max_response_length: int = 512
    sequence_parallel_size: int = 1
    rollout_tp: int = 1
    rollout_memory_utilization: float = 0.5
    seed: int | None = None
    project_name: str = "verl-workbook"
    experiment_name: str | None = None

    env: dict[str, EnvValue] = Field(default_factory=dict)
    overrides: list[str] = Field(default_factory=list)
    ray: RaySettings = Field(default_factory=RaySettings)
    rollouts: RolloutSettings = Field(default_factory=RolloutSettings)
    kuberay: KubeRaySettings = Field(default_factory=KubeRaySettings)
    checks: dict[str, Any] | None = None

    @property
    def uses_critic(self) -> bool:
        return self.adv_estimator == "gae"

    @property
    def world_size(self) -> int:
        return self.nodes * self.devices_per_node


FIELDS = frozenset(Scenario.model_fields)


def parse_scenario(data: dict[str, Any]) -> tuple[Scenario | None, list[tuple[str, str]]]:
    """Type-check ``data``; every problem comes back as ``(field path, message)``."""
    try:
        return Scenario.model_validate(data), []
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            path = ".".join(str(p) for p in err["loc"])
            msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
            if err["type"] != "extra_forbidden" and "input" in err:
                msg += f" (got {err['input']!r})"
            problems.append((path, msg))
        return None, problems
