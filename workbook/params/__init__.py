"""params: scenario files -> a validated :class:`Scenario`, or every problem at once."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from workbook.errors import ParamsError
from workbook.params.loader import assets_dir, resolve
from workbook.params.schema import Scenario, parse_scenario
from workbook.params.validation import (
    arithmetic,
    files,
    ignored_settings,
    raw_overrides,
    ray_settings,
    rollouts,
)

__all__ = ["Scenario", "assets_dir", "load_scenario", "scenario_warnings", "validate_scenario"]


def _checks_problems(s: Scenario, params_dir: Path) -> list[tuple[str, str]]:
    """The ``checks:`` section, its steps, and bands that could never fail (against the baseline)."""
    from workbook.checks.bands import band_problems
    from workbook.checks.baseline import load_baseline
    from workbook.checks.spec import parse_checks, step_problems
    from workbook.errors import BaselineError

    spec, problems = parse_checks(s.checks, params_dir=params_dir)
    baseline = None
    if spec.baseline is not None and spec.baseline.is_file():
        try:
            baseline = load_baseline(spec.baseline)
        except BaselineError as exc:
            problems.append(("checks.baseline", exc.message))
    # A run whose settings differ from the baseline's is not compared with it (a warning says
    # so), so a checks window it does not reach is no problem then.
    compared = baseline is None or not _unlike_baseline(s, baseline)
    return problems + step_problems(spec, s.total_training_steps, compared=compared) + (
        band_problems(spec, baseline))


def _unlike_baseline(s: Scenario, baseline: Any) -> list[str]:
    from workbook.params.settings import differences, settings_of

    if not baseline.settings:
        return []
    return differences(baseline.settings, settings_of(s.model_dump(mode="json")))


def load_scenario(
    path: Path | str,
    sets: Iterable[str] = (),
    *,
    check_files: bool = True,
    check_verl: bool = False,
    variables: Mapping[str, str] | None = None,
) -> Scenario:
    """Resolve and validate; raise :class:`ParamsError` listing every problem found.

    ``variables`` override the path variables (``HOME``, ``WORKBOOK_ASSETS``) for a scenario
    whose paths belong to another machine (see ``workbook.params.loader.resolve``).
    """
    path = Path(path)
    data, problems = resolve(path, sets, variables)
    scenario, schema_problems = parse_scenario(data)
    problems += schema_problems
    if scenario is None:  # still check what can be checked: drop the fields that failed
        bad = {path.split(".")[0] for path, _ in schema_problems}
        kept = {k: v for k, v in data.items() if k not in bad}
        if "name" in bad:  # required: a stand-in, so a bad name hides no other problem
            kept["name"] = "scenario"
        scenario, _ = parse_scenario(kept)
    if scenario is not None:
        problems += arithmetic(scenario) + raw_overrides(scenario) + ray_settings(scenario)
        problems += _checks_problems(scenario, path.resolve().parent)
        if check_files:
            problems += files(scenario) + rollouts(scenario)
        if check_verl:
            problems += verl_problems(scenario)
    if problems:
        raise ParamsError(problems, str(path))
    assert scenario is not None
    return scenario


def verl_problems(s: Scenario) -> list[tuple[str, str]]:
    """Compose verl's Hydra config with the exact overrides the command will carry."""
    from workbook.command.builder import build_plan
    from workbook.params.verl_config import check_overrides

    # Only the overrides matter here; the run dir and plugin path are placeholders.
    plan = build_plan(s, Path("/tmp/wb-validate/run"), plugin_path="/tmp/wb-validate/pythonpath")
    return check_overrides(plan.argv[3:])


def validate_scenario(path: Path | str, sets: Iterable[str] = (), *, check_files: bool = True) -> Scenario:
    """Everything ``workbook validate`` checks, verl's Hydra config included."""
    return load_scenario(path, sets, check_files=check_files, check_verl=True)


def scenario_warnings(s: Scenario, params_dir: Path) -> list[tuple[str, str]]:
    """What is valid but will not do what it says (printed, never fatal): ``(field, message)``.

    Raw overrides the trainer never reads, and a baseline whose runs used other settings (its
    comparisons will say "not comparable").
    """
    from workbook.checks.baseline import load_baseline
    from workbook.checks.spec import parse_checks
    from workbook.errors import BaselineError

    warnings = ignored_settings(s)
    spec, _ = parse_checks(s.checks, params_dir=params_dir)
    if spec.baseline is not None and spec.baseline.is_file():
        try:
            unlike = _unlike_baseline(s, load_baseline(spec.baseline))
        except BaselineError:
            unlike = []
        if unlike:
            warnings.append(("checks.baseline", "its runs used other settings ("
                             + "; ".join(unlike) + "): comparisons with it will show "
                             "'not comparable'; the health checks still judge the run"))
    return warnings
