"""Planted secrets reach no file that leaves the run's raw files, and every JSON stays valid.

A fake run directory (no verl) carries secrets where a careless run would: its console log (a
traceback with ``?access_token=…&password=…``, ``WANDB_API_KEY=``, ``DB_PASSWORD=``,
``PGPASSWORD=``, ``curl -u``), verl's file logger (string metrics), a run.json written raw with
failure evidence, the command and the parameters. The library's own writers then judge, report,
index, write JUnit and publish it, and every file they produce is searched.
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from workbook.checks.junit import verdict_suite, write_junit
from workbook.checks.runner import check_path
from workbook.core.redaction import redact_mapping
from workbook.history.judgement import judge_night
from workbook.report.index import write_index
from workbook.report.publish import publish
from workbook.report.render import render_report
from workbook.run import life

SCENARIO, RUN_ID = "gspo-tiny-1n1cpu-fsdp2-vllm", "20261129T180000Z-plant1"
KINDS = ["wandb", "db", "pg", "curl", "bearer", "access", "urlpw", "metric", "note", "env",
         "param", "argv", "message"]  # fmt: skip
# Assembled at run time: no secret-looking literal in the source. Heads and tails are unique.
SECRETS = {kind: f"q{i:02d}{kind}Planted{i * 7919:06d}" for i, kind in enumerate(KINDS, 1)}
SECRETS["hf"] = "hf" + "_" + "".join(chr(ord("a") + (i * 7) % 26) for i in range(17)) + "QwErTyUiOpAsDfGhJk"
# Shapes only a client's flag or a provider's format gives away (issue 25's probe), each planted
# in a different file below.
_ALNUM = "aB3dE5gH7jK9mN2pQ4sT6vW8yZ"
SECRETS |= {
    "mysql": "mysqlGlued-Pw4417",  # mysql -pPW
    "sshpass": "sshpassApart-Pw4423",  # sshpass -p PW, in the log and in an argv
    "wandbkey": "wandbFlag-Key4441",  # --wandb-key VALUE
    "stripe": "sk" + "_live_" + (_ALNUM * 2)[:24],
    "aiza": "AI" + "za" + (_ALNUM * 2)[:34],  # 38 characters
    "sendgrid": "SG" + "." + (_ALNUM * 2)[:22] + "." + (_ALNUM * 2)[3:46],
}


def _leaks(text: str) -> list[str]:
    """The secrets still in ``text``, whole or as a recognisable head or tail."""
    return [k for k, v in SECRETS.items() if any(p in text for p in (v, v[:10], v[-9:]))]


def _log() -> str:
    s = SECRETS
    return (
        "(TaskRunner pid=7) Total training steps: 4\n"
        f"(TaskRunner pid=7) curl -u bob:{s['curl']} https://hub.example.com/upload\n"
        f"step:1 - actor/pg_loss:0.011 - actor/entropy:5.9 - timing_s/step:4.2 - "
        f"trainer/api_key:{s['metric']}\n"
        "step:2 - actor/pg_loss:0.010 - actor/entropy:5.8 - timing_s/step:4.1\n"
        f"(TaskRunner pid=7) PGPASSWORD={s['pg']} psql -h db -c 'select 1'\n"
        "Traceback (most recent call last):\n"
        '  File "/work/x/upload.py", line 12, in push\n'
        f'    requests.get("https://hub.example.com/api?access_token={s["access"]}&password='
        f'{s["urlpw"]}")\n'
        "requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: "
        f"https://hub.example.com/api?access_token={s['access']}&password={s['urlpw']} "
        f"with WANDB_API_KEY={s['wandb']} DB_PASSWORD={s['db']}\n"
        f"(TaskRunner pid=7) mysql -h db -u root -p{s['mysql']} -e 'select 1'\n"
        f"(TaskRunner pid=7) sshpass -p {s['sshpass']} scp ckpt host:/ckpt\n"
        f"(TaskRunner pid=7) python3 upload.py --wandb-key {s['wandbkey']}\n"
    )


def _metrics() -> str:
    lines = []
    for step, loss in ((1, 0.011), (2, 0.010)):
        data = {"actor/pg_loss": loss, "actor/entropy": 5.9 - step / 10, "timing_s/step": 4.2,
                "trainer/api_key": SECRETS["metric"], "note": f"uploaded with {SECRETS['hf']}",
                "billing": f"charged with {SECRETS['stripe']}"}
        lines.append(json.dumps({"step": step, "data": data}) + "\n")
    return "".join(lines)


def _plant(root: Path) -> Path:
    """The run directory, every file written raw as a careless earlier writer would have."""
    run = root / SCENARIO / RUN_ID
    run.mkdir(parents=True)
    (run / "run.log").write_text(_log())
    (run / "metrics.jsonl").write_text(_metrics())
    s = SECRETS
    (run / "run.json").write_text(json.dumps({
        "run_id": RUN_ID, "scenario": SCENARIO, "status": "failed", "exit_code": 1,
        "started_at": "2026-11-29T18:00:00Z", "ended_at": "2026-11-29T18:02:01Z",
        "wall_time_s": 121.0, "launcher": "local", "expected_steps": 4,
        "message": f"failed with WANDB_API_KEY={s['message']} (maps key {s['aiza']})",
        "notebook_parameters": {"run_dir": str(run), "hf_token": s["hf"]},
        "diagnosis": {"status": "failed", "summary": f"Authorization: Bearer {s['bearer']}",
                      "evidence": [f"Authorization: Bearer {s['bearer']}"], "last_step": 2},
    }, indent=2))  # fmt: skip
    (run / "command.json").write_text(json.dumps({
        "argv": ["sshpass", "-p", s["sshpass"], "python3", "-m", "verl.trainer.main_ppo",
                 "--api-key", s["argv"], "--wandb-key", s["wandbkey"]],
        "env": {"HF_TOKEN": s["env"], "WANDB_MODE": "disabled"},
    }, indent=2))  # fmt: skip
    (run / "command.sh").write_text(f"#!/bin/sh\nHF_TOKEN={s['env']} python3 -m verl\n")
    (run / "params.resolved.yaml").write_text(
        f"name: {SCENARIO}\ntotal_training_steps: 4\nenv:\n  DB_PASSWORD: {s['param']}\n"
        f"  MAIL_NOTE: sent with {s['sendgrid']}\n"
    )
    return run


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    return _plant(tmp_path / "runs")


def test_no_planted_secret_reaches_a_file_that_leaves_the_run(planted: Path, tmp_path: Path):
    run, root = planted, planted.parent.parent
    raw = {name: (run / name).read_bytes() for name in ("run.log", "metrics.jsonl")}
    verdict = judge_night(run)
    life.judge(run)  # the closing's judge step writes checks.json and run.json
    # the writers were handed secrets: the guard, not the input, keeps them out of the files
    assert _leaks(json.dumps(verdict.to_dict(), default=str))
    render_report(run)
    write_index(root)
    junit = write_junit(
        [verdict_suite(verdict, SCENARIO, properties={"note": f"DB_PASSWORD={SECRETS['db']}"})],
        tmp_path / "junit.xml",
    )
    log = tmp_path / "elsewhere" / "nightly.log"
    log.parent.mkdir()
    shutil.copyfile(run / "run.log", log)
    (tmp_path / "bare").mkdir()
    bare, out = check_path(log, out=tmp_path / "bare")
    bare.write_json(out)
    bare_junit = write_junit([verdict_suite(bare, "nightly")], tmp_path / "bare" / "junit.xml")
    site = tmp_path / "site"
    publish(root, site)

    produced = [run / "run.json", run / "checks.json", run / "report.html", root / "index.html",
                junit, out, bare_junit]  # fmt: skip
    produced += [run / "notebook.ipynb"] if (run / "notebook.ipynb").exists() else []
    published = sorted(p for p in site.rglob("*") if p.is_file())
    assert {"run.json", "checks.json", "report.html", "run.log", "metrics.jsonl"} <= {
        p.name for p in published
    }
    leaks = {str(p): _leaks(p.read_text(encoding="utf-8")) for p in produced + published}
    assert {p: found for p, found in leaks.items() if found} == {}
    for path in produced + published:
        if path.suffix in (".json", ".ipynb"):
            json.loads(path.read_text())  # raises when redaction broke the structure
        elif path.suffix == ".jsonl":
            [json.loads(line) for line in path.read_text().splitlines()]
        elif path.suffix == ".xml":
            ElementTree.fromstring(path.read_text())
    # the run's raw files stay exactly as the run wrote them
    assert {name: (run / name).read_bytes() for name in raw} == raw
    assert _leaks(raw["run.log"].decode()) and _leaks(raw["metrics.jsonl"].decode())


def test_redacted_records_keep_the_real_verdict_and_every_number(planted: Path, tmp_path: Path):
    run, root = planted, planted.parent.parent
    verdict = judge_night(run)
    life.judge(run)  # the closing's judge step writes checks.json and run.json
    site = tmp_path / "site"
    publish(root, site)
    for folder in (run, site / SCENARIO / RUN_ID):
        record, checks = (json.loads((folder / n).read_text()) for n in ("run.json", "checks.json"))
        assert record["verdict"] == checks["verdict"] == redact_mapping(verdict.summary())
        assert checks["verdict"]["status"] == "failed" and checks["verdict"]["exit_code"] == 3
        assert all(type(n) is int for n in checks["verdict"]["counts"].values())
        assert (record["exit_code"], record["wall_time_s"], record["expected_steps"]) == (1, 121.0, 4)
    published = [json.loads(line) for line in (site / SCENARIO / RUN_ID / "metrics.jsonl").open()]
    raw = [json.loads(line) for line in (run / "metrics.jsonl").open()]
    assert [{k: v for k, v in r["data"].items() if not isinstance(v, str)} for r in published] == [
        {k: v for k, v in r["data"].items() if not isinstance(v, str)} for r in raw
    ]
    assert [r["step"] for r in published] == [1, 2]
