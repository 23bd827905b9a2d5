"""Secrets never reach anything the workbook derives: unit rules, then every produced file."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
import yaml
from nbformat.v4 import new_code_cell, new_notebook

from workbook.command import as_json, as_shell
from workbook.core.redaction import (
    REDACTED,
    LineRedactor,
    is_secret_name,
    redact_file,
    redact_mapping,
    redact_text,
)
from workbook.report.index import write_index
from workbook.report.publish import publish
from workbook.report.render import render_report
from workbook.run.notebook import execute
from workbook.run.steps import plan_for
from workbook.scenario import load_scenario

PARAMS = Path(__file__).parents[2] / "params"

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
    # a number is never touched, under any key: {"pass": 16} counts checks
    assert out["api_key"] == 5 and out["response_length/max"] == 32.0
    assert out["credentials"] == {"user": REDACTED, "nested": [REDACTED]}


SECRET_NAMES = [
    "HF_TOKEN", "GITHUB_TOKEN", "GH_TOKEN", "oauth_token", "auth_token", "access_token",
    "refresh_token", "hub_token", "token", "hfToken", "X-Auth-Token", "ray.auth_token",
    "+data.hub_token", "api_key", "apiKey", "APIKEY", "OPENAI_API_KEY", "WANDB_API_KEY",
    "x-api-key", "--api-key", "AWS_SECRET_ACCESS_KEY", "aws_access_key", "secret_key",
    "private_key", "privateKey", "WANDB_KEY", "client_secret", "secret", "DB_PASS", "PASS",
    "MY_PWD", "password", "db_password", "PASSWD", "passphrase", "credentials",
    "GOOGLE_APPLICATION_CREDENTIALS", "auth", "basic_auth", "Authorization", "HF_TOKEN_2",
]  # fmt: skip
HARMLESS_NAMES = [
    "ppo_max_token_len_per_gpu", "actor_rollout_ref.actor.ppo_max_token_len_per_gpu",
    "log_prob_max_token_len_per_gpu", "forward_max_token_len_per_gpu", "pad_token_id",
    "eos_token_id", "bos_token_id", "pad_token", "eos_token", "skip_tokenizer_init", "tokenizer",
    "tokenizer_path", "max_tokens", "max_new_tokens", "max_num_batched_tokens",
    "num_speculative_tokens", "token_type_ids", "RAY_AUTH_MODE", "auth_mode", "author",
    "timing_per_token_ms/gen", "actor/pg_loss", "response_length/clip_ratio", "critic/score/mean",
    "perf/total_num_tokens", "rollout_corr/chi2_token", "prompt_key", "reward_fn_key",
    "image_key", "full_key", "public_key", "key_padding_mask", "monkey", "keyboard", "PWD",
    "OLDPWD", "bypass", "passed", "data.prompt_key", "trainer.logger",
]  # fmt: skip


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_credential_names_are_secret(name):
    assert is_secret_name(name)


@pytest.mark.parametrize("name", HARMLESS_NAMES)
def test_lengths_ids_vocabulary_and_metric_names_are_not_secret(name):
    assert not is_secret_name(name)


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_a_secret_name_loses_its_value_in_every_spelling(name):
    for text in (
        f"{name}=v4lue-9",
        f"{name}: v4lue-9",
        f'"{name}": "v4lue-9"',
        f"'{name}': 'v4lue-9'",
    ):
        assert redact_text(text) == text.replace("v4lue-9", REDACTED), text


@pytest.mark.parametrize("name", HARMLESS_NAMES)
def test_a_harmless_name_keeps_its_value(name):
    for text in (f"{name}=2048", f"{name}: 2048", f'"{name}": "2048"', f"--{name} 2048"):
        assert redact_text(text) == text


@pytest.mark.parametrize(
    "text, expected",
    [
        ("run --api-key=k3y-v4lue -v", f"run --api-key={REDACTED} -v"),
        ("run --api-key k3y-v4lue -v", f"run --api-key {REDACTED} -v"),
        (
            "run --token t0k --password 'p w' --lr 3",
            f"run --token {REDACTED} --password '{REDACTED}' --lr 3",
        ),
        (
            "['--api-key', 'k3y', '--port', '8000']",
            f"['--api-key', '{REDACTED}', '--port', '8000']",
        ),
        ("GET /x?token=t0k&page=2", f"GET /x?token={REDACTED}&page=2"),
        (
            "https://h/cb?code=1&access_token=t0k#top",
            f"https://h/cb?code=1&access_token={REDACTED}",
        ),
        (
            "https://h/q?api_key=k3y&password=pw",
            f"https://h/q?api_key={REDACTED}&password={REDACTED}",
        ),
        ("PASS=hunter2 DB_PWD=hunter3 PWD=/work", f"PASS={REDACTED} DB_PWD={REDACTED} PWD=/work"),
        ("curl -H 'Bearer abc.def-123'", f"curl -H 'Bearer {REDACTED}'"),
        ("using bearer 0123456789abcdef", f"using bearer {REDACTED}"),
        ("Proxy-Authorization: Basic dXNlcjpwYXNz", f"Proxy-Authorization: Basic {REDACTED}"),
        (
            "+actor.hf_token=t0k +foo.api_key=k3y x.lr=1",
            f"+actor.hf_token={REDACTED} +foo.api_key={REDACTED} x.lr=1",
        ),
        ("&quot;api_key&quot;: &quot;k3y&quot;", f"&quot;api_key&quot;: &quot;{REDACTED}&quot;"),
        ("'hf_token': None, 'use_auth': True", "'hf_token': None, 'use_auth': True"),
        ("if token == other:", "if token == other:"),
    ],
)
def test_flags_urls_headers_and_overrides_lose_exactly_the_value(text, expected):
    assert redact_text(text) == expected


def test_redacting_twice_changes_nothing_more():
    text = "HF_TOKEN=abc --api-key k https://u:p@h Authorization: Bearer abcdef123456"
    once = redact_text(text)
    assert redact_text(once) == once


def test_a_line_without_a_trigger_comes_back_untouched_and_uncopied():
    line = "step:3 - actor/pg_loss:0.011 - perf/throughput:912.5 - global_seqlen/max:3522.0\n"
    assert "token" not in line and redact_text(line) is line
    assert LineRedactor().line(line) is line


@pytest.mark.parametrize(
    "scenario",
    ["gspo-qwen3-8b-1n8npu-fsdp2-vllm.yaml", "ppo-qwen3-0.6b-2n4npu-fsdp-vllm-rayjob.yaml"],
)
def test_the_exact_command_survives_redaction(scenario, tmp_path):
    plan = plan_for(load_scenario(PARAMS / scenario, check_files=False), tmp_path / "run")
    for text in (as_shell(plan), as_json(plan)):
        assert redact_text(text) == text


def test_token_lengths_in_the_nightly_command_keep_their_values(tmp_path):
    plan = plan_for(
        load_scenario(PARAMS / "gspo-qwen3-8b-1n8npu-fsdp2-vllm.yaml", check_files=False), tmp_path
    )
    lengths = [arg for arg in plan.argv if "max_token_len_per_gpu=" in arg]
    assert len(lengths) == 3
    assert all(arg in redact_text(as_shell(plan)) for arg in lengths)


def test_a_token_in_the_environment_is_the_only_thing_replaced(tmp_path):
    plan = plan_for(
        load_scenario(PARAMS / "gspo-qwen3-8b-1n8npu-fsdp2-vllm.yaml", check_files=False), tmp_path
    )
    token = "hf_" + "Ab3dEf7hIj" * 3 + "kLmN"
    plan.env["HF_TOKEN"] = token
    for text in (as_shell(plan), as_json(plan)):
        assert text.count(token) == 1
        assert redact_text(text) == text.replace(token, REDACTED)


PRIVATE_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "QyNTUxOQAAACBtZXRhbW9ycGhvc2lzLW5vdC1hLXJlYWwta2V5LWZvci10ZXN0aW5nAAAA\n"
    "-----END OPENSSH PRIVATE KEY-----\n"
)


def test_a_private_key_block_goes_whole_in_text_and_line_by_line():
    text = "before\n" + PRIVATE_KEY + "after HF_TOKEN=t0k\n"
    expected = f"before\n{REDACTED}\nafter HF_TOKEN={REDACTED}\n"
    assert redact_text(text) == expected
    redactor = LineRedactor()
    assert "".join(map(redactor.line, text.splitlines(keepends=True))) == expected


def test_a_published_log_drops_a_private_key_block(tmp_path):
    source, target = tmp_path / "run.log", tmp_path / "public.log"
    source.write_text(
        "step:1 ok\n"
        + "".join(f"(pid=7) {line}" for line in PRIVATE_KEY.splitlines(keepends=True))
        + "step:2 ok\n"
    )
    redact_file(source, target)  # as publish copies it: by the file's form
    assert target.read_text() == f"step:1 ok\n(pid=7) {REDACTED}\nstep:2 ok\n"


def test_a_secret_flag_ending_a_line_loses_the_value_on_the_next():
    argv_json = json.dumps(
        {"argv": ["serve", "--api-key", "k3y-v4lue", "--port", "8000"]}, indent=2
    )
    assert redact_text(argv_json) == argv_json.replace("k3y-v4lue", REDACTED)
    shell = "serve \\\n  --token \\\n  t0k-v4lue \\\n  --port \\\n  8000\n"
    assert redact_text(shell) == shell.replace("t0k-v4lue", REDACTED)


def test_mapping_keeps_flags_and_nulls_under_secret_names():
    data = {"use_auth": True, "hf_token": None, "balance_dp_token": False, "api_key": "k"}
    assert redact_mapping(data) == {
        "use_auth": True,
        "hf_token": None,
        "balance_dp_token": False,
        "api_key": REDACTED,
    }


def test_no_setting_in_verls_own_configs_loses_its_value():
    """A secret-looking verl setting would lose its value in the exact command: none may hold
    more than a flag (booleans and nulls are kept under any name)."""
    spec = importlib.util.find_spec("verl")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("verl is not installed")
    settings: dict[str, object] = {}
    for path in Path(next(iter(spec.submodule_search_locations))).rglob("config/**/*.yaml"):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            settings.update(_settings(doc))
    assert len(settings) > 100
    secret_named = {k: v for k, v in settings.items() if is_secret_name(k)}
    assert {k: v for k, v in secret_named.items() if not isinstance(v, (bool, type(None)))} == {}


def _settings(doc: object) -> Iterator[tuple[str, object]]:
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield str(key), value
            yield from _settings(value)
    elif isinstance(doc, list):
        for value in doc:
            yield from _settings(value)


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
