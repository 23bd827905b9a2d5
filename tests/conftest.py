"""Shared, expensive things: the tiny assets, and REAL verl runs started once per session.

Every real run goes through the ``workbook`` CLI exactly as a user or CI would, into a session
temp runs root, one at a time (the machine has 2 cores), and tests across modules read the run
directories they leave:

- ``smoke``: ``workbook suite run params/suites/smoke-cpu.txt --junit ... --python <this
  environment>`` -- the project's own smoke suite (the tiny GSPO run, and the tiny PPO run on a
  2-node Ray cluster the run starts and stops itself), run as a runner meets it: the workbook
  from a venv of its own (no verl, no torch), verl with the tests' full environment;
- ``variants``: a suite of three faulty variants of the tiny GSPO scenario (a loss-scaling bug
  loaded into verl, a broken override, a worker killed at step 3), interrupted with Ctrl-C
  during its last entry, then run again so it resumes.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.shell import shown_line
from tests.verl_history import VerlHistory, checkout_at, make_verl_history

REPO = Path(__file__).resolve().parents[1]
GSPO_TINY = REPO / "params" / "gspo-tiny-1n1cpu-fsdp2-vllm.yaml"
GSPO_LIVE = REPO / "params" / "gspo-tiny-live-1n1cpu-fsdp2-vllm.yaml"
PPO_TINY_RAY = REPO / "params" / "ppo-tiny-2n1cpu-fsdp2-vllm-ray.yaml"
SMOKE_SUITE = REPO / "params" / "suites" / "smoke-cpu.txt"
FAULTS = REPO / "benchmarks" / "faults"
WORKBOOK = [sys.executable, "-m", "workbook"]
# Passes Hydra composition; verl then refuses it (deprecated key set beside its replacement)
# when it builds its actor config in the driver, before Ray starts.
BROKEN_OVERRIDE = "overrides+=actor_rollout_ref.actor.ppo_micro_batch_size=8"


# Secrets of several shapes planted in a suite line (environment of the broken-override entry):
# none may reach a report, the index, the command files or a published site.
SECRETS = ("hf_PlantedToken0123456789abcd", "planted-pass-word-42", "plantedquerytoken0042",
           "plantedpw")
PLANTED = (f"-s env.HF_TOKEN={SECRETS[0]} -s env.DB_PASSWORD={SECRETS[1]} "
           f"-s 'env.SERVICE_URL=https://user:{SECRETS[3]}@example.invalid/x?token={SECRETS[2]}'")


# the rollout-side fault the variants suite runs on the live scenario (benchmarks/faults)
ROLLOUT_FAULT = "half_reward"


def fault(name: str) -> str:
    """A suite line's ``-s`` options that load a fault into verl (environment only)."""
    return (f"-s env.PYTHONPATH={FAULTS} -s env.VERL_USE_EXTERNAL_MODULES=verl_faults "
            f"-s env.WORKBOOK_FAULT={name}")


@dataclass
class CliRun:
    """A finished ``workbook`` invocation (or one entry of a suite)."""

    args: list[str]
    exit_code: int
    output: str  # stdout then stderr
    run_dir: Path | None
    stdout: str = ""

    def json(self, name: str) -> dict:
        assert self.run_dir is not None, self.output[-3000:]
        return json.loads((self.run_dir / name).read_text())


@dataclass
class SuiteRun:
    """A finished ``workbook suite run``: its output, directory, records and JUnit file."""

    first: CliRun
    again: CliRun | None
    directory: Path
    junit: Path
    leftovers: list[str] = field(default_factory=list)
    interim: dict = field(default_factory=dict)  # suite.json right after the first invocation

    @property
    def records(self) -> dict[str, dict]:
        data = json.loads((self.directory / "suite.json").read_text())
        return {e["key"]: e for e in data["entries"]}

    def entry(self, prefix: str) -> CliRun:
        """The entry whose key starts with ``prefix``, as a CliRun of its run directory."""
        (record,) = [r for k, r in self.records.items() if k.startswith(prefix)]
        run_dir = Path(record["run_dir"]) if record.get("run_dir") else None
        return CliRun([record["line"]], int(record.get("exit_code") or 0), record.get("reason", ""),
                      run_dir)


@pytest.fixture(autouse=True)
def own_runs_root(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A test that runs or indexes anything in-process never writes into the project's runs/;
    its training interpreter is the tests' own (the full environment), so an accelerator
    scenario validates against that verl, not whatever ``python3`` is first on PATH."""
    monkeypatch.setenv("WORKBOOK_RUNS", str(tmp_path_factory.mktemp("runs")))
    monkeypatch.setenv("WORKBOOK_PYTHON", sys.executable)
    # a clean judgement of verl's config is handed to child processes through the environment;
    # each test starts without the ones earlier tests made
    monkeypatch.setenv("WORKBOOK_VERL_CONFIG_CLEAN", "")


def drawn_once(draw: Callable[..., Any], key: Callable[..., str] = lambda *a, **k: repr((a, k))
               ) -> Callable[..., Any]:
    """``draw`` with what it drew kept per ``key`` of its arguments (by default their repr:
    plain data, floats to the last digit)."""
    kept: dict[str, Any] = {}

    def drawn(*args: Any, **kwargs: Any) -> Any:
        found = key(*args, **kwargs)
        if found not in kept:
            kept[found] = draw(*args, **kwargs)
        return kept[found]

    return drawn


def _steps_of(metrics: Any) -> str:
    return repr([(s, sorted(metrics.steps[s].items())) for s in metrics.step_numbers])


@pytest.fixture(autouse=True, scope="session")
def charts_drawn_once() -> Iterator[None]:
    """The tests draw the same few dozen charts hundreds of times (the same handmade runs,
    reported, indexed and aligned again and again): each is drawn once a session. A chart is a
    function of the data it is given, and Agg draws the same bytes for it every time; drawing
    was a third of the unit tests' CPU time."""
    from workbook.plots import panels
    from workbook.report import alignment, index

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(panels, "render", drawn_once(panels.render))
        patch.setattr(panels, "timing_breakdown", drawn_once(panels.timing_breakdown, _steps_of))
        patch.setattr(index, "trend_chart", drawn_once(index.trend_chart))
        patch.setattr(alignment, "aligned_curves", drawn_once(alignment.aligned_curves))
        yield


@pytest.fixture(scope="session")
def session_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Assets and runs of this session live in its own temp dirs, never in the user's cache."""
    base = tmp_path_factory.mktemp("workbook")
    env = dict(os.environ)
    env.update(
        WORKBOOK_ASSETS=str(base / "assets"),
        WORKBOOK_RUNS=str(base / "runs"),
        WORKBOOK_CLUSTER_STATE=str(base / "cluster.json"),
        PYTHONUNBUFFERED="1",
    )
    saved = {k: os.environ.get(k) for k in ("WORKBOOK_ASSETS", "WORKBOOK_RUNS", "WORKBOOK_CLUSTER_STATE")}
    os.environ.update({k: env[k] for k in saved})
    yield env
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


@pytest.fixture(scope="session")
def cpu_assets(session_env: dict[str, str]):  # type: ignore[no-untyped-def]
    from workbook.profiles.cpu.assets import ensure_assets

    return ensure_assets(Path(session_env["WORKBOOK_ASSETS"]))


class HeavyLock:
    """One real verl run or Ray cluster at a time on this machine (2 cores, 24 GiB)."""

    def __enter__(self) -> HeavyLock:
        self.handle = open("/tmp/wb-heavy.lock", "w")
        fcntl.flock(self.handle, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()


def last_dir(output: str) -> Path | None:
    """``workbook run``, ``suite run`` and ``sweep`` print their directory as the last line."""
    lines = [line for line in output.strip().splitlines() if line.strip()]
    if lines and lines[-1].startswith("/") and len(lines[-1]) < 4096 and Path(lines[-1]).is_dir():
        return Path(lines[-1])
    return None


def run_dir_from(output: str) -> Path | None:
    found = last_dir(output)
    if found is not None:
        return found
    for line in output.splitlines():
        if line.startswith("run directory: "):
            return Path(line.split(": ", 1)[1])
    return None


def workbook_cli(args: list[str], env: dict[str, str], timeout: float = 1500,
                 cwd: Path = REPO, program: list[str] = WORKBOOK) -> CliRun:
    proc = subprocess.run([*program, *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)
    output = proc.stdout + proc.stderr
    return CliRun(args, proc.returncode, output, run_dir_from(proc.stdout), proc.stdout)


def processes_naming(*markers: str) -> list[str]:
    """Command lines of live processes that mention any marker (a run's Ray temp dir...)."""
    import psutil

    found = []
    for proc in psutil.process_iter(["cmdline"]):
        line = " ".join(proc.info["cmdline"] or ())
        if any(m and m in line for m in markers):
            found.append(line[:200])
    return found


@pytest.fixture(scope="session")
def workbook_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The workbook alone in a venv of its own, as a nightly installs it beside an image's
    Python: its own light dependencies and the Ray Jobs client (the Ray of this environment,
    whose cluster it talks to), no verl, torch or vLLM. pip's cache makes it quick, and nothing is
    compiled ahead (28 s of the 98 the install took here): Python compiles the modules a
    run imports as it imports them."""
    from importlib.metadata import version

    venv = tmp_path_factory.mktemp("workbook-venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = str(venv / "bin" / "python")
    done = subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-compile", "-e", f"{REPO}[ray]",
                           f"ray[default]=={version('ray')}"], capture_output=True, text=True,
                          timeout=1800)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    heavy = subprocess.run([python, "-c", "import importlib.util as u; print([m for m in "
                            "('verl', 'torch', 'vllm', 'transformers') if u.find_spec(m)])"],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert heavy == "[]", f"the workbook's venv has the training stack: {heavy}"
    return venv


@pytest.fixture(scope="session")
def smoke(session_env: dict[str, str], cpu_assets, tmp_path_factory,  # type: ignore[no-untyped-def]
          workbook_venv: Path) -> SuiteRun:
    """The smoke suite as CI and the docs run it (real verl, real Ray cluster), from the workbook's own
    venv, with this environment (the full one) as the training interpreter."""
    junit = tmp_path_factory.mktemp("smoke") / "junit.xml"
    with HeavyLock():
        first = workbook_cli(["suite", "run", "params/suites/smoke-cpu.txt", "--junit",
                              str(junit), "--python", sys.executable], session_env, timeout=2400,
                             program=[str(workbook_venv / "bin" / "python"), "-m", "workbook"])
    directory = last_dir(first.stdout)
    assert directory is not None, first.output[-5000:]
    from workbook.launch.cluster.state import temp_dir_for

    cluster = str(temp_dir_for(directory / "cluster.json"))  # the suite's shared Ray cluster
    return SuiteRun(first, None, directory, junit, processes_naming(str(directory), cluster))


@pytest.fixture(scope="session")
def gspo_run(smoke: SuiteRun) -> CliRun:
    """The default scenario, unchanged: real verl on CPU, judged against its blessed baseline."""
    return smoke.entry("01-gspo-tiny")


@pytest.fixture(scope="session")
def ppo_run(smoke: SuiteRun) -> CliRun:
    """The tiny PPO scenario on a local 2-node Ray cluster started and stopped by the run."""
    return smoke.entry("02-ppo-tiny")


@pytest.fixture(scope="session")
def variants(session_env: dict[str, str], cpu_assets, tmp_path_factory,  # type: ignore[no-untyped-def]
             gspo_run: CliRun) -> SuiteRun:
    """Four faulty variants; Ctrl-C during the third; then the same command again (resume).

    (1) a slower trainer and, at the window's last step only, a doubled policy loss (one run
    for the timing checks and the per-step comparison), judged against this machine's baseline
    (the smoke suite's unchanged run's timings), so its timings are judged on any CPU; (2) a
    broken override; (3) the worker killed at step 3; (4) the live-rollout scenario with every
    reward halved where verl scores.
    """
    folder = tmp_path_factory.mktemp("variants")
    suite = folder / "variants.txt"
    here = machine_baseline(folder, gspo_run)
    suite.write_text(
        "# the tiny GSPO scenarios with faults loaded into verl, and a broken override\n"
        f"{GSPO_TINY} {fault('slow_update,pg_loss_x2@4')} -s checks.baseline={here}\n"
        f"{GSPO_TINY} -s '{BROKEN_OVERRIDE}' {PLANTED}\n"
        f"{GSPO_TINY} {fault('kill_worker@3')}\n"
        f"{GSPO_LIVE} {fault(ROLLOUT_FAULT)}\n")
    junit = folder / "junit.xml"
    args = ["suite", "run", str(suite), "--junit", str(junit), "--dir", str(folder / "night")]
    # a runs root of their own: a broken override's red night is not one of the session's nights
    env = dict(session_env, WORKBOOK_RUNS=str(folder / "runs"))
    with HeavyLock():
        first = interrupted(args, env, when="suite: entry 3:", after_s=25.0)
        interim = json.loads((folder / "night" / "suite.json").read_text())
        stopped = [Path(e["run_dir"]) for e in interim["entries"] if e.get("run_dir")]
        from workbook.command.builder import ray_temp_dir

        leftovers = processes_naming(*(str(d) for d in stopped),
                                     *(ray_temp_dir(d.name) for d in stopped))
        again = workbook_cli(args, env, timeout=2400)
    return SuiteRun(first, again, folder / "night", junit, leftovers, interim)


def interrupted(args: list[str], env: dict[str, str], *, when: str, after_s: float) -> CliRun:
    """Run ``workbook ARGS``; once ``when`` is printed, wait ``after_s`` and send SIGINT."""
    proc = subprocess.Popen([*WORKBOOK, *args], env=env, cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 1800
    for line in proc.stdout:
        lines.append(line)
        if when in line or time.monotonic() > deadline:
            time.sleep(after_s)
            proc.send_signal(signal.SIGINT)
            break
    rest, _ = proc.communicate(timeout=600)
    output = "".join(lines) + rest
    return CliRun(args, proc.returncode, output, last_dir(output), output)


@dataclass
class PapermillNight:
    """The docs' papermill line, run as a nightly would: its report line and run dir."""

    returncode: int
    stderr: str
    report: Path | None
    run_dir: Path | None


@pytest.fixture(scope="session")
def papermill_night(session_env: dict[str, str], cpu_assets: object,
                    smoke: SuiteRun) -> PapermillNight:
    """``papermill notebooks/gspo.ipynb out.ipynb`` exactly as the docs show: the default
    scenario, unchanged, the second green night of the session (after the smoke suite's)."""
    argv = shlex.split(shown_line("papermill notebooks/gspo.ipynb"))
    argv[0] = str(Path(sys.executable).parent / "papermill")  # the tests' own environment
    with HeavyLock():
        done = subprocess.run(argv, cwd=REPO, env=session_env, capture_output=True, text=True,
                              timeout=1800)
    (REPO / "out.ipynb").unlink(missing_ok=True)
    found = re.search(r"workbook: report (\S+) \(run (\S+)\)", done.stderr)
    return PapermillNight(done.returncode, done.stderr, Path(found.group(1)) if found else None,
                          Path(found.group(2)) if found else None)


@pytest.fixture(scope="session")
def verl_history(tmp_path_factory: pytest.TempPathFactory) -> VerlHistory:
    """A verl repository: the installed release, then a week of commits, one of them a bug."""
    return make_verl_history(tmp_path_factory.mktemp("verl-history") / "verl")


@dataclass
class Nights:
    """The session's nights of the default scenario after the smoke suite's and papermill's:
    an improved one (verl at a good commit, torch.compile turned off, launched by ``workbook
    align --replay-from`` on the smoke run's rollouts, judged against the baseline as it was
    blessed when the trainer was slower), then two red ones (tonight's verl, the loss-scaling
    bug in it; the first beside a busy process)."""

    refused_proposal: CliRun  # `baseline propose` with only two green nights
    improved: CliRun  # `workbook align --replay-from SMOKE ...` (its output; run_dir = the new run)
    suspect: CliRun
    regressed: CliRun
    good_checkout: Path
    bad_checkout: Path


GSPO_NAME = "gspo-tiny-1n1cpu-fsdp2-vllm"
GSPO_PARAMS = f"params/{GSPO_NAME}.yaml"
COMPILE_OFF = "overrides+=actor_rollout_ref.actor.use_torch_compile=False"
# what the loss-scaling bug moves at every step, each confirmed across two nights
CONFIRMED = ("actor/pg_loss", "actor/grad_norm", "actor/pg_clipfrac", "actor/ppo_kl",
             "actor/entropy", "training/rollout_probs_diff_mean")


# How much slower the trainer was when the improved night's stale baseline was blessed: a
# speed-up against it shows beyond any band a shared 2-core host's noise needs (45 % on
# throughput), where tonight's own speed-up (torch.compile off: 1.1-2.6x across runs here) does
# not, reliably.
SLOWER = 3.0
TIMING_PREFIXES = ("timing_s/", "timing_per_token_ms/", "perf/time_per_step")


def machine_baseline(folder: Path, run: CliRun, slower: float = 1.0) -> Path:
    """The default scenario's blessed baseline as this machine would have blessed it: the
    committed numerics, with the timings and the conditions of ``run`` (the session's unchanged
    run of it), every timing ``slower`` times longer and the throughput ``slower`` times lower
    (the committed spread scaled with them). The committed baseline's timings are another CPU's,
    so on any other they are set aside, and CI hosts vary (EPYC family 23 and 25, Intel AMX)."""
    from workbook.checks.conditions import blessed_conditions
    from workbook.checks.reductions import reduce_series
    from workbook.metrics.loading import load_metrics

    blessed = REPO / "params" / "baselines" / f"{GSPO_NAME}.cpu.json"
    data = json.loads(blessed.read_text())
    data["conditions"] = blessed_conditions([run.json("run.json")["conditions"]])
    assert run.run_dir is not None
    metrics = load_metrics(run.run_dir / "metrics.jsonl")
    for name, entry in data["metrics"].items():
        speed = name == "perf/throughput"
        if not (speed or name.startswith(TIMING_PREFIXES)):
            continue
        factor = 1 / slower if speed else slower
        measured = {step: v * factor for step, v in metrics.series(name).items()}
        value, _ = reduce_series(measured, entry["reduce"], tuple(entry["window"]), name=name)
        scale = value / entry["value"] if entry["value"] else 1.0
        entry.update(value=value, sigma=entry["sigma"] * scale,
                     series={str(step): v for step, v in measured.items()},
                     series_sigma={k: v * scale for k, v in entry.get("series_sigma", {}).items()})
    path = folder / f"{GSPO_NAME}.this-machine-{slower:g}x.cpu.json"
    path.write_text(json.dumps(data, indent=1))
    return path


def confirm_sets(nights: int = 2) -> list[str]:
    return [arg for metric in CONFIRMED
            for arg in ("-s", f"checks.metrics.{metric}.confirm_nights={nights}")]


@pytest.fixture(scope="session")
def nights(smoke: SuiteRun, papermill_night: PapermillNight, verl_history: VerlHistory,
           session_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Nights:
    folder = tmp_path_factory.mktemp("nights")
    good = checkout_at(verl_history, verl_history.commits[1], folder / "verl-good")
    bad = checkout_at(verl_history, verl_history.bad, folder / "verl-tonight")
    refused = workbook_cli(["baseline", "propose", GSPO_NAME, "--runs-root",
                            session_env["WORKBOOK_RUNS"]], session_env, timeout=300)
    gspo = smoke.entry("01-gspo-tiny")
    with HeavyLock():
        improved = workbook_cli(["align", "--replay-from", str(gspo.run_dir), GSPO_PARAMS,
                                 "-s", f"verl.path={good}", "-s", COMPILE_OFF,
                                 "-s", "checks.baseline="
                                 f"{machine_baseline(folder, gspo, slower=SLOWER)}"],
                                session_env, timeout=1800)
    tonight = ["run", GSPO_PARAMS, "--verl", str(bad), *confirm_sets()]
    with HeavyLock():
        busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        try:
            suspect = workbook_cli(tonight, session_env, timeout=1800)
        finally:
            busy.kill()
            busy.wait()
        regressed = workbook_cli(tonight, session_env, timeout=1800)
    return Nights(refused, improved, suspect, regressed, good, bad)
