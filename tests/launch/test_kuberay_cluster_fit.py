"""KubeRay that fits a real cluster: pod-template fields, the device plugin's resource name, names
as KubeRay checks them, a required image, secrets only by reference, cleanup policy; and a run
(``workbook run -s launcher=kuberay``, so ``rayjob --apply``) against a fake ``kubectl``: RBAC
checked first, transient errors retried, a deadline, Ctrl-C, and names that are never reused.

Every manifest is validated against ``data/rayjob.schema.json`` (KubeRay v1 field names).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from tests.launch.test_kuberay import NPU_SCENARIO, VERL_LOG, fake_kubectl, run_on_kuberay, validate
from workbook.cli import rayjob as rayjob_cli
from workbook.core.layout import RunDir
from workbook.core.serialization import load_yaml_text
from workbook.errors import InputError, LaunchError, ParamsError
from workbook.launch.kuberay import kubectl
from workbook.launch.kuberay import manifest as kuberay_manifest
from workbook.params.schema import rayjob_name_problem
from workbook.scenario import load_scenario

__all__ = ["fake_kubectl"]  # the fixture, shared with test_kuberay
GSPO_2N = NPU_SCENARIO.parent / "gspo-qwen3-30b-a3b-2n16npu-megatron-vllm-rayjob.yaml"


def manifest_of(*sets: str, params: Path = NPU_SCENARIO, name: str | None = None) -> dict:
    parser = argparse.ArgumentParser()
    rayjob_cli.register(parser.add_subparsers())
    args = parser.parse_args(["rayjob", str(params), *[f"--set={s}" for s in sets],
                              *(["--name", name] if name else [])])
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert args.handler(args) == 0
    manifest = load_yaml_text(out.getvalue())
    validate(manifest)
    return manifest


def pods(manifest: dict) -> dict[str, dict]:
    cluster = manifest["spec"]["rayClusterSpec"]
    found = {"head": cluster["headGroupSpec"]["template"]["spec"],
             "worker": cluster["workerGroupSpecs"][0]["template"]["spec"]}
    if "submitterPodTemplate" in manifest["spec"]:
        found["submitter"] = manifest["spec"]["submitterPodTemplate"]["spec"]
    return found


# ---------------------------------------------------------------- pod-template fields

MODELS = "{name: models, persistentVolumeClaim: {claimName: verl-cache}}"
POD_FIELDS = [
    ("volumes", f"kuberay.pod.volumes=[{MODELS}]",
     lambda spec, c: {"name": "models", "persistentVolumeClaim": {"claimName": "verl-cache"}}
     in spec["volumes"] and spec["volumes"][0]["name"] == "dshm"),
    ("volumeMounts", "kuberay.pod.volumeMounts=[{name: dshm, mountPath: /cache, readOnly: true}]",
     lambda spec, c: {"name": "dshm", "mountPath": "/cache", "readOnly": True}
     in c["volumeMounts"]),
    ("hostPath", "kuberay.pod.volumes=[{name: data, hostPath: {path: /mnt/data, type: Directory}}]",
     lambda spec, c: spec["volumes"][1] == {"name": "data", "hostPath": {"path": "/mnt/data",
                                                                         "type": "Directory"}}),
    ("nfs", "kuberay.pod.volumes=[{name: data, nfs: {server: 10.0.0.2, path: /export}}]",
     lambda spec, c: spec["volumes"][1]["nfs"] == {"server": "10.0.0.2", "path": "/export"}),
    ("nodeSelector", "kuberay.pod.nodeSelector={accelerator: huawei-Ascend910}",
     lambda spec, c: spec["nodeSelector"] == {"accelerator": "huawei-Ascend910"}),
    ("tolerations", "kuberay.pod.tolerations=[{key: npu, operator: Exists, effect: NoSchedule}]",
     lambda spec, c: spec["tolerations"] == [{"key": "npu", "operator": "Exists",
                                               "effect": "NoSchedule"}]),
    ("affinity", "kuberay.pod.affinity={nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution"
     ": {nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: In, values: [npu]}]}]}}}",
     lambda spec, c: "nodeAffinity" in spec["affinity"]),
    ("imagePullSecrets", "kuberay.pod.imagePullSecrets=[{name: swr-pull}]",
     lambda spec, c: spec["imagePullSecrets"] == [{"name": "swr-pull"}]),
    ("imagePullPolicy", "kuberay.pod.imagePullPolicy=IfNotPresent",
     lambda spec, c: c["imagePullPolicy"] == "IfNotPresent"),
    ("env-secretKeyRef", "kuberay.pod.env=[{name: HF_TOKEN, valueFrom: {secretKeyRef: "
     "{name: hf, key: token}}}]",
     lambda spec, c: c["env"] == [{"name": "HF_TOKEN", "valueFrom": {
         "secretKeyRef": {"name": "hf", "key": "token"}}}]),
    ("envFrom", "kuberay.pod.envFrom=[{secretRef: {name: wandb}}]",
     lambda spec, c: c["envFrom"] == [{"secretRef": {"name": "wandb"}}]),
    ("schedulerName", "kuberay.pod.schedulerName=volcano",
     lambda spec, c: spec["schedulerName"] == "volcano"),
]


@pytest.mark.parametrize(("setting", "check"), [(s, c) for _, s, c in POD_FIELDS],
                         ids=[n for n, _, _ in POD_FIELDS])
def test_each_pod_template_field_reaches_every_ray_pod(setting: str, check: Any) -> None:
    # on the seed scenario without its own cache volume, so each row is the only pod setting
    manifest = manifest_of("kuberay.pod.volumes=[]", "kuberay.pod.volumeMounts=[]", setting)
    for role in ("head", "worker"):
        spec = pods(manifest)[role]
        assert check(spec, spec["containers"][0]), role


def test_worker_pod_fields_add_to_the_pods_and_reach_the_workers_only() -> None:
    manifest = manifest_of(f"kuberay.pod.volumes=[{MODELS}]",
                           "kuberay.pod.volumeMounts=[{name: models, mountPath: /models}]",
                           "kuberay.worker_pod.nodeSelector={pool: npu}",
                           "kuberay.worker_pod.tolerations=[{key: npu, operator: Exists}]",
                           "kuberay.worker_pod.volumeMounts=[{name: models, mountPath: /x}]")
    head, worker = pods(manifest)["head"], pods(manifest)["worker"]
    assert "nodeSelector" not in head and worker["nodeSelector"] == {"pool": "npu"}
    mounts = [m["mountPath"] for m in worker["containers"][0]["volumeMounts"]]
    assert mounts == ["/dev/shm", "/models", "/x"]
    assert [m["mountPath"] for m in head["containers"][0]["volumeMounts"]] == ["/dev/shm", "/models"]


def test_the_submitter_pod_pulls_the_head_image_with_the_pods_pull_secrets() -> None:
    manifest = manifest_of("kuberay.pod.imagePullSecrets=[{name: swr-pull}]",
                           "kuberay.submitter_pod.nodeSelector={pool: cpu}")
    submitter = pods(manifest)["submitter"]
    (container,) = submitter["containers"]
    assert container["name"] == "ray-job-submitter" and "command" not in container
    assert container["image"] == pods(manifest)["head"]["containers"][0]["image"]
    assert submitter["imagePullSecrets"] == [{"name": "swr-pull"}]
    assert submitter["nodeSelector"] == {"pool": "cpu"} and submitter["restartPolicy"] == "Never"


@pytest.mark.parametrize(
    ("setting", "field"),
    [
        ("kuberay.pod.volumes=[{name: m, persistentVolumeClaim: {claimName: c}, nfs: "
         "{server: s, path: /p}}]", "kuberay.pod.volumes.0"),
        ("kuberay.pod.volumes=[{name: Models, emptyDir: {}}]", "kuberay.pod.volumes.0.name"),
        ("kuberay.pod.volumeMounts=[{name: nowhere, mountPath: /x}]",
         "kuberay.pod.volumeMounts[0]"),
        ("kuberay.pod.volumeMounts=[{name: dshm, mountPath: relative}]",
         "kuberay.pod.volumeMounts.0.mountPath"),
        ("kuberay.pod.volumeMounts=[{name: dshm, mount_path: /x}]",
         "kuberay.pod.volumeMounts.0.mount_path"),
        ("kuberay.pod.tolerations=[{operator: Sometimes}]",
         "kuberay.pod.tolerations.0.operator"),
        ("kuberay.pod.affinity={nodeAfinity: {}}", "kuberay.pod.affinity"),
        ("kuberay.pod.imagePullPolicy=Sometimes", "kuberay.pod.imagePullPolicy"),
        ("kuberay.pod.env=[{name: HF_TOKEN, value: hf_abc}]", "kuberay.pod.env.0.value"),
        ("kuberay.pod.env=[{name: T, valueFrom: {}}]", "kuberay.pod.env.0.valueFrom"),
        ("kuberay.pod.envFrom=[{prefix: X_}]", "kuberay.pod.envFrom.0"),
        ("kuberay.pod.schedulerName=Volcano!", "kuberay.pod.schedulerName"),
        ("kuberay.submission_mode=HTTPMode", "kuberay.submitter_pod"),
        ("kuberay.device_resource=ascend 910", "kuberay.device_resource"),
        ("kuberay.namespace=RL_Team", "kuberay.namespace"),
        ("kuberay.name=Nightly_PPO", "kuberay.name"),
        ("kuberay.deletion_rules=[{policy: DeleteCluster, condition: {jobStatus: FAILED}}]",
         "kuberay.deletion_rules"),
        ("kuberay.deletion_rules=[{policy: DeleteAll, condition: {jobStatus: FAILED}}]",
         "kuberay.deletion_rules.0.policy"),
        ("kuberay.on_interrupt=kill", "kuberay.on_interrupt"),
    ],
    ids=["two-sources", "volume-name", "mount-no-volume", "mount-relative", "snake-case-key",
         "toleration-operator", "affinity-kind", "pull-policy", "env-plain-value",
         "env-no-ref", "envfrom-no-ref", "scheduler-name", "submitter-not-k8sjob",
         "device-resource", "namespace", "job-name", "rules-with-shutdown", "rule-policy", "on-interrupt"],
)
def test_a_pod_template_field_kuberay_would_refuse_is_named(setting: str, field: str) -> None:
    sets = [setting]
    if setting.startswith("kuberay.submission_mode"):
        sets.insert(0, "kuberay.submitter_pod.nodeSelector={pool: cpu}")
    with pytest.raises(ParamsError) as err:
        load_scenario(NPU_SCENARIO, sets, check_files=False, variables={"HOME": "${HOME}"})
    fields = [f for f, _ in err.value.problems]
    assert any(f.startswith(field) for f in fields), fields
    assert len(str(err.value)) < 2000


# ---------------------------------------------------------------- devices, image, cleanup

@pytest.mark.parametrize(
    ("sets", "resource"),
    [([], "huawei.com/ascend-1980"),  # Huawei CCE's device plugin (the default)
     (["kuberay.device_resource=huawei.com/Ascend910"], "huawei.com/Ascend910")],  # MindCluster
    ids=["cce-default", "mindcluster"],
)
def test_the_device_resource_is_the_device_plugins(sets: list[str], resource: str) -> None:
    worker = pods(manifest_of(*sets))["worker"]["containers"][0]["resources"]
    assert worker["limits"][resource] == worker["requests"][resource] == "4"
    assert len([k for k in worker["limits"] if "/" in k]) == 1
    assert kuberay_manifest.MINDCLUSTER_NPU == "huawei.com/Ascend910"


@pytest.mark.parametrize("image", ["null", "''"], ids=["unset", "empty"])
def test_an_image_is_required_never_a_cpu_image_without_verl(image: str) -> None:
    parser = argparse.ArgumentParser()
    rayjob_cli.register(parser.add_subparsers())
    args = parser.parse_args(["rayjob", str(NPU_SCENARIO), f"--set=kuberay.image={image}"])
    with pytest.raises((InputError, ParamsError), match="image"):
        args.handler(args)


def test_cleanup_by_deletion_rules_replaces_shutdown() -> None:
    manifest = manifest_of(
        "kuberay.shutdown_after_job_finishes=false",
        "kuberay.on_interrupt=delete",
        "kuberay.deletion_rules=[{policy: DeleteCluster, condition: {jobStatus: SUCCEEDED, "
        "ttlSeconds: 60}}, {policy: DeleteSelf, condition: {jobDeploymentStatus: Failed}}]")
    spec = manifest["spec"]
    assert spec["shutdownAfterJobFinishes"] is False and "ttlSecondsAfterFinished" not in spec
    assert spec["deletionStrategy"] == {"deletionRules": [
        {"policy": "DeleteCluster", "condition": {"jobStatus": "SUCCEEDED", "ttlSeconds": 60}},
        {"policy": "DeleteSelf", "condition": {"jobDeploymentStatus": "Failed", "ttlSeconds": 0}},
    ]}


# ---------------------------------------------------------------- secrets

@pytest.mark.parametrize(
    "setting",
    ["env.HF_TOKEN=abc", "env.WANDB_API_KEY=0123456789", "env.HUB=hf_abcdefghijklmnopqrstuvwxyz123456"],
    ids=["token-name", "api-key-name", "token-shape"],
)
def test_a_secret_looking_env_value_is_refused_pointing_to_secret_key_ref(setting: str) -> None:
    with pytest.raises(InputError, match="secretKeyRef") as err:
        manifest_of(setting)
    assert setting.split("=", 1)[1] not in err.value.message  # the value is never quoted


def test_a_secret_by_reference_is_in_the_pods_not_the_runtime_env() -> None:
    manifest = manifest_of("kuberay.pod.env=[{name: HF_TOKEN, valueFrom: {secretKeyRef: "
                           "{name: hf, key: token}}}]")
    assert "HF_TOKEN" not in manifest["spec"]["runtimeEnvYAML"]
    assert pods(manifest)["worker"]["containers"][0]["env"][0]["name"] == "HF_TOKEN"


# ---------------------------------------------------------------- names

@pytest.mark.parametrize(
    ("name", "ok"),
    [("a" * 40, True), ("a" * 41, False), ("9lives", False), ("gspo_30b", False),
     ("Nightly", False), ("gspo30b-2n16-1234567890-1", True)],
    ids=["40-chars", "41-chars", "leading-digit", "underscore", "upper-case", "ci-name"],
)
def test_a_given_name_is_checked_as_kubeRay_checks_it(name: str, ok: bool) -> None:
    if ok:
        made = kuberay_manifest.rayjob_name(name, "20260101T000000Z-abcdef", exact=True)
        assert made == f"{name}-abcdef" and rayjob_name_problem(made) is None
    else:
        with pytest.raises(InputError, match="--name"):
            kuberay_manifest.rayjob_name(name, "20260101T000000Z-abcdef", exact=True)


@pytest.mark.parametrize("scenario", [NPU_SCENARIO, GSPO_2N], ids=["ppo-2n4", "gspo-2n16"])
def test_default_names_fit_kubeRays_47_characters(scenario: Path) -> None:
    name = manifest_of(params=scenario)["metadata"]["name"]
    assert len(name) <= 47 and rayjob_name_problem(name) is None
    assert name.startswith(kuberay_manifest.k8s_name(scenario.stem)[:20])


def test_a_scenario_name_starting_with_a_digit_still_makes_a_dns_1035_name() -> None:
    name = kuberay_manifest.rayjob_name("8b-gspo", "20260101T000000Z-abcdef")
    assert name == "wb-8b-gspo-abcdef"


# ---------------------------------------------------------------- a run with a fake kubectl

def _apply(tmp_path: Path, *sets: str) -> tuple[int, RunDir]:
    return run_on_kuberay(tmp_path / "runs", *sets)


def _calls(state: Path) -> list[list[str]]:
    return [json.loads(line) for line in (state / "calls.jsonl").read_text().splitlines()]


def _ok(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_KUBE_JOB", "SUCCEEDED")
    monkeypatch.setenv("FAKE_KUBE_LOG", str(VERL_LOG))
    monkeypatch.setenv("FAKE_KUBE_EXEC", "ok")


def test_transient_api_errors_are_retried_and_the_run_passes(
    fake_kubectl: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    _ok(monkeypatch)
    monkeypatch.setenv("FAKE_KUBE_FLAKY", "3")  # three `get rayjob` calls fail, then it answers
    code, rd = _apply(tmp_path)
    assert code == 0 and rd.read_json("checks")["verdict"]["status"] == "passed"
    gets = [c for c in _calls(fake_kubectl) if c[1:3] == ["get", "rayjob"]]
    assert len(gets) >= 5  # 3 failures, then Running, then Complete


def test_an_api_server_gone_for_good_fails_the_run_after_its_retries(
    fake_kubectl: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    _ok(monkeypatch)
    monkeypatch.setenv("FAKE_KUBE_FLAKY", "1000")
    code, rd = _apply(tmp_path)
    assert code == 3
    assert f"({kubectl.RETRIES} attempts)" in rd.read_json("run")["message"]


def test_missing_permissions_are_listed_before_anything_is_submitted(
    fake_kubectl: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    _ok(monkeypatch)
    monkeypatch.setenv("FAKE_KUBE_DENY", "delete rayjobs.ray.io,get pods/log")
    code, rd = _apply(tmp_path)
    message = rd.read_json("run")["message"]
    assert code == 3 and "delete rayjobs.ray.io" in message and "get pods/log" in message
    assert not (fake_kubectl / "applied.json").exists()
    asked = {" ".join(c[2:4]) for c in _calls(fake_kubectl) if c[:2] == ["auth", "can-i"]}
    assert {f"{verb} {resource}" for verb, resource, _ in kubectl.RBAC} <= asked


def test_a_job_that_never_ends_is_deleted_at_the_deadline_and_is_a_timeout(
    fake_kubectl: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    _ok(monkeypatch)
    monkeypatch.setenv("FAKE_KUBE_JOB", "RUNNING")
    monkeypatch.setattr(kubectl, "POLL_S", 0.05)
    code, rd = _apply(tmp_path, "kuberay.apply_timeout_s=0.3")
    assert code == 3
    run = rd.read_json("run")
    assert run["status"] == "timeout" and "deadline of 0.3 s" in run["message"]
    stopped = [json.loads(x) for x in (fake_kubectl / "stopped.jsonl").read_text().splitlines()]
    name = json.loads((fake_kubectl / "applied.json").read_text())["metadata"]["name"]
    assert stopped == [["delete", "rayjob", name, "-n", "default", "--wait=false",
                        "--ignore-not-found"]]


@pytest.mark.parametrize("how", ["delete", "suspend"])
def test_ctrl_c_stops_the_job_and_the_run_is_stopped(
    fake_kubectl: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, how: str,
) -> None:
    _ok(monkeypatch)
    monkeypatch.setenv("FAKE_KUBE_JOB", "RUNNING")
    real = kubectl.rayjob_status
    polls = []

    def interrupted(name: str, namespace: str) -> dict:
        polls.append(name)
        if len(polls) == 2:
            raise KeyboardInterrupt
        return real(name, namespace)

    monkeypatch.setattr(kubectl, "rayjob_status", interrupted)
    code, rd = _apply(tmp_path, f"kuberay.on_interrupt={how}")
    assert code == 3 and rd.read_json("run")["status"] == "stopped"
    (stop,) = [json.loads(x) for x in (fake_kubectl / "stopped.jsonl").read_text().splitlines()]
    assert stop[0] == ("patch" if how == "suspend" else "delete")
    if how == "suspend":
        assert json.loads(stop[-1]) == {"spec": {"suspend": True}}


def test_a_reused_name_prefix_never_reads_the_previous_jobs_result(
    fake_kubectl: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    _ok(monkeypatch)
    monkeypatch.setenv("FAKE_KUBE_JOB", "FAILED")
    first, _ = _apply(tmp_path, "kuberay.name=nightly-ppo")
    monkeypatch.setenv("FAKE_KUBE_JOB", "SUCCEEDED")
    second, rd = _apply(tmp_path, "kuberay.name=nightly-ppo")
    assert (first, second) == (3, 0)  # the second run judged its own job, not the failed one
    created = sorted(p.name for p in fake_kubectl.glob("created-*.json"))
    assert len(created) == 2 and all(n.startswith("created-nightly-ppo-") for n in created)
    assert all(c[0] != "apply" for c in _calls(fake_kubectl))  # created, never applied over


def test_a_name_already_taken_is_refused_not_updated(
    fake_kubectl: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    _ok(monkeypatch)
    manifest = manifest_of(name="taken")
    kubectl.submit(manifest)
    with pytest.raises(LaunchError, match="already exists: not reading an earlier job"):
        kubectl.submit(manifest)


@pytest.mark.parametrize("params", [NPU_SCENARIO, GSPO_2N], ids=lambda p: p.stem)
def test_the_shipped_multinode_jobs_mount_their_model_and_data_in_every_ray_pod(params: Path) -> None:
    """The pods are ephemeral: what the scenario reads under ${HOME} comes from the cache claim."""
    manifest = manifest_of(params=params)
    for role, spec in pods(manifest).items():
        if role == "submitter":
            continue
        claims = {v["name"]: v["persistentVolumeClaim"]["claimName"]
                  for v in spec["volumes"] if "persistentVolumeClaim" in v}
        mounts = {m["mountPath"] for c in spec["containers"] for m in c["volumeMounts"]
                  if m["name"] in claims}
        assert claims and {"/root/.cache", "/root/data"} <= mounts, (role, spec)


def test_a_manifest_is_written_without_yaml_aliases() -> None:
    text = kuberay_manifest.manifest_yaml(manifest_of(params=GSPO_2N))
    assert "&id" not in text and "*id" not in text
