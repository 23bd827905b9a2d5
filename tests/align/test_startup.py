"""scipy (ruptures' dependency, for the trend charts' level changes) never loads with the command
line every subcommand starts from."""

from __future__ import annotations

import subprocess
import sys


def test_the_command_line_starts_without_scipy() -> None:
    code = "import sys, workbook.cli; workbook.cli.parser(); print('scipy' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.strip() == "False"
