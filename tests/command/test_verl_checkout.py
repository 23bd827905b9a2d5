"""The verl under test: ``verl.path`` / ``--verl`` put a checkout first on PYTHONPATH, validation
composes that checkout's Hydra config, and provenance records its commit and whether it is dirty."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from workbook import provenance
from workbook.cli import main
from workbook.command import build_plan
from workbook.errors import ParamsError
from workbook.params.verl_config import check_overrides, installed_config_dir
from workbook.scenario import load_scenario, validate_scenario

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parent / "data"
GSPO = REPO / "params" / "gspo-qwen3-8b-1n8npu-fsdp2-vllm.yaml"
PROBE_KEY = "workbook_checkout_only_key"  # exists in the fake checkout's config only


@pytest.fixture(autouse=True)
def fixed_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/ci")
    monkeypatch.delenv("WORKBOOK_VERL", raising=False)


@pytest.fixture()
def checkout(tmp_path: Path) -> Path:
    """A verl checkout: the installed verl's trainer config plus one key of its own."""
    installed = installed_config_dir(sys.executable)
    assert installed is not None, "verl is not installed: nothing to copy a config from"
    root = tmp_path / "verl-checkout"
    shutil.copytree(installed, root / "verl" / "trainer" / "config")
    (root / "verl" / "__init__.py").write_text("")
    config = root / "verl" / "trainer" / "config" / "ppo_trainer.yaml"
    config.write_text(config.read_text() + f"\n{PROBE_KEY}: 0\n")
    return root


def test_without_a_checkout_the_command_is_the_golden_one_and_names_no_pythonpath() -> None:
    golden = json.loads((DATA / f"{GSPO.stem}.plan.json").read_text())
    plan = build_plan(load_scenario(GSPO, check_files=False), Path("/runs/gspo/RUN"))
    assert plan.argv == golden["argv"] and plan.env == golden["env"]
    assert "PYTHONPATH" not in plan.env


@pytest.mark.parametrize("how", ["field", "env"], ids=["verl.path", "WORKBOOK_VERL"])
def test_with_a_checkout_only_pythonpath_changes_and_puts_the_checkout_first(
    how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    golden = json.loads((DATA / f"{GSPO.stem}.plan.json").read_text())
    sets = ["verl.path=/work/verl"] if how == "field" else []
    if how == "env":
        monkeypatch.setenv("WORKBOOK_VERL", "/work/verl")
    s = load_scenario(GSPO, sets, check_files=False)
    plan = build_plan(s, Path("/runs/gspo/RUN"))
    assert plan.argv == golden["argv"]
    assert plan.env == {**golden["env"], "PYTHONPATH": "/work/verl"}


def test_the_checkout_goes_ahead_of_the_cpu_profiles_and_the_scenarios_pythonpath() -> None:
    s = load_scenario(REPO / "params" / "gspo-tiny-1n1cpu-fsdp2-vllm.yaml",
                      ["verl.path=/work/verl", "env.PYTHONPATH=/extra"], check_files=False)
    plan = build_plan(s, Path("/runs/x/RUN"), plugin_path="/plugins")
    assert plan.env["PYTHONPATH"] == "/work/verl:/plugins:/extra"


def test_a_relative_verl_path_is_relative_to_the_scenario_file(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text("profile: npu\nmodel_path: /m\ntrain_files: /t\nval_files: /v\n"
                        "verl:\n  path: ../verl\n")
    assert load_scenario(scenario, check_files=False).verl.path == str(tmp_path / "../verl")


def test_validation_composes_the_checkouts_config_not_the_installed_one(checkout: Path) -> None:
    override = f"{PROBE_KEY}=1"
    assert check_overrides([override], verl_dir=installed_config_dir(sys.executable).parents[1]) != []  # the installed verl has no such key
    assert check_overrides([override], checkout=checkout) == []
    sets = [f"verl.path={checkout}", f"overrides+={override}"]
    assert validate_scenario(GSPO, sets, where="runner").verl.path == str(checkout)
    with pytest.raises(ParamsError, match=PROBE_KEY):
        validate_scenario(GSPO, [f"overrides+={override}"], where="runner")


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda root: None, "no such verl checkout"),
        (lambda root: root.mkdir(), "not a verl checkout"),
        (lambda root: (root / "verl").mkdir(parents=True) or (root / "verl" / "__init__.py")
         .write_text(""), "no verl/trainer/config/ppo_trainer.yaml"),
    ],
    ids=["missing", "not-verl", "no-config"],
)
def test_a_run_here_refuses_a_verl_path_that_is_no_checkout(
    tmp_path: Path, make: object, words: str
) -> None:
    root = tmp_path / "verl"
    make(root)  # type: ignore[operator]
    cpu = REPO / "params" / "gspo-tiny-1n1cpu-fsdp2-vllm.yaml"
    with pytest.raises(ParamsError, match=words) as err:
        load_scenario(cpu, [f"verl.path={root}"], check_files=True)
    assert any(field == "verl.path" for field, _ in err.value.problems)


def test_plan_cli_takes_verl_as_an_absolute_checkout(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["plan", str(GSPO), "--verl", "verl", "--format", "json"]) == 0
    env = json.loads(capsys.readouterr().out)["env"]
    assert env["PYTHONPATH"] == str(tmp_path / "verl")


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                   check=True, capture_output=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_provenance_records_the_checkouts_commit_and_whether_it_is_dirty(checkout: Path) -> None:
    _git(checkout, "init", "-q")
    _git(checkout, "add", ".")
    _git(checkout, "commit", "-q", "-m", "verl")
    head = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()
    clean = provenance.collect(verl_path=checkout)
    assert clean["commits"]["verl"] == head
    assert clean["verl_checkout"] == {"path": str(checkout), "commit": head, "dirty": False}
    (checkout / "verl" / "__init__.py").write_text("# changed\n")
    dirty = provenance.collect(verl_path=checkout)
    assert dirty["commits"]["verl"] == f"{head}-dirty"
    assert dirty["verl_checkout"]["dirty"] is True


def test_the_checkouts_own_version_is_the_runs_verl_version(checkout: Path) -> None:
    # the run imports the checkout's verl: its version file, not the installed package's metadata
    (checkout / "verl" / "version").mkdir(exist_ok=True)
    (checkout / "verl" / "version" / "version").write_text("0.9.2.dev0\n")
    facts = provenance.collect(verl_path=checkout)
    assert facts["versions"]["verl"] == "0.9.2.dev0"
    assert facts["verl_checkout"]["version"] == "0.9.2.dev0"


def test_provenance_of_a_copied_tree_says_it_has_no_commit(checkout: Path) -> None:
    facts = provenance.collect(verl_path=checkout)
    assert facts["verl_checkout"] == {"path": str(checkout), "commit": None, "dirty": None}
    assert "verl" not in facts["commits"]  # never the installed verl's commit in its place
