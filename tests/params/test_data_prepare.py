"""Data is prepared, not assumed: a scenario's ``data:`` section runs verl's preprocessing script
from the checkout, once while its inputs are unchanged, and a run here without its model or data
is refused before launch on every profile.

The dataset and the script are the test's own (no download): the script takes verl's
``examples/data_preprocess/gsm8k.py`` options and imports ``verl`` the way that script does.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from workbook.cli import main
from workbook.data.prepare import STAMP, prepare_command, prepare_data
from workbook.errors import ParamsError, RunError
from workbook.launch.processes import is_running
from workbook.params.verl_config import installed_config_dir
from workbook.scenario import load_scenario, ready_to_launch, validate_scenario

SCRIPT = '''\
import argparse, os, sys
import verl  # gsm8k.py imports verl.utils: the checkout's verl must be the one found

parser = argparse.ArgumentParser()
parser.add_argument("--local_dataset_path", default=None)
parser.add_argument("--local_save_dir", default="~/data/gsm8k")
parser.add_argument("--fail", action="store_true")
parser.add_argument("--no_outputs", action="store_true")
parser.add_argument("--seed", default=None)
parser.add_argument("--hang", default=None)  # a file for the PIDs of the children it leaves
args = parser.parse_args()
if args.hang:  # two `sleep` children, one in a session of its own, then never finish
    import subprocess
    kids = [subprocess.Popen(["sleep", "600"]),
            subprocess.Popen(["sleep", "600"], start_new_session=True)]
    with open(args.hang, "w") as out:
        out.write(" ".join(str(k.pid) for k in kids))
    subprocess.run(["sleep", "600"])
assert verl.MARK == "checkout", verl.__file__
assert os.getcwd() == os.environ["EXPECT_CWD"], os.getcwd()
with open(os.environ["RUNS_FILE"], "a") as runs:
    runs.write("ran\\n")
if args.fail:
    print("Traceback: something broke in preprocessing", file=sys.stderr)
    sys.exit(7)
os.makedirs(args.local_save_dir, exist_ok=True)
if not args.no_outputs:
    for split in ("train", "test"):
        with open(os.path.join(args.local_dataset_path, split + ".jsonl")) as raw:
            rows = raw.read()
        with open(os.path.join(args.local_save_dir, split + ".parquet"), "w") as out:
            out.write(rows.upper())
'''


class Setup:
    def __init__(self, root: Path) -> None:
        self.checkout = root / "verl"
        self.script = self.checkout / "examples" / "data_preprocess" / "gsm8k.py"
        self.dataset = root / "datasets" / "openai" / "gsm8k"
        self.save_dir = root / "data" / "gsm8k"
        self.model = root / "models" / "Qwen3-8B"
        self.runs_file = root / "runs.txt"
        self.scenario = root / "s.yaml"

    def write(self, *, data: bool = True, extra: str = "") -> Path:
        text = (f"profile: npu\nlauncher: local\nmodel_path: {self.model}\n"
                f"train_files: {self.save_dir}/train.parquet\n"
                f"val_files: {self.save_dir}/test.parquet\n"
                f"verl:\n  path: {self.checkout}\n")
        if data:
            text += (f"data:\n  script: examples/data_preprocess/gsm8k.py\n"
                     f"  local_dataset_path: {self.dataset}\n  local_save_dir: {self.save_dir}\n")
        self.scenario.write_text(text + extra)
        return self.scenario

    def runs(self) -> int:
        return len(self.runs_file.read_text().splitlines()) if self.runs_file.exists() else 0


@pytest.fixture()
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Setup:
    st = Setup(tmp_path)
    installed = installed_config_dir(sys.executable)
    assert installed is not None, "verl is not installed: no trainer config to copy"
    shutil.copytree(installed, st.checkout / "verl" / "trainer" / "config")
    (st.checkout / "verl" / "__init__.py").write_text('MARK = "checkout"\n')
    st.script.parent.mkdir(parents=True)
    st.script.write_text(SCRIPT)
    st.dataset.mkdir(parents=True)
    (st.dataset / "train.jsonl").write_text('{"question": "1+1", "answer": "#### 2"}\n')
    (st.dataset / "test.jsonl").write_text('{"question": "2+2", "answer": "#### 4"}\n')
    st.model.mkdir(parents=True)
    monkeypatch.setenv("RUNS_FILE", str(st.runs_file))
    monkeypatch.setenv("EXPECT_CWD", str(st.checkout))
    monkeypatch.delenv("WORKBOOK_VERL", raising=False)
    st.write()
    return st


def test_the_command_for_verls_gsm8k_is_its_own_options_from_the_checkout_root(
    tmp_path: Path,
) -> None:
    s = load_scenario(_verl_gsm8k_scenario(tmp_path), check_files=False)
    argv, cwd, env = prepare_command(s, "python3")
    assert argv == ["python3", "/ci/verl/examples/data_preprocess/gsm8k.py",
                    "--local_dataset_path", "/ci/.cache/datasets/openai/gsm8k",
                    "--local_save_dir", "/ci/data/gsm8k"]
    assert cwd == Path("/ci/verl")
    assert env["PYTHONPATH"].split(":")[0] == "/ci/verl"


def _verl_gsm8k_scenario(folder: Path) -> Path:
    """verl's nightly step: ``python examples/data_preprocess/gsm8k.py --local_dataset_path
    ${HOME}/.cache/datasets/openai/gsm8k`` (saving to its default ``~/data/gsm8k``)."""
    path = folder / "gsm8k.yaml"
    path.write_text("profile: npu\nmodel_path: /m\ntrain_files: /ci/data/gsm8k/train.parquet\n"
                    "val_files: /ci/data/gsm8k/test.parquet\nverl:\n  path: /ci/verl\n"
                    "data:\n  script: examples/data_preprocess/gsm8k.py\n"
                    "  local_dataset_path: /ci/.cache/datasets/openai/gsm8k\n"
                    "  local_save_dir: /ci/data/gsm8k\n")
    return path


def test_prepare_runs_the_script_once_and_keeps_current_outputs(setup: Setup) -> None:
    s = load_scenario(setup.scenario, check_files=False)
    first = prepare_data(s, python=sys.executable)
    assert first is not None and first.ran
    assert (setup.save_dir / "train.parquet").read_text().startswith('{"QUESTION"')
    assert (setup.save_dir / STAMP).is_file()
    second = prepare_data(s, python=sys.executable)
    assert second is not None and not second.ran
    assert setup.runs() == 1
    assert prepare_data(s, python=sys.executable, force=True).ran  # type: ignore[union-attr]
    assert setup.runs() == 2


def _touch_dataset(st: Setup) -> None:
    path = st.dataset / "train.jsonl"
    path.write_text(path.read_text() + '{"question": "3+3", "answer": "#### 6"}\n')
    os.utime(path, ns=(time.time_ns() + 10**9, time.time_ns() + 10**9))


CHANGES: list[tuple[str, Callable[[Setup], None]]] = [
    ("dataset-changed", _touch_dataset),
    ("script-changed", lambda st: st.script.write_text(st.script.read_text() + "\n# v2\n")),
    ("output-deleted", lambda st: (st.save_dir / "test.parquet").unlink()),
    ("stamp-deleted", lambda st: (st.save_dir / STAMP).unlink()),
    ("stamp-garbled", lambda st: (st.save_dir / STAMP).write_text("{not json")),
]


@pytest.mark.parametrize("change", [c for _, c in CHANGES], ids=[n for n, _ in CHANGES])
def test_prepare_runs_again_when_an_input_or_output_changed(
    setup: Setup, change: Callable[[Setup], None]
) -> None:
    s = load_scenario(setup.scenario, check_files=False)
    prepare_data(s, python=sys.executable)
    change(setup)
    again = prepare_data(s, python=sys.executable)
    assert again is not None and again.ran and setup.runs() == 2


def test_other_arguments_are_other_outputs(setup: Setup) -> None:
    prepare_data(load_scenario(setup.scenario, check_files=False), python=sys.executable)
    s = load_scenario(setup.scenario, ["data.args+=--seed=1"], check_files=False)
    again = prepare_data(s, python=sys.executable)  # not skipped: its command differs
    assert again is not None and again.ran and setup.runs() == 2


@pytest.mark.parametrize(
    ("sets", "words"),
    [(["data.args+=--fail"], "exit 7.*something broke"),
     (["data.args+=--no_outputs"], "wrote no .*train.parquet")],
    ids=["script-fails", "no-outputs"],
)
def test_a_failing_script_is_a_failed_run_quoting_its_output(
    setup: Setup, sets: list[str], words: str
) -> None:
    s = load_scenario(setup.scenario, sets, check_files=False)
    with pytest.raises(RunError, match=words) as err:
        prepare_data(s, python=sys.executable)
    assert err.value.exit_code == 3
    assert not (setup.save_dir / STAMP).exists()


def test_a_script_past_its_timeout_ends_with_every_process_it_started(
    setup: Setup, tmp_path: Path
) -> None:
    kids = tmp_path / "kids.txt"
    s = load_scenario(setup.scenario, [f"data.args+=--hang={kids}", "data.timeout_s=3"],
                      check_files=False)
    started = time.monotonic()
    with pytest.raises(RunError, match="did not finish within 3 s") as err:
        prepare_data(s, python=sys.executable)
    assert err.value.exit_code == 3 and time.monotonic() - started < 30
    pids = [int(p) for p in kids.read_text().split()]
    assert len(pids) == 2  # its grandchildren: one in its group, one in a session of its own
    deadline = time.monotonic() + 10
    while any(is_running(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [p for p in pids if is_running(p)] == []
    assert not (setup.save_dir / STAMP).exists()


def test_a_missing_dataset_or_script_is_bad_input_naming_the_field(setup: Setup) -> None:
    s = load_scenario(setup.scenario, [f"data.local_dataset_path={setup.dataset}-nope",
                                       "data.script=examples/nope.py"], check_files=False)
    with pytest.raises(ParamsError) as err:
        prepare_data(s, python=sys.executable)
    assert {f for f, _ in err.value.problems} == {"data.local_dataset_path", "data.script"}
    assert setup.runs() == 0


@pytest.mark.parametrize(
    ("sets", "field"),
    [
        (["data.local_save_dir=null"], "data.local_save_dir"),
        (["data.local_dataset_path=null"], "data.local_dataset_path"),
        (["data.args+=--local_save_dir=/elsewhere"], "data.args[0]"),
        (["data.script=null"], "data.local_dataset_path"),  # a dataset with no script to run
        (["data.outputs=[a/b.parquet]"], "data.outputs.0"),
    ],
    ids=["no-save-dir", "no-dataset", "arg-fights-field", "no-script", "output-not-a-name"],
)
def test_a_data_section_that_cannot_work_is_refused_naming_its_field(
    setup: Setup, sets: list[str], field: str
) -> None:
    with pytest.raises(ParamsError) as err:
        load_scenario(setup.scenario, sets, check_files=False)
    assert field in {f for f, _ in err.value.problems}, err.value.problems


def test_a_local_npu_run_without_its_data_is_refused_before_launch(setup: Setup) -> None:
    setup.write(data=False)
    with pytest.raises(ParamsError) as err:
        validate_scenario(setup.scenario, where="here")
    assert {f for f, _ in err.value.problems} == {"train_files", "val_files"}
    assert "data: section" in str(err.value)
    # the same scenario as a runner's: its paths are not looked for here
    assert validate_scenario(setup.scenario, where="runner").profile == "npu"


def test_data_a_data_section_will_prepare_counts_as_there(setup: Setup) -> None:
    assert validate_scenario(setup.scenario, where="here").data.enabled
    (setup.dataset / "train.jsonl").unlink()
    setup.dataset.joinpath("test.jsonl").unlink()
    setup.dataset.rmdir()
    with pytest.raises(ParamsError) as err:
        validate_scenario(setup.scenario, where="here")
    fields = {f for f, _ in err.value.problems}
    assert fields == {"train_files", "val_files", "data.local_dataset_path"}


def test_a_missing_model_is_refused_on_every_profile(setup: Setup) -> None:
    setup.model.rmdir()
    with pytest.raises(ParamsError, match="model_path"):
        validate_scenario(setup.scenario, where="here")


def test_launch_prepares_the_data_and_still_refuses_a_missing_model_as_a_runner(
    setup: Setup, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WORKBOOK_WHERE", "runner")  # never a way around the check at launch
    s = validate_scenario(setup.scenario)
    assert ready_to_launch(s, python=sys.executable).ran  # type: ignore[union-attr]
    setup.model.rmdir()
    with pytest.raises(ParamsError, match="model_path"):
        ready_to_launch(s, python=sys.executable)


def test_data_prepare_cli_prepares_then_says_it_is_current(
    setup: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["data", "prepare", str(setup.scenario)]) == 0
    assert "data: prepared" in capsys.readouterr().out
    assert main(["data", "prepare", str(setup.scenario)]) == 0
    assert "up to date" in capsys.readouterr().out
    assert setup.runs() == 1


def test_data_prepare_cli_without_a_data_section_exits_2(
    setup: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    setup.write(data=False)
    assert main(["data", "prepare", str(setup.scenario)]) == 2
    assert "no data: section" in capsys.readouterr().err


def test_data_prepare_cli_takes_the_checkout_from_verl(
    setup: Setup, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = setup.scenario.read_text().replace(f"verl:\n  path: {setup.checkout}\n", "")
    setup.scenario.write_text(text)
    assert main(["data", "prepare", str(setup.scenario), "--verl", str(setup.checkout)]) == 0
    assert setup.runs() == 1
