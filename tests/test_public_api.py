"""``workbook``'s public names are exactly what the four notebooks import, and every call a
notebook makes on them is typed (no parameter or result of type ``Any``)."""

from __future__ import annotations

import ast
import inspect
import json
from pathlib import Path

import workbook

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def _trees() -> list[ast.Module]:
    cells = [c for nb in sorted(NOTEBOOKS.glob("*.ipynb"))
             for c in json.loads(nb.read_text(encoding="utf-8"))["cells"]
             if c["cell_type"] == "code" and "parameters" not in c["metadata"].get("tags", [])]
    return [ast.parse("".join(c["source"])) for c in cells]


def _imported() -> set[str]:
    return {a.name for t in _trees() for n in ast.walk(t)
            if isinstance(n, ast.ImportFrom) and n.module == "workbook" for a in n.names}


def _called() -> set[tuple[str, str]]:
    return {(n.func.value.id, n.func.attr) for t in _trees() for n in ast.walk(t)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and isinstance(n.func.value, ast.Name)}


def test_the_package_exports_exactly_what_the_notebooks_import() -> None:
    assert sorted(_imported()) == workbook.__all__
    assert all(not n.startswith("workbook.") for t in _trees() for n in
               [getattr(i, "module", "") or "" for i in ast.walk(t) if isinstance(i, ast.ImportFrom)])


def test_every_call_a_notebook_makes_is_typed() -> None:
    calls = sorted((m, f) for m, f in _called() if m in workbook.__all__)
    assert calls
    for module, name in calls:
        function = getattr(getattr(workbook, module), name)
        hints = inspect.signature(function)
        annotations = [p.annotation for p in hints.parameters.values()] + [hints.return_annotation]
        assert inspect.Signature.empty not in annotations, f"{module}.{name} is not fully typed"
        assert "Any" not in annotations, f"{module}.{name} takes or gives Any"
