"""The machine's conditions during a run: its own CPU told from everyone else's."""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path

from workbook.launch.conditions import Conditions, calibrate, watching

# busy for S seconds of wall time, then write the CPU seconds it got
BUSY = ("import time,sys\nt = time.time()\nwhile time.time() - t < {s}: pass\n"
        "open(sys.argv[1], 'w').write(str(time.process_time()))\n")


def test_a_busy_child_is_the_runs_and_an_orphan_is_someone_elses(tmp_path: Path) -> None:
    script = tmp_path / "busy.py"
    script.write_text(BUSY.format(s=6))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = time.process_time()
    with watching(calibrate_first=False) as watch:
        child = subprocess.Popen([sys.executable, str(script), str(tmp_path / "child")])
        # an orphan: its parent (sh) exits at once, so it descends from nobody of ours
        subprocess.run(["sh", "-c", f"{sys.executable} {script} {tmp_path / 'orphan'} &"],
                       check=True)
        child.wait()
        while not (tmp_path / "orphan").exists():
            time.sleep(0.1)
        found = watch.stop()
    own = time.process_time() - own  # this process (the sampler's thread too) is the run's
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    child_cpu = float((tmp_path / "child").read_text())
    orphan_cpu = float((tmp_path / "orphan").read_text())
    assert child_cpu <= (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime) + 0.5

    assert isinstance(found, Conditions) and found.wall_s >= 6 and found.cpus >= 1
    # sampled every 2 s: a process's last seconds before it exits can be missed
    assert found.run_cores * found.wall_s >= child_cpu - 2.2, (found, child_cpu)
    assert found.others_cores * found.wall_s >= orphan_cpu - 2.2, (found, orphan_cpu)
    assert found.run_cores * found.wall_s <= child_cpu + own + 0.3, (found, child_cpu, own)
    assert set(found.to_dict()) == {"wall_s", "cpus", "run_cores", "others_cores", "steal_cores",
                                    "load_1m", "cpu"}  # no calibration was asked for


def test_calibration_is_a_positive_time() -> None:
    assert 0 < calibrate() < 30


def test_the_cpu_is_calibrated_before_and_after_the_run() -> None:
    with watching() as watch:
        time.sleep(0.1)
    found = watch.stop().to_dict()  # stopping twice gives the same conditions

    assert 0 < found["calibration_s"] < 30 and 0 < found["calibration_after_s"] < 30
    assert found["cpu"]
