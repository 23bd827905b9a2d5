"""Reading verl's nightly workflows and running a script under stand-ins: which job runs which
script with what, and a script that can do nothing to the machine it is read on."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from workbook.errors import InputError
from workbook.nightly.standin import script_facts
from workbook.nightly.workflow import NightlyJob, nightly_jobs

SCRIPT = "tests/special_npu/nightly_ci_ascend/run_x.sh"


def checkout(tmp_path: Path, jobs: dict[str, Any], name: str = "nightly_ascend.yml",
             scripts: tuple[str, ...] = (SCRIPT,)) -> Path:
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True, exist_ok=True)
    workflow = {"name": "n", "on": {"schedule": [{"cron": "0 17 * * *"}]}, "env": {"TOP": "top"},
                "jobs": jobs}
    (folder / name).write_text(yaml.safe_dump(workflow, sort_keys=False))
    for script in scripts:
        (tmp_path / script).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / script).write_text("python3 -m verl.trainer.main_ppo a=1\n")
    return tmp_path


def steps(*runs: str) -> list[dict[str, Any]]:
    return [{"uses": "actions/checkout@v4"}, *({"run": run} for run in runs)]


def one_job(tmp_path: Path, run: str) -> NightlyJob:
    (job,) = nightly_jobs(checkout(tmp_path, {"job_a": {
        "runs-on": "linux-aarch64-a2b3-8",
        "env": {"HF_ENDPOINT": "https://hf-mirror.com", "HF_HUB_ENABLE_HF_TRANSFER": "0",
                "UV_HTTP_TIMEOUT": 120, "PIP_INDEX_URL": "http://cache",
                "TRANSFORMERS_VERBOSITY": "error", "FLAG": True},
        "steps": steps(run, "cd /root/.cache/nightly_log/\n"
                            "python check_npu.py --log x.log --base run_x/baseline_x.txt\n")}}))
    return job


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        (f"ray stop --force\nbash {SCRIPT}",
         dict(direct=True, inputs={}, exports=(), args=())),
        (f"TOTAL_TRAINING_STEPS=1 bash {SCRIPT} vllm",
         dict(direct=True, inputs={"TOTAL_TRAINING_STEPS": "1"}, args=("vllm",))),
        (f"export PYTHONPATH=/X/src:$PYTHONPATH\ncd recipe\nexport A=\"b\"\nbash ./{SCRIPT} | tee log",
         dict(direct=True, exports=("export PYTHONPATH=/X/src:$PYTHONPATH", 'export A="b"'))),
        (f"submit multinode '[\"--script-path\",\"/verl/{SCRIPT}\"]' '{{}}'",
         dict(direct=False, inputs={}, env={}, exports=())),
    ],
    ids=["bash", "inputs-and-args", "exports-before-it", "handed-to-a-submitter"],
)
def test_a_job_is_read_as_its_step_runs_the_script(tmp_path: Path, run: str,
                                                  expected: dict[str, Any]) -> None:
    job = one_job(tmp_path, run)
    assert job.script == SCRIPT and job.name == "job_a"
    for key, value in expected.items():
        assert getattr(job, key) == value, key


def test_install_and_download_env_is_left_out_and_values_read_as_github_passes_them(
        tmp_path: Path) -> None:
    job = one_job(tmp_path, f"bash {SCRIPT}")
    assert job.env == {"TOP": "top", "TRANSFORMERS_VERBOSITY": "error", "FLAG": "true"}


def test_the_runner_names_the_hardware_and_the_check_step_the_baseline(tmp_path: Path) -> None:
    job = one_job(tmp_path, f"bash {SCRIPT}")
    assert (job.runner, job.hardware, job.baseline) == (
        "linux-aarch64-a2b3-8", "a2", "run_x/baseline_x.txt")


@pytest.mark.parametrize(("runner", "hardware"), [("linux-aarch64-a3-16", "a3"),
                                                  ("linux-aarch64-a2b3-8", "a2"),
                                                  ("ubuntu-latest", None)])
def test_hardware_of_a_runner_label(runner: str, hardware: str | None) -> None:
    assert NightlyJob("j", "w", "s", True, runner=runner).hardware == hardware


def test_a_script_the_workflow_names_where_it_is_not_is_found_by_its_name(tmp_path: Path) -> None:
    moved = "tests/special_npu/nightly_ci_ascend/run_y.sh"
    (job,) = nightly_jobs(checkout(tmp_path, {"job_b": {"runs-on": "linux-aarch64-a3-8", "steps": steps(
        """submit '["--script-path","/verl/tests/special_npu/run_y.sh"]'""")}}, scripts=(moved,)))
    assert (job.script, job.named) == (moved, "tests/special_npu/run_y.sh")


@pytest.mark.parametrize(
    ("jobs", "expected"),
    [
        ({"two": {"steps": steps(f"bash {SCRIPT}\nbash tests/special_npu/run_z.sh\n")}},
         "job two runs 2 scripts"),
        ({"gone": {"steps": steps("bash tests/special_npu/run_gone.sh")}},
         "job gone runs tests/special_npu/run_gone.sh, which the checkout does not hold"),
        ({"out": {"steps": steps("bash tests/../../etc/run.sh")}},
         r"job out runs tests/\.\./\.\./etc/run\.sh, outside the checkout"),
    ],
    ids=["two-scripts", "no-such-script", "outside-the-checkout"],
)
def test_a_job_that_maps_to_no_one_script_is_refused(tmp_path: Path, jobs: dict[str, Any],
                                                     expected: str) -> None:
    with pytest.raises(InputError, match=expected):
        nightly_jobs(checkout(tmp_path, jobs, scripts=(SCRIPT, "tests/special_npu/run_z.sh")))


def test_only_nightly_ascend_workflows_count(tmp_path: Path) -> None:
    checkout(tmp_path, {"a": {"steps": steps(f"bash {SCRIPT}")}}, name="e2e_ascend.yml")
    with pytest.raises(InputError, match="no nightly Ascend workflow"):
        nightly_jobs(tmp_path)
    checkout(tmp_path, {"b": {"steps": steps(f"bash {SCRIPT}")}}, name="nightly_npu.yaml")
    assert [j.name for j in nightly_jobs(tmp_path)] == ["b"]


def test_a_script_under_the_stand_ins_touches_nothing_and_hands_over_its_command(
        tmp_path: Path) -> None:
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "file").write_text("still here")
    made = tmp_path / "made"
    script = tmp_path / "verl" / SCRIPT
    script.parent.mkdir(parents=True)
    script.write_text(textwrap.dedent(f"""\
        set -xeuo pipefail
        rm -rf {keep}
        touch {made}
        mkdir -p {made}-dir
        sed -i 's/still/gone/' {keep}/file
        DEVICE=$(python3 -c 'import torch_npu' 2>/dev/null && echo npu || echo gpu)
        NAME="$(basename -- "${{BASH_SOURCE[0]}}" .sh)"
        export OUT="$HOME/$NAME/$DEVICE"
        python3 -m verl.trainer.main_ppo --config-path=config x.y="$1" z=2 | tee {made}.log
        """))
    job = NightlyJob("j", "w.yml", SCRIPT, True, inputs={"STEPS": "1"}, env={"JOBENV": "1"},
                     exports=("export PYTHONPATH=/X:$PYTHONPATH",), args=("a b",))

    facts = script_facts(tmp_path / "verl", job)

    assert (keep / "file").read_text() == "still here"
    assert not any(p.exists() for p in (made, Path(f"{made}-dir"), Path(f"{made}.log")))
    assert facts["entry"] == ["-m", "verl.trainer.main_ppo", "--config-path=config"]
    assert facts["overrides"] == ["x.y=a b", "z=2"]
    assert facts["env"] == {"JOBENV": "1", "OUT": "/home/ci/run_x/npu", "PYTHONPATH": "/X:"}
    assert facts["inputs"] == {"STEPS": "1"}
