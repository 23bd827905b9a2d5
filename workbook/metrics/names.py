"""Canonical metric names across verl versions.

verl renamed metrics over time; a baseline written against one version must still compare with a
run of another, so every reader maps names through :func:`canonical` and keeps the name as logged
in ``RunMetrics.original_names``.

Old name (verl version)                         canonical name
``timing/<stage>`` (<= 0.1)                     ``timing_s/<stage>``
``timing_per_token/<stage>`` (<= 0.1, seconds)  ``timing_per_token_ms/<stage>`` (value x 1000)
``mfu/<role>``                                  ``perf/mfu/<role>``
``perf/max_memory_allocated_gb`` (< 0.5 V1)     ``actor/perf/max_memory_allocated_gb``
``perf/max_memory_reserved_gb``                 ``actor/perf/max_memory_reserved_gb``
``perf/cpu_memory_used_gb``                     ``actor/perf/cpu_memory_used_gb``
``critic/kl`` (<= 0.1, KL-in-reward)            ``actor/reward_kl_penalty``
``critic/kl_coeff`` (<= 0.1)                    ``actor/reward_kl_penalty_coeff``
"""

from __future__ import annotations

from typing import NamedTuple


class Canonical(NamedTuple):
    """A canonical name and the factor that converts the logged value into its unit."""

    name: str
    scale: float = 1.0


_EXACT: dict[str, Canonical] = {
    "perf/max_memory_allocated_gb": Canonical("actor/perf/max_memory_allocated_gb"),
    "perf/max_memory_reserved_gb": Canonical("actor/perf/max_memory_reserved_gb"),
    "perf/cpu_memory_used_gb": Canonical("actor/perf/cpu_memory_used_gb"),
    "critic/kl": Canonical("actor/reward_kl_penalty"),
    "critic/kl_coeff": Canonical("actor/reward_kl_penalty_coeff"),
}

# (old prefix, new prefix, scale): old verl logged per-token times in seconds, new in milliseconds.
_PREFIXES: tuple[tuple[str, str, float], ...] = (
    ("timing/", "timing_s/", 1.0),
    ("timing_per_token/", "timing_per_token_ms/", 1000.0),
    ("mfu/", "perf/mfu/", 1.0),
)

_cache: dict[str, Canonical] = {}


def canonical(name: str) -> Canonical:
    """The canonical name (and unit scale) of a metric as logged by any verl version."""
    found = _cache.get(name)
    if found is not None:
        return found
    found = _EXACT.get(name)
    if found is None:
        found = Canonical(name)
        for old, new, scale in _PREFIXES:
            if name.startswith(old):
                found = Canonical(new + name[len(old) :], scale)
                break
    if len(_cache) < 100_000:  # names repeat every step; bound the cache against garbage keys
        _cache[name] = found
    return found


def canonical_name(name: str) -> str:
    """Just the canonical name, for callers that look metrics up (checks, plots, baselines)."""
    return canonical(name).name


class KeyPlan(NamedTuple):
    """How to turn one row's keys (in order) into canonical names, computed once per key set.

    A run logs the same keys every step, so the readers look the plan up by the tuple of keys
    instead of renaming key by key (several times faster on a long log).
    """

    keys: tuple[str, ...]
    names: tuple[str, ...]
    scales: tuple[tuple[int, float], ...]  # (position, factor) of the values to rescale
    originals: dict[str, str]
    valid: bool  # every key is a plausible metric name (no spaces, not empty)
    distinct: bool  # no two keys share a canonical name (else the later value wins)


_plans: dict[tuple[str, ...], KeyPlan] = {}
_last: KeyPlan | None = None


def plan_for(keys: tuple[str, ...]) -> KeyPlan:
    """The cached :class:`KeyPlan` of a row's keys.

    The previous row's plan is tried first: comparing two tuples of the same key strings
    (orjson hands out the same objects) costs a tenth of hashing a hundred of them.
    """
    global _last
    plan = _last
    if plan is not None and plan.keys == keys:
        return plan
    plan = _plans.get(keys)
    if plan is None:
        found = [canonical(k) for k in keys]
        names = tuple(c.name for c in found)
        plan = KeyPlan(
            keys,
            names,
            tuple((i, c.scale) for i, c in enumerate(found) if c.scale != 1.0),
            {c.name: k for k, c in zip(keys, found, strict=True) if c.name != k},
            all(k and " " not in k and "\t" not in k for k in keys),
            len(set(names)) == len(names),
        )
        if len(_plans) >= 4096:  # bounded: a garbage log must not grow it forever
            _plans.clear()
        _plans[keys] = plan
    _last = plan
    return plan
