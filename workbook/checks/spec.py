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
``steps`` needs a mean or median reduction), ``enabled``, ``confirm_nights`` (1..30, default
1: a baseline comparison that fails is ``suspect`` until it has failed that many nights in a row
of the scenario on its hardware, see :mod:`workbook.checks.confirmation`).

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
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    InstanceOf,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from workbook.checks.expression import MAX_STEP, Expression, compile_expression, finite_number
from workbook.checks.reductions import REDUCTIONS, WINDOWED
from workbook.core.quoting import cut, short
from workbook.errors import ExpressionError
from workbook.params.schema import rule

DEFAULT_WINDOW = (5, 14)
DIRECTIONS = ("both", "higher_is_worse", "lower_is_worse")
BY_WINDOW, BY_STEPS = "window", "steps"  # how a baseline comparison is made (compare_by)
COMPARE_BY = ("auto", BY_WINDOW, BY_STEPS)
MAX_CONFIRM_NIGHTS = 30  # a month of nights: beyond it a failure would wait too long to be seen

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
        return MetricPolicy(metric=metric, window=(window[0], window[1]), explicit=override is not None,
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


def _one_of(choices: tuple[str, ...]) -> BeforeValidator:
    return rule(lambda v: v in choices, f"must be one of {', '.join(choices)}")


def _step_range(value: Any) -> bool:
    return (isinstance(value, (list, tuple)) and len(value) == 2
            and all(type(v) is int for v in value) and 0 <= value[0] <= value[1] <= MAX_STEP)


_WINDOW = rule(_step_range, f"must be [first, last] steps with 0 <= first <= last <= {MAX_STEP}")
_FLAG = rule(lambda v: isinstance(v, bool), "must be true or false")
_TOLERANCE = rule(lambda v: v is None or finite_number(v) and v >= 0,
                   "must be a finite number >= 0")


class PolicyFields(BaseModel):
    """One metric's policy as the scenario writes it (merged over its default by
    :meth:`CheckSpec.policy`; only the fields given count)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    reduce: Annotated[str, _one_of(REDUCTIONS)] = "mean"
    window: Annotated[list[int], _WINDOW] = list(DEFAULT_WINDOW)
    direction: Annotated[str, _one_of(DIRECTIONS)] = "both"
    k: Annotated[float, rule(lambda v: finite_number(v) and v > 0,
                              "must be a finite number > 0 (sigmas)")] = 1.0
    atol: Annotated[float | None, _TOLERANCE] = None
    rtol: Annotated[float | None, _TOLERANCE] = None
    compare: Annotated[bool, _FLAG] = True
    compare_by: Annotated[str, _one_of(COMPARE_BY)] = "auto"
    enabled: Annotated[bool, _FLAG] = True
    confirm_nights: Annotated[int, rule(
        lambda v: type(v) is int and 1 <= v <= MAX_CONFIRM_NIGHTS,
        f"must be an integer within [1, {MAX_CONFIRM_NIGHTS}] (nights)")] = 1


def _metric_map(value: Any) -> Any:
    if not value:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError("must map metric names to policies")
    return {str(name): body for name, body in value.items()}


def _policy_body(body: Any) -> Any:
    """``false`` turns a metric's check off; ``true`` or nothing keeps its default."""
    if body is False:
        return {"enabled": False}
    if body is None or body is True:
        return {}
    if not isinstance(body, Mapping):
        raise ValueError("must be a mapping of policy fields, or false")
    return {str(key): value for key, value in body.items()}


def _expression_list(value: Any) -> Any:
    """A list of expressions, or a mapping of check name to expression."""
    if not value:
        return []
    if isinstance(value, Mapping):
        return [{"name": k, "expr": v} for k, v in value.items()]
    if not isinstance(value, list):
        raise ValueError("must be a list of expressions")
    return value


def _expression(item: Any, info: ValidationInfo) -> Expression:
    """One expression compiled, its name not taken by an earlier one of the section."""
    name = None
    if isinstance(item, Mapping):
        unknown = set(item) - {"name", "expr"}
        if unknown:
            raise ValueError(f"unknown keys {short(sorted(map(str, unknown)))}; use name and expr")
        name, item = item.get("name"), item.get("expr")
    if not isinstance(item, str):
        raise ValueError("must be an expression string or {name, expr}")
    try:
        expression = compile_expression(item, None if name is None else str(name))
    except ExpressionError as exc:
        raise ValueError(exc.message) from None
    names = info.context["names"] if info.context else set()
    if expression.name in names:
        raise ValueError(f"duplicate check name {short(expression.name)}")
    names.add(expression.name)
    return expression


class ChecksSection(BaseModel):
    """The ``checks:`` section as written (validate with ``context={"params_dir": ...,
    "names": set()}``); :func:`parse_checks` makes it a :class:`CheckSpec`."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    baseline: Path | None = None
    window: Annotated[tuple[int, int], _WINDOW] = DEFAULT_WINDOW
    min_steps: Annotated[int | None, rule(
        lambda v: v is None or type(v) is int and 1 <= v <= MAX_STEP,
        f"must be an integer within [1, {MAX_STEP}]")] = None
    defaults: Annotated[bool, _FLAG] = True
    metrics: Annotated[dict[str, Annotated[PolicyFields, BeforeValidator(_policy_body)]],
                       BeforeValidator(_metric_map)] = Field(default_factory=dict)
    expressions: Annotated[list[Annotated[InstanceOf[Expression], BeforeValidator(_expression)]],
                           BeforeValidator(_expression_list)] = Field(default_factory=list)

    @field_validator("baseline", mode="before")
    @classmethod
    def _baseline_file(cls, value: Any, info: ValidationInfo) -> Path | None:
        """The file relative to the params folder (its absence is named by parse_checks)."""
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            raise ValueError("must be a file path relative to the params folder")
        try:
            path = Path(value).expanduser()
            path = path if path.is_absolute() else Path((info.context or {})["params_dir"]) / path
            path.is_file()
        except (OSError, ValueError, RuntimeError) as exc:  # a NUL byte, ~nobody, a long name
            raise ValueError(f"{short(value)} cannot be read: {cut(str(exc))}") from None
        return path


def parse_checks(section: Mapping[str, Any] | None, *,
                 params_dir: Path) -> tuple[CheckSpec, list[tuple[str, str]]]:
    """Validate a scenario's ``checks:`` section; returns the spec and every problem found.

    Pure apart from checking that the baseline file exists. Problems are ``(field path,
    message)`` pairs such as ``("checks.metrics.timing_s/step.rtol", "must be >= 0")``. A field
    with a problem is left out of the spec (its default applies), as the others still count.
    """
    if section is None:
        return CheckSpec(), []
    if not isinstance(section, Mapping):
        return CheckSpec(), [("checks", "must be a mapping")]
    context = {"params_dir": Path(params_dir), "names": set()}
    try:
        found = ChecksSection.model_validate(section, context=context)
        problems: list[tuple[tuple[int, ...], str, str]] = []
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        problems = [_problem(err, section) for err in errors]
        try:  # the fields without a problem still count
            found = ChecksSection.model_validate(_without(section, [e["loc"] for e in errors]),
                                                 context={**context, "names": set()})
        except ValidationError:
            found = ChecksSection()
    if found.baseline is not None and not found.baseline.is_file():
        problems.append(((1,), "checks.baseline", f"file not found: {cut(str(found.baseline), 200)}"))
    spec = CheckSpec(found.baseline, found.window, found.min_steps, found.defaults,
                     {name: body.model_dump(exclude_unset=True)
                      for name, body in found.metrics.items()}, tuple(found.expressions))
    # unknown keys first, then the fields in the order the section lists them
    problems.sort(key=lambda p: p[0])
    return spec, [(where, what) for _, where, what in problems] + _basis_problems(spec)


def _problem(err: Any, section: Mapping[str, Any]) -> tuple[tuple[int, ...], str, str]:
    """A pydantic error as ``(order, field path, message)``: an unknown key of the section
    first, then the section's fields in their order, within each in the order written."""
    loc = err["loc"]
    where = "checks" + "".join(f"[{p}]" if isinstance(p, int) else f".{cut(str(p))}" for p in loc)
    if err["type"] == "extra_forbidden" and len(loc) == 1:
        return (0,), where, f"unknown key; known: {', '.join(ChecksSection.model_fields)}"
    order = [list(ChecksSection.model_fields).index(loc[0]) + 1]
    value: Any = section.get(loc[0])
    for part in loc[1:]:  # where each part is written in the section (a list item: its index)
        keys = [str(k) for k in value] if isinstance(value, Mapping) else []
        order.append(keys.index(part) if part in keys else part if isinstance(part, int) else 0)
        value = value.get(part) if isinstance(value, Mapping) else None
    if err["type"] == "extra_forbidden":
        return tuple(order), where, f"unknown field; known: {', '.join(PolicyFields.model_fields)}"
    return tuple(order), where, str(err["msg"]).removeprefix("Value error, ")


_DROP = object()


def _without(value: Any, locs: list[tuple[Any, ...]]) -> Any:
    """``value`` without the parts at ``locs`` (a copy along each path; nothing else copied)."""
    if any(not loc for loc in locs):
        return _DROP
    below: dict[Any, list[tuple[Any, ...]]] = {}
    for loc in locs:
        below.setdefault(loc[0], []).append(loc[1:])
    if isinstance(value, Mapping):
        kept = {k: _without(v, below[k]) if k in below else v for k, v in value.items()}
        return {k: v for k, v in kept.items() if v is not _DROP}
    if isinstance(value, list):
        items = [_without(v, below[i]) if i in below else v for i, v in enumerate(value)]
        return [v for v in items if v is not _DROP]
    return value


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


