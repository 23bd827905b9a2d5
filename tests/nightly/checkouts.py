"""verl-like and verl-ascend-recipe-like checkouts built from the committed script facts: a
nightly workflow whose jobs run scripts that hand ``python3`` exactly the facts' argv and
environment (part through the job's ``env:``, the step's ``export`` and ``VAR=value`` inputs, as
verl's own jobs do), and the recipe's baseline files with the scenarios' numbers."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
PARAMS = REPO / "params"
RUNNERS = {"a2": "linux-aarch64-a2b3-8", "a3": "linux-aarch64-a3-16"}
INSTALL_ENV = {"HF_ENDPOINT": "https://hf-mirror.com", "UV_INDEX_URL": "http://cache.invalid/pypi"}
COMMIT_DATE = "2026-09-12T08:30:00+00:00"


def committed_facts(name: str) -> dict[str, Any]:
    facts: dict[str, Any] = json.loads((PARAMS / "nightly" / f"{name}.script.json").read_text())
    return facts


def params_copy(root: Path, names: list[str]) -> Path:
    """The project's params folder with the script facts of ``names`` only."""
    folder = root / "params"
    shutil.copytree(PARAMS, folder)
    for path in (folder / "nightly").glob("*.script.json"):
        if path.name.removesuffix(".script.json") not in names:
            path.unlink()
    return folder


def ascend_baseline(name: str) -> tuple[str, str, str] | None:
    """(hardware, check_npu.py's --base, text) of the scenario's imported Ascend baseline."""
    json_path = next(PARAMS.glob(f"baselines/{name}.a?.json"), None)
    if json_path is None:
        return None
    text_path = REPO / json.loads(json_path.read_text())["provenance"]["imported_from"]
    stem, hardware = text_path.name.removesuffix(".txt").rsplit(".", 1)
    return hardware, f"run_{stem.removeprefix('baseline_')}/{stem}.txt", text_path.read_text()


def build_verl(root: Path, facts: list[dict[str, Any]], unchecked: tuple[str, ...] = ()) -> Path:
    """A checkout whose nightly workflow runs one job per facts record (those named in
    ``unchecked`` without their baseline check step)."""
    verl = root / "verl"
    jobs = {f["job"]: _job(verl, f, f["job"] not in unchecked) for f in facts}
    workflow = {"name": "nightly_ci_ascend", "on": {"schedule": [{"cron": "0 17 * * *"}]},
                "permissions": {"contents": "read"}, "jobs": jobs}
    folder = verl / ".github" / "workflows"
    folder.mkdir(parents=True)
    (folder / "nightly_ascend.yml").write_text(yaml.safe_dump(workflow, sort_keys=False))
    (folder / "e2e_ascend.yml").write_text("name: not the nightly\non: push\njobs: {}\n")
    return verl


def _job(verl: Path, facts: dict[str, Any], checked: bool) -> dict[str, Any]:
    env = dict(facts["env"])
    job_env = {**INSTALL_ENV, **({"TRANSFORMERS_VERBOSITY": env.pop("TRANSFORMERS_VERBOSITY")}
                                 if "TRANSFORMERS_VERBOSITY" in env else {})}
    path = env.pop("PYTHONPATH", None)
    direct = facts["job"] != "ascend-rayjob-e2e"  # the multinode job hands its script to a RayJob
    if not direct:
        env, job_env, path = facts["env"], {}, None
    _script(verl / facts["script"], env, [*facts["entry"], *facts["overrides"]])
    lines = ["ray stop --force"]
    if path is not None:
        lines.append(f"export PYTHONPATH={path.rstrip(':')}:$PYTHONPATH")
    inputs = " ".join(f"{k}={v}" for k, v in facts["inputs"].items())
    lines.append(f"{inputs} bash {facts['script']}".strip() if direct else
                 f"submit_rayjob multinode '[\"--script-path\",\"/verl/{facts['script']}\"]' '{{}}'")
    steps: list[dict[str, Any]] = [{"uses": "actions/checkout@v4"},
                                   {"name": "run", "run": "\n".join(lines) + "\n"}]
    found = ascend_baseline(facts["scenario"])
    if found and checked:
        steps.append({"name": "check", "run": "cd /root/.cache/nightly_log/\n"
                      f"python check_npu.py --log x.log --base {found[1]}\n"})
    return {"runs-on": RUNNERS[found[0]] if found else RUNNERS["a2"], "timeout-minutes": 180,
            "env": job_env, "steps": steps}


def _script(path: Path, env: dict[str, str], argv: list[str]) -> None:
    """A nightly-like script: shell variables, directories and a log under /root, exports."""
    body = ["set -xeuo pipefail", 'SCRIPT_NAME="$(basename -- "${BASH_SOURCE[0]}" .sh)"',
            "LOG_DIR=/root/.cache/nightly_log/$SCRIPT_NAME", "mkdir -p $LOG_DIR",
            "rm -rf $LOG_DIR/$SCRIPT_NAME.log"]
    body += [f"export {k}={shlex.quote(v)}" for k, v in env.items()]
    body.append("python3 " + " ".join(map(shlex.quote, argv)) + " | tee $LOG_DIR/$SCRIPT_NAME.log")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(body) + "\n")


def build_recipe(root: Path, names: list[str], changed: dict[str, str] | None = None) -> Path:
    """A git checkout holding the scenarios' Ascend baselines where the recipe keeps them,
    committed at :data:`COMMIT_DATE`; ``changed`` replaces one line (old -> new) in them."""
    recipe = root / "recipe"
    for name in names:
        found = ascend_baseline(name)
        if found:
            hardware, base, text = found
            for old, new in (changed or {}).items():
                text = text.replace(old, new)
            path = recipe / "baseline" / hardware / "nightly_log" / base
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    env = {**os.environ, "GIT_AUTHOR_DATE": COMMIT_DATE, "GIT_COMMITTER_DATE": COMMIT_DATE,
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "baselines"]):
        subprocess.run(["git", "-C", str(recipe), *argv], env=env, check=True, timeout=60)
    return recipe


def recipe_commit(recipe: Path) -> str:
    return subprocess.run(["git", "-C", str(recipe), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True, timeout=60).stdout.strip()
