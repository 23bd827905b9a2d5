"""checks: a run's evidence -> check rows -> one verdict (passed, regressed, failed, stopped).

The modules follow the data, and import only what comes before them:

    domains.py      what the checks know about verl's metrics by name (finite, ranges, hardware)
    vocabulary.py   which syntax an expression check may use (static, before any run)
    reductions.py   last/mean/median/max/min over step windows; NeMo-RL's range rules
    expression.py   NeMo-RL style expression checks, evaluated without ``eval``
    spec.py         the scenario's ``checks:`` section -> CheckSpec (schema in its docstring)
    baseline.py     baseline files (JSON/YAML, verl's Ascend text): values, sigma, hardware, settings
    bands.py        the band around a baseline value (k sigma, floor, tolerance); can it fail?
    evidence.py     what a run directory, console log or JSONL says: metrics, diagnosis, steps
    rows.py         CheckRow: pass, fail, error, not_measured, not_comparable
    health.py       every run's own checks: completed, steps reached, finite, clip fractions
    comparison.py   comparisons with the baseline
    verdict.py      judge_checks(evidence, spec, baseline) -> RunVerdict; checks.json
    junit.py        a verdict as JUnit XML
    blessing.py     ``bless``: a baseline from N good runs
    runner.py       check_path / judge_run_dir: gather and judge (closing writes)
"""

from workbook.checks.baseline import Baseline, load_baseline
from workbook.checks.blessing import bless
from workbook.checks.evidence import Evidence, gather
from workbook.checks.expression import compile_expression
from workbook.checks.runner import check_path, judge_run_dir
from workbook.checks.spec import CheckSpec, parse_checks
from workbook.checks.verdict import RunVerdict, judge_checks

__all__ = ["Baseline", "CheckSpec", "Evidence", "RunVerdict", "bless", "check_path",
           "compile_expression", "gather", "judge_checks", "judge_run_dir", "load_baseline",
           "parse_checks"]
