"""Everything wrong with a scenario, found before launch, each problem with its field path.

Three layers, all reported together: types and unknown keys (schema), arithmetic verl would
reject at start-up (batch sizes against the device count, clip ratios, steps), and verl's own
Hydra config composed with the overrides (unknown keys, bad values).
"""

from __future__ import annotations

from workbook.core.quoting import cut
from workbook.params import hydra
from workbook.params.schema import Scenario

Problems = list[tuple[str, str]]


def arithmetic(s: Scenario) -> Problems:
    """Batch geometry verl would refuse after minutes of start-up.

    Each number's own range (counts >= 1, ratios, lr, seed, finite) is the schema's; this is
    what only the numbers together can get wrong.
    """
    p: Problems = []
    world = s.world_size
    if s.ppo_mini_batch_size > s.train_batch_size:
        p.append(("ppo_mini_batch_size",
                  f"{s.ppo_mini_batch_size} is larger than train_batch_size {s.train_batch_size}"))
    elif s.train_batch_size % s.ppo_mini_batch_size:
        p.append(("ppo_mini_batch_size",
                  f"train_batch_size {s.train_batch_size} is not a multiple of it ({s.ppo_mini_batch_size})"))
    if (s.train_batch_size * s.rollout_n) % world:
        p.append(("train_batch_size", f"train_batch_size x rollout_n = {s.train_batch_size * s.rollout_n} "
                  f"is not divisible by the {world} devices (verl requires it)"))
    if world % s.sequence_parallel_size:
        p.append(("sequence_parallel_size", f"{s.sequence_parallel_size} does not divide the {world} devices"))
    else:
        dp = world // s.sequence_parallel_size
        if (s.ppo_mini_batch_size * s.rollout_n) % dp:
            p.append(("ppo_mini_batch_size", f"ppo_mini_batch_size x rollout_n = "
                      f"{s.ppo_mini_batch_size * s.rollout_n} is not divisible by the data-parallel size {dp}"))
    if world % s.rollout_tp:
        p.append(("rollout_tp", f"{s.rollout_tp} does not divide the {world} devices"))
    p += micro_batches(s)
    return p


def raw_value(s: Scenario, key: str) -> str | None:
    """The value a raw override gives ``key`` (the last one wins, as in Hydra)."""
    found = None
    for item in s.overrides:
        if "=" in item and hydra.key_of(item) == key:
            found = item.split("=", 1)[1].strip()
    return found


def micro_batches(s: Scenario) -> Problems:
    """Without dynamic batch sizes verl splits each rank's mini batch into micro batches and
    asserts they divide it -- but only once the first update runs, minutes into a job."""
    p: Problems = []
    dp = s.world_size // s.sequence_parallel_size if s.world_size % s.sequence_parallel_size == 0 else 0
    per_rank = s.ppo_mini_batch_size * s.rollout_n // dp if dp else 0
    for role in ("actor_rollout_ref.actor", "critic"):
        if role == "critic" and not s.uses_critic:
            continue
        if (raw_value(s, f"{role}.use_dynamic_bsz") or "").lower() == "true":
            continue
        raw = raw_value(s, f"{role}.ppo_micro_batch_size_per_gpu")
        if raw is None or not raw.isdigit() or not per_rank:
            continue
        if len(raw) > 9 or int(raw) < 1:
            p.append((f"overrides: {role}.ppo_micro_batch_size_per_gpu={cut(raw, 20)}",
                      f"must be a positive integer of at most 9 digits (got {cut(raw, 20)})"))
            continue
        if per_rank % int(raw):
            p.append((f"overrides: {role}.ppo_micro_batch_size_per_gpu={raw}",
                      f"each of the {dp} data-parallel ranks gets ppo_mini_batch_size x rollout_n / {dp} "
                      f"= {per_rank} samples per update, which {raw} does not divide"))
    return p


def ray_settings(s: Scenario) -> Problems:
    """A local cluster on demand is for the Ray launcher, instead of an address."""
    p: Problems = []
    if s.ray.local_nodes is not None:
        if s.launcher != "ray":
            p.append(("ray.local_nodes", "starts a local Ray cluster for launcher: ray only"))
        if s.ray.address:
            p.append(("ray.local_nodes", "give either ray.address or ray.local_nodes, not both"))
        if s.ray.local_nodes < s.nodes:
            p.append(("ray.local_nodes", f"{s.ray.local_nodes} local nodes cannot host the "
                      f"{s.nodes} nodes the scenario trains on"))
    return p


_INERT = {True: ("skip.rollout.", "skip.rollout_tq."), False: ("skip.rollout_tq.", "skip.rollout.")}


def ignored_settings(s: Scenario) -> Problems:
    """Warnings (not errors): raw overrides the chosen trainer never reads, with the key that works.

    verl 0.9.1's default trainer (``trainer.use_v1=True``) reads its rollout skip from
    ``skip.rollout_tq.*``; ``skip.rollout.*`` is accepted and does nothing. The legacy trainer
    is the other way round; ``actor_rollout_ref.rollout.skip.*`` is forced off by both.
    """
    v1 = (raw_value(s, "trainer.use_v1") or "True").lower() != "false"
    inert, works = _INERT[v1]
    trainer = "the default V1 trainer (trainer.use_v1=True)" if v1 else "the legacy trainer"
    warnings: Problems = []
    for item in s.overrides:
        key = hydra.key_of(item)
        if key.startswith(inert):
            warnings.append((f"overrides: {item}", f"{trainer} never reads {key}; use "
                             f"{works}{key[len(inert):]}"))
        elif key.startswith("actor_rollout_ref.rollout.skip."):
            warnings.append((f"overrides: {item}", f"verl forces {key} off; use "
                             f"{works}{key.rsplit('.', 1)[-1]}"))
    return warnings


def data_section(s: Scenario) -> Problems:
    """A ``data:`` section names what its script needs (checked wherever the run goes)."""
    d = s.data
    if not d.enabled:
        unused = [k for k in ("local_dataset_path", "local_save_dir") if getattr(d, k)]
        return [(f"data.{k}", "has no effect without data.script") for k in unused]
    p: Problems = []
    if not d.local_save_dir:
        p.append(("data.local_save_dir", "required with data.script: where its outputs go"))
    if not d.local_dataset_path:
        p.append(("data.local_dataset_path", "required with data.script: the raw dataset on "
                  "this machine (nothing is downloaded)"))
    for i, arg in enumerate(d.args):
        if arg.split("=", 1)[0] in ("--local_dataset_path", "--local_save_dir", "--local_dir"):
            p.append((f"data.args[{i}]", f"{cut(arg)} is set by data.local_dataset_path / "
                      "data.local_save_dir"))
    return p


def kuberay_settings(s: Scenario) -> Problems:
    """What KubeRay itself would refuse, or the pods could not do, in the ``kuberay:`` section."""
    k, p = s.kuberay, []
    if k.deletion_rules and k.shutdown_after_job_finishes:
        p.append(("kuberay.deletion_rules", "KubeRay refuses deletionRules together with "
                  "shutdownAfterJobFinishes: set kuberay.shutdown_after_job_finishes: false"))
    if k.on_interrupt == "suspend" and not k.shutdown_after_job_finishes:
        p.append(("kuberay.on_interrupt", "KubeRay suspends only a RayJob with "
                  "shutdownAfterJobFinishes: use delete, or keep shutdown_after_job_finishes"))
    if k.submitter_pod.as_k8s() and k.submission_mode != "K8sJobMode":
        p.append(("kuberay.submitter_pod", f"only K8sJobMode has a submitter pod (this is "
                  f"{k.submission_mode})"))
    if s.launcher == "kuberay" and s.verl.path and s.verl.path.startswith("/"):
        # every worker imports the checkout from its path (first on the job's PYTHONPATH), as
        # verl's own multinode job keeps its checkout in the cache volume all its pods mount
        mounts = [m.mount_path.rstrip("/") for m in k.pod.volume_mounts]
        if not any(s.verl.path == m or s.verl.path.startswith(m + "/") for m in mounts):
            p.append(("verl.path", f"{cut(s.verl.path, 200)} is on no volume every pod mounts "
                      "(kuberay.pod.volumeMounts): the workers could not import the checkout; put "
                      "it on the shared cache volume"))
    for section, volumes in (("pod", k.pod.volumes), ("worker_pod", k.pod.volumes + k.worker_pod.volumes),
                             ("submitter_pod", k.submitter_pod.volumes)):
        pod = getattr(k, section)
        known = {v.name for v in volumes} | ({"dshm"} if section != "submitter_pod" else set())
        for i, mount in enumerate(pod.volume_mounts):
            if mount.name not in known:
                p.append((f"kuberay.{section}.volumeMounts[{i}]", f"names no volume "
                          f"{mount.name!r}; its pods have {', '.join(sorted(known)) or 'none'}"))
        if section == "worker_pod":
            names = [v.name for v in volumes]
            doubled = sorted({n for n in names if names.count(n) > 1} | ({"dshm"} & set(names)))
            p += [(f"kuberay.{section}.volumes", f"volume {n!r} is already a volume of the pods")
                  for n in doubled]
    return p
