"""checks: turn a run's metrics into check rows and a verdict (passed, regressed, failed).

    spec.py         the scenario's ``checks:`` section -> CheckSpec (schema in its docstring)
    vocabulary.py   which syntax an expression check may use (static, before any run)
    expression.py   NeMo-RL style expression checks, evaluated without ``eval``
    reductions.py   last/mean/median/max/min over step windows; NeMo-RL's range rules
    comparison.py   per-metric policies: baseline comparison, finite, bounds
    baseline.py     baseline files (JSON/YAML, verl's Ascend text) and their provenance
    blessing.py     ``bless``: baselines from good runs, with spread and suggested tolerances
    verdict.py      ``judge`` -> Verdict; checks.json; junit.py and table.py render it
    inputs.py       what a check reads from a run directory
    runner.py       check_path / judge_run_dir: read a run, judge it, write checks.json
"""

from workbook.checks.baseline import Baseline, load_baseline
from workbook.checks.blessing import bless
from workbook.checks.expression import compile_expression
from workbook.checks.runner import check_path, judge_run_dir
from workbook.checks.spec import CheckSpec, parse_checks
from workbook.checks.verdict import Verdict, judge

__all__ = ["Baseline", "CheckSpec", "Verdict", "bless", "check_path",
           "compile_expression", "judge", "judge_run_dir", "load_baseline",
           "parse_checks"]
