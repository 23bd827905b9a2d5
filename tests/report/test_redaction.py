"""Secrets never reach anything the workbook derives: unit rules, then every produced file."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from workbook.report.index import write_index
from workbook.report.notebook import execute
from workbook.report.publish import publish
from workbook.report.redaction import REDACTED, is_secret_name, redact_mapping, redact_text
from workbook.report.render import render_report

SECRETS = {
    "hf": "hf_PlantedHuggingFaceToken123",
    "sk": "sk-plantedOpenAIkey4567890",
    "env_value": "plain-env-secret-value-9876",
    "bearer": "plantedBearerCredential42",
    "url_password": "urlPassw0rdPlanted",
    "param_password": "paramPasswordPlanted77",
}


@pytest.mark.parametrize(
    "text, kept, gone",
    [
        ("export HF_TOKEN=abc123xyz", "export HF_TOKEN=", "abc123xyz"),
        ("WANDB_API_KEY: 'k-99'", "WANDB_API_KEY", "k-99"),
        ("Authorization: Bearer abc.def.ghi", "Authorization: Bearer ", "abc.def.ghi"),
        ('"authorization": "Basic dXNlcjpwYXNz"', '"authorization"', "dXNlcjpwYXNz"),
        ("git clone https://bob:s3cr3t@example.com/r.git", "https://bob:", "s3cr3t"),
        ("token hf_abcdefghijKLMNOP", "token ", "hf_abcdefghijKLMNOP"),
        ("using sk-proj-abcdefghijk12", "using ", "sk-proj-abcdefghijk12"),
        ("--hf-token tok123 --lr 3", "--lr 3", "tok123"),
        ('db_password="two words"', "db_password=", "two words"),
    ],
)
def test_credentials_in_text_are_redacted(text, kept, gone):
    out = redact_text(text)
    assert gone not in out and kept in out and REDACTED in out


@pytest.mark.parametrize(
    "text",
    [
        "step:3 - actor/pg_loss:0.011 - perf/total_num_tokens:560 - timing_per_token_ms/gen:3.1",
        "data.prompt_key=prompt actor_rollout_ref.rollout.max_num_batched_tokens=8192",
        "RAY_AUTH_MODE=token monkey=banana trainer.logger=['console','file']",
        "    full_key: actor_rollout_ref.actor.clip_ratio_hgh",
        '<img src="data:image/png;base64,S2V5PXNlY3JldA==">',
    ],
)
def test_ordinary_settings_and_metrics_are_left_alone(text):
    assert redact_text(text) == text


def test_mapping_redacts_by_key_and_by_content():
    data = {
        "env": {"HF_TOKEN": "abc", "PATH": "/usr/bin", "PROXY": "http://u:pw@proxy:3128"},
        "overrides": ["x=1", "+secret_key=zz"],
        "api_key": 5,
        "response_length/max": 32.0,
        "credentials": {"user": "a", "nested": ["b"]},
    }
    out = redact_mapping(data)
    assert out["env"]["HF_TOKEN"] == REDACTED and out["env"]["PATH"] == "/usr/bin"
    assert out["env"]["PROXY"] == f"http://u:{REDACTED}@proxy:3128"
    assert out["overrides"] == ["x=1", f"+secret_key={REDACTED}"]
    assert out["api_key"] == REDACTED and out["response_length/max"] == 32.0
    assert out["credentials"] == {"user": REDACTED, "nested": [REDACTED]}


def test_secret_names():
    for name in (
        "HF_TOKEN",
        "OPENAI_API_KEY",
        "password",
        "ray.auth_token",
        "apiKey",
        "AWS_SECRET_ACCESS_KEY",
    ):
        assert is_secret_name(name), name
    for name in ("max_tokens", "RAY_AUTH_MODE", "prompt_key", "tokenizer", "monkey", "full_key"):
        assert not is_secret_name(name), name


def _plant(run: Path) -> None:
    """Secrets in the environment, the parameters, the log and the diagnosis, as a careless run would have them."""
    command = json.loads((run / "command.json").read_text())
    command["env"].update({"HF_TOKEN": SECRETS["hf"], "MY_SERVICE_PASSWORD": SECRETS["env_value"]})
    command["argv"].append(f"+data.hub_token={SECRETS['hf']}")
    (run / "command.json").write_text(json.dumps(command))
    (run / "command.sh").write_text(
        f"HF_TOKEN={SECRETS['hf']} MY_SERVICE_PASSWORD={SECRETS['env_value']} python3 -m verl\n"
    )
    (run / "params.resolved.yaml").write_text(
        f"name: x\nenv:\n  OPENAI_API_KEY: {SECRETS['sk']}\n  db_password: {SECRETS['param_password']}\n"
    )
    with (run / "run.log").open("a") as log:
        log.write(
            f"curl -H 'Authorization: Bearer {SECRETS['bearer']}' https://me:{SECRETS['url_password']}@hub/x\n"
        )
        log.write(f"export HF_TOKEN={SECRETS['hf']}\n")
    info = json.loads((run / "run.json").read_text())
    info["message"] = f"failed with token {SECRETS['sk']}"
    info.setdefault("diagnosis", {})["evidence"] = [f"Authorization: Bearer {SECRETS['bearer']}"]
    (run / "run.json").write_text(json.dumps(info))


def _leaks(paths: list[Path]) -> list[str]:
    found = []
    for path in paths:
        text = path.read_text(encoding="utf-8", errors="replace")
        found += [f"{path}: {k}" for k, v in SECRETS.items() if v in text]
    return found


def test_planted_secrets_reach_no_produced_file(make_run, tmp_path):
    run = make_run("failed")
    _plant(run)
    template = tmp_path / "leaky.ipynb"
    nb = new_notebook(
        cells=[
            new_code_cell('run_dir = ""\ntoken_for_hub = ""'),
            new_code_cell(
                "import os, json\nprint(os.environ['HF_TOKEN'])\nprint(open(run_dir + '/run.log').read())"
            ),
            new_code_cell("json.load(open(run_dir + '/command.json'))"),
        ]
    )
    nb.cells[0].metadata["tags"] = ["parameters"]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, str(template))
    import os

    os.environ["HF_TOKEN"] = SECRETS["hf"]
    try:
        execute(template, run, {"run_dir": str(run), "token_for_hub": SECRETS["sk"]}, stream=False)
    finally:
        del os.environ["HF_TOKEN"]
    render_report(run)
    write_index(run.parent.parent)
    dest = tmp_path / "public"
    publish(run.parent.parent, dest)
    raw_log = run / "run.log"
    assert SECRETS["hf"] in raw_log.read_text(), "the raw log must stay as it was"
    # the files the pipeline writes itself (command, params, run.json) are redacted by the lead's
    # pipeline before they land; here they were planted raw, so only derived files are searched
    derived = [run / "notebook.ipynb", run / "report.html", run.parent.parent / "index.html"]
    published = [p for p in dest.rglob("*") if p.is_file()]
    assert len(published) >= 8
    assert not _leaks(derived + published)
    assert (dest / run.relative_to(run.parent.parent) / "run.log").is_file()
