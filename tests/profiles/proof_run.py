"""Run the real verl trainer once on the cpu profile and record the evidence (not a pytest test).

Records what the test fixtures in ``tests/profiles/data`` were made from: the exact argv and env
(``<kind>_cpu_command.json``), the console log, verl's metrics.jsonl, wall time and the peak RSS
summed over the whole process tree (Ray, vLLM and every worker). Run it under the shared lock:

    flock /tmp/wb-heavy.lock .venv/bin/python tests/profiles/proof_run.py gspo /tmp/wb-proof/gspo
    flock /tmp/wb-heavy.lock .venv/bin/python tests/profiles/proof_run.py ppo /tmp/wb-proof/ppo
    flock /tmp/wb-heavy.lock .venv/bin/python tests/profiles/proof_run.py broken /tmp/wb-proof/bad
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

from workbook.profiles import profile_env, profile_overrides
from workbook.profiles.cpu.assets import Assets, ensure_assets
from workbook.profiles.cpu.pythonpath import prepare_plugin_path


def scenario_overrides(kind: str, assets: Assets, run_dir: Path) -> list[str]:
    """What a scenario file would say: algorithm, sizes, model, data, reward, trainer."""
    steps = 2 if kind == "ppo" else 4
    common = [
        f"data.train_files={assets.train_file}",
        f"data.val_files={assets.val_file}",
        "data.train_batch_size=8",
        "data.max_prompt_length=128",
        "data.max_response_length=64",
        f"actor_rollout_ref.model.path={assets.model_dir}",
        "actor_rollout_ref.actor.optim.lr=1e-4",
        "actor_rollout_ref.actor.ppo_mini_batch_size=2",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8",
        "actor_rollout_ref.actor.use_kl_loss=False",
        "actor_rollout_ref.rollout.n=4",
        "actor_rollout_ref.rollout.tensor_model_parallel_size=1",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8",
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8",
        "algorithm.use_kl_in_reward=False",
        f"reward.custom_reward_function.path={assets.reward_file}",
        f"reward.custom_reward_function.name={assets.reward_function}",
        "reward.num_workers=1",
        "trainer.logger=[\"console\",\"file\"]",
        "trainer.project_name=verl-workbook",
        f"trainer.experiment_name={kind}-tiny-cpu",
        "trainer.nnodes=1",
        "trainer.n_gpus_per_node=1",
        f"trainer.total_training_steps={steps}",
        "trainer.val_before_train=False",
        "trainer.test_freq=-1",
        "trainer.save_freq=-1",
        f"trainer.default_local_dir={run_dir / 'checkpoints'}",
    ]
    if kind == "ppo":
        return common + [
            "algorithm.adv_estimator=gae",
            f"critic.model.path={assets.model_dir}",
            "critic.ppo_micro_batch_size_per_gpu=2",
            "critic.optim.lr=1e-3",
        ]
    gspo = common + [
        "algorithm.adv_estimator=grpo",
        "actor_rollout_ref.actor.policy_loss.loss_mode=gspo",
        "actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-mean",
        "actor_rollout_ref.actor.clip_ratio_low=3e-4",
        "actor_rollout_ref.actor.clip_ratio_high=4e-4",
    ]
    if kind == "broken":
        gspo.append("actor_rollout_ref.actor.loss_agg_mode=token-avg")
    return gspo


def tree_rss(root: psutil.Process) -> int:
    total = 0
    for proc in [root, *root.children(recursive=True)]:
        try:
            total += proc.memory_info().rss
        except psutil.Error:
            pass
    return total


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("kind", choices=["gspo", "ppo", "broken"])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args()
    run_dir: Path = args.run_dir.resolve()
    run_dir.mkdir(parents=True, exist_ok=True)

    assets = ensure_assets()
    plugin_path = prepare_plugin_path(run_dir / "pythonpath")
    ray_temp_dir = f"/tmp/wb-{secrets.token_hex(3)}"
    argv = [
        sys.executable,
        "-m",
        "verl.trainer.main_ppo",
        *profile_overrides(
            "cpu", nnodes=1, devices_per_node=1, on_existing_cluster=False,
            ray_temp_dir=ray_temp_dir, critic=args.kind == "ppo",
        ),
        *scenario_overrides(args.kind, assets, run_dir),
    ]
    run_env = {
        **profile_env("cpu", plugin_path=plugin_path, pythonpath=os.environ.get("PYTHONPATH", "")),
        "VERL_FILE_LOGGER_PATH": str(run_dir / "metrics.jsonl"),
    }
    (run_dir / "command.json").write_text(
        json.dumps({"argv": argv, "env": run_env, "cwd": str(run_dir)}, indent=2) + "\n"
    )
    log_path = run_dir / "run.log"
    start = time.monotonic()
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            argv, env={**os.environ, **run_env}, cwd=run_dir, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True,
        )
        peak = 0
        stop = threading.Event()

        def sample() -> None:
            nonlocal peak
            root = psutil.Process(proc.pid)
            while not stop.is_set():
                try:
                    peak = max(peak, tree_rss(root))
                except psutil.Error:
                    pass
                stop.wait(1.0)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            code = proc.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            code = proc.wait()
        stop.set()
        sampler.join()
    wall = time.monotonic() - start
    leftovers = [p for p in psutil.process_iter(["pid", "cmdline"])
                 if ray_temp_dir in " ".join(p.info["cmdline"] or [])]
    for leftover in leftovers:
        leftover.kill()
    summary = {"kind": args.kind, "exit_code": code, "wall_s": round(wall, 1),
               "peak_rss_gb": round(peak / 1e9, 2), "leftover_ray_processes": len(leftovers),
               "ray_temp_dir": ray_temp_dir}
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary))
    return code


if __name__ == "__main__":
    raise SystemExit(main())
