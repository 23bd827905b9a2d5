"""The one error tree: every public error class of the package derives from WorkbookError and is
drawn in ``errors.py``'s docstring, so a user sees one kind of failure and the CLI catches it."""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

import pytest

from workbook import errors

PACKAGE = Path(errors.__file__).parent


def _error_classes() -> dict[str, list[str]]:
    """Public classes named ``...Error`` anywhere in the package, with their base names."""
    found: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and node.name.endswith("Error") \
                    and not node.name.startswith("_"):
                found[node.name] = [ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases]
    return found


def test_every_public_error_derives_from_workbook_error_and_is_drawn() -> None:
    classes = _error_classes()

    def rooted(name: str) -> bool:
        return name == "WorkbookError" or any(rooted(b) for b in classes.get(name, []))

    assert [n for n in classes if not rooted(n)] == []
    assert [n for n in classes if n not in errors.__doc__] == []


@pytest.mark.parametrize("where", ["workbook.checks.reductions.ReductionError",
                                   "workbook.checks.expression.EvaluationError"])
def test_errors_once_outside_the_tree_now_pickle_as_workbook_errors(where: str) -> None:
    import importlib

    module, name = where.rsplit(".", 1)
    error = getattr(importlib.import_module(module), name)("why")
    again = pickle.loads(pickle.dumps(error))
    assert isinstance(again, errors.WorkbookError) and again.message == "why"
