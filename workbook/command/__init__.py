"""params -> the exact verl command."""

from workbook.command.builder import build_plan, owned_keys
from workbook.command.text import as_json, as_shell

__all__ = ["as_json", "as_shell", "build_plan", "owned_keys"]
