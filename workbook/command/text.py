"""The plan as text people paste: a shell-quoted command, and the JSON form."""

from __future__ import annotations

import json
import shlex

from workbook.command.plan import Plan


def as_shell(plan: Plan) -> str:
    """``env K=V ... python3 -m ...`` with every item quoted, one override per line."""
    head = ["env", *(f"{k}={v}" for k, v in sorted(plan.env.items()))] if plan.env else []
    parts = [shlex.quote(p) for p in head + plan.argv]
    return " \\\n  ".join(parts) + "\n"


def as_json(plan: Plan) -> str:
    return json.dumps({"argv": plan.argv, "env": dict(sorted(plan.env.items()))}, indent=2) + "\n"
