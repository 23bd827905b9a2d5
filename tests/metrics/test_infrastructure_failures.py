"""Infrastructure failures are named: a device, a disk, Ray or a link broke, not the run.

Each is diagnosed ``infrastructure`` with its cause in the summary (a suite may retry it); the
lines are worded as CUDA, the ACL runtime, torch_npu, NCCL, HCCL, Ray and the OS word them. A
cause the run itself made (a config error, an OOM) still wins where both are in the log.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from workbook.metrics import diagnose
from workbook.metrics.failures import CATEGORIES, INFRASTRUCTURE

STEPS = """\
(TaskRunner pid=2201) step:1 - actor/pg_loss:0.011 - actor/pg_clipfrac:0.125
(TaskRunner pid=2201) step:2 - actor/pg_loss:0.004 - actor/pg_clipfrac:0.125
"""
CUDA_ECC = """\
(WorkerDict pid=811) Traceback (most recent call last):
(WorkerDict pid=811)   File "/opt/verl/verl/workers/actor/dp_actor.py", line 276, in update_policy
(WorkerDict pid=811)     loss.backward()
(WorkerDict pid=811) RuntimeError: CUDA error: uncorrectable ECC error encountered
(WorkerDict pid=811) CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
"""
NCCL_WATCHDOG_AFTER_ECC = """\
(WorkerDict pid=812) [rank1]:[E1201 03:10:00.100000 ProcessGroupNCCL.cpp:1785] [PG 0 Rank 1] Process group watchdog thread terminated with exception: CUDA error: uncorrectable ECC error encountered
(WorkerDict pid=813) [rank2]:[E1201 03:20:00.100000 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600038 milliseconds before timing out.
"""
NPU_HBM_ECC = """\
(WorkerDict pid=8464) RuntimeError: npuSynchronizeDevice:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:479 NPU function error: AclrtSynchronizeDeviceWithTimeout, error code is 507054
"""
NPU_UCE = """\
(WorkerDict pid=8465) RuntimeError: UCE ERROR.
"""
DISK_FULL = """\
(TaskRunner pid=2201) Traceback (most recent call last):
(TaskRunner pid=2201)   File "/opt/verl/verl/utils/checkpoint/fsdp_checkpoint_manager.py", line 210, in save_checkpoint
(TaskRunner pid=2201)     torch.save(model_state_dict, model_path)
(TaskRunner pid=2201) OSError: [Errno 28] No space left on device
"""
QUOTA = """\
(WorkerDict pid=77) OSError: [Errno 122] Disk quota exceeded: '/home/ci/checkpoints/global_step_2/actor/model_world_size_8_rank_0.pt'
"""
SAFETENSORS_FULL = """\
(WorkerDict pid=78) safetensors_rust.SafetensorError: Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No space left on device" })
"""
RAY_STARTUP = """\
Traceback (most recent call last):
  File "/usr/lib/python3/site-packages/ray/_private/node.py", line 440, in _init_temp
    raise Exception(
Exception: The current node timed out during startup. This could happen because some of the raylet failed to startup or the GCS has become overloaded.
"""
RAY_GCS = """\
ray.exceptions.RaySystemError: System error: Failed to connect to GCS. Please check if the GCS server is running and if this node can connect to the head node.
"""
RAY_RAYLET = """\
[2026-12-01 03:00:01,055 E 7368 7368] core_worker.cc:202: Failed to register worker 01000000ffffffffffffffffffffffffffffffffffffffffffffffff to Raylet. IOError: [RayletClient] Unable to register worker with raylet. No such file or directory
"""
NCCL_CONNECT = """\
(WorkerDict pid=5120) ubuntu:39964:40075 [0] misc/socket.cc:483 NCCL WARN socketStartConnect: Connect to 10.0.0.2<45763> failed : Software caused connection abort
(WorkerDict pid=5120) RuntimeError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1191, unhandled system error, NCCL version 2.21.5
"""
HCCL_TRANSPORT = """\
(WorkerDict pid=2225827) EI0009: [PID: 2225827] 2025-09-24-20:59:48.119.066 Transport init error. Reason: [Create][DestLink]Create Dest error! createLink para:rank[1]-localUserrank[1]-localIpAddr[172.16.0.114], dst_rank[0]-remoteUserrank[0]-remote_ip_addr[172.16.0.114]
"""
ACL_LINK = """\
(WorkerDict pid=9001) RuntimeError: npuSynchronizeDevice:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:479 NPU function error: AclrtSynchronizeDeviceWithTimeout, error code is 507056
"""
TCPSTORE_PORT_TAKEN = """\
[W socket.cpp:401] [c10d] The server socket has failed to listen on [::]:47531 (errno: 98 - Address already in use).
[W socket.cpp:401] [c10d] The server socket has failed to bind to 0.0.0.0:47531 (errno: 98 - Address already in use).
[E socket.cpp:435] [c10d] The server socket has failed to listen on any local network address.
"""
TCPSTORE_EADDRINUSE = """\
(WorkerDict pid=6210) torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. port: 29500, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use
"""
GLOO_BIND = """\
(WorkerDict pid=4410) Traceback (most recent call last):
(WorkerDict pid=4410)   File "/opt/torch/distributed/distributed_c10d.py", line 1009, in _new_process_group_helper
(WorkerDict pid=4410)     backend_class = ProcessGroupGloo(backend_prefix_store, group_rank, group_size, timeout=timeout)
(WorkerDict pid=4410) RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:176] bind: Address already in use
"""
FILE_MISSING = """\
(TaskRunner pid=2201) Traceback (most recent call last):
(TaskRunner pid=2201)   File "/opt/verl/verl/utils/dataset/rl_dataset.py", line 131, in _read_files_and_tokenize
(TaskRunner pid=2201)     dataframe = datasets.load_dataset("parquet", data_files=parquet_file)["train"]
(TaskRunner pid=2201) OSError: [Errno 2] No such file or directory: '/home/ci/data/gsm8k/train.parquet'
"""
FILE_DENIED = """\
(WorkerDict pid=77) Traceback (most recent call last):
(WorkerDict pid=77)   File "/opt/verl/verl/utils/checkpoint/checkpoint_manager.py", line 120, in local_mkdir_safe
(WorkerDict pid=77)     os.makedirs(path, exist_ok=True)
(WorkerDict pid=77) PermissionError: [Errno 13] Permission denied: '/home/ci/checkpoints/global_step_2'
"""
WORKER_OOM = """\
(WorkerDict pid=2840753) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.07 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.2 GiB is free.
"""
HYDRA_UNKNOWN_KEY = """\
Could not override 'actor_rollout_ref.actor.optim.lrr'.
To append to your config use +actor_rollout_ref.actor.optim.lrr=1e-6
Key 'lrr' is not in struct
"""
NCCL_TIMEOUT = """\
(WorkerDict pid=5121) [rank1]:[E1129 18:00:00.123456 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1042, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600038 milliseconds before timing out.
"""

PORT_TAKEN = "network port already in use on the node"
INFRA = [
    # log, the cause the summary names, a fragment of the first evidence line
    (STEPS + CUDA_ECC, "device hardware error", "uncorrectable ECC error encountered"),
    (STEPS + NCCL_WATCHDOG_AFTER_ECC + CUDA_ECC, "device hardware error", "ECC error"),
    (STEPS + NPU_HBM_ECC, "device hardware error", "error code is 507054"),
    (NPU_UCE, "device hardware error", "UCE ERROR"),
    (STEPS + DISK_FULL, "disk full or over quota", "[Errno 28] No space left on device"),
    (STEPS + QUOTA, "disk full or over quota", "Disk quota exceeded"),
    (STEPS + SAFETENSORS_FULL, "disk full or over quota", "StorageFull"),
    (RAY_STARTUP, "Ray node start-up failure", "The current node timed out during startup"),
    (RAY_GCS, "Ray node start-up failure", "Failed to connect to GCS"),
    (RAY_RAYLET, "Ray node start-up failure", "Unable to register worker with raylet"),
    (NCCL_CONNECT, "HCCL/NCCL connection failure", "Connect to 10.0.0.2<45763> failed"),
    (HCCL_TRANSPORT, "HCCL/NCCL connection failure", "EI0009"),
    (STEPS + ACL_LINK, "HCCL/NCCL connection failure", "error code is 507056"),
    (TCPSTORE_PORT_TAKEN, PORT_TAKEN, "errno: 98 - Address already in use"),
    (TCPSTORE_EADDRINUSE, PORT_TAKEN, "name: EADDRINUSE"),
    (STEPS + GLOO_BIND, PORT_TAKEN, "bind: Address already in use"),
]


@pytest.mark.parametrize("text, cause, evidence", INFRA, ids=[c for _, c, _ in INFRA])
def test_an_infrastructure_failure_is_named_with_its_cause(text: str, cause: str,
                                                           evidence: str) -> None:
    found = diagnose(text.splitlines(), exit_code=1).to_dict()
    assert (found["status"], found["category"]) == ("failed", INFRASTRUCTURE), found
    assert str(found["summary"]).startswith(f"Infrastructure failure ({cause}): "), found
    assert evidence in found["evidence"][0], found["evidence"]  # type: ignore[index]


RANKED = [
    # log, the category that wins
    (HYDRA_UNKNOWN_KEY + DISK_FULL, "config_error"),  # never retried: it would fail again
    (STEPS + WORKER_OOM + NCCL_CONNECT, "oom"),
    (STEPS + NCCL_TIMEOUT + NCCL_CONNECT, "collective_timeout"),
    (STEPS + NCCL_TIMEOUT + CUDA_ECC, INFRASTRUCTURE),
    (STEPS + WORKER_OOM, "oom"),
    (HYDRA_UNKNOWN_KEY + TCPSTORE_EADDRINUSE, "config_error"),
    (WORKER_OOM + GLOO_BIND, "oom"),
    (TCPSTORE_EADDRINUSE + NCCL_TIMEOUT, INFRASTRUCTURE),  # the others waited for the rank that never listened
]


@pytest.mark.parametrize("text, category", RANKED, ids=[c for _, c in RANKED])
def test_the_runs_own_cause_wins_over_an_infrastructure_one_it_brought(text: str,
                                                                       category: str) -> None:
    assert diagnose(text.splitlines(), exit_code=1).category == category


@pytest.mark.parametrize("text", [STEPS + FILE_MISSING, STEPS + FILE_DENIED],
                         ids=["no-such-file", "permission-denied"])
def test_an_os_error_about_a_file_is_the_runs_own_exception_never_infrastructure(text: str) -> None:
    # a path the scenario names: running it again would fail the same way
    found = diagnose(text.splitlines(), exit_code=1)
    assert found.category == "python_exception" and "Errno" in found.summary


def test_infrastructure_is_a_known_category() -> None:
    assert INFRASTRUCTURE in CATEGORIES


def test_a_full_disk_the_run_went_on_past_is_not_the_cause() -> None:
    text = "(TaskRunner pid=2201) UserWarning: [Errno 28] No space left on device.  joblib will operate in serial mode\n" + STEPS
    assert diagnose(text.splitlines(), exit_code=0).status == "succeeded"
    assert diagnose(text.splitlines(), expected_steps=4).category == "none"


REAL_PORT_TAKEN = Path(__file__).resolve().parents[1] / "data" / "derived_logs" / "gspo-port-in-use-before-step-1.log"


def test_a_real_rendezvous_port_taken_before_step_1_is_an_infrastructure_failure() -> None:
    # the port torch.distributed picked was taken by another process on the node: the machine
    found = diagnose(REAL_PORT_TAKEN.read_text().splitlines(), exit_code=1).to_dict()

    assert (found["status"], found["category"]) == ("failed", INFRASTRUCTURE), found
    assert str(found["summary"]).startswith(f"Infrastructure failure ({PORT_TAKEN}): "), found
    assert "in ray::WorkerDict.actor_rollout_init_model" in str(found["summary"])
    assert "port: 38545" in found["evidence"][0]  # type: ignore[index]
