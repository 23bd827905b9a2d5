"""``execute_run`` when the notebook dies: a failed run, its processes ended, its report written.

A real papermill kernel that starts a long-running process group carrying a process tag,
records both in run.json as a launcher would, and then kills itself (as the OOM killer or a
crash would).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from workbook.core.layout import RunDir
from workbook.launch import processes
from workbook.run.driver import execute_run

DYING = '''import json, os, secrets, subprocess, sys, time
from pathlib import Path
tag = "wb-" + secrets.token_hex(16)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                         start_new_session=True, env={**os.environ, "WORKBOOK_PROCESS_TAG": tag})
info = json.loads((Path(run_dir) / "run.json").read_text())
info.update(status="running", pid=child.pid, process_tag=tag,
            started_at="2026-11-30T00:00:00+00:00")
(Path(run_dir) / "run.json").write_text(json.dumps(info))
time.sleep(1)
os.kill(os.getpid(), 9)
'''


def test_a_dead_kernel_is_a_failed_run_whose_processes_are_ended(tmp_path: Path) -> None:
    template = tmp_path / "dying.ipynb"
    params = new_code_cell('scenario = ""\noverrides = []\nrun_dir = ""\nrun_root = ""')
    params.metadata["tags"] = ["parameters"]
    nb = new_notebook(cells=[params, new_code_cell(DYING)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, str(template))
    rd = RunDir.create(tmp_path / "runs", "dying")
    rd.update_run(run_id=rd.run_id, scenario="dying", notebook=str(template))

    started = time.monotonic()
    result = execute_run(tmp_path / "x.yaml", [], rd, runs_root=tmp_path / "runs",
                         notebook=template, echo=False)

    info = json.loads((rd.path / "run.json").read_text())
    assert result.verdict == "failed" and result.exit_code == 3
    assert info["status"] == "failed" and "notebook stopped" in info["message"]
    assert not processes.is_running(int(info["pid"]))  # the run's process tree was ended
    assert result.report is not None and result.report.is_file()
    assert time.monotonic() - started < 120
