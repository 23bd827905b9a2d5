"""The workbook's one error tree, caught once in the CLI.

    WorkbookError                 any failure the workbook can explain
    ├── InputError                bad input or usage: exit 2, nothing launched
    │   ├── ParamsError           a scenario file or override is invalid (lists every problem)
    │   ├── ExpressionError       a check expression is outside the safe vocabulary
    │   ├── BaselineError         a baseline file is missing or unreadable
    │   │   └── ProposalError     a baseline proposal cannot be made or blessed (history.proposal)
    │   ├── RepositoryError       a git checkout or commit range cannot be used (batch.repository)
    │   └── StateError            a bisect.json that cannot be read (batch.bisect_state)
    ├── MetricsError              a log or metrics file cannot be read at all
    │   ├── ReductionError        a series cannot be reduced as asked (checks.reductions)
    │   └── EvaluationError       a check cannot be computed on this run: an error row (checks.expression)
    ├── LedgerError               a night cannot be written into its ledger (history.ledger)
    └── RunError                  the run itself failed: exit 3
        ├── LaunchError           could not start (cluster unreachable, not enough devices)
        └── RunFailed             started, then crashed, timed out or was stopped

Every error pickles, so it can cross a Ray or notebook-kernel boundary intact.
"""

from __future__ import annotations

EXIT_PASSED = 0
EXIT_REGRESSED = 1
EXIT_BAD_INPUT = 2
EXIT_RUN_FAILED = 3


class WorkbookError(Exception):
    """Base of every error the workbook raises on purpose."""

    exit_code = EXIT_RUN_FAILED

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __reduce__(self) -> tuple[type[WorkbookError], tuple[object, ...]]:
        return (type(self), (self.message,))


class InputError(WorkbookError):
    """Bad input or usage; nothing was launched."""

    exit_code = EXIT_BAD_INPUT


class ParamsError(InputError):
    """A scenario is invalid; ``problems`` holds one ``(field path, message)`` per problem."""

    def __init__(self, problems: list[tuple[str, str]] | str, source: str = "") -> None:
        if isinstance(problems, str):
            problems = [("", problems)]
        self.problems = list(problems)
        self.source = source
        head = f"{source}: " if source else ""
        lines = [f"{head}{len(self.problems)} problem(s) found, nothing launched:"]
        lines += [f"  - {path or '<scenario>'}: {msg}" for path, msg in self.problems]
        super().__init__("\n".join(lines))

    def __reduce__(self) -> tuple[type[WorkbookError], tuple[object, ...]]:
        return (type(self), (self.problems, self.source))


class ExpressionError(InputError):
    """A check expression uses something outside the vocabulary."""


class BaselineError(InputError):
    """A baseline file cannot be used."""


class MetricsError(WorkbookError):
    """A metrics source cannot be read."""

    exit_code = EXIT_BAD_INPUT


class RunError(WorkbookError):
    """The run itself failed (crash, timeout, infrastructure)."""

    exit_code = EXIT_RUN_FAILED


class LaunchError(RunError):
    """The run could not be started."""


class RunFailed(RunError):
    """The run started and did not succeed."""
