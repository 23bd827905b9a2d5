"""Every secret shape, planted wherever a run can carry it, never survives; look-alikes do.

The fake secrets are assembled at run time so that no token-shaped string sits in the source.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from workbook.core.redaction import REDACTED, LineRedactor, redact_mapping, redact_text
from workbook.core.redaction import text as redaction
from workbook.run.notebook import redact_notebook


def _chars(n: int, alphabet: str = "aB3dE5gH7jK9mN2pQ4sT6vW8yZ") -> str:
    return (alphabet * (n // len(alphabet) + 1))[:n]


# Shapes a value is recognised by, wherever it appears (no telling name around it).
SHAPED = {
    "hugging face": "hf" + "_" + _chars(34),
    "github classic": "gh" + "p_" + _chars(36),
    "github oauth": "gh" + "o_" + _chars(36),
    "github app": "gh" + "s_" + _chars(36),
    "github fine-grained": "github" + "_pat_" + _chars(22) + "_" + _chars(59),
    "gitlab": "gl" + "pat-" + _chars(20),
    "aws key id": "AK" + "IA" + _chars(16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"),
    "google oauth": "ya" + "29." + _chars(60, "aB3-dE_5gH"),
    "google api key": "AI" + "za" + _chars(35),
    "slack": "xo" + "xb-" + "123456789012-1234567890123-" + _chars(24),
    "openai": "sk" + "-proj-" + _chars(48),
    "openai legacy": "sk" + "-" + _chars(20) + "T3Blbk" + "FJ" + _chars(20),
    "anthropic": "sk" + "-ant-api03-" + _chars(40),
    "jwt": "ey" + "JhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0." + _chars(43),
    "stripe live": "sk" + "_live_" + _chars(24),
    "stripe restricted": "rk" + "_live_" + _chars(24),
    "google api key, 38 characters": "AI" + "za" + _chars(34),
    "sendgrid": "SG" + "." + _chars(22) + "." + _chars(43),
    "square": "sq0" + "csp-" + _chars(43),
    "pypi": "py" + "pi-AgEIcHlwaS5vcmc" + _chars(70),
    "npm": "np" + "m_" + _chars(36),
    "mailchimp": _chars(32, "0123456789abcdef") + "-u" + "s12",
    "twilio account": "AC" + _chars(32, "0123456789abcdef"),
    "twilio key": "SK" + _chars(32, "0123456789abcdef"),
    "discord": "M" + _chars(23) + "." + _chars(6) + "." + _chars(27),
    "telegram": "1234" + "56789:" + _chars(35),
    "artifactory": "AK" + "C" + _chars(20),
}
# Plain values that only their place gives away.
PLACED = {
    "url userinfo": ("https://bob:{}@git.example.com/r.git", "s3cr3t-Pw"),
    "bearer": ("curl -H 'Authorization: Bearer {}'", "opaque.Bearer-4242"),
    "bare bearer": ("auth with Bearer {} now", "opaque.Bearer-4343"),
    "query token": ("GET https://hub/api?token={}&page=2", "qToken-5151"),
    "query access_token": ("https://hub/cb?code=1&access_token={}", "qAccess-5252"),
    "query api_key": ("https://maps/q?x=1&api_key={}", "qApiKey-5353"),
    "query password": ("https://db/login?password={}", "qPass-5454"),
    "--api-key=": ("vllm serve --api-key={} --port 8000", "flagEq-6161"),
    "--api-key": ("vllm serve --api-key {} --port 8000", "flagSp-6262"),
    "--token": ("hf download --token {} Qwen/Qwen3-8B", "flagTok-6363"),
    "--password": ("mysql --password {} -h db", "flagPw-6464"),
    "PASS=": ("PASS={} ./run.sh", "envPass-7171"),
    "*_PWD=": ("DB_PWD={} ./run.sh", "envPwd-7272"),
    "NAME: value": ("WANDB_API_KEY: {}", "yamlKey-7373"),
    '"name": "value"': ('{{"client_secret": "{}"}}', "jsonSecret-7474"),
    "hydra override": ("+data.hub_token={}", "hydraTok-7575"),
    "mysql -pPW": ("mysql -h db -u root -p{} mydb", "glued-8181"),
    "mysql -p'PW'": ("mysqldump -p'{}' mydb", "quoted-8282"),
    "sshpass -p PW": ("sshpass -p {} ssh -p 22 host", "apart-8383"),
    "sshpass -pPW": ("sshpass -p{} rsync a host:b", "glued-8484"),
    "redis-cli -a PW": ("redis-cli -h cache -a {} ping", "redis-8585"),
    "mongosh -p PW": ("mongosh -u bob -p {} db", "mongo-8686"),
    "--wandb-key": ("python3 train.py --wandb-key {} --steps 4", "wandbKey-9191"),
    "--hub-token": ("python3 push.py --hub-token {}", "hubTok-9292"),
    "--db-password": ("python3 load.py --db-password {}", "dbPw-9393"),
    "--client-secret": ("python3 auth.py --client-secret {}", "clSecret-9494"),
    "--ssh-key=": ("python3 sync.py --deploy-key={}", "dplKey-9595"),
}
PRIVATE_KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAmetamorphosisNotARealKeyJustBase64LookingTextForTests01\n"
    "c2Vjb25kIGxpbmUgb2YgYSBmYWtlIGtleSB0aGF0IG11c3QgbmV2ZXIgYmUgcHVibGlzaGVk\n"
    "-----END RSA PRIVATE KEY-----\n"
)
KEY_LINES = [line for line in PRIVATE_KEY.splitlines() if "-----" not in line]


def _leaks(text: str, secret: str) -> bool:
    """The secret, or a recognisable piece of it (its head or its tail), is still there."""
    return any(piece in text for piece in (secret, secret[:12], secret[-10:]))


def _yaml(pairs: dict[str, str]) -> str:
    return "name: x\nenv:\n" + "".join(f"  {k}: {v}\n" for k, v in pairs.items())


@pytest.mark.parametrize("shape", SHAPED)
def test_a_shaped_secret_goes_from_text_mappings_overrides_and_logs(shape):
    secret = SHAPED[shape]
    texts = [
        _yaml({"NOTE": secret}),
        _yaml({"NOTE": f'"{secret}"'}),
        f"+trainer.notes={secret}",
        f"[36m(TaskRunner pid=7)[0m INFO uploading with {secret} to the hub\n",
        json.dumps({"argv": ["python3", f"--notes={secret}"], "env": {"NOTE": secret}}, indent=2),
    ]
    for text in texts:
        assert not _leaks(redact_text(text), secret), text
    out = redact_mapping({"env": {"NOTE": secret}, "overrides": [f"x.y={secret}"], "log": [secret]})
    assert not _leaks(json.dumps(out), secret)


@pytest.mark.parametrize("shape", SHAPED)
def test_a_shaped_secret_goes_from_a_streamed_log(shape):
    secret = SHAPED[shape]
    redactor = LineRedactor()
    out = "".join(map(redactor.line, ["step:1 - loss:0.1\n", f"token is {secret}\n", "done\n"]))
    assert (
        not _leaks(out, secret) and out.startswith("step:1 - loss:0.1\n") and out.endswith("done\n")
    )


def test_every_rule_gate_opens_the_fast_path():
    """A shape family whose gate the fast path does not test would never be looked for."""
    gates = [gate for gate, _, _ in redaction._shapes()]
    gates += [*redaction._NAME_WORDS, "bearer", "@", "-u", "-----BEGIN PRIVATE KEY-----"]
    assert [g for g in gates if not redaction._triggered(g, g.lower())] == []


@pytest.mark.parametrize("place", PLACED)
def test_a_plain_value_in_a_telling_place_goes(place):
    template, secret = PLACED[place]
    text = template.format(secret)
    assert redact_text(text) == template.format(REDACTED)
    assert redact_mapping({"command": text}) == {"command": template.format(REDACTED)}
    logged = f"[36m(TaskRunner pid=7)[0m {text}\n"
    assert LineRedactor().line(logged) == logged.replace(secret, REDACTED)


def test_secret_names_in_an_environment_mapping_lose_their_values():
    env = {
        "HF_TOKEN": "plain1", "GITHUB_TOKEN": "plain2", "OPENAI_API_KEY": "plain3",
        "AWS_SECRET_ACCESS_KEY": "plain4", "DB_PASS": "plain5", "MY_PWD": "plain6",
        "DB_PASSWORD": "plain7", "GOOGLE_APPLICATION_CREDENTIALS": "/keys/sa.json",
        "PATH": "/usr/bin", "PWD": "/work/main", "RAY_AUTH_MODE": "token",
        "HF_HOME": "/root/.cache/huggingface", "CUDA_ALLOC_CONF": "expandable_segments:True",
    }  # fmt: skip
    out = redact_mapping({"env": env})["env"]
    kept = {"PATH", "PWD", "RAY_AUTH_MODE", "HF_HOME", "CUDA_ALLOC_CONF"}
    assert out == {k: v if k in kept else REDACTED for k, v in env.items()}


def test_a_params_file_with_every_shape_keeps_only_its_harmless_lines():
    harmless = "trainer:\n  total_training_steps: 15\n  project_name: GSPO-Qwen3-8B\n"
    planted = "".join(f"  s{i}: {secret}\n" for i, secret in enumerate(SHAPED.values()))
    out = redact_text(harmless + "notes:\n" + planted)
    assert out.startswith(harmless + "notes:\n")
    assert out.count(REDACTED) == len(SHAPED)
    assert not any(_leaks(out, secret) for secret in SHAPED.values())


@pytest.mark.parametrize(
    "kind",
    ["RSA", "DSA", "EC", "OPENSSH", "ENCRYPTED", "SSH2 ENCRYPTED", ""],
)
def test_every_kind_of_private_key_block_goes_whole(kind):
    label = f"{kind} PRIVATE KEY".strip()
    block = PRIVATE_KEY.replace("RSA PRIVATE KEY", label)
    assert redact_text(f"a\n{block}b\n") == f"a\n{REDACTED}\nb\n"


def test_a_pgp_private_key_block_goes_whole():
    block = PRIVATE_KEY.replace("RSA PRIVATE KEY", "PGP PRIVATE KEY BLOCK")
    assert redact_text(block) == f"{REDACTED}\n"


@pytest.mark.parametrize(
    "wrap",
    [
        lambda key: key,  # a key file's text
        lambda key: "".join(f"(WorkerDict pid=9) {line}" for line in key.splitlines(keepends=True)),
        lambda key: (
            "private_key: |\n" + "".join(f"  {line}" for line in key.splitlines(keepends=True))
        ),
        lambda key: json.dumps({"type": "service_account", "private_key": key}),  # "\n" escaped
        lambda key: json.dumps(
            {"cells": [{"outputs": [{"text": key.splitlines(keepends=True)}]}]}, indent=1
        ),
    ],
    ids=["file", "ray-log", "yaml-block", "json-one-line", "notebook-json"],
)
def test_no_line_of_a_private_key_survives_wherever_it_is_printed(wrap):
    text = wrap(PRIVATE_KEY)
    out = redact_text(text)
    assert not any(line in out for line in KEY_LINES)
    assert "PRIVATE KEY-----" not in out.replace(REDACTED, "")
    redactor = LineRedactor()
    assert "".join(map(redactor.line, text.splitlines(keepends=True))) == out


def test_a_private_key_in_a_notebook_output_goes_whole(tmp_path: Path):
    lines = PRIVATE_KEY.splitlines(keepends=True)
    output = {"output_type": "execute_result", "data": {"text/plain": lines}, "metadata": {}}
    cell = {"cell_type": "code", "source": "print(key)", "outputs": [output], "metadata": {}}
    path = tmp_path / "notebook.ipynb"
    path.write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4}))
    text = redact_notebook(path).read_text()
    assert not any(line in text for line in KEY_LINES) and REDACTED in text


def test_a_stray_begin_line_does_not_swallow_the_rest_of_a_log():
    redactor = LineRedactor()
    lines = ["expected -----BEGIN PRIVATE KEY----- in the PEM file\n"] + [
        f"step:{i}\n" for i in range(1000)
    ]
    out = list(map(redactor.line, lines))
    assert out[-1] == "step:999\n" and out.count("") < 500


PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8).decode()
LOOK_ALIKES = [
    "20261130T193902Z-7a8e97",
    "runs/gspo-qwen3-8b-1n8npu-fsdp2-vllm/20261130T193902Z-7a8e97/run.log",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8",
    "uuid 123e4567-e89b-12d3-a456-426614174000",
    f'<img src="data:image/png;base64,{PNG}">',
    f"data:image/png;base64,{PNG}",
    "3.14159 -2 1e-06 0.0004 32768 2048",
    "/root/.cache/models/Qwen/Qwen3-8B",
    "actor_rollout_ref.model.path=/root/.cache/models/Qwen/Qwen3-8B",
    "hf_config_path: null  hf_model: Qwen/Qwen3-8B",
    "task-0123456789abcdef0123 disk-usage-report-2026 ask-questions",
    "WARNING authentication_token_setup.py:85 -- Token authentication is enabled",
    "Generated new authentication token and saved to /root/.ray/auth_token",
    "step:1 - global_seqlen/max:3522.0 - perf/throughput:912.5 - rollout_corr/chi2_token:0.53",
    "step:1 - timing_per_token_ms/gen:3.1 - perf/total_num_tokens:560 - critic/score/mean:0.41",
    "'pad_token_id': 151643, 'eos_token_id': 151645, 'skip_tokenizer_init': False",
    "'max_new_tokens': 64, 'ppo_max_token_len_per_gpu': 16384, 'prompt_key': 'prompt'",
    "git@github.com:volcengine/verl.git and https://github.com/volcengine/verl",
    "ssh://git@github.com:22/volcengine/verl.git",
    "email someone@example.com about AgentLoopWorker and ASIAN food",
    "the bearer of bad news",
    "mysql -p mydb -e 'select 1'",  # -p alone asks for the password; mydb is the database
    "ssh -p 22 host && docker run -p 3306:3306 mysql",
    "python3 prep.py --prompt-key question --reward_fn_key data_source --public-key id.pub",
    "mysql -h db -P 3306 -u root --protocol=tcp",
]


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_harmless_look_alikes_survive(text):
    assert redact_text(text) == text
    assert redact_mapping({"note": text, "items": [text]}) == {"note": text, "items": [text]}
    redactor = LineRedactor()
    assert redactor.line(text + "\n") == text + "\n"


def test_a_client_password_flag_goes_from_an_argv_and_only_the_first():
    argv = ["sshpass", "-p", "apart-8383", "ssh", "-p", "22", "host"]
    assert redact_mapping(argv) == ["sshpass", "-p", REDACTED, "ssh", "-p", "22", "host"]
    assert redact_mapping(["/usr/bin/mysql", "-pglued-8181", "db"]) == [
        "/usr/bin/mysql", f"-p{REDACTED}", "db"]
    assert redact_mapping(["mysql", "-p", "db"]) == ["mysql", "-p", "db"]
    assert redact_mapping(["redis-cli", "-a", "redis-8585"]) == ["redis-cli", "-a", REDACTED]
    assert redact_mapping(["x", "--wandb-key", "wandbKey-9191"]) == ["x", "--wandb-key", REDACTED]


# Every detect-secrets plugin: a line it flags, with the secret in it, that redaction must empty;
# or why the guard has no shape of its own for it.
PLUGIN_LINES = {
    "ArtifactoryDetector": ('artifactory_token: "{}"', SHAPED["artifactory"]),
    "AWSKeyDetector": ("aws {}", SHAPED["aws key id"]),
    "AzureStorageKeyDetector": ("DefaultEndpointsProtocol=https;AccountKey={}", _chars(86) + "=="),
    "BasicAuthDetector": ("https://bob:{}@db.example.com/x", "basicPw-1212"),
    "CloudantDetector": ("cloudant_password = '{}'", _chars(64, "0123456789abcdef")),
    "DiscordBotTokenDetector": ("discord {}", SHAPED["discord"]),
    "GitHubTokenDetector": ("push with {}", SHAPED["github classic"]),
    "GitLabTokenDetector": ("push with {}", SHAPED["gitlab"]),
    "IbmCloudIamDetector": ("ibm_cloud_iam_key = {}", _chars(44)),
    "IbmCosHmacDetector": ("secret_access_key = {}", _chars(48, "0123456789abcdef")),
    "JwtTokenDetector": ("token {}", SHAPED["jwt"]),
    "MailchimpDetector": ("mailchimp {}", SHAPED["mailchimp"]),
    "NpmDetector": ("//registry.npmjs.org/:_authToken={}", SHAPED["npm"]),
    "OpenAIDetector": ("openai {}", SHAPED["openai legacy"]),
    "PypiTokenDetector": ("twine upload -p {}", SHAPED["pypi"]),
    "SendGridDetector": ("sendgrid {}", SHAPED["sendgrid"]),
    "SlackDetector": ("slack {}", SHAPED["slack"]),
    "SoftlayerDetector": ("softlayer_api_key = {}", _chars(64, "0123456789abcdefghij")),
    "SquareOAuthDetector": ("square {}", SHAPED["square"]),
    "StripeDetector": ("stripe {}", SHAPED["stripe live"]),
    "TelegramBotTokenDetector": ("telegram {}", SHAPED["telegram"]),
    "TwilioKeyDetector": ("twilio {}", SHAPED["twilio key"]),
    "KeywordDetector": ('db_password = "{}"', "kwPass-1313"),
    "PrivateKeyDetector": ("{}", PRIVATE_KEY),
}
NO_SHAPE = {
    "Base64HighEntropyString": "entropy, not a shape: it would take every hash and commit id",
    "HexHighEntropyString": "entropy, not a shape: it would take every hash and commit id",
    "IPPublicDetector": "an address, not a credential: logs name their hosts",
}


def test_every_detect_secrets_plugin_has_a_line_here_or_a_reason():
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    plugins = {cls.__name__ for cls in get_mapping_from_secret_type_to_class().values()}
    assert plugins == set(PLUGIN_LINES) | set(NO_SHAPE)


@pytest.mark.parametrize("plugin", PLUGIN_LINES)
def test_a_line_any_detect_secrets_plugin_flags_loses_its_secret(plugin):
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    template, secret = PLUGIN_LINES[plugin]
    line = template.format(secret)
    (detector,) = [c() for c in get_mapping_from_secret_type_to_class().values()
                   if c.__name__ == plugin]
    assert any(detector.analyze_line(filename="x", line=part, line_number=1)
               for part in line.splitlines()), "the plugin itself flags the line"
    for out in (redact_text(line), json.dumps(redact_mapping({"note": line})),
                "".join(map(LineRedactor().line, line.splitlines(keepends=True)))):
        assert not _leaks(out, secret), out
