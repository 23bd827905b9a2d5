"""A baseline file says where its numbers came from: bless records it, loading requires it.

A file naming the workbook's ``format`` was written by ``bless`` or ``baseline import``; without
its provenance (or with a part of it missing, misspelt or malformed) it is refused, exit 2, the
field named. verl's ``.txt`` files and format-less hand-made documents still load.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.checks.handmade import DATA
from workbook.checks.baseline import Baseline, BaselineMetric, load_baseline
from workbook.checks.blessing import bless
from workbook.cli import main
from workbook.errors import BaselineError

PROJECT = Path(__file__).parents[2]
STEP, MEM = "timing_s/step", "actor/perf/max_memory_allocated_gb"
RUN = {"run_id": "20261130T200248Z-638f2d", "path": "/runs/x", "status": "succeeded",
       "started": "2026-11-30T20:02:48Z", "ended": "2026-11-30T20:07:40Z", "host": "vm",
       "versions": {"verl": "0.9.1"}, "commits": {"workbook": "59d8ea4"}}
BLESSED = {"source": "bless", "created": "2026-11-30T20:19:11Z", "workbook_version": "0.1.0",
           "workbook_commit": "59d8ea4", "verl_version": "0.9.1", "verl_commit": None,
           "image": {"ref": "registry/verl:cpu", "digest": None, "source": "WORKBOOK_IMAGE"},
           "cann_version": None, "hardware": "cpu", "host": "vm",
           "packages": {"verl": "0.9.1", "torch": "2.13.0+cpu"},
           "runs": [RUN, {**RUN, "run_id": "b"}, {**RUN, "run_id": "c"}]}
IMPORTED = {"source": "verl-ascend-text", "created": "2026-11-29T18:31:11Z", "sha256": "0" * 64,
            "origin": "verl-project/verl-ascend-recipe baseline/a2/..."}


def document(provenance: Any = BLESSED, **metric: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {"format": "verl-workbook-baseline/3",
                           "metrics": {STEP: {"value": 10.0, "reduce": "mean", "window": [2, 4],
                                              **metric}}}
    if provenance is not None:
        doc["provenance"] = provenance
    return doc


def without(key: str, record: dict[str, Any] = BLESSED) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k != key}


def with_run(**changed: Any) -> dict[str, Any]:
    record = copy.deepcopy(BLESSED)
    record["runs"][0] = {k: v for k, v in {**RUN, **changed}.items() if v is not ...}
    return record


BAD = [
    ("no-provenance", document(None), ["provenance: missing; a file naming a verl-workbook format"]),
    ("empty-provenance", document({}), ["provenance: missing"]),
    ("no-source", document(without("source")), ["provenance.source: missing; expected bless or "
                                                 "verl-ascend-text"]),
    ("unknown-source", document({**BLESSED, "source": "by hand"}),
     ["provenance.source: unknown source 'by hand'"]),
    ("no-verl-version", document(without("verl_version")),
     ["provenance.verl_version: missing; bless records it (null when not known)"]),
    ("no-verl-commit", document(without("verl_commit")), ["provenance.verl_commit: missing"]),
    ("no-workbook-commit", document(without("workbook_commit")),
     ["provenance.workbook_commit: missing"]),
    ("no-packages", document(without("packages")), ["provenance.packages: missing"]),
    ("no-runs", document(without("runs")), ["provenance.runs: missing"]),
    ("no-created", document(without("created")), ["provenance.created: missing"]),
    ("created-not-a-date", document({**BLESSED, "created": 20261130}),
     ["provenance.created: expected a date, got 20261130"]),
    ("no-source-runs", document({**BLESSED, "runs": []}),
     ["provenance.runs: expected the list of blessed runs"]),
    ("run-without-its-date", document(with_run(started=...)), ["provenance.runs.0.started: missing"]),
    ("run-without-its-id", document(with_run(run_id=...)), ["provenance.runs.0.run_id: missing"]),
    ("run-id-not-text", document(with_run(run_id=7)), ["provenance.runs.0.run_id: expected a run id"]),
    ("misspelt-run-key", document(with_run(strated="x")),
     ["provenance.runs.0.strated: unknown key; did you mean 'started'?"]),
    ("misspelt-key", document({**BLESSED, "verl_comit": "abc"}),
     ["provenance.verl_comit: unknown key; did you mean 'verl_commit'?"]),
    ("packages-not-versions", document({**BLESSED, "packages": {"torch": 2.13}}),
     ["provenance.packages: expected a mapping of package name -> version"]),
    ("imported-without-digest", document(without("sha256", IMPORTED)),
     ["provenance.sha256: missing; verl-ascend-text records it"]),
    ("provenance-not-a-mapping", document(["bless"]), ["provenance: expected a mapping, got list"]),
    ("nan-memory", {**document(), "metrics": {MEM: {"value": float("nan"), "reduce": "last"}}},
     [f"metrics.{MEM}.value: nan is not finite"]),
    ("negative-memory-step", {**document(), "metrics": {MEM: {"value": 1.0, "series": {"3": -0.5}}}},
     [f"metrics.{MEM}.series.3: -0.5 is below 0"]),
    ("negative-memory-sigma", {**document(), "metrics": {MEM: {"value": 1.0, "sigma": -0.1, "n": 3}}},
     [f"metrics.{MEM}.sigma: -0.1 is below 0"]),
    ("unknown-top-key", {**document(), "provenence": {}}, ["provenence: unknown key; did you mean "
                                                           "'provenance'?"]),
    ("every-problem-at-once", document(without("runs", without("verl_commit")), sigm=1),
     ["3 problems", "provenance.verl_commit: missing", "provenance.runs: missing", ".sigm:"]),
]


@pytest.mark.parametrize("data, fragments", [(d, f) for _, d, f in BAD], ids=[i for i, *_ in BAD])
def test_a_baseline_file_that_cannot_say_where_it_came_from_is_refused(
        tmp_path: Path, data: dict[str, Any], fragments: list[str]) -> None:
    path = tmp_path / "x.cpu.json"
    path.write_text(json.dumps(data, indent=2))

    with pytest.raises(BaselineError) as caught:
        load_baseline(path)

    assert str(path) in caught.value.message
    for fragment in fragments:
        assert fragment in caught.value.message


@pytest.mark.parametrize("data, fragments", [(d, f) for _, d, f in BAD[:3]], ids=[i for i, *_ in BAD[:3]])
def test_checking_with_such_a_baseline_exits_2_naming_the_field(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], data: dict[str, Any],
        fragments: list[str]) -> None:
    path = tmp_path / "x.cpu.json"
    path.write_text(json.dumps(data))
    log = PROJECT / "tests" / "data" / "verl_logs" / "04_npu-ascend-grpo-sync-agentloop.log"

    code = main(["check", str(log), "--baseline", str(path), "--out", str(tmp_path / "c.json")])

    err = capsys.readouterr().err
    assert code == 2 and all(f in err for f in fragments)


def test_a_merge_conflict_inside_the_provenance_is_refused_by_its_line(tmp_path: Path) -> None:
    text = json.dumps(document(), indent=2).replace(
        '    "verl_version": "0.9.1",\n',
        '<<<<<<< HEAD\n    "verl_version": "0.9.1",\n=======\n    "verl_version": "0.9.2",\n'
        '>>>>>>> nightly\n')
    path = tmp_path / "x.cpu.json"
    path.write_text(text)

    with pytest.raises(BaselineError, match="git merge-conflict marker"):
        load_baseline(path)


@pytest.mark.parametrize("data", [document(), document(IMPORTED), {"metrics": {STEP: {"value": 1.0}}},
                                  {"provenance": {"a": 1}, "metrics": {STEP: {"value": 1.0}}}],
                         ids=["blessed", "imported", "hand-made", "hand-made-with-notes"])
def test_a_complete_provenance_or_no_format_claim_loads(tmp_path: Path, data: dict[str, Any]) -> None:
    path = tmp_path / "x.cpu.json"
    path.write_text(json.dumps(data))

    assert load_baseline(path).value(STEP) is not None


@pytest.mark.parametrize("path", sorted((PROJECT / "params" / "baselines").glob("*.cpu.json")),
                         ids=lambda p: p.name)
def test_the_committed_cpu_baselines_still_load(path: Path) -> None:
    assert load_baseline(path).provenance["source"] == "bless"


def test_verls_ascend_text_still_loads_without_provenance() -> None:
    baseline = load_baseline(DATA / "baseline_gspo_qwen3_8b_fsdp2_npu.txt")

    assert baseline.provenance["source"] == "verl-ascend-text" and "runs" not in baseline.provenance


def test_a_baseline_built_in_code_without_provenance_makes_no_format_claim(tmp_path: Path) -> None:
    path = Baseline({STEP: BaselineMetric(value=10.0)}).save(tmp_path / "b.json")

    assert "format" not in json.loads(path.read_text()) and load_baseline(path).value(STEP) == 10.0


def test_save_refuses_an_incomplete_provenance_and_writes_nothing(tmp_path: Path) -> None:
    baseline = Baseline({STEP: BaselineMetric(value=10.0)}, provenance=without("runs"))

    with pytest.raises(BaselineError, match="provenance.runs: missing"):
        baseline.save(tmp_path / "b.json")

    assert not (tmp_path / "b.json").exists()


def _facts(run: Path, **facts: Any) -> None:
    info = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**info, **facts}))


def test_bless_records_verl_the_image_cann_and_each_runs_dates(tmp_path: Path,
                                                              make_run: Callable[..., Path]) -> None:
    steps = range(1, 6)
    runs = []
    for i, t in enumerate((10.0, 11.0, 12.0)):
        run = make_run({STEP: {s: t + 0.1 * s for s in steps}, "actor/pg_loss": {s: 0.01 * s for s in steps}},
                       run_id=f"20261129T00000{i}Z-00000{i}", checks={"window": [2, 5]},
                       versions={"verl": "0.9.1", "torch": "2.13.0", "torch-npu": "2.13.0",
                                 "vllm-ascend": "0.24.0", "transformers": "5.10.4", "ray": "2.60.0"})
        _facts(run, started_at=f"2026-11-29T00:0{i}:00Z", ended_at=f"2026-11-29T00:0{i}:30Z",
               image={"ref": "registry/verl:npu@sha256:" + "a" * 64, "digest": "sha256:" + "a" * 64,
                      "source": "WORKBOOK_IMAGE"}, cann_version="8.3.RC1")
        runs.append(run)
    out = tmp_path / "x.cpu.json"

    bless(runs, out)

    prov = load_baseline(out).provenance
    assert (prov["verl_version"], prov["verl_commit"]) == ("0.9.1", "abc123")
    assert prov["image"]["digest"] == "sha256:" + "a" * 64 and prov["cann_version"] == "8.3.RC1"
    assert {k: prov["packages"][k] for k in ("torch", "torch-npu", "vllm-ascend", "transformers", "ray")} == {
        "torch": "2.13.0", "torch-npu": "2.13.0", "vllm-ascend": "0.24.0", "transformers": "5.10.4",
        "ray": "2.60.0"}
    assert [(r["run_id"], r["started"], r["ended"]) for r in prov["runs"]] == [
        (f"20261129T00000{i}Z-00000{i}", f"2026-11-29T00:0{i}:00Z", f"2026-11-29T00:0{i}:30Z")
        for i in range(3)]
    assert json.loads(out.read_text())["hardware_key"] == {"profile": "cpu", "device": "Test CPU",
                                                           "count": 2}
