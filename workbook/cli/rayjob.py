"""``workbook rayjob PARAMS``: write (or ``--apply``) the KubeRay RayJob of a scenario.

``--apply`` follows the job to its end, fetches its log into a new run directory
(``<runs>/<scenario>/<run id>``, the run id the RayJob's name ends with) and finishes it like
``workbook run`` does: checks, report, index. The exit code is the verdict's: 0 passed,
1 regressed, 3 failed (the job failed, or no log could be fetched).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workbook.command import as_json, build_plan
from workbook.command.plan import Plan
from workbook.core.layout import (
    RAYJOB_FILE,
    RunDir,
    default_root,
    new_run_id,
    now_iso,
    write_redacted,
)
from workbook.core.project import find_scenario, run_notebook
from workbook.errors import EXIT_RUN_FAILED, LaunchError
from workbook.launch.kuberay import kubectl
from workbook.launch.kuberay.manifest import (
    POD_HOME,
    manifest_yaml,
    rayjob_manifest,
    rayjob_name,
)
from workbook.launch.outcome import Outcome
from workbook.params import Scenario, assets_dir
from workbook.scenario import load_scenario

# Where the run writes inside the pods (verl creates the rollout dump folders there itself).
POD_RUNS = Path("/tmp/verl-workbook/runs")
# Time beyond the scenario's timeout_s that --apply waits for (scheduling, image pulls, logs).
APPLY_GRACE_S = 1800.0

EPILOG = """examples:
  workbook rayjob params/ppo-qwen3-0.6b-2n4npu-fsdp-vllm-rayjob.yaml > rayjob.yaml
  workbook rayjob params/ppo-qwen3-0.6b-2n4npu-fsdp-vllm-rayjob.yaml -s kuberay.image=my/verl:npu --apply

exit codes with --apply: 0 passed, 1 regressed, 3 the job failed or its log could not be fetched
(the run directory is printed last, with its report)"""


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "rayjob",
        help="write a KubeRay RayJob manifest for a scenario (or submit it with --apply)",
        description="Print the ray.io/v1 RayJob that runs the scenario's exact command on a "
        "KubeRay-created cluster sized from the scenario (nodes, devices per node, kuberay: "
        "section). Paths under $HOME are the pods' home.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("params", type=Path, help="scenario file")
    parser.add_argument(
        "-s",
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a scenario field (repeatable)",
    )
    parser.add_argument(
        "--name", default=None,
        help="RayJob name prefix: the name is NAME-<6 characters of the run id>, a DNS-1035 "
        "label of at most 47 characters, so no two runs share one (default: the scenario's "
        "name, shortened)"
    )
    parser.add_argument(
        "--apply",
        action="store_true",
        help="submit with kubectl, follow it, judge its log and exit with the verdict",
    )
    parser.add_argument(
        "--no-follow", action="store_true", help="with --apply: return once submitted"
    )
    parser.add_argument(
        "--runs", type=Path, default=None, help="runs root (default $WORKBOOK_RUNS or ./runs)"
    )
    parser.set_defaults(handler=run_rayjob)


def run_rayjob(args: argparse.Namespace) -> int:
    params = find_scenario(args.params)
    scenario = load_scenario(params, args.sets, check_files=False, variables=pod_variables())
    run_id = new_run_id()
    plan = pod_plan(scenario, run_id)
    name = (rayjob_name(args.name, run_id, exact=True) if args.name
            else default_name(scenario.name, run_id))
    manifest = manifest_for(scenario, plan, name)
    if not args.apply:
        sys.stdout.write(manifest_yaml(manifest))
        return 0
    if args.no_follow:
        kubectl.apply(manifest, follow=False, on_status=_show(manifest))
        print(f"rayjob/{name} submitted in namespace {manifest['metadata']['namespace']}")
        return 0
    root = args.runs or default_root()
    rd = prepare_run_dir(scenario, params, args.sets, plan, manifest, root, run_id)
    args.active_run = rd.path  # from here on a surprise is a failed run (exit 3)
    print(f"run directory: {rd.path}", flush=True)
    outcome = follow(manifest, rd, deadline_s=apply_deadline(scenario),
                     on_interrupt=scenario.kuberay.on_interrupt)
    return conclude(scenario, params, args.sets, plan, rd, outcome)


def apply_deadline(scenario: Scenario) -> float | None:
    """How long ``--apply`` follows the job: ``kuberay.apply_timeout_s``, else the scenario's
    ``timeout_s`` (KubeRay's own activeDeadlineSeconds) plus time for pods to be scheduled and
    images pulled; None (follow until it ends) when neither is set."""
    if scenario.kuberay.apply_timeout_s is not None:
        return scenario.kuberay.apply_timeout_s
    return scenario.timeout_s + APPLY_GRACE_S if scenario.timeout_s else None


def pod_variables() -> dict[str, str]:
    """Scenario path variables as the pods see them: ``HOME`` stays ``${HOME}``, and the
    tiny assets keep their place under the home folder."""
    home, assets = Path.home().resolve(), assets_dir()
    try:
        inside = f"{POD_HOME}/{assets.resolve().relative_to(home).as_posix()}"
    except ValueError:
        inside = str(assets)
    return {"HOME": POD_HOME, "WORKBOOK_ASSETS": inside}


def pod_plan(scenario: Scenario, run_id: str) -> Plan:
    plugin = str(POD_RUNS / "pythonpath") if scenario.profile == "cpu" else None
    return build_plan(
        scenario, POD_RUNS / scenario.name / run_id, on_existing_cluster=True, plugin_path=plugin
    )


def default_name(scenario_name: str, run_id: str) -> str:
    """The scenario's name made a KubeRay RayJob name, with the run id's end: never reused."""
    return rayjob_name(scenario_name, run_id)


def manifest_for(scenario: Scenario, plan: Plan, name: str) -> dict[str, Any]:
    return rayjob_manifest(
        plan,
        name=name,
        nodes=scenario.nodes,
        devices_per_node=scenario.devices_per_node,
        device=scenario.profile,
        settings=scenario.kuberay.as_settings(),
        timeout_s=scenario.timeout_s,
    )


def prepare_run_dir(
    scenario: Scenario,
    params: Path,
    sets: list[str],
    plan: Plan,
    manifest: dict[str, Any],
    runs_root: Path,
    run_id: str,
) -> RunDir:
    """The run directory of the job, before it is submitted (what ``workbook run`` writes)."""
    from workbook.core.serialization import dump_yaml, load_yaml_text
    from workbook.launch.leftovers import owner_record

    root = Path(runs_root).resolve()
    rd = RunDir.create(root, scenario.name, run_id)
    write_redacted(rd.file("params"), dump_yaml(scenario.model_dump(mode="json")))
    pod_env = load_yaml_text(manifest["spec"]["runtimeEnvYAML"])["env_vars"]  # as the pods get it
    write_redacted(rd.file("command_json"), as_json(Plan(plan.argv, pod_env)))
    write_redacted(
        rd.file("command_sh"),
        "#!/bin/sh\n# the RayJob's entrypoint: it runs in the pods, ${HOME} is theirs\n"
        + manifest["spec"]["entrypoint"]
        + "\n",
    )
    write_redacted(rd.path / RAYJOB_FILE, manifest_yaml(manifest))
    rd.update_run(**{
        "run_id": run_id, "scenario": scenario.name, "scenario_file": str(params),
        "status": "prepared", "launcher": "kuberay", "profile": scenario.profile,
        "nodes": scenario.nodes, "devices_per_node": scenario.devices_per_node,
        "expected_steps": scenario.total_training_steps, "overrides": list(sets),
        "runs_root": str(root), "notebook": run_notebook("kuberay"),
        "notebook_parameters": {"scenario": str(params), "overrides": list(sets), "settings": {}},
        "rayjob": {"name": manifest["metadata"]["name"],
                   "namespace": manifest["metadata"]["namespace"]},
        **owner_record(),
    })  # fmt: skip
    return rd


def follow(manifest: dict[str, Any], rd: RunDir, *, deadline_s: float | None = None,
           on_interrupt: str = "delete") -> Outcome:
    """Submit, wait for the end, and put the job's log into run.log; how the job ended.

    Without a log, run.log holds one line saying why (the report's log tail shows it). Past
    ``deadline_s`` or on Ctrl-C the job is deleted (or suspended) and the run is a timeout or
    stopped; the log it wrote so far is still fetched when the cluster has it.
    """
    name, namespace = manifest["metadata"]["name"], manifest["metadata"]["namespace"]
    started, t0 = now_iso(), time.monotonic()
    rd.update_run(status="running", started_at=started)
    word, code, message = "failed", None, ""
    details: dict[str, Any] = {}
    try:
        try:
            status = kubectl.apply(manifest, on_status=_show(manifest), deadline_s=deadline_s,
                                   on_interrupt=on_interrupt)
        except KeyboardInterrupt:
            status = {"jobStatus": "STOPPED", "message": f"stopped by the user (Ctrl-C); the "
                      f"RayJob was {'suspended' if on_interrupt == 'suspend' else 'deleted'}"}
        word, code, message = kubectl.job_outcome(status)
        details["rayjob"] = status
        text, details["log_source"] = kubectl.job_log(
            name, namespace, status, mode=manifest["spec"]["submissionMode"]
        )
    except LaunchError as exc:
        word, code = "failed", None
        message = f"{message}; {exc.message}" if message else f"did not run: {exc.message}"
        text = f"workbook: {exc.message}\n"
    rd.file("log").write_text(text, encoding="utf-8")
    return Outcome(word, code, started, now_iso(), round(time.monotonic() - t0, 1), message,
                   details)


def conclude(scenario: Scenario, params: Path, sets: list[str], plan: Plan, rd: RunDir,
             outcome: Outcome) -> int:
    """Record the outcome, judge, report; print the verdict and the run directory last."""
    from workbook.checks.verdict import exit_code_of
    from workbook.run.steps import Run, record_outcome
    from workbook.run.steps import finish as finish_run

    record_outcome(Run(scenario, params, rd, plan, list(sets)), outcome)
    done = finish_run(rd.path, announce=False)
    for error in done.errors:
        print(f"workbook: {error} (traceback in {rd.path / 'workbook-error.log'})",
              file=sys.stderr)
    verdict = rd.verdict()
    status = str(verdict.get("status") or "failed")
    print(f"verdict: {status}: {verdict.get('reason') or 'the run was not judged'}")
    print(f"report: {done.report or 'not written'}")
    print(rd.path)
    code = exit_code_of(status)
    return max(code, EXIT_RUN_FAILED) if done.errors or not outcome.ok else code


def _show(manifest: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    def show(status: dict[str, Any]) -> None:
        print(
            f"rayjob/{manifest['metadata']['name']}: job {status.get('jobStatus') or '-'}, "
            f"deployment {status.get('jobDeploymentStatus') or '-'} "
            f"{status.get('message') or ''}".rstrip(),
            file=sys.stderr,
        )

    return show
