"""params: scenario files -> a typed :class:`Scenario` (schema, loader, the rules on its fields).

The scenario validated whole (its checks, verl's config for its command, its files) is
:mod:`workbook.scenario`, the layer above the stages it needs.
"""

from __future__ import annotations

from workbook.params.loader import assets_dir, resolve
from workbook.params.schema import Scenario, parse_scenario

__all__ = ["Scenario", "assets_dir", "parse_scenario", "resolve"]
