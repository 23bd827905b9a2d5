"""Everything wrong with a scenario, found before launch, each problem with its field path.

Three layers, all reported together: types and unknown keys (schema), arithmetic verl would
reject at start-up (batch sizes against the device count, clip ratios, steps), and verl's own
Hydra config composed with the overrides (unknown keys, bad values).
"""

from __future__ import annotations

from pathlib import Path

from workbook.command import hydra
from workbook.params.schema import Scenario
from workbook.quoting import cut

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


def _raw(s: Scenario, key: str) -> str | None:
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
        if (_raw(s, f"{role}.use_dynamic_bsz") or "").lower() == "true":
            continue
        raw = _raw(s, f"{role}.ppo_micro_batch_size_per_gpu")
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


def raw_overrides(s: Scenario) -> Problems:
    """Raw overrides must be ``key=value`` and must not fight a first-class field."""
    from workbook.command.builder import owned_keys  # the builder imports the schema

    p: Problems = []
    owned = owned_keys(s)
    for i, item in enumerate(s.overrides):
        if "=" not in item and not item.startswith("~"):
            p.append((f"overrides[{i}]", f"'{cut(item)}' is not a Hydra key=value override"))
            continue
        key = hydra.key_of(item)
        if not key:
            p.append((f"overrides[{i}]", f"'{cut(item)}' has no key: write key=value"))
            continue
        if key in owned:
            p.append((f"overrides[{i}]", f"'{cut(key)}' is set by a first-class field or by the workbook; "
                      "change that field instead"))
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


def rollouts(s: Scenario) -> Problems:
    """A pinned rollout dump must exist and hold this scenario's geometry (else nothing replays)."""
    from workbook.command.builder import dump_subdir

    if not s.rollouts.replay:
        return []
    folder = Path(s.rollouts.replay)
    if not folder.is_dir():
        return [("rollouts.replay", f"no such rollout dump folder: {folder}")]
    inner = folder / dump_subdir(s)
    if not inner.is_dir():
        found = sorted(str(p.relative_to(folder)) for p in folder.glob("*/*") if p.is_dir())
        return [("rollouts.replay", f"{folder} holds no dump for this scenario's names and batch "
                 f"shapes ({dump_subdir(s)}); it holds {', '.join(found) or 'nothing'}. Rollouts "
                 "replay only into runs of the same experiment, project and shapes")]
    return []


# Rollout-skip settings a trainer accepts but never reads (measured with verl 0.9.1 on CPU:
# no log line, no dump folder), and the keys that act instead.
_INERT = {True: ("skip.rollout.", "skip.rollout_tq."), False: ("skip.rollout_tq.", "skip.rollout.")}


def ignored_settings(s: Scenario) -> Problems:
    """Warnings (not errors): raw overrides the chosen trainer never reads, with the key that works.

    verl 0.9.1's default trainer (``trainer.use_v1=True``) reads its rollout skip from
    ``skip.rollout_tq.*``; ``skip.rollout.*`` is accepted and does nothing. The legacy trainer
    is the other way round; ``actor_rollout_ref.rollout.skip.*`` is forced off by both.
    """
    v1 = (_raw(s, "trainer.use_v1") or "True").lower() != "false"
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


def files(s: Scenario) -> Problems:
    """On the ``cpu`` profile the model and data live here, so they must exist now."""
    if s.profile != "cpu":
        return []
    p: Problems = []
    for name in ("model_path", "train_files", "val_files", "critic_model_path"):
        value = getattr(s, name)
        if value and not Path(value).exists():
            hint = " (run `workbook assets` to build the tiny CPU assets)" if "verl-workbook" in value else ""
            p.append((name, f"no such file or folder: {value}{hint}"))
    return p
