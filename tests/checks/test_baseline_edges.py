"""Baselines that cannot be right are refused (exit 2) naming the line or field, never half-read.

Each row is one bad file: verl's Ascend ``key:value`` text, or the workbook's JSON/YAML format.
The same rules hold when a baseline is loaded, imported (``baseline import`` writes nothing) and
blessed (``bless`` writes nothing, and refuses one run given twice under any disguise).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.checks.handmade import DATA
from workbook.checks.baseline import Baseline, BaselineMetric, baseline_from_dict, load_baseline
from workbook.checks.blessing import bless
from workbook.cli import main
from workbook.errors import BaselineError

PROJECT = Path(__file__).parents[2]
MEM, STEP, TPUT = "actor/perf/max_memory_allocated_gb", "timing_s/step", "perf/throughput"

# --- verl's Ascend key:value text ----------------------------------------------------------------

BAD_TEXT = [
    ("conflict-markers", "<<<<<<< HEAD\ntiming_s/step:83.0\n=======\ntiming_s/step:90.0\n"
     ">>>>>>> nightly\n", ["line 1: git merge-conflict marker", "line 3:", "line 5:"]),
    ("conflict-diff3-base", "timing_s/step:83.0\n||||||| base\nperf/throughput:1.0\n",
     ["line 2: git merge-conflict marker"]),
    ("prose-line", "timing_s/step:83.0\nthroughput is fine\n", ["line 2: expected `key:value`"]),
    ("key-with-space", "timing s/step:83.0\n", ["line 1: expected `key:value`"]),
    ("empty-key", ":83.0\n", ["line 1: expected `key:value`"]),
    ("word-value", "timing_s/step:fast\n", ["line 1: 'timing_s/step': value 'fast' is not a number"]),
    ("trailing-unit", "timing_s/step:83.0 s\n", ["line 1:", "is not a number"]),
    ("empty-value", "perf/throughput:1\ntiming_s/step:\n", ["line 2:", "is not a number"]),
    ("unclosed-numpy", "timing_s/step:np.float64(83.0\n", ["line 1:", "is not a number"]),
    ("nan", "timing_s/step:nan\n", ["line 1: 'timing_s/step': value 'nan' is not finite"]),
    ("numpy-inf", "perf/throughput:1\nperf/throughput_x:np.float64(-inf)\n",
     ["line 2:", "is not finite"]),
    ("overflow", "timing_s/step:1e999\n", ["line 1: timing_s/step: inf is not finite"]),
    ("long-literal", "timing_s/step:" + "9" * 1990 + "\n", ["line 1: timing_s/step: inf"]),
    ("negative-memory", f"{MEM}:-1.5\n", [f"line 1: {MEM}: -1.5 is below 0", "never negative"]),
    ("negative-old-memory-key", "perf/max_memory_allocated_gb:-2\n", ["line 1:", "below 0"]),
    ("negative-time", f"{STEP}:-83.0\n", [f"line 1: {STEP}: -83 is below 0"]),
    ("negative-throughput", f"{TPUT}:-247.4\n", [f"line 1: {TPUT}: -247.4 is below 0"]),
    ("fraction-above-one", "actor/pg_clipfrac:1.5\n", ["line 1:", "outside [0, 1]"]),
    ("duplicate-key", f"{STEP}:83.0\n{TPUT}:247.4\n{STEP}:90.0\n",
     [f"line 3: duplicate key '{STEP}' (first on line 1)"]),
    ("every-problem-at-once", f"{STEP}:-1\nnonsense\n{TPUT}:nan\n",
     ["3 problems", "line 1:", "line 2:", "line 3:"]),
    ("only-comments", "# nothing here\n\n", ["no `key:value` lines found"]),
]


@pytest.mark.parametrize("content,fragments", [(c, f) for _, c, f in BAD_TEXT],
                         ids=[i for i, _, _ in BAD_TEXT])
def test_bad_ascend_text_is_refused_naming_the_line(tmp_path: Path, content: str,
                                                    fragments: list[str]) -> None:
    path = tmp_path / "baseline_x.txt"
    path.write_text(content)

    with pytest.raises(BaselineError) as caught:
        load_baseline(path)

    message = caught.value.message
    assert str(path) in message
    for fragment in fragments:
        assert fragment in message
    assert len(message) < 2000  # a 1,990-digit literal is quoted as a short prefix


@pytest.mark.parametrize("content,fragments", [(c, f) for _, c, f in BAD_TEXT],
                         ids=[i for i, _, _ in BAD_TEXT])
def test_baseline_import_of_bad_text_exits_2_and_writes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str,
        fragments: list[str]) -> None:
    text = tmp_path / "baseline_x.txt"
    text.write_text(content)
    out = tmp_path / "x.a2.json"

    code = main(["baseline", "import", str(text), "--hardware", "a2", "--out", str(out)])

    err = capsys.readouterr().err
    assert code == 2 and not out.exists()
    assert err.startswith("BaselineError:") and all(f in err for f in fragments)


@pytest.mark.parametrize("line", ["nonsense", "=======", "timing_s/step:nan"],
                         ids=["garbage", "markers", "nan"])
def test_a_file_of_bad_lines_is_refused_with_a_bounded_message(tmp_path: Path,
                                                               line: str) -> None:
    path = tmp_path / "baseline_x.txt"
    path.write_text(f"{line}\n" * 200_000)

    with pytest.raises(BaselineError) as caught:
        load_baseline(path)

    message = caught.value.message
    assert "line 1:" in message and "line 20:" in message and "line 21:" not in message
    assert "more" in message and len(message) < 5000


GOOD_TEXT = [
    ("verl-shape", f"{MEM}:20.825053\n{STEP}:83.027817\n", {MEM: 20.825053, STEP: 83.027817}),
    ("negative-reward-as-in-verl-dapo", "critic/rewards/mean:-0.857914\n",
     {"critic/rewards/mean": -0.857914}),
    ("negative-score", "critic/score/min:-1\n", {"critic/score/min": -1.0}),
    ("blank-lines-and-comments", f"# a2 nightly\n\n{STEP}:83.0\n  \n# end\n", {STEP: 83.0}),
    ("crlf-and-spaces", f"  {STEP} : 83.5  \r\n{TPUT}:1e2\r\n", {STEP: 83.5, TPUT: 100.0}),
    ("numpy-repr", f"{STEP}:np.float64(8.3e1)\n", {STEP: 83.0}),
    ("zero-memory", f"{MEM}:0\n", {MEM: 0.0}),
    ("no-final-newline", f"{STEP}:83", {STEP: 83.0}),
]


@pytest.mark.parametrize("content,values", [(c, v) for _, c, v in GOOD_TEXT],
                         ids=[i for i, _, _ in GOOD_TEXT])
def test_ascend_text_verl_writes_still_loads(tmp_path: Path, content: str,
                                             values: dict[str, float]) -> None:
    path = tmp_path / "baseline_x.txt"
    path.write_text(content)

    baseline = load_baseline(path)

    assert {name: baseline.value(name) for name in baseline.names()} == values


# --- the workbook's JSON / YAML format -----------------------------------------------------------

# what ``baseline import`` records of where a file's numbers came from
IMPORTED = {"source": "verl-ascend-text", "created": "2026-11-29T18:31:11Z", "sha256": "0" * 64}


def doc(**entry: object) -> str:
    """A one-metric JSON baseline for ``timing_s/step`` with ``entry`` merged in (its provenance
    complete, so only ``entry`` can be wrong)."""
    return json.dumps({"format": "verl-workbook-baseline/2", "provenance": IMPORTED, "metrics": {
        STEP: {"value": 10.0, "reduce": "mean", "window": [2, 4], **entry}}}, indent=2)


NAN = float("nan")
BAD_DOCS = [
    ("json-conflict", "json", '{\n  "metrics": {\n<<<<<<< HEAD\n    "m": {"value": 1}\n=======\n'
     '    "m": {"value": 2}\n>>>>>>> theirs\n  }\n}\n', ["line 3: git merge-conflict marker",
                                                        "line 5:", "line 7:"]),
    ("yaml-conflict", "yaml", "metrics:\n<<<<<<< ours\n  m: {value: 1}\n=======\n  m: {value: 2}"
     "\n>>>>>>> theirs\n", ["line 2: git merge-conflict marker"]),
    ("json-nan-literal", "json", doc(value=NAN), [f"metrics.{STEP}.value: nan is not finite"]),
    ("json-infinity-in-series", "json", doc(series={"2": 1.0, "3": float("inf")}),
     [f"metrics.{STEP}.series.3: inf is not finite"]),
    ("yaml-nan-sigma", "yaml", f"metrics:\n  {STEP}: {{value: 10, sigma: .nan, n: 3}}\n",
     [f"metrics.{STEP}.sigma: nan is not finite"]),
    ("negative-sigma", "json", doc(sigma=-1, n=3), [f"metrics.{STEP}.sigma: -1 is below 0"]),
    ("negative-time", "json", doc(value=-10.0), [f"metrics.{STEP}.value: -10 is below 0"]),
    ("negative-time-in-series", "json", doc(series={"3": -0.5}),
     [f"metrics.{STEP}.series.3: -0.5 is below 0"]),
    ("negative-std-in-series", "json", doc(series_sigma={"3": -0.5}),
     [f"metrics.{STEP}.series_sigma.3: -0.5 is below 0"]),
    ("negative-memory", "yaml", f"metrics:\n  {MEM}: {{value: -2, reduce: last}}\n",
     [f"metrics.{MEM}.value: -2 is below 0"]),
    ("negative-throughput", "json", json.dumps({"metrics": {TPUT: {"value": -3.0}}}),
     [f"metrics.{TPUT}.value: -3 is below 0"]),
    ("fraction-above-one", "json", json.dumps({"metrics": {"actor/pg_clipfrac": {"value": 1.2}}}),
     ["metrics.actor/pg_clipfrac.value: 1.2 is outside [0, 1]"]),
    ("unknown-top-key", "json", json.dumps({"setings": {}, "metrics": {STEP: {"value": 1}}}),
     ["setings: unknown key; did you mean 'settings'?"]),
    ("unknown-metric-key", "json", doc(sigm=0.5), [f"metrics.{STEP}.sigm: unknown key; did you "
                                                   "mean 'sigma'?"]),
    ("replaced-band-key", "json", doc(band={"min": {}}), [f"metrics.{STEP}.band: unknown key"]),
    ("unknown-reduce", "json", doc(reduce="average"),
     [f"metrics.{STEP}.reduce: unknown reduction 'average'"]),
    ("short-window", "json", doc(window=[5]), [f"metrics.{STEP}.window: expected [first step"]),
    ("reversed-window", "yaml", f"metrics:\n  {STEP}: {{value: 1, window: [14, 5]}}\n",
     [f"metrics.{STEP}.window:", "got [14, 5]"]),
    ("zero-runs", "json", doc(sigma=0.1, n=0), [f"metrics.{STEP}.n: expected a whole number"]),
    ("fractional-runs", "json", doc(sigma=0.1, n=2.5), [f"metrics.{STEP}.n:", "got 2.5"]),
    ("string-value", "json", doc(value="fast"), [f"metrics.{STEP}.value: expected a number, got "
                                                 "'fast'"]),
    ("bool-value", "json", doc(value=True), [f"metrics.{STEP}.value: expected a number"]),
    ("word-step", "json", doc(series={"two": 1.0}), [f"metrics.{STEP}.series: step 'two'"]),
    ("duplicate-json-key", "json", '{"metrics": {"m": {"value": 1, "value": 2}}}',
     ["duplicate key 'value'"]),
    ("duplicate-yaml-key", "yaml", "metrics:\n  m:\n    value: 1\n    value: 2\n",
     ["duplicate key 'value'"]),
    ("non-finite-setting", "json", json.dumps({"settings": {"lr": NAN}, "metrics": {"m": {}}}),
     ["settings.lr: nan is not finite"]),
    ("nested-setting", "json", json.dumps({"settings": {"lr": {"x": 1}}, "metrics": {"m": {}}}),
     ["settings.lr: expected a value or a list of values"]),
    ("long-int-literal", "json", '{"metrics": {"m": {"value": ' + "9" * 1990 + "}}}",
     ["metrics.m.value: inf is not finite"]),
    ("no-metrics", "json", '{"metrics": {}}', ["metrics: names no metric"]),
    ("not-a-mapping", "yaml", "- 1\n- 2\n", ["expected a mapping with a 'metrics' mapping"]),
    ("unknown-format", "json", '{"format": "other/9", "metrics": {"m": {}}}',
     ["format: unknown format 'other/9'"]),
    ("every-problem-at-once", "json", doc(value=-1.0, sigm=1, reduce="x"),
     ["3 problems", ".value:", ".sigm:", ".reduce:"]),
]


@pytest.mark.parametrize("suffix,content,fragments", [(s, c, f) for _, s, c, f in BAD_DOCS],
                         ids=[i for i, *_ in BAD_DOCS])
def test_bad_baseline_document_is_refused_naming_the_field(tmp_path: Path, suffix: str,
                                                           content: str,
                                                           fragments: list[str]) -> None:
    path = tmp_path / f"x.cpu.{suffix}"
    path.write_text(content)

    with pytest.raises(BaselineError) as caught:
        load_baseline(path)

    message = caught.value.message
    assert str(path) in message and len(message) < 2000
    for fragment in fragments:
        assert fragment in message


@pytest.mark.parametrize("suffix,content,fragments", [(s, c, f) for _, s, c, f in BAD_DOCS[:6]],
                         ids=[i for i, *_ in BAD_DOCS[:6]])
def test_check_with_a_bad_baseline_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          suffix: str, content: str, fragments: list[str]) -> None:
    path = tmp_path / f"x.cpu.{suffix}"
    path.write_text(content)
    log = PROJECT / "tests" / "data" / "verl_logs" / "04_npu-ascend-grpo-sync-agentloop.log"

    code = main(["check", str(log), "--baseline", str(path), "--out", str(tmp_path / "c.json")])

    err = capsys.readouterr().err
    assert code == 2 and all(f in err for f in fragments)


def test_yaml_alias_bomb_is_refused_in_bounded_time(tmp_path: Path) -> None:
    levels = ["a0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1]"]
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    path = tmp_path / "bomb.cpu.yaml"
    path.write_text("provenance:\n" + "".join(f"  {line}\n" for line in levels)
                    + f"metrics:\n  {STEP}: {{value: 1}}\n")  # 9**10 values once expanded
    started = time.monotonic()

    with pytest.raises(BaselineError) as caught:
        load_baseline(path)

    assert str(path) in caught.value.message and len(caught.value.message) < 2000
    assert time.monotonic() - started < 30


def _shared(levels: int) -> list[object]:
    """Nine references to the level below, ``levels`` deep: 9**levels leaves, 9*levels lists."""
    shared: list[object] = [1.0] * 9
    for _ in range(levels):
        shared = [shared] * 9
    return shared


def _recursive() -> list[object]:
    loop: list[object] = []
    loop.append(loop)
    return loop


@pytest.mark.parametrize("part", [_shared(9), _shared(30), _recursive()],
                         ids=["nine-levels", "thirty-levels", "contains-itself"])
def test_a_shared_structure_is_sized_without_expanding_it(part: list[object]) -> None:
    """A document whose shared parts reach billions of values (as YAML aliases can) is refused."""
    started = time.monotonic()

    with pytest.raises(BaselineError, match="YAML aliases that expand to that many"):
        baseline_from_dict({"provenance": {"a": part}, "metrics": {STEP: {"value": 1.0}}})

    assert time.monotonic() - started < 5


def test_a_shared_structure_within_the_budget_is_fine() -> None:
    baseline = baseline_from_dict({"provenance": {"a": _shared(3)},
                                   "metrics": {STEP: {"value": 1.0}}})

    assert baseline.value(STEP) == 1.0


@pytest.mark.parametrize("make,fragment", [
    (lambda p: p.write_bytes(b'{"metrics":\n {"m": {"value": 1, "x": "\xff"}}}'),
     "line 2: not UTF-8"),
    (lambda p: os.mkfifo(p), "is not a regular file"),  # opening it would block forever
    (lambda p: p.mkdir(), "is not a regular file"),
    (lambda p: None, "baseline not found"),
], ids=["not-utf8", "fifo", "directory", "missing"])
def test_unreadable_baseline_file_is_named(tmp_path: Path, make: Callable[[Path], object],
                                           fragment: str) -> None:
    path = tmp_path / "x.cpu.json"
    make(path)

    with pytest.raises(BaselineError) as caught:
        load_baseline(path)

    assert fragment in caught.value.message and str(path) in caught.value.message


def test_a_file_larger_than_any_baseline_is_refused_unread(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("workbook.checks.baseline.MAX_BYTES", 1000)
    path = tmp_path / "x.cpu.json"
    path.write_text(doc(series={str(s): 1.0 for s in range(200)}))

    with pytest.raises(BaselineError, match="more than a baseline's 1,000"):
        load_baseline(path)


COMMITTED = sorted([*(PROJECT / "params" / "baselines").rglob("*.json"),
                    *(PROJECT / "params" / "baselines").rglob("*.txt"), *DATA.glob("*.json"),
                    *DATA.glob("*.txt")])
COMMITTED = [p for p in COMMITTED if "rollouts" not in p.parts]


@pytest.mark.parametrize("path", COMMITTED, ids=[p.name for p in COMMITTED])
def test_committed_baselines_still_load(path: Path) -> None:
    assert load_baseline(path).names()


# --- writing: import and save refuse what load would refuse --------------------------------------

def test_baseline_import_refuses_to_write_a_txt_or_over_its_input(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = tmp_path / "baseline_x"
    text.write_text(f"{STEP}:83.0\n")

    assert main(["baseline", "import", str(text), "--out", str(tmp_path / "b.txt")]) == 2
    assert "write the baseline as .json" in capsys.readouterr().err
    assert main(["baseline", "import", str(text), "--out", str(text)]) == 2
    assert "is the text being imported" in capsys.readouterr().err
    assert text.read_text() == f"{STEP}:83.0\n" and not (tmp_path / "b.txt").exists()


def test_baseline_import_reads_any_name_as_key_value_text(tmp_path: Path) -> None:
    """Before, a JSON file given to import was 'validated' as JSON and then read as text."""
    source = tmp_path / "baseline.json"
    source.write_text(json.dumps({"metrics": {STEP: {"value": 1.0}}}))
    out = tmp_path / "out.json"

    assert main(["baseline", "import", str(source), "--out", str(out)]) == 2
    assert not out.exists()


FINITE = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6)
ANY = st.one_of(FINITE, st.just(math.nan), st.just(math.inf), st.just(-math.inf))
NAMES = st.sampled_from([STEP, TPUT, MEM, "actor/pg_clipfrac", "critic/rewards/mean",
                         "actor/pg_loss"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=st.dictionaries(NAMES, st.tuples(ANY, st.one_of(st.none(), ANY),
                                                st.dictionaries(st.integers(0, 20), ANY,
                                                                max_size=4)),
                               min_size=1, max_size=4),
       suffix=st.sampled_from([".json", ".yaml"]))
def test_save_writes_only_what_load_reads_back_unchanged(
        tmp_path: Path, entries: dict[str, tuple[float, float | None, dict[int, float]]],
        suffix: str) -> None:
    path = tmp_path / f"prop{suffix}"
    path.unlink(missing_ok=True)
    metrics = {name: BaselineMetric(value=value, reduce="mean", window=(1, 20), sigma=sigma,
                                    n=None if sigma is None else 3, series=series)
               for name, (value, sigma, series) in entries.items()}
    baseline = Baseline(metrics, hardware="cpu")

    try:
        baseline.save(path)
    except BaselineError as exc:
        assert not path.exists()
        assert any(f"metrics.{name}." in exc.message for name in metrics)  # names the field
        return
    loaded = load_baseline(path)
    for name, entry in metrics.items():
        assert loaded.metrics[name].value == entry.value and math.isfinite(entry.value or 0.0)
        assert loaded.metrics[name].sigma == entry.sigma
        kept = {s: v for s, v in entry.series.items() if math.isfinite(v)}
        assert {s: v for s, v in loaded.metrics[name].series.items() if math.isfinite(v)} == kept


# --- bless: distinct runs only, and nothing written that load would refuse -----------------------

def runs_series(step_time: float) -> dict[str, dict[int, float]]:
    return {STEP: {s: step_time + 0.1 * s for s in range(1, 6)},
            TPUT: {s: 100.0 + step_time for s in range(1, 6)},
            "actor/pg_loss": {s: 0.01 * s for s in range(1, 6)}}


def make_runs(make_run: Callable[..., Path], times: tuple[float, ...] = (10.0, 11.0, 12.0),
              **kwargs: object) -> list[Path]:
    return [make_run(runs_series(t), run_id=f"20261129T00000{i}Z-00000{i}",
                     checks={"window": [2, 5]}, **kwargs) for i, t in enumerate(times)]


def _same_path_spelt_differently(runs: list[Path], tmp: Path) -> list[Path]:
    return [runs[0], runs[1], runs[0].parent / ".." / runs[0].parent.name / runs[0].name]


def _symlink(runs: list[Path], tmp: Path) -> list[Path]:
    link = tmp / "latest"
    link.symlink_to(runs[0], target_is_directory=True)
    return [runs[0], runs[1], link]


def _copy_keeping_its_name(runs: list[Path], tmp: Path) -> list[Path]:
    copy = tmp / "elsewhere" / runs[0].name
    shutil.copytree(runs[0], copy)
    return [runs[0], runs[1], copy]


def _renamed_copy_with_run_id(runs: list[Path], tmp: Path) -> list[Path]:
    for run in runs:
        info = json.loads((run / "run.json").read_text())
        (run / "run.json").write_text(json.dumps({**info, "run_id": run.name}))
    copy = tmp / "elsewhere" / "renamed"
    shutil.copytree(runs[0], copy)
    return [runs[0], copy, runs[1]]


def _renamed_copy(runs: list[Path], tmp: Path) -> list[Path]:
    copy = tmp / "elsewhere" / "20261130T000000Z-abcdef"
    shutil.copytree(runs[2], copy)
    return [runs[0], runs[2], copy]


DUPLICATES = [
    (_same_path_spelt_differently, "are both /"),
    (_symlink, "are both /"),
    (_copy_keeping_its_name, "are both run 20261129T000000Z-000000"),
    (_renamed_copy_with_run_id, "are both run 20261129T000000Z-000000"),
    (_renamed_copy, "logged identical metrics at every step"),
]


@pytest.mark.parametrize("disguise,fragment", DUPLICATES, ids=[d.__name__[1:] for d, _ in DUPLICATES])
def test_bless_refuses_one_run_given_twice(tmp_path: Path, make_run: Callable[..., Path],
                                           disguise: Callable[[list[Path], Path], list[Path]],
                                           fragment: str) -> None:
    dirs = disguise(make_runs(make_run), tmp_path)
    out = tmp_path / "x.cpu.json"

    with pytest.raises(BaselineError, match="cannot bless the same run twice") as caught:
        bless(dirs, out)

    assert fragment in caught.value.message and not out.exists()


@pytest.mark.parametrize("disguise,fragment", DUPLICATES, ids=[d.__name__[1:] for d, _ in DUPLICATES])
def test_bless_cli_exits_2_for_one_run_given_twice(
        tmp_path: Path, make_run: Callable[..., Path], capsys: pytest.CaptureFixture[str],
        disguise: Callable[[list[Path], Path], list[Path]], fragment: str) -> None:
    dirs = disguise(make_runs(make_run), tmp_path)
    out = tmp_path / "x.cpu.json"

    code = main(["bless", *map(str, dirs), "--out", str(out)])

    err = capsys.readouterr().err
    assert code == 2 and "same run twice" in err and fragment in err and not out.exists()


def test_bless_of_three_distinct_runs_still_writes(tmp_path: Path,
                                                  make_run: Callable[..., Path]) -> None:
    out = tmp_path / "x.cpu.json"

    baseline = bless(make_runs(make_run), out)

    assert load_baseline(out).metrics[STEP].n == 3 and baseline.metrics[STEP].sigma == 1.0


def test_bless_refuses_to_write_negative_time(tmp_path: Path, make_run: Callable[..., Path],
                                             capsys: pytest.CaptureFixture[str]) -> None:
    dirs = make_runs(make_run, times=(-10.0, -11.0, -12.0))  # a clock that ran backwards
    out = tmp_path / "x.cpu.json"

    code = main(["bless", *map(str, dirs), "--out", str(out)])

    err = capsys.readouterr().err
    assert code == 2 and not out.exists()
    assert f"refusing to write baseline {out}" in err and f"metrics.{STEP}.value: -10.65 is below 0" in err
