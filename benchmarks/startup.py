"""Where the wall time of one tiny run goes: each phase, from the process table and the run's log.

Runs ``workbook run SCENARIO`` REPEATS times, one after another, each into a runs root of its own.
While a run goes, it samples the run's process tree (every process verl, Ray and vLLM start is a
descendant of the command) and tails the run's log for verl's step lines. Phases, in order:

    before_launch   the command starts -> verl's driver process exists (validation, the kernel)
    driver          the driver -> the TaskRunner actor's process (verl's imports, Ray's start)
    task_runner     -> the actor/ref workers' process (config, tokenizer, data, TransferQueue)
    workers         -> the rollout server's process (FSDP model build)
    rollout_server  -> the agent loop's process (vLLM's server, engine core and worker; 0 in a
                       run that replays every step, which starts no server)
    steps           -> verl's last step line (the steps, step 1 with its warm-up)
    verl_shutdown   -> the driver exits
    closing         -> the command exits (judge, plots, report, ledger, index)

It also prints each process role's CPU seconds (what six or so processes importing torch and
vLLM on two cores cost) and the machine's conditions: CPU model, cores, the load before the run,
and the CPU others used during it, as the run recorded them in run.json.

    .venv/bin/python benchmarks/startup.py [--scenario params/...yaml] [--repeats 3] [-s key=value ...]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from workbook.provenance import cpu_identity

REPO = Path(__file__).resolve().parents[1]
DEFAULT = REPO / "params" / "gspo-tiny-1n1cpu-fsdp2-vllm.yaml"
PHASES = ("before_launch", "driver", "task_runner", "workers", "rollout_server", "steps",
          "verl_shutdown", "closing")
# the process whose start ends each phase (a regex over its command line or title)
MARKERS = {
    "driver": r"^main_ppo$",
    "task_runner": r"ray::TaskRunner",
    "workers": r"ray::WorkerDict",
    "rollout_server": r"ray::vLLMHttpServer",
    "steps": r"ray::AgentLoopW",
}
STEP_LINE = re.compile(r"\bstep:(\d+) - ")


def role(cmdline: str, name: str) -> str:
    """A short role for a process of the run's tree (ray::X actors, vLLM's, Ray's own)."""
    found = re.search(r"(ray::\w+|VLLM::\w+)", cmdline) or re.search(r"(ray::\w+|VLLM::\w+)", name)
    if found:
        return found.group(1)
    for key in ("main_ppo", "ipykernel", "gcs_server", "raylet", "dashboard", "log_monitor",
                "monitor.py", "forkserver", "models.registry", "workbook"):
        if key in cmdline:
            return key
    return name


def recorded_conditions(runs: Path) -> dict:
    """The machine's conditions the run recorded itself (others' and steal CPU, load)."""
    records = sorted(runs.glob("*/*/run.json"))
    return json.loads(records[-1].read_text()).get("conditions", {}) if records else {}


class Watch:
    """Samples a command's process tree and its run log until the command exits."""

    def __init__(self, pid: int, runs: Path, t0: float) -> None:
        self.pid, self.runs, self.t0 = pid, runs, t0
        self.procs: dict[tuple[int, float], dict] = {}
        self.steps: dict[int, float] = {}
        self.driver_end: float | None = None
        self._offset = 0
        self._log: Path | None = None

    def sample(self) -> None:
        try:
            root = psutil.Process(self.pid)
            tree = [root, *root.children(recursive=True)]
        except psutil.Error:
            return
        now = time.time()
        for proc in tree:
            try:
                with proc.oneshot():
                    cmd = " ".join(proc.cmdline())
                    times = proc.cpu_times()
                    key = (proc.pid, proc.create_time())
                    entry = self.procs.setdefault(key, {"start": key[1] - self.t0})
                    entry.update(role=role(cmd, proc.name()), cpu=times.user + times.system,
                                 seen=now - self.t0, rss=proc.memory_info().rss)
            except psutil.Error:
                continue
        drivers = [p for p in self.procs.values() if p["role"] == "main_ppo"]
        if drivers and max(p["seen"] for p in drivers) < now - self.t0:  # no driver seen now
            self.driver_end = self.driver_end or max(p["seen"] for p in drivers)
        self.tail(now)

    def tail(self, now: float) -> None:
        if self._log is None:
            logs = sorted(self.runs.glob("*/*/run.log"))
            if not logs:
                return
            self._log = logs[-1]
        with open(self._log, "rb") as handle:
            handle.seek(self._offset)
            chunk = handle.read()
        cut = chunk.rfind(b"\n") + 1
        self._offset += cut
        for line in chunk[:cut].decode("utf-8", "replace").splitlines():
            found = STEP_LINE.search(line)
            if found:
                self.steps.setdefault(int(found.group(1)), now - self.t0)


def one_run(scenario: Path, sets: list[str]) -> dict:
    runs = Path(tempfile.mkdtemp(prefix="wb-startup-"))
    env = dict(os.environ, WORKBOOK_RUNS=str(runs))
    argv = [sys.executable, "-m", "workbook", "run", str(scenario), *(a for s in sets for a in ("-s", s))]
    load_before = os.getloadavg()[0]
    t0 = time.time()
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    watch = Watch(proc.pid, runs, t0)
    while proc.poll() is None:
        watch.sample()
        time.sleep(0.25)
    wall = time.time() - t0
    watch.tail(time.time())
    own = sum(p["cpu"] for p in watch.procs.values())
    conditions = recorded_conditions(runs)
    starts = {phase: min((p["start"] for p in watch.procs.values() if re.search(rx, p["role"])),
                         default=None)
              for phase, rx in MARKERS.items()}
    ends = [starts["driver"], starts["task_runner"], starts["workers"], starts["rollout_server"],
            starts["steps"], max(watch.steps.values(), default=None), watch.driver_end, wall]
    for i in range(len(ends) - 2, 0, -1):  # a phase whose process never started took no time
        ends[i] = ends[i + 1] if ends[i] is None and ends[i - 1] is not None else ends[i]
    phases: dict[str, float | None] = {}
    last = 0.0
    for phase, end in zip(PHASES, ends, strict=True):
        phases[phase] = None if end is None else round(end - last, 1)
        last = end if end is not None else last
    cpu_by_role: dict[str, float] = {}
    for p in watch.procs.values():
        cpu_by_role[p["role"]] = round(cpu_by_role.get(p["role"], 0.0) + p["cpu"], 1)
    return {"wall_s": round(wall, 1), "exit_code": proc.returncode, "phases": phases,
            "steps_seen": sorted(watch.steps), "processes": len(watch.procs),
            "cpu_s_by_role": dict(sorted(cpu_by_role.items(), key=lambda kv: -kv[1])),
            "own_cpu_s": round(own, 1), "load_before": round(load_before, 2),
            "others_cores": conditions.get("others_cores"),
            "steal_cores": conditions.get("steal_cores")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", type=Path, default=DEFAULT)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("-s", "--set", dest="sets", action="append", default=[])
    parser.add_argument("--json", type=Path, help="also write every run's figures here")
    args = parser.parse_args(argv)
    conditions = {"cpu": cpu_identity(), "cores": os.cpu_count(),
                  "memory_gib": round(psutil.virtual_memory().total / 2**30),
                  "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                  "scenario": str(args.scenario.relative_to(REPO) if args.scenario.is_absolute()
                                  and args.scenario.is_relative_to(REPO) else args.scenario),
                  "sets": args.sets}
    print(json.dumps(conditions))
    done = []
    for i in range(args.repeats):
        result = one_run(args.scenario, args.sets)
        done.append(result)
        print(f"run {i + 1}: " + json.dumps(result), flush=True)
    medians = {phase: statistics.median(v for r in done if (v := r["phases"][phase]) is not None)
               for phase in PHASES if any(r["phases"][phase] is not None for r in done)}
    print(f"median wall {statistics.median(r['wall_s'] for r in done):.1f} s over {len(done)}: "
          + ", ".join(f"{k} {v:.1f}" for k, v in medians.items()))
    if args.json:
        args.json.write_text(json.dumps({"conditions": conditions, "runs": done}, indent=1))
    return 0 if all(r["exit_code"] == 0 for r in done) else 1


if __name__ == "__main__":
    sys.exit(main())
