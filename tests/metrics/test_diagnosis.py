"""Every failure category, from log lines worded as the real tools word them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbook.metrics import RunMetrics, diagnose
from workbook.metrics.diagnosis import Diagnoser
from workbook.metrics.failures import CATEGORIES

LOGS = Path(__file__).resolve().parents[1] / "data" / "verl_logs"

STEPS = """\
(TaskRunner pid=2201) step:1 - actor/pg_loss:0.011 - actor/pg_clipfrac:0.125 - timing_s/step:16.7
(TaskRunner pid=2201) step:2 - actor/pg_loss:0.004 - actor/pg_clipfrac:0.125 - timing_s/step:2.5
"""

DRIVER_HEAD = """\
Error executing job with overrides: ['algorithm.adv_estimator=grpo', 'trainer.total_training_steps=4']
Traceback (most recent call last):
  File "/opt/verl/verl/trainer/main_ppo.py", line 42, in main
    run_ppo(config)
  File "/opt/verl/verl/trainer/main_ppo.py", line 96, in run_ppo
    ray.get(runner.run.remote(config))
  File "/usr/lib/python3/site-packages/ray/_private/worker.py", line 1026, in get_objects
    raise value.as_instanceof_cause()
"""

REWARD_EXCEPTION = (
    DRIVER_HEAD
    + """\
ray.exceptions.RayTaskError(NotImplementedError): ray::TaskRunner.run() (pid=2201, ip=10.0.0.5, actor_id=3f0e11aa, repr=<main_ppo.TaskRunner object at 0x7f3c>)
  File "/opt/verl/verl/trainer/main_ppo.py", line 341, in run
    trainer.fit()
  File "/tmp/reward.py", line 3, in compute_score
    raise NotImplementedError("reward for data source 'openai/gsm8k' is not implemented")
NotImplementedError: reward for data source 'openai/gsm8k' is not implemented

Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.
"""
)

HCCL_EI0002 = (
    """\
(WorkerDict pid=8464) Traceback (most recent call last):
(WorkerDict pid=8464)   File "/usr/local/python3.10/site-packages/torch_npu/npu/utils.py", line 60, in synchronize
(WorkerDict pid=8464)     return torch_npu._C._npu_synchronize()
(WorkerDict pid=8464) RuntimeError: npuSynchronizeDevice:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:479 NPU function error: AclrtSynchronizeDeviceWithTimeout, error code is 507048
(WorkerDict pid=8464) [ERROR] 2025-06-25-10:45:23 (PID:13075, Device:0, RankID:1) ERR00100 PTA call acl api failed
(WorkerDict pid=8464) [Error]: The execution of the internal task times out.
(WorkerDict pid=8464)         Rectify the fault based on the error information in the ascend log.
(WorkerDict pid=8464) EI0002: [PID: 13075] 2025-06-25-10:45:23.586.187 The wait execution of the Notify register times out. Reason: The Notify register has not received the Notify record from remote rank: [0]. base information: [streamID:[1], taskID[8318285], tag[AllReduce_group_name_710], AlgType(level 0-1-2):[fullmesh-ring-NHR].]. task information: []. group information: [group:[group_name_710], user define information[], rankSize[2], rankId[1].]
(WorkerDict pid=8464)         Possible Cause: 1. An exception occurs during the execution on some NPUs in the cluster. As a result, collective communication operation failed.2. The execution speed on some NPU in the cluster is too slow to complete a communication operation within the timeout interval. (default 1800s, You can set the interval by using HCCL_EXEC_TIMEOUT.)3. The number of training samples of each NPU is inconsistent.4. Packet loss or other connectivity problems occur on the communication link.
"""
    + DRIVER_HEAD
    + """\
ray.exceptions.RayTaskError(RuntimeError): ray::WorkerDict.actor_rollout_update_actor() (pid=8464, ip=10.0.0.2, actor_id=8645bd56, repr=<verl.single_controller.ray.base.WorkerDict object at 0xfffd>)
  File "/usr/local/python3.10/site-packages/torch_npu/npu/utils.py", line 60, in synchronize
    return torch_npu._C._npu_synchronize()
RuntimeError: npuSynchronizeDevice:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:479 NPU function error: AclrtSynchronizeDeviceWithTimeout, error code is 507048
"""
)

HCCL_EI0006 = """\
(WorkerDict pid=3001) [ERROR] HCCL(2717288,python3):2025-07-23-03:49:57.177.194 [hccl_socket_manager.cc:778] [2734049][Wait][LinkEstablish]wait socket establish timeout, role[1] rank[1] timeout[120]
(WorkerDict pid=3001) EI0006: [PID: 2717288] 2025-07-23-03:49:57.177.300 Getting socket times out. Reason: 1. The remote does not initiate a connect request. some NPUs in the cluster are abnormal.    2. The remote does not initiate a connect request because the collective communication operator is started too late or is not started by some NPU in the cluster.    3. The communication link is disconnected. (For example, the IP addresses are not on the same network segment or the TLS configurations are inconsistent.)
(WorkerDict pid=3001)         Solution: 1. Check the rank service processes with other errors or no errors in the cluster.2. If this error is reported for all NPUs, check whether the time difference between the earliest and latest errors is greater than the connect timeout interval (120s by default). If so, adjust the timeout interval by using the HCCL_CONNECT_TIMEOUT environment variable.
"""

NCCL_WATCHDOG = """\
(WorkerDict pid=5120) [rank1]:[E1129 18:00:00.123456 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1042, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600038 milliseconds before timing out.
(WorkerDict pid=5120) [rank1]:[E1129 18:00:00.223456 ProcessGroupNCCL.cpp:1785] [PG 0 (default_pg) Rank 1] Exception (either an error or timeout) detected by watchdog at work: 1042, last enqueued NCCL work: 1042, last completed NCCL work: 1041.
"""

C10D_TIMEOUT = """\
(WorkerDict pid=904548) [E331 20:50:12.688969421 socket.cpp:1011] [c10d] The client socket has timed out after 1800000ms while trying to connect to (10.123.0.1, 38321).
"""

ACTOR_DIED = (
    DRIVER_HEAD
    + """\
ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.
\tclass_name: create_colocated_worker_cls.<locals>.WorkerDict
\tactor_id: 5066c201b724a3936948a11201000000
\tpid: 87687
\tname: 07GxnAWorkerDict_0:3
\tnamespace: b8860f81-d334-496c-a8f4-c7ed6a6b49f3
\tip: 10.29.214.5
The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file. Some common causes include: (1) the process was killed by the OOM killer due to high memory usage, (2) ray stop --force was called, or (3) the worker crashed unexpectedly due to SIGSEGV or another unexpected error.
"""
)

RAYLET_DIED = """\
\x1b[33m(raylet)\x1b[0m A worker died or was killed while executing a task by an unexpected system error. To troubleshoot the problem, check the logs for the dead worker. RayTask ID: ffffffffffffffffe6820df8da2b90e4a8c69f5301000000 Worker ID: f8abf57db1813e9ac65ac19c8efbb59a6dbe750b416e7b08eb1124e8 Node ID: 09d07a17c937a1df95bae63476615a85a6aeb7428c5ab141e843f738 Worker IP address: 192.168.111.204 Worker port: 10110 Worker PID: 1508038 Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file. There are some potential root causes. (1) The process is killed by SIGKILL by OOM killer due to high memory usage. (2) ray stop --force is called. (3) The worker is crashed unexpectedly due to SIGSEGV or other unexpected errors.
"""

HYDRA_UNKNOWN_KEY = """\
Could not override 'actor_rollout_ref.actor.optim.lrr'.
To append to your config use +actor_rollout_ref.actor.optim.lrr=1e-6
Key 'lrr' is not in struct
    full_key: actor_rollout_ref.actor.optim.lrr
    object_type=dict

Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.
"""

HYDRA_FULL_ERROR = """\
Traceback (most recent call last):
  File "/usr/lib/python3/site-packages/hydra/_internal/config_loader_impl.py", line 413, in _apply_overrides_to_config
    OmegaConf.update(cfg, key, value, merge=True)
omegaconf.errors.ConfigKeyError: Key 'lrr' is not in struct
    full_key: actor_rollout_ref.actor.optim.lrr
    object_type=dict

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "<frozen runpy>", line 198, in _run_module_as_main
  File "/usr/lib/python3/site-packages/hydra/_internal/config_loader_impl.py", line 420, in _apply_overrides_to_config
    raise ConfigCompositionException(
hydra.errors.ConfigCompositionException: Could not override 'actor_rollout_ref.actor.optim.lrr'.
To append to your config use +actor_rollout_ref.actor.optim.lrr=1e-6
"""

VALIDATION_ERROR = """\
Error merging override data.train_batch_size=abc
Value 'abc' could not be converted to Integer
    full_key: data.train_batch_size
    object_type=dict
"""

NO_GPUS = """\
ray.exceptions.RayTaskError(ValueError): ray::TaskRunner.run() (pid=1234, ip=10.0.0.5, actor_id=aa01, repr=<main_ppo.TaskRunner object at 0x7f>)
  File "/opt/verl/verl/trainer/ppo/ray_trainer.py", line 161, in _check_resource_available
    raise ValueError(
ValueError: Total available GPUs 0 is less than total desired GPUs 1
"""

IMPORT_ERROR = """\
(WorkerDict pid=77) WARNING 01-02 23:57:12 [_custom_ops.py:20] Failed to import from vllm._C with ModuleNotFoundError("No module named 'vllm._C'")
Traceback (most recent call last):
  File "<frozen runpy>", line 198, in _run_module_as_main
  File "/opt/verl/verl/trainer/main_ppo.py", line 24, in <module>
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer
ModuleNotFoundError: No module named 'tensordict'
"""

WORKER_OOM = """\
(WorkerDict pid=2840753) Traceback (most recent call last):
(WorkerDict pid=2840753)   File "/opt/verl/verl/workers/actor/dp_actor.py", line 276, in update_policy
(WorkerDict pid=2840753)     loss.backward()
(WorkerDict pid=2840753) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.07 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.2 GiB is free.
"""

NPU_OOM = """\
(WorkerDict pid=9) RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 60.96 GiB total capacity; 57.10 GiB already allocated; 57.10 GiB current active; 1.02 GiB free; 58.70 GiB reserved in total by PyTorch)
"""

HOST_OOM = """\
ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.
Memory on the node (IP: 10.0.0.5, ID: 9a2f) where the task (actor ID: 5066c2, name=WorkerDict.__init__, pid=87687) was running was 23.10GB / 24.00GB (0.9625), which exceeds the memory usage threshold of 0.95.
"""

NON_FATAL_WORKER_TRACEBACK = """\
(WorkerDict pid=31) Traceback (most recent call last):
(WorkerDict pid=31)   File "/opt/verl/verl/utils/tracking.py", line 80, in log
(WorkerDict pid=31)     self.client.log(data)
(WorkerDict pid=31) ValueError: Validation crashes with file logger because NumPy scalars are not JSON serializable
"""


def run(text: str, **kwargs: object):  # type: ignore[no-untyped-def]
    return diagnose(text.splitlines(), **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text,category,evidence",
    [
        (STEPS + HCCL_EI0002, "collective_timeout", "EI0002: [PID: 13075]"),
        (HCCL_EI0006, "collective_timeout", "EI0006: [PID: 2717288]"),
        (NCCL_WATCHDOG, "collective_timeout", "Watchdog caught collective operation timeout"),
        (
            C10D_TIMEOUT,
            "collective_timeout",
            "[c10d] The client socket has timed out after 1800000ms",
        ),
        (
            STEPS + ACTOR_DIED,
            "worker_died",
            "ray.exceptions.ActorDiedError: The actor died unexpectedly",
        ),
        (RAYLET_DIED, "worker_died", "(raylet) A worker died or was killed while executing a task"),
        (
            HYDRA_UNKNOWN_KEY,
            "config_error",
            "Could not override 'actor_rollout_ref.actor.optim.lrr'.",
        ),
        (
            HYDRA_FULL_ERROR,
            "config_error",
            "omegaconf.errors.ConfigKeyError: Key 'lrr' is not in struct",
        ),
        (VALIDATION_ERROR, "config_error", "Error merging override data.train_batch_size=abc"),
        (
            NO_GPUS,
            "config_error",
            "ValueError: Total available GPUs 0 is less than total desired GPUs 1",
        ),
        (IMPORT_ERROR, "import_error", "ModuleNotFoundError: No module named 'tensordict'"),
        (
            STEPS + REWARD_EXCEPTION,
            "python_exception",
            "NotImplementedError: reward for data source",
        ),
        (WORKER_OOM, "oom", "(WorkerDict pid=2840753) torch.OutOfMemoryError: CUDA out of memory."),
        (NPU_OOM, "oom", "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB"),
        (
            HOST_OOM,
            "oom",
            "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.",
        ),
    ],
)
def test_failure_category_and_its_evidence_line(text: str, category: str, evidence: str) -> None:
    result = run(text, exit_code=1).to_dict()
    assert result["status"] == "failed"
    assert result["category"] == category
    assert any(evidence in line for line in result["evidence"]), result["evidence"]
    assert "\n" not in result["summary"] and result["summary"].startswith(
        {
            "oom": "Out of memory",
            "collective_timeout": "Collective",
            "worker_died": "A Ray worker",
            "config_error": "Configuration error",
            "import_error": "Import failed",
            "python_exception": "Python exception",
        }[category]
    )


def test_root_exception_of_a_ray_task_error_names_the_task_and_last_step() -> None:
    result = run(STEPS + REWARD_EXCEPTION, exit_code=1)
    assert result.summary == (
        "Python exception: NotImplementedError: reward for data source 'openai/gsm8k' "
        "is not implemented (in ray::TaskRunner.run); last step 2"
    )
    assert result.last_step == 2
    assert any(
        line.startswith("ray.exceptions.RayTaskError(NotImplementedError)")
        for line in result.evidence
    )


def test_worker_traceback_in_a_run_that_went_on_is_not_the_cause() -> None:
    assert run(NON_FATAL_WORKER_TRACEBACK + STEPS, exit_code=0).status == "succeeded"
    assert (
        run(NON_FATAL_WORKER_TRACEBACK + STEPS).status,
        run(NON_FATAL_WORKER_TRACEBACK + STEPS).category,
    ) == ("incomplete", "none")
    later_failure = (
        "(TaskRunner pid=2201) step:1 - a:1\n" + NON_FATAL_WORKER_TRACEBACK + STEPS + NPU_OOM
    )
    assert run(later_failure, exit_code=1).category == "oom"
    later_exception = (
        "(TaskRunner pid=2201) step:1 - a:1\n"
        + NON_FATAL_WORKER_TRACEBACK
        + STEPS
        + REWARD_EXCEPTION
    )
    result = run(later_exception, exit_code=1)
    assert (
        result.evidence[0]
        == "NotImplementedError: reward for data source 'openai/gsm8k' is not implemented"
    )
    assert all("JSON serializable" not in line for line in result.evidence)


def test_non_fatal_traceback_alone_in_a_failed_run_is_still_reported() -> None:
    result = run(NON_FATAL_WORKER_TRACEBACK + STEPS, exit_code=1)
    assert (result.status, result.category) == ("failed", "python_exception")


def test_root_cause_wins_over_consequences_printed_before_it() -> None:
    # Ray flushes the dying worker's own output after the driver reports the dead actor.
    result = run(STEPS + RAYLET_DIED + ACTOR_DIED + NCCL_WATCHDOG + WORKER_OOM, exit_code=1)
    assert result.category == "oom"
    assert result.evidence[0].startswith("(WorkerDict pid=2840753) torch.OutOfMemoryError")


def test_python_exception_that_wraps_an_hccl_timeout_is_a_collective_timeout() -> None:
    result = run(HCCL_EI0002, exit_code=1)
    assert result.category == "collective_timeout"
    assert result.summary.startswith("Collective communication failed or timed out: EI0002")


def test_warning_about_a_failed_optional_import_is_not_an_import_error() -> None:
    warning = IMPORT_ERROR.splitlines()[0] + "\n" + STEPS
    assert run(warning, exit_code=0).category == "none"
    assert run(warning).status == "incomplete"
    assert run(warning, exit_code=1).category == "unknown"


@pytest.mark.parametrize("exit_code", [-9, -15, 137, 143])
def test_kill_exit_codes_are_killed(exit_code: int) -> None:
    result = run(STEPS + NON_FATAL_WORKER_TRACEBACK, exit_code=exit_code)
    assert (result.status, result.category, result.last_step) == ("failed", "killed", 2)
    assert str(exit_code) in result.summary and str(exit_code) in result.evidence[0]


def test_a_run_stopped_by_the_user_is_stopped_not_failed() -> None:
    result = run(STEPS, exit_code=-15, status="stopped")
    assert (result.status, result.category, result.last_step) == ("stopped", "stopped", 2)
    assert "Stopped by the user" in result.summary


def test_a_run_that_timed_out_failed() -> None:
    result = run(STEPS, exit_code=-15, status="timeout")
    assert (result.status, result.category) == ("failed", "timeout")
    assert "Timed out" in result.summary


def test_kill_after_an_oom_is_an_oom() -> None:
    assert run(STEPS + HOST_OOM + "Killed\n", exit_code=137).category == "oom"


def test_killed_line_without_exit_code() -> None:
    result = run(STEPS + "Killed\n")
    assert (result.status, result.category, result.evidence) == ("failed", "killed", ["Killed"])


def test_exit_one_without_any_error_line_is_unknown() -> None:
    result = run(STEPS, exit_code=1)
    assert (result.status, result.category, result.evidence) == ("failed", "unknown", [])


def test_success_and_incomplete() -> None:
    assert run(STEPS, exit_code=0).to_dict() == {
        "status": "succeeded",
        "category": "none",
        "summary": "Succeeded; last step 2",
        "evidence": [],
        "last_step": 2,
        "expected_steps": None,
        "replayed_steps": [],
    }
    assert run(STEPS, exit_code=0, expected_steps=4).status == "incomplete"
    assert run(STEPS, expected_steps=2).status == "succeeded"
    assert run(STEPS).status == "incomplete"


def test_last_step_comes_from_metrics_when_given() -> None:
    metrics = RunMetrics()
    metrics.put(5, "a", 1.0, "metrics.jsonl:5")
    assert run(STEPS, exit_code=0, metrics=metrics).last_step == 5


def test_streaming_diagnoser_matches_the_batch_call() -> None:
    text = STEPS + RAYLET_DIED + WORKER_OOM
    diagnoser = Diagnoser()
    for line in text.splitlines(keepends=True):
        diagnoser.feed(line)
    assert diagnoser.result(exit_code=1) == run(text, exit_code=1)


def test_to_dict_has_exactly_the_documented_keys_and_known_category() -> None:
    for text in (STEPS, HYDRA_UNKNOWN_KEY, WORKER_OOM):
        result = run(text, exit_code=1).to_dict()
        assert list(result) == ["status", "category", "summary", "evidence", "last_step",
                                "expected_steps", "replayed_steps"]
        assert result["category"] in CATEGORIES
        json.dumps(result)


def test_run_directory_uses_run_json_exit_code(tmp_path: Path) -> None:
    (tmp_path / "run.log").write_text(STEPS + HYDRA_UNKNOWN_KEY)
    (tmp_path / "run.json").write_text(json.dumps({"status": "failed", "exit_code": 1}))
    result = diagnose(tmp_path)
    assert (result.category, result.last_step) == ("config_error", 2)
    (tmp_path / "run.json").write_text(json.dumps({"status": "succeeded", "exit_code": 0}))
    (tmp_path / "run.log").write_text(STEPS)
    (tmp_path / "metrics.jsonl").write_text('{"step": 3, "data": {"a": 1}}\n')
    assert diagnose(tmp_path).to_dict()["last_step"] == 3


def test_jsonl_file_is_diagnosed_from_its_steps() -> None:
    result = diagnose(LOGS / "12_jsonl-file-logger-ppo-null-and-string-values.log", exit_code=0)
    assert (result.status, result.last_step) == ("succeeded", 3)


CONFIG_VALIDATION = """\
Error executing job with overrides: ['actor_rollout_ref.actor.loss_agg_mode=token-avg']
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/hydra/_internal/instantiate/_instantiate2.py", line 129, in _call_target
    result = _target_(*args, **kwargs)
  File "/venv/lib/python3.11/site-packages/verl/workers/config/actor.py", line 320, in __post_init__
    super().__post_init__()
ValueError: Invalid loss_agg_mode: token-avg
"""

RUNTIME_VALUE_ERROR = """\
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/verl/trainer/ppo/ray_trainer.py", line 1102, in fit
    batch = self._balance_batch(batch)
ValueError: Invalid loss_agg_mode: token-avg
"""


def test_exception_raised_in_config_validation_is_a_config_error() -> None:
    assert run(CONFIG_VALIDATION, exit_code=1).category == "config_error"
    assert run(RUNTIME_VALUE_ERROR, exit_code=1).category == "python_exception"
    assert (
        run(CONFIG_VALIDATION + "\n" + RUNTIME_VALUE_ERROR, exit_code=1).category == "config_error"
    )
    assert (
        run(RUNTIME_VALUE_ERROR + "\n" + CONFIG_VALIDATION, exit_code=1).category == "config_error"
    )


def test_root_exception_printed_after_ray_task_wrappers_is_the_cause() -> None:
    """Ray prints the wrapped exception's own line without a Traceback header (seen in a real
    two-node PPO job); that line, not the RayTaskError wrapper, is the summary."""
    lines = [
        "ray.exceptions.RayTaskError(AssertionError): \x1b[36mray::TaskRunnerV1.run()\x1b[39m (pid=25356, ip=192.0.2.2)",
        "  File \"/x/verl/trainer/main_ppo.py\", line 155, in run",
        "ray.exceptions.RayTaskError(AssertionError): \x1b[36mray::WorkerDict.actor_rollout_update_actor()\x1b[39m (pid=25730)",
        "  File \"/x/verl/workers/engine_workers.py\", line 714, in update_actor",
        "AssertionError: data size must be divisible by force_group_size * micro_batch_size_per_gpu",
    ]
    result = diagnose(lines, exit_code=1)
    assert result.category == "python_exception"
    assert result.summary.startswith("Python exception: AssertionError: data size must be divisible")
    assert "actor_rollout_update_actor" in result.summary


PROGRESS_CUT = """\
(TaskRunnerV1 pid=3352) INFO:2026-11-30 19:40:21,645:Total training steps: 4
(TaskRunnerV1 pid=3352) Training Progress:   0%|          | 0/4 [00:00<?, ?it/s]
(TaskRunnerV1 pid=3352) step:1 - actor/pg_loss:0.002 - timing_s/step:59.7
(TaskRunnerV1 pid=3352) Training Progress:  25%|██▌       | 1/4 [00:59<02:59, 59.75s/it]
(TaskRunnerV1 pid=3352) step:2 - actor/pg_loss:0.001 - timing_s/step:8.8
(TaskRunnerV1 pid=3352) Training Progress:  50%|█████     | 2/4 [01:08<00:59, 29.80s/it]
"""


def test_a_bare_log_states_its_own_expected_steps() -> None:
    result = run(PROGRESS_CUT)
    assert (result.expected_steps, result.last_step, result.status) == (4, 2, "incomplete")


def test_the_scenario_expected_steps_win_over_the_log() -> None:
    assert run(PROGRESS_CUT, expected_steps=2).status == "succeeded"


@pytest.mark.parametrize("line, total", [
    ("    'total_training_steps': -1,", None),
    ("    'total_training_steps': None,", None),
    ("              'total_training_steps': 4,", 4),
    ("INFO:2026-11-30 19:40:21,645:Total training steps: 12", 12),
])
def test_stated_totals_ignore_unset_values(line: str, total: int | None) -> None:
    assert run(line + "\n").expected_steps == total


def test_replayed_steps_are_read_from_rollout_skip_lines() -> None:
    text = (
        "(TaskRunnerV1 pid=1) [RolloutTqSkip()] \x1b[33mInjected 32 cached trajectories from step 1 "
        "(8 prompts x 4) into TQ partition 'train' at current step 1\x1b[0m\n"
        "(TaskRunnerV1 pid=1) [RolloutTqSkip()] Injected 32 cached trajectories from step 2 "
        "(8 prompts x 4) into TQ partition 'train' at current step 2\n"
    )
    assert run(text).replayed_steps == [1, 2]
