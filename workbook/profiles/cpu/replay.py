"""verl's rollout backend for a run that replays every step: weights in, no inference server.

verl 0.9.1 starts its vLLM server (an HTTP server, an engine core and a worker process, each
importing torch and vLLM) even when its rollout skip hands the trainer every step's batch from a
dump: the server only receives the weights after each step, and nothing asks it to generate. On
2 cores that start-up was 48-53 s of a tiny run's 160-170 s. verl imports this module (through
``VERL_USE_EXTERNAL_MODULES``) only into a ``cpu`` run whose every step is replayed, where the
command names its backend (``actor_rollout_ref.rollout.name=replay``). It registers that backend
in verl's two registries, the actor worker's rollout class and the trainer's replica class, so
verl's own trainer, workers, weight sync and rollout skip run as they are. The replayed
scenarios train the same numbers to the last digit with it. Validation refuses a dump that lacks
a step the run replays, so no step asks this backend to generate.
"""

from __future__ import annotations

from typing import Any

from verl.workers.rollout import base
from verl.workers.rollout.replica import RolloutReplica, RolloutReplicaRegistry

NAME = "replay"


class ReplayedRollout(base.BaseRollout):
    """The actor worker's side: the weight sync and the memory calls succeed and move nothing."""

    async def resume(self, tags: list[str]) -> None:
        return None

    async def update_weights(self, weights: Any, wire_format: str = "named_tensors",
                             **kwargs: Any) -> None:
        return None

    async def release(self) -> None:
        return None

    def generate_sequences(self, prompts: Any) -> Any:
        raise RuntimeError("the replay rollout backend generates nothing: every step of this run "
                           "must come from its rollout dump")


class ReplayedReplica(RolloutReplica):
    """The trainer's side: a replica without servers, so sleep, wake-up and abort reach none."""

    async def launch_servers(self) -> None:
        self.servers: list[Any] = []


def install() -> None:
    """Register the ``replay`` backend (the worker registry takes a dotted path, imported there)."""
    base._ROLLOUT_REGISTRY[(NAME, "async")] = f"{__name__}.{ReplayedRollout.__name__}"
    RolloutReplicaRegistry.register(NAME, lambda: ReplayedReplica)


install()
