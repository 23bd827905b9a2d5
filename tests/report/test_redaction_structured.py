"""Redaction at the edges: the shapes the issue found, both ways, and structured files that stay
valid with their numbers exact (table-driven, then properties over generated documents).

Fake secrets are assembled at run time so that no token-shaped string sits in the source.
"""

from __future__ import annotations

import json
import math
import os
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workbook.core.redaction import (
    REDACTED,
    dump_json,
    files,
    form_of,
    is_secret_name,
    redact_file,
    redact_json_line,
    redact_json_text,
    redact_mapping,
    redact_text,
    redact_xml_text,
    redact_yaml_text,
)
from workbook.errors import InputError
from workbook.run.notebook import redact_notebook

HF = "hf" + "_" + "aBcDeFgHiJkLmNoPqRsTuVwXyZaBcDeFgH"  # 34 letters, as Hugging Face makes them
BEARER = "bearerPlanted" + "7Q2x9Z"

# (text, what must go, what must stay): each shape the issue found passing redaction.
REDACTED_CASES = [
    ("PGPASSWORD=pgPlanted91 psql -h db", "pgPlanted91", "PGPASSWORD="),
    ("export MYSQLPASSWD=myPlanted92", "myPlanted92", "MYSQLPASSWD="),
    ("SMTP_PASS=smtpPlanted93 ./mail", "smtpPlanted93", "SMTP_PASS="),
    ("DB_PASSWORD=dbPlanted94", "dbPlanted94", "DB_PASSWORD="),
    ("WANDB_API_KEY=wandbPlanted95", "wandbPlanted95", "WANDB_API_KEY="),
    ("AWS_SESSION_TOKEN=awsPlanted96", "awsPlanted96", "AWS_SESSION_TOKEN="),
    ("GOOGLE_CREDENTIALS=gcPlanted97", "gcPlanted97", "GOOGLE_CREDENTIALS="),
    ("curl -u bob:curlPlanted98 https://h/x", "curlPlanted98", "curl -u bob:"),
    ("curl --user bob:curlPlanted99 https://h", "curlPlanted99", "--user bob:"),
    ("curl --user=bob:curlPlanted90 https://h", "curlPlanted90", "--user=bob:"),
    ("curl -u 'bob:two planted81' https://h", "two planted81", "-u 'bob:"),
    ("curl -U proxy:curlPlanted82 https://h", "curlPlanted82", "-U proxy:"),
    ('["curl", "-u", "bob:argvPlanted83"]', "argvPlanted83", '"-u", "bob:'),
    ("step:1 - trainer/api_key:metricPlanted84 - x:1", "metricPlanted84", "trainer/api_key:"),
    ("step:1 - svc/access_token:metricPlanted85", "metricPlanted85", "svc/access_token:"),
    ("Authorization: Bearer " + BEARER, BEARER, "Authorization: Bearer "),
    ('  File "x.py", line 3\n    get("https://h/a?access_token=tbPlanted86&password=tbPlanted87")',
     "tbPlanted8", '?access_token='),
    ("https://bob:urlPlanted88@host/r.git", "urlPlanted88", "https://bob:"),
    ("token " + HF, HF, "token "),
    ("https://" + HF + "@github.com/x/y.git", HF, "@github.com/x/y.git"),
    ('{\n  "argv": [\n    "curl",\n    "-u",\n    "bob:eolPlanted89"\n  ]\n}', "eolPlanted89",
     '"bob:'),
    ("export GHTOKEN=ghPlanted80", "ghPlanted80", "GHTOKEN="),
]  # fmt: skip


@pytest.mark.parametrize(
    "text, gone, kept", REDACTED_CASES, ids=[c[0][:28] for c in REDACTED_CASES]
)
def test_the_shapes_the_issue_found_are_redacted(text, gone, kept):
    out = redact_text(text)
    assert gone not in out and kept in out and REDACTED in out


KEPT_CASES = [
    '{"pass": 16, "fail": 0, "error": 0}',
    "Validation pass: 3",
    "pass: 2 of 3 checks",
    "actor_rollout_ref.model.path=/models/hf_Qwen2Instruct7BChat",
    "/models/" + HF,
    "ls " + HF + "/config.json",
    "python3 -u -m verl.trainer.main_ppo trainer.n_gpus_per_node=8",
    "docker run -u 1000:1000 verl:latest",
    "sudo -u ray ray stop",
    "saved to /root/.ray/auth_token: ok",
    "step:1 - rollout_corr/chi2_token:0.5 - timing_per_token_ms/gen:3.1 - val/pass:0.25",
    "timing_s/forward_pass: 1.5 first_pass: 2 bypass=3",
    "PWD=/work/main OLDPWD=/work",
    "permissions:\n  id-token: write\n  contents: read",
    '{\n  "argv": [\n    "python3",\n    "-u",\n    "train.py"\n  ]\n}',
]


@pytest.mark.parametrize("text", KEPT_CASES, ids=[c[:28] for c in KEPT_CASES])
def test_counts_paths_and_commands_are_not_redacted(text):
    assert redact_text(text) == text


@pytest.mark.parametrize(
    "name, secret",
    [
        ("PGPASSWORD", True), ("MYSQL_PWD", True), ("REDIS_PASSWD", True), ("DB_PASS", True),
        ("db_pass", True), ("PASS", True), ("trainer/api_key", True),
        ("svc/refresh_token", True), ("OPENAIAPIKEY", True), ("pass", False), ("Pass", False),
        ("forward_pass", False), ("num_passes", False), ("passwordless", False),
        ("rollout_corr/chi2_token", False), ("perf/total_num_tokens", False),
        ("val/pass", False), ("/root/.ray/auth_token", False), ("OLDPWD", False),
    ],
    ids=lambda v: str(v),
)
def test_secret_names_are_read_as_words(name, secret):
    assert is_secret_name(name) is secret


# ---- structured documents ----------------------------------------------------------------


def _run_json() -> dict[str, Any]:
    return {
        "status": "failed", "exit_code": 1, "wall_time_s": 121.5, "pid": 4242,
        "verdict": {"status": "failed", "reason": "run failed: DB_PASSWORD=dbPlanted71",
                    "counts": {"pass": 16, "fail": 0, "error": 0, "not_measured": 2}},
        "diagnosis": {"summary": "401 for https://h/a?access_token=accPlanted72&page=2",
                      "evidence": ["Authorization: Bearer " + BEARER], "last_step": 2},
        "env": [{"name": "HF_TOKEN", "value": "pairPlanted73"}, {"name": "PATH", "value": "/bin"}],
        "argv": ["vllm", "serve", "--api-key", "argvPlanted74", "-u", "bob:argvPlanted75",
                 "--no-auth", "train.py", "--port", "8000"],
        "api_key": 5, "hf_token": None, "use_auth": True, "wandb_api_key": "",
        "credentials": {"user": "keyPlanted76", "retries": 3},
        "trainer/api_key": "metricPlanted77",
        "HF_TOKEN=keyInKeyPlanted78": 1,
    }  # fmt: skip


def test_a_json_document_is_redacted_inside_its_structure():
    out = json.loads(redact_json_text(json.dumps(_run_json(), indent=2)))
    text = json.dumps(out)
    assert "Planted" not in text.replace(REDACTED, "") and BEARER not in text
    assert out["verdict"]["counts"] == {"pass": 16, "fail": 0, "error": 0, "not_measured": 2}
    assert (out["exit_code"], out["wall_time_s"], out["pid"], out["api_key"]) == (1, 121.5, 4242, 5)
    assert (out["hf_token"], out["use_auth"], out["wandb_api_key"]) == (None, True, "")
    assert out["env"] == [{"name": "HF_TOKEN", "value": REDACTED}, {"name": "PATH", "value": "/bin"}]
    assert out["argv"] == ["vllm", "serve", "--api-key", REDACTED, "-u", f"bob:{REDACTED}",
                           "--no-auth", "train.py", "--port", "8000"]  # fmt: skip
    assert out["credentials"] == {"user": REDACTED, "retries": 3}
    assert out["verdict"]["reason"] == f"run failed: DB_PASSWORD={REDACTED}"
    assert f"HF_TOKEN={REDACTED}" in out


def test_a_clean_document_comes_back_byte_for_byte():
    text = '{"verdict": {"status": "passed", "counts": {"pass": 16}},\n "lr": 1e-06, "x": 1.50}\n'
    assert redact_json_text(text) is text
    yaml_text = "# a comment\nlr: 1.0e-06\nname: gspo\nmodel_path: /models/hf_Qwen2Instruct7BChat\n"
    assert redact_yaml_text(yaml_text) is yaml_text


def test_a_key_given_twice_is_not_written_back_with_its_first_value():
    text = '{"note": "HF_TOKEN=dupPlanted61", "note": "ok"}'
    out = redact_json_text(text)
    assert "dupPlanted61" not in out and json.loads(out) == {"note": "ok"}


@pytest.mark.parametrize(
    "text",
    ['{"a": "HF_TOKEN=brokenPlanted51"', "[" * 5000 + "]" * 5000, '{"n": ' + "9" * 5000 + "}"],
    ids=["truncated", "nested-5000", "5000-digit-int"],
)
def test_text_that_is_no_json_is_redacted_as_text(text):
    out = redact_json_text(text)
    assert "brokenPlanted51" not in out and len(out) <= len(text) + len(REDACTED)


def test_yaml_is_redacted_inside_its_structure_and_a_commented_secret_goes():
    text = (
        "# HF_TOKEN=commentPlanted41\nname: gspo\nlr: 1.0e-06\nseed: 7\nenv:\n"
        "  WANDB_API_KEY: yamlPlanted42\n  PATH: /usr/bin\ncounts: {pass: 16}\n"
        "notes: |\n  curl -u bob:blockPlanted43 https://h\n"
    )
    out = redact_yaml_text(text)
    assert "Planted4" not in out
    data = yaml.safe_load(out)
    assert data["lr"] == 1e-06 and data["seed"] == 7 and data["counts"] == {"pass": 16}
    assert data["env"] == {"WANDB_API_KEY": REDACTED, "PATH": "/usr/bin"}


def test_yaml_aliases_are_redacted_once_and_stay_aliases():
    text = "a: &shared [HF_TOKEN=aliasPlanted32, 1]\nb: *shared\nc: [*shared, *shared]\n"
    out = redact_yaml_text(text)
    data = yaml.safe_load(out)
    assert "aliasPlanted32" not in out and "*" in out  # written back as aliases, not copies
    assert data["a"] == data["b"] == data["c"][1] == [f"HF_TOKEN={REDACTED}", 1]


def test_a_yaml_alias_bomb_is_redacted_in_bounded_time_and_size():
    levels = ["a0: &a0 [HF_TOKEN=bombPlanted31, 1]"]
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    text = "\n".join(levels) + "\n"  # 10**8 leaves if expanded: refused, redacted as text
    started = time.monotonic()
    out = redact_yaml_text(text)
    assert time.monotonic() - started < 5 and len(out) < 2 * len(text)
    assert "bombPlanted31" not in out


def test_a_jsonl_line_is_redacted_as_json_and_a_broken_one_as_text():
    line = json.dumps({"step": 3, "data": {"actor/pg_loss": 0.011, "trainer/api_key": "jlPlanted21",
                                           "note": "HF_TOKEN=jlPlanted22"}}) + "\n"
    out = redact_json_line(line)
    data = json.loads(out)
    assert "jlPlanted2" not in out and out.endswith("\n")
    assert data["step"] == 3 and data["data"]["actor/pg_loss"] == 0.011
    assert redact_json_line('{"step": 1, "note": "HF_TOKEN=jlPlanted23"\n') == (
        f'{{"step": 1, "note": "HF_TOKEN={REDACTED}"\n'
    )
    plain = '{"step": 1, "data": {"actor/pg_loss": 0.5}}\n'
    assert redact_json_line(plain) is plain


def test_junit_xml_is_redacted_by_element_and_stays_valid():
    text = (
        '<?xml version="1.0" encoding="utf-8"?>\n<testsuites><testsuite name="s">'
        '<properties><property name="api_key" value="propPlanted11"/>'
        '<property name="reason" value="DB_PASSWORD=propPlanted12 &amp; more"/></properties>'
        '<testcase name="run"><error message="token: &quot;xmlPlanted13">WANDB_API_KEY=xmlPlanted14'
        "</error><system-out>curl -u bob:xmlPlanted15 x</system-out></testcase>"
        "<!-- HF_TOKEN=xmlPlanted16 --></testsuite></testsuites>\n"
    )
    out = redact_xml_text(text)
    root = ElementTree.fromstring(out)
    assert "Planted1" not in out and out.startswith('<?xml version="1.0"')
    assert root.find(".//property[@name='api_key']").get("value") == REDACTED


def test_a_notebook_keeps_its_images_and_loses_its_secrets(tmp_path):
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
    output = {"output_type": "display_data", "metadata": {},
              "data": {"image/png": png, "text/plain": ["token = '", "nbPlanted01'\n"]}}
    cells = [{"cell_type": "code", "metadata": {}, "execution_count": 1, "outputs": [output],
              "source": ["import os\n", "HF_TOKEN = 'nbPlanted02'\n"]},
             {"cell_type": "code", "metadata": {}, "execution_count": 2, "source": "x",
              "outputs": [{"output_type": "error", "ename": "E", "evalue": "DB_PASSWORD=nbPlanted03",
                           "traceback": ["Authorization: Bearer " + BEARER]}]}]  # fmt: skip
    notebook = {"cells": cells, "nbformat": 4, "nbformat_minor": 5,
                "metadata": {"papermill": {"parameters": {"hf_token": "nbPlanted04", "steps": 4}}}}
    path = tmp_path / "notebook.ipynb"
    path.write_text(json.dumps(notebook))
    text = redact_notebook(path).read_text()
    out = json.loads(text)
    assert "nbPlanted0" not in text and BEARER not in text
    assert out["cells"][0]["outputs"][0]["data"]["image/png"] == png
    assert out["cells"][0]["source"] == ["import os\n", f"HF_TOKEN = '{REDACTED}'\n"]
    assert out["metadata"]["papermill"]["parameters"] == {"hf_token": REDACTED, "steps": 4}


def test_dump_json_writes_exceptions_paths_and_dates_as_redacted_text():
    from datetime import datetime, timezone

    data = {"error": RuntimeError("HF_TOKEN=excPlanted05"), "log": Path("/runs/x/run.log"),
            "at": datetime(2026, 1, 1, tzinfo=timezone.utc)}
    out = json.loads(dump_json(data))
    assert out == {"error": f"HF_TOKEN={REDACTED}", "log": "/runs/x/run.log",
                   "at": "2026-01-01 00:00:00+00:00"}


def test_the_run_directory_writers_redact_inside_the_structure(tmp_path):
    from workbook.core.layout import RunDir, write_json, write_redacted

    run = RunDir.create(tmp_path, "scenario", "20260101T000000Z-abcdef")
    run.update_run(exit_code=1, message="WANDB_API_KEY=rdPlanted1", counts={"pass": 16})
    run.update_run(diagnosis={"evidence": ["Authorization: Bearer " + BEARER]})
    record = json.loads(run.file("run").read_text())
    assert record == {"counts": {"pass": 16}, "exit_code": 1, "message": f"WANDB_API_KEY={REDACTED}",
                      "diagnosis": {"evidence": [f"Authorization: Bearer {REDACTED}"]}}
    path = write_json(tmp_path / "suite.json", {"entries": [{"line": "x -s hf_token=rdPlanted2"}]})
    assert "rdPlanted2" not in path.read_text()
    params = write_redacted(tmp_path / "params.resolved.yaml", "seed: 3\nenv: {HF_TOKEN: rdPlanted3}\n")
    assert yaml.safe_load(params.read_text()) == {"seed": 3, "env": {"HF_TOKEN": REDACTED}}


# ---- files by form -------------------------------------------------------------------------


FILES = {
    "run.json": (json.dumps({"counts": {"pass": 3}, "msg": "DB_PASSWORD=fPlanted1"}, indent=2),
                 json.loads),
    "metrics.jsonl": ('{"step": 1, "data": {"x": 1.5, "note": "HF_TOKEN=fPlanted2"}}\n'
                      "not json: WANDB_API_KEY=fPlanted3\n", lambda t: t),
    "params.resolved.yaml": ("seed: 7\nenv:\n  HF_TOKEN: fPlanted4\n", yaml.safe_load),
    "junit.xml": ('<testsuites><testsuite name="DB_PASSWORD=fPlanted5"/></testsuites>',
                  ElementTree.fromstring),
    "notebook.ipynb": (json.dumps({"cells": [{"cell_type": "markdown", "metadata": {},
                                              "source": "HF_TOKEN=fPlanted6"}],
                                   "metadata": {}, "nbformat": 4, "nbformat_minor": 5}),
                       json.loads),
    "run.log": ("step:1\r\nexport HF_TOKEN=fPlanted7\r\nstep:2\r\n", lambda t: t),
    "command.sh": ("#!/bin/sh\nPGPASSWORD=fPlanted8 psql\n", lambda t: t),
}  # fmt: skip


@pytest.mark.parametrize("name", FILES)
def test_redact_file_writes_a_valid_redacted_copy_by_form(name, tmp_path):
    text, parse = FILES[name]
    source, target = tmp_path / name, tmp_path / "out" / name
    source.write_bytes(text.encode())
    assert redact_file(source, target) == target
    out = target.read_bytes().decode()
    assert "fPlanted" not in out and REDACTED in out
    parse(out)  # raises on a broken structure
    assert oct(target.stat().st_mode & 0o777) == "0o644"
    assert [p.name for p in target.parent.iterdir()] == [name]  # no temp file left behind
    if name == "run.log":
        assert out == text.replace("fPlanted7", REDACTED)  # line ends kept


def test_a_structured_file_too_big_to_parse_is_streamed_as_text(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "MAX_STRUCTURED_BYTES", 10)
    source = tmp_path / "big.json"
    source.write_text('{\n "note": "DB_PASSWORD=bigPlanted1",\n "n": 3\n}\n')
    out = redact_file(source, tmp_path / "copy.json").read_text()
    assert "bigPlanted1" not in out and json.loads(out)["n"] == 3


def test_redact_file_never_follows_a_link_nor_blocks_on_a_fifo(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret\n")
    link = tmp_path / "run.log"
    link.symlink_to(secret)
    with pytest.raises(InputError, match="a link"):
        redact_file(link, tmp_path / "out.log")
    fifo = tmp_path / "fifo.log"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        redact_file(fifo, tmp_path / "out.log")
    assert not (tmp_path / "out.log").exists()


def test_redact_file_in_place(tmp_path):
    path = tmp_path / "checks.json"
    path.write_text('{"reason": "HF_TOKEN=inPlace1", "counts": {"pass": 1}}')
    redact_file(path, path)
    assert json.loads(path.read_text()) == {"reason": f"HF_TOKEN={REDACTED}", "counts": {"pass": 1}}


@pytest.mark.parametrize(
    "name, form",
    [("run.json", "json"), ("metrics.jsonl", "jsonl"), ("a.yml", "yaml"), ("b.YAML", "yaml"),
     ("notebook.ipynb", "ipynb"), ("junit.xml", "xml"), ("run.log", "text"), ("command.sh", "text"),
     ("report.html", "text"), ("README", "text")],
)  # fmt: skip
def test_the_form_of_a_file_is_its_suffix(name, form):
    assert form_of(name) == form


# ---- properties ----------------------------------------------------------------------------

# Text no rule can touch: no letter of a trigger word, no "@", no "-u", no capital A or J.
SAFE = st.text(alphabet="0123456789 .,:;_=/()[]{}#%+*'\"\\\n\tmnqrvwyzéß中", max_size=24)
SECRET_KEYS = ["HF_TOKEN", "api_key", "DB_PASSWORD", "client_secret", "trainer/api_key", "PASS"]
# (planted text, the secret in it): each must go wherever a string holds it.
PLANTED = [
    ("HF_TOKEN=propPlanted01", "propPlanted01"),
    ("Authorization: Bearer " + BEARER, BEARER),
    ("see https://u:propPlanted02@h/x", "propPlanted02"),
    ("curl -u bob:propPlanted03 https://h", "propPlanted03"),
    ("PGPASSWORD=propPlanted04 psql", "propPlanted04"),
    ("uploading " + HF + " now", HF),
    ("get https://h/a?access_token=propPlanted05&x=1", "propPlanted05"),
]
PLANTED_TEXT = st.builds(
    lambda head, planted, tail: f"{head} {planted[0]} {tail}", SAFE, st.sampled_from(PLANTED), SAFE
)
FLOATS = st.floats(allow_nan=True, allow_infinity=True)
KEYS = SAFE | st.sampled_from(SECRET_KEYS)


def _documents(integers: st.SearchStrategy[int]) -> st.SearchStrategy[Any]:
    scalars = integers | FLOATS | st.booleans() | st.none() | SAFE | PLANTED_TEXT
    return st.recursive(
        scalars,
        lambda kids: st.lists(kids, max_size=5) | st.dictionaries(KEYS, kids, max_size=5),
        max_leaves=30,
    )


DOCUMENTS = _documents(st.integers())
# The project's YAML reader refuses numbers longer than 100 characters (as bad input).
YAML_DOCUMENTS = _documents(st.integers(min_value=-(2**200), max_value=2**200))


def _assert_redacted_alike(before: Any, after: Any, *, secret_key: bool = False) -> None:
    """Same shape, every number exactly as it was, safe strings unchanged, no secret left."""
    if isinstance(before, dict):
        assert isinstance(after, dict) and list(after) == list(before)
        for key, value in before.items():
            _assert_redacted_alike(value, after[key], secret_key=secret_key or key in SECRET_KEYS)
    elif isinstance(before, list):
        assert isinstance(after, list) and len(after) == len(before)
        for a, b in zip(before, after, strict=True):
            _assert_redacted_alike(a, b, secret_key=secret_key)
    elif isinstance(before, float):
        assert type(after) is float and (repr(after) == repr(before) or math.isnan(before))
    elif isinstance(before, str):
        secrets = [secret for _, secret in PLANTED if secret in before]
        if secret_key and before and before.lower() not in ("none", "null", "true", "false"):
            assert after == REDACTED
        elif secrets:
            assert not any(secret in after for secret in secrets) and REDACTED in after
        else:
            assert after == before
    else:
        assert type(after) is type(before) and after == before


PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(DOCUMENTS)
def test_redacting_any_json_document_keeps_it_valid_and_its_numbers(document):
    for indent in (None, 2):
        out = json.loads(redact_json_text(json.dumps(document, indent=indent)))
        _assert_redacted_alike(document, out)
    _assert_redacted_alike(document, json.loads(redact_json_line(json.dumps(document) + "\n")))


@PROPERTY
@given(YAML_DOCUMENTS)
def test_redacting_any_yaml_document_keeps_it_valid_and_its_numbers(document):
    text = yaml.safe_dump(document, allow_unicode=True)
    before = yaml.safe_load(text)  # as read: safe_dump sorts the keys
    _assert_redacted_alike(before, yaml.safe_load(redact_yaml_text(text)))


@PROPERTY
@given(DOCUMENTS)
def test_redacting_a_mapping_twice_changes_nothing_more(document):
    once = redact_mapping(document)
    assert json.dumps(redact_mapping(once)) == json.dumps(once)
