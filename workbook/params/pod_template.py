"""The ``kuberay.pod`` / ``worker_pod`` / ``submitter_pod`` sections: Kubernetes pod-template fields.

Keys are spelled exactly as in Kubernetes' core/v1 PodSpec, Container, Volume and EnvVar
(``volumeMounts``, ``nodeSelector``, ``secretKeyRef`` ...), so a cluster admin's snippet pastes
in as written; each object is typed here, so a typo fails validation instead of being pruned
silently by the API server. Environment values come only by reference (``valueFrom``,
``envFrom``): a value written here would land in plain text in the RayJob object.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

# A DNS-1123 label (volume, Secret, ConfigMap and claim names) and a C identifier-ish env name.
LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
ENV_NAME = r"^[-._a-zA-Z][-._a-zA-Z0-9]*$"
ABSOLUTE = r"^/"

Label = Annotated[str, Field(pattern=LABEL, max_length=63)]
Subdomain = Annotated[str, Field(pattern=SUBDOMAIN, max_length=253)]
EnvName = Annotated[str, Field(pattern=ENV_NAME, max_length=256)]
AbsolutePath = Annotated[str, Field(pattern=ABSOLUTE, max_length=4096)]
Quantity = Annotated[str, Field(pattern=r"^[0-9]+(\.[0-9]+)?([KMGTPE]i|[kMGTPE]|m)?$")]


class _K8s(BaseModel):
    """Kubernetes spelling only (camelCase aliases; a snake_case key is an unknown key)."""

    model_config = ConfigDict(extra="forbid", frozen=True, alias_generator=to_camel,
                              populate_by_name=False, allow_inf_nan=False)


def _exactly_one(model: BaseModel, names: tuple[str, ...], what: str) -> None:
    given = [n for n in names if getattr(model, n) is not None]
    if len(given) != 1:
        spelled = ", ".join(to_camel(n) for n in names)
        raise ValueError(f"{what} needs exactly one of {spelled}"
                         + (f" (got {', '.join(to_camel(n) for n in given)})" if given else ""))


class EmptyDir(_K8s):
    medium: Literal["", "Memory"] | None = None
    size_limit: Quantity | None = None


class HostPath(_K8s):
    path: AbsolutePath
    type: Literal["", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket",
                  "CharDevice", "BlockDevice"] | None = None


class ClaimSource(_K8s):
    claim_name: Subdomain
    read_only: bool | None = None


class NfsSource(_K8s):
    server: str = Field(min_length=1)
    path: AbsolutePath
    read_only: bool | None = None


class ConfigMapSource(_K8s):
    name: Subdomain
    optional: bool | None = None


class SecretSource(_K8s):
    secret_name: Subdomain
    optional: bool | None = None


class Volume(_K8s):
    """One pod volume: a name and exactly one source (the model, data and rollout caches)."""

    name: Label
    empty_dir: EmptyDir | None = None
    host_path: HostPath | None = None
    persistent_volume_claim: ClaimSource | None = None
    nfs: NfsSource | None = None
    config_map: ConfigMapSource | None = None
    secret: SecretSource | None = None

    @model_validator(mode="after")
    def _one_source(self) -> Volume:
        _exactly_one(self, ("empty_dir", "host_path", "persistent_volume_claim", "nfs",
                            "config_map", "secret"), f"volume {self.name!r}")
        return self


class VolumeMount(_K8s):
    name: Label
    mount_path: AbsolutePath
    read_only: bool | None = None
    sub_path: str | None = None


class Toleration(_K8s):
    key: str | None = None
    operator: Literal["Exists", "Equal"] | None = None
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    toleration_seconds: int | None = None


class LocalObjectReference(_K8s):
    name: Subdomain


class KeySelector(_K8s):
    name: Subdomain
    key: str = Field(min_length=1, pattern=r"^[-._a-zA-Z0-9]+$")
    optional: bool | None = None


class EnvVarSource(_K8s):
    secret_key_ref: KeySelector | None = None
    config_map_key_ref: KeySelector | None = None

    @model_validator(mode="after")
    def _one_ref(self) -> EnvVarSource:
        _exactly_one(self, ("secret_key_ref", "config_map_key_ref"), "valueFrom")
        return self


class EnvVar(_K8s):
    """An environment variable by reference only: ``valueFrom.secretKeyRef`` (or a ConfigMap).

    A plain ``value`` is refused (unknown key): non-secret values belong in the scenario's
    ``env:``, secret ones in a Kubernetes Secret.
    """

    name: EnvName
    value_from: EnvVarSource


class RefName(_K8s):
    name: Subdomain
    optional: bool | None = None


class EnvFromSource(_K8s):
    prefix: str | None = None
    secret_ref: RefName | None = None
    config_map_ref: RefName | None = None

    @model_validator(mode="after")
    def _one_ref(self) -> EnvFromSource:
        _exactly_one(self, ("secret_ref", "config_map_ref"), "envFrom")
        return self


_AFFINITY_KINDS = ("nodeAffinity", "podAffinity", "podAntiAffinity")


class PodSettings(_K8s):
    """Pod-template fields added to the Ray pods (``volumes``, ``nodeSelector``, ...).

    ``volumeMounts``, ``env``, ``envFrom`` and ``imagePullPolicy`` go on the Ray container;
    the rest on the pod spec. ``affinity`` is passed as written (its three kinds checked).
    """

    volumes: list[Volume] = Field(default_factory=list)
    volume_mounts: list[VolumeMount] = Field(default_factory=list)
    node_selector: dict[str, str] = Field(default_factory=dict)
    tolerations: list[Toleration] = Field(default_factory=list)
    affinity: dict[str, Any] | None = None
    image_pull_secrets: list[LocalObjectReference] = Field(default_factory=list)
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] | None = None
    env: list[EnvVar] = Field(default_factory=list)
    env_from: list[EnvFromSource] = Field(default_factory=list)
    scheduler_name: str | None = Field(default=None, pattern=SUBDOMAIN)

    @model_validator(mode="after")
    def _consistent(self) -> PodSettings:
        names = [v.name for v in self.volumes]
        doubled = sorted({n for n in names if names.count(n) > 1})
        if doubled:
            raise ValueError(f"volume name(s) given twice: {', '.join(doubled)}")
        return self

    @field_validator("affinity")
    @classmethod
    def _affinity_kinds(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        bad = sorted(str(k)[:40] for k in set(value or {}) - set(_AFFINITY_KINDS))
        if bad:
            raise ValueError(f"unknown kind(s) {', '.join(bad)}; known: {', '.join(_AFFINITY_KINDS)}")
        return value

    def as_k8s(self) -> dict[str, Any]:
        """The fields as Kubernetes spells them, unset ones left out."""
        return self.model_dump(by_alias=True, exclude_none=True, exclude_defaults=True)


class DeletionCondition(_K8s):
    job_status: Literal["SUCCEEDED", "FAILED"] | None = None
    job_deployment_status: Literal["Failed"] | None = None
    ttl_seconds: int = Field(default=0, ge=0, le=2**31 - 1)

    @model_validator(mode="after")
    def _one_status(self) -> DeletionCondition:
        _exactly_one(self, ("job_status", "job_deployment_status"), "a deletion condition")
        return self


class DeletionRule(_K8s):
    """One rule of KubeRay's ``deletionStrategy.deletionRules`` (RayJobDeletionPolicy gate)."""

    policy: Literal["DeleteCluster", "DeleteWorkers", "DeleteSelf", "DeleteNone"]
    condition: DeletionCondition
