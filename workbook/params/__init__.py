"""params: scenario files -> a validated :class:`Scenario`, or every problem at once."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from workbook.errors import ParamsError
from workbook.params.loader import assets_dir, resolve
from workbook.params.schema import Scenario, parse_scenario
from workbook.params.validation import arithmetic, files, raw_overrides

__all__ = ["Scenario", "assets_dir", "load_scenario", "validate_scenario"]


def _checks_problems(s: Scenario, params_dir: Path) -> list[tuple[str, str]]:
    """The ``checks:`` section, its steps, and bands that could never fail (against the baseline)."""
    from workbook.checks.bands import band_problems
    from workbook.checks.baseline import load_baseline
    from workbook.checks.spec import parse_checks, step_problems
    from workbook.errors import BaselineError

    spec, problems = parse_checks(s.checks, params_dir=params_dir)
    problems += step_problems(spec, s.total_training_steps)
    baseline = None
    if spec.baseline is not None and spec.baseline.is_file():
        try:
            baseline = load_baseline(spec.baseline)
        except BaselineError as exc:
            problems.append(("checks.baseline", exc.message))
    return problems + band_problems(spec, baseline)


def load_scenario(
    path: Path | str,
    sets: Iterable[str] = (),
    *,
    check_files: bool = True,
    check_verl: bool = False,
) -> Scenario:
    """Resolve and validate; raise :class:`ParamsError` listing every problem found."""
    path = Path(path)
    data, problems = resolve(path, sets)
    scenario, schema_problems = parse_scenario(data)
    problems += schema_problems
    if scenario is None:  # still check what can be checked: drop the fields that failed
        bad = {path.split(".")[0] for path, _ in schema_problems}
        scenario, _ = parse_scenario({k: v for k, v in data.items() if k not in bad})
    if scenario is not None:
        problems += arithmetic(scenario) + raw_overrides(scenario)
        problems += _checks_problems(scenario, path.resolve().parent)
        if check_files:
            problems += files(scenario)
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
