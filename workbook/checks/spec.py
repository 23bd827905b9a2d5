"""The ``checks:`` section of a scenario, validated into a :class:`CheckSpec`.

Schema (every key optional)::

    checks:
      baseline: baselines/gspo-tiny-1n1cpu-fsdp2-vllm.cpu.json   # relative to params/ (or absolute)
      window: [5, 14]         # inclusive steps for mean/median reductions (verl's nightly: 5-14)
      min_steps: 15           # the step a run must reach; default: the steps the scenario trains
      defaults: true          # apply the built-in policies below (false: only `metrics`)
      metrics:                # per-metric policy, merged field by field over the defaults
        timing_s/step: {k: 6}                    # widen the blessed band to 6 sigma
        actor/entropy: {reduce: median, direction: both, atol: 0.02}
        actor/pg_loss: {compare_by: steps}       # each step against its own band
        perf/throughput: {enabled: false}        # or `perf/throughput: false`
        timing_s/gen: {confirm_nights: 2}        # fails only on a 2nd night beyond its band
      expressions:            # NeMo-RL style checks, see workbook.checks.expression
        - 'median(data["training/rollout_probs_diff_mean"]) < 0.01'
        - name: generation time
          expr: 'mean(data["timing_s/gen"], -5) < 1.2 * baseline("timing_s/gen")'

Policy fields: ``reduce`` (last|mean|median|max|min; ``window`` applies to mean/median),
``window`` ([first, last] inclusive, default the section's), ``direction`` (both|
higher_is_worse|lower_is_worse), ``k`` (band half-width in sigmas of a blessed baseline),
``atol``/``rtol`` (a tolerance: allowed difference = atol + rtol*|baseline|), ``compare``
(against the baseline; default true), ``compare_by`` (auto|window|steps: judge the window
statistic, or each step of the window against its own band; ``auto``, the default, does the
latter where the blessed runs agree step by step, see :func:`workbook.checks.bands.basis`;
``steps`` needs a mean or median reduction), ``finite`` (every step finite), ``bounds`` ([lo,
hi], null for open; every step), ``enabled``, ``confirm_nights`` (1..30, default 1: a baseline
comparison that fails is ``suspect`` until it has failed that many nights in a row of the
scenario on its hardware, see :mod:`workbook.checks.confirmation`).

Every run also gets the health checks of :mod:`workbook.checks.health` (completed, steps
reached, losses finite, clip fractions within [0, 1]), whatever this section says. How a
comparison's band is made (k sigma of a blessed baseline, a floor, a scenario tolerance that
widens it, or the nightly default when the baseline has no sigma) is in
:mod:`workbook.checks.bands`; a band that admits every value a metric can take is refused here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from workbook.checks.expression import MAX_STEP, Expression, compile_expression, finite_number
from workbook.checks.reductions import REDUCTIONS, WINDOWED
from workbook.core.quoting import cut, short
from workbook.errors import ExpressionError

DEFAULT_WINDOW = (5, 14)
DIRECTIONS = ("both", "higher_is_worse", "lower_is_worse")
BY_WINDOW, BY_STEPS = "window", "steps"  # how a baseline comparison is made (compare_by)
COMPARE_BY = ("auto", BY_WINDOW, BY_STEPS)
POLICY_FIELDS = ("reduce", "window", "direction", "k", "atol", "rtol", "compare", "compare_by",
                 "finite", "bounds", "enabled", "confirm_nights")
MAX_CONFIRM_NIGHTS = 30  # a month of nights: beyond it a failure would wait too long to be seen
SECTION_KEYS = ("baseline", "window", "min_steps", "defaults", "metrics", "expressions")

# Compared with the baseline when it names them. The first five are verl's nightly comparator
# (check_npu.py), with its tolerances for baselines that carry no sigma (verl's own Ascend
# files); the rest are the training signals it forgets, compared only with a blessed baseline.
DEFAULT_POLICIES: dict[str, dict[str, Any]] = {
    "actor/perf/max_memory_allocated_gb": {"reduce": "last", "direction": "higher_is_worse",
                                           "atol": 1.0},
    "perf/throughput": {"reduce": "mean", "direction": "lower_is_worse", "rtol": 0.05},
    "timing_s/step": {"reduce": "mean", "direction": "higher_is_worse", "rtol": 0.05},
    "critic/rewards/mean": {"reduce": "mean", "direction": "both", "atol": 0.05},
    "training/rollout_probs_diff_mean": {"reduce": "mean", "direction": "both", "rtol": 0.05},
    "timing_s/gen": {"reduce": "mean", "direction": "higher_is_worse", "rtol": 0.05},
    "timing_s/update_actor": {"reduce": "mean", "direction": "higher_is_worse"},
    "actor/pg_loss": {"reduce": "mean", "direction": "both"},
    "actor/pg_clipfrac": {"reduce": "mean", "direction": "both"},
    "actor/ppo_kl": {"reduce": "mean", "direction": "both"},
    "actor/grad_norm": {"reduce": "mean", "direction": "both"},
    "actor/entropy": {"reduce": "mean", "direction": "both"},
    "critic/vf_loss": {"reduce": "mean", "direction": "both"},
    "critic/vf_clipfrac": {"reduce": "mean", "direction": "both"},
    "critic/grad_norm": {"reduce": "mean", "direction": "both"},
    "critic/score/mean": {"reduce": "mean", "direction": "both"},
    "response_length/mean": {"reduce": "mean", "direction": "both"},
}


@dataclass(frozen=True)
class MetricPolicy:
    """How one metric is judged."""

    metric: str
    reduce: str = "mean"
    window: tuple[int, int] = DEFAULT_WINDOW
    direction: str = "both"
    k: float | None = None          # the scenario's own sigma multiple (None: the default)
    atol: float | None = None
    rtol: float | None = None
    compare: bool = True
    compare_by: str = "auto"        # auto | window | steps (see workbook.checks.bands.basis)
    finite: bool = False
    bounds: tuple[float | None, float | None] | None = None
    explicit: bool = False  # named by the scenario, so a missing metric is an error, not a skip
    scenario_tolerance: bool = False  # atol/rtol/k come from the scenario (it may widen a band)
    # nights in a row a baseline comparison must fail before the run regresses (1: at once;
    # more: a noisy metric's first nights beyond its band are ``suspect``)
    confirm_nights: int = 1

    def allowed(self, reference: float) -> float | None:
        """The difference from ``reference`` its tolerance allows (None: it has none)."""
        if self.atol is None and self.rtol is None:
            return None
        return (self.atol or 0.0) + (self.rtol or 0.0) * abs(reference)

    @property
    def uses_window(self) -> bool:
        return self.compare and self.reduce in WINDOWED


@dataclass(frozen=True)
class CheckSpec:
    """Validated ``checks:`` section; build it with :func:`parse_checks`."""

    baseline: Path | None = None
    window: tuple[int, int] = DEFAULT_WINDOW
    min_steps: int | None = None
    use_defaults: bool = True
    overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    expressions: tuple[Expression, ...] = ()

    def policy(self, metric: str) -> MetricPolicy | None:
        """The merged policy for ``metric`` (None when nothing applies or it is disabled)."""
        has_default = self.use_defaults and metric in DEFAULT_POLICIES
        override = self.overrides.get(metric)
        if not has_default and override is None:
            return None
        merged: dict[str, Any] = dict(DEFAULT_POLICIES[metric]) if has_default else {}
        scenario_tolerance = False
        if override is not None:
            scenario_tolerance = any(k in override for k in ("atol", "rtol", "k"))
            if scenario_tolerance:  # the scenario's own tolerance replaces the default one
                merged.pop("atol", None)
                merged.pop("rtol", None)
            merged.update(override)
        if not merged.pop("enabled", True):
            return None
        window = merged.pop("window", None) or self.window
        bounds = merged.pop("bounds", None)
        return MetricPolicy(metric=metric, window=(window[0], window[1]),
                            bounds=(bounds[0], bounds[1]) if bounds else None,
                            explicit=override is not None,
                            scenario_tolerance=scenario_tolerance, **merged)

    def policies(self) -> list[MetricPolicy]:
        """Every policy in effect (defaults first, then the scenario's own metrics)."""
        names = list(DEFAULT_POLICIES) if self.use_defaults else []
        names += [n for n in self.overrides if n not in names]
        found = (self.policy(n) for n in names)
        return [p for p in found if p is not None]

    def with_baseline(self, path: Path | None) -> CheckSpec:
        return self if path is None else replace(self, baseline=Path(path))

    def with_expressions(self, texts: list[str]) -> CheckSpec:
        """Add command-line expressions; raises :class:`ExpressionError` on a bad one."""
        added = tuple(compile_expression(t) for t in texts)
        return replace(self, expressions=self.expressions + added)

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseline": str(self.baseline) if self.baseline else None,
            "window": list(self.window), "min_steps": self.min_steps,
            "defaults": self.use_defaults,
            "metrics": {k: dict(v) for k, v in self.overrides.items()},
            "expressions": [{"name": e.name, "expr": e.text} for e in self.expressions],
        }


def parse_checks(section: Mapping[str, Any] | None, *,
                 params_dir: Path) -> tuple[CheckSpec, list[tuple[str, str]]]:
    """Validate a scenario's ``checks:`` section; returns the spec and every problem found.

    Pure apart from checking that the baseline file exists. Problems are ``(field path,
    message)`` pairs such as ``("checks.metrics.timing_s/step.rtol", "must be >= 0")``.
    """
    problems: list[tuple[str, str]] = []
    if section is None:
        return CheckSpec(), problems
    if not isinstance(section, Mapping):
        return CheckSpec(), [("checks", "must be a mapping")]
    for key in section:
        if key not in SECTION_KEYS:
            problems.append((f"checks.{cut(str(key))}",
                             f"unknown key; known: {', '.join(SECTION_KEYS)}"))

    baseline = _baseline_path(section.get("baseline"), params_dir, problems)
    window = _window(section.get("window", list(DEFAULT_WINDOW)), "checks.window", problems)
    min_steps = section.get("min_steps")
    if min_steps is not None and (type(min_steps) is not int or not 1 <= min_steps <= MAX_STEP):
        problems.append(("checks.min_steps", f"must be an integer within [1, {MAX_STEP}], "
                                             f"got {short(min_steps)}"))
        min_steps = None
    use_defaults = section.get("defaults", True)
    if not isinstance(use_defaults, bool):
        problems.append(("checks.defaults", "must be true or false"))
        use_defaults = True
    overrides = _metrics(section.get("metrics") or {}, problems)
    expressions = _expressions(section.get("expressions") or [], problems)
    spec = CheckSpec(baseline, window or DEFAULT_WINDOW, min_steps, use_defaults, overrides,
                     tuple(expressions))
    return spec, problems + _basis_problems(spec)


def _basis_problems(spec: CheckSpec) -> list[tuple[str, str]]:
    """``compare_by: steps`` where the policy reduces no window: there are no steps to judge."""
    problems = []
    for name, override in spec.overrides.items():
        policy = spec.policy(name)
        if override.get("compare_by") == BY_STEPS and policy and policy.reduce not in WINDOWED:
            problems.append((f"checks.metrics.{cut(name)}.compare_by",
                             f"steps needs a window: reduce {policy.reduce} compares one value; "
                             "use reduce mean or median, or compare_by window"))
    return problems


def step_problems(spec: CheckSpec, total_steps: int | None, *,
                  compared: bool = True) -> list[tuple[str, str]]:
    """Checks that need more steps than the scenario trains (caught before a night is spent).

    The window counts only when something compares over it: a baseline is configured and
    ``compared`` (its runs used this scenario's settings), or a scenario policy does.
    """
    if total_steps is None:
        return []
    problems = []
    if spec.min_steps is not None and spec.min_steps > total_steps:
        problems.append(("checks.min_steps", f"is {spec.min_steps} but the run trains "
                                             f"{total_steps} steps"))
    if spec.baseline is not None and compared and spec.window[1] > total_steps:
        problems.append(("checks.window", f"ends at step {spec.window[1]} but the run trains "
                                          f"{total_steps} steps; set checks.window"))
    for name in spec.overrides:
        policy = spec.policy(name)
        if (policy and policy.uses_window and "window" in spec.overrides[name]
                and policy.window[1] > total_steps):
            problems.append((f"checks.metrics.{name}.window",
                             f"ends at step {policy.window[1]} but the run trains "
                             f"{total_steps} steps"))
    return problems


def _baseline_path(value: Any, params_dir: Path, problems: list[tuple[str, str]]) -> Path | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        problems.append(("checks.baseline", "must be a file path relative to the params folder"))
        return None
    try:
        path = Path(value).expanduser()
        path = path if path.is_absolute() else Path(params_dir) / path
        found = path.is_file()
    except (OSError, ValueError, RuntimeError) as exc:  # a NUL byte, ~nobody, a name too long
        problems.append(("checks.baseline", f"{short(value)} cannot be read: {cut(str(exc))}"))
        return None
    if not found:
        problems.append(("checks.baseline", f"file not found: {cut(str(path), 200)}"))
    return path


def _window(value: Any, where: str, problems: list[tuple[str, str]]) -> tuple[int, int] | None:
    if (isinstance(value, (list, tuple)) and len(value) == 2
            and all(type(v) is int for v in value) and 0 <= value[0] <= value[1] <= MAX_STEP):
        return (value[0], value[1])
    problems.append((where, f"must be [first, last] steps with 0 <= first <= last <= {MAX_STEP}"
                            f", got {short(value)}"))
    return None


def _number(value: Any) -> bool:
    """A finite number (not a bool, nan or inf, nor an int too large for a float)."""
    return finite_number(value)


def _metrics(section: Any, problems: list[tuple[str, str]]) -> dict[str, dict[str, Any]]:
    if not isinstance(section, Mapping):
        problems.append(("checks.metrics", "must map metric names to policies"))
        return {}
    out: dict[str, dict[str, Any]] = {}
    for name, body in section.items():
        where = f"checks.metrics.{cut(str(name))}"
        if body is False:
            out[str(name)] = {"enabled": False}
            continue
        if body is None or body is True:
            out[str(name)] = {}
            continue
        if not isinstance(body, Mapping):
            problems.append((where, "must be a mapping of policy fields, or false"))
            continue
        out[str(name)] = _policy_fields(body, where, problems)
    return out


def _policy_fields(body: Mapping[str, Any], where: str,
                   problems: list[tuple[str, str]]) -> dict[str, Any]:
    fields: dict[str, Any] = {}
    for key, value in body.items():
        path = f"{where}.{cut(str(key))}"
        if key not in POLICY_FIELDS:
            problems.append((path, f"unknown field; known: {', '.join(POLICY_FIELDS)}"))
        elif key == "reduce" and value not in REDUCTIONS:
            problems.append((path, f"must be one of {', '.join(REDUCTIONS)}, got {short(value)}"))
        elif key == "direction" and value not in DIRECTIONS:
            problems.append((path, f"must be one of {', '.join(DIRECTIONS)}, got {short(value)}"))
        elif key == "compare_by" and value not in COMPARE_BY:
            problems.append((path, f"must be one of {', '.join(COMPARE_BY)}, got {short(value)}"))
        elif key in ("atol", "rtol") and value is not None and not (_number(value) and value >= 0):
            problems.append((path, f"must be a finite number >= 0, got {short(value)}"))
        elif key == "k" and not (_number(value) and value > 0):
            problems.append((path, f"must be a finite number > 0 (sigmas), got {short(value)}"))
        elif key == "confirm_nights" and (type(value) is not int
                                          or not 1 <= value <= MAX_CONFIRM_NIGHTS):
            problems.append((path, f"must be an integer within [1, {MAX_CONFIRM_NIGHTS}] "
                                   f"(nights), got {short(value)}"))
        elif key in ("compare", "finite", "enabled") and not isinstance(value, bool):
            problems.append((path, "must be true or false"))
        elif key == "window":
            window = _window(value, path, problems)
            if window:
                fields[key] = list(window)
            continue
        elif key == "bounds" and not _bounds_ok(value):
            problems.append((path, f"must be [low, high] finite numbers (null for open), "
                                   f"got {short(value)}"))
        else:
            numeric = key in ("atol", "rtol", "k") and value is not None
            fields[key] = float(value) if numeric else value
    return fields


def _bounds_ok(value: Any) -> bool:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        return False
    lo, hi = value
    if not all(v is None or _number(v) for v in value):
        return False
    return lo is None or hi is None or lo <= hi


def _expressions(section: Any, problems: list[tuple[str, str]]) -> list[Expression]:
    if isinstance(section, Mapping):
        items: list[Any] = [{"name": k, "expr": v} for k, v in section.items()]
    elif isinstance(section, list):
        items = section
    else:
        problems.append(("checks.expressions", "must be a list of expressions"))
        return []
    compiled: list[Expression] = []
    names: set[str] = set()
    for index, item in enumerate(items):
        where = f"checks.expressions[{index}]"
        name = None
        if isinstance(item, Mapping):
            unknown = set(item) - {"name", "expr"}
            if unknown:
                problems.append((where, f"unknown keys {short(sorted(map(str, unknown)))}; "
                                        "use name and expr"))
            name, item = item.get("name"), item.get("expr")
        if not isinstance(item, str):
            problems.append((where, "must be an expression string or {name, expr}"))
            continue
        try:
            expression = compile_expression(item, None if name is None else str(name))
        except ExpressionError as exc:
            problems.append((where, exc.message))
            continue
        if expression.name in names:
            problems.append((where, f"duplicate check name {short(expression.name)}"))
        names.add(expression.name)
        compiled.append(expression)
    return compiled
