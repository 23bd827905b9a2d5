"""A scenario validated whole, before anything launches: every problem at once, with its field.

:mod:`workbook.params` types a scenario's fields and checks what the fields alone can get wrong;
this layer adds what needs the other stages: the ``checks:`` section against its baseline
(:mod:`workbook.checks`), verl's own Hydra config composed with the exact command
(:mod:`workbook.command`), raw overrides that fight a field the command owns, the pinned rollout
dump, and the model, data and verl checkout a run here needs (:mod:`workbook.data` prepares the
data). ``workbook validate``, ``run``, suites, sweeps and the notebook all come here.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from workbook import interpreter
from workbook.checks.bands import band_problems
from workbook.checks.baseline import load_baseline
from workbook.checks.spec import parse_checks, step_problems
from workbook.command.builder import build_plan, dump_subdir, entry_argv, owned_keys, skipped_steps
from workbook.command.determinism import undone
from workbook.command.plan import Plan
from workbook.core.quoting import cut
from workbook.data.prepare import Prepared, input_problems, outputs_of, prepare_data
from workbook.errors import BaselineError, InputError, ParamsError
from workbook.params import hydra
from workbook.params.loader import resolve
from workbook.params.schema import Scenario, parse_scenario
from workbook.params.settings import differences, settings_of
from workbook.params.validation import (
    Problems,
    arithmetic,
    data_section,
    ignored_settings,
    kuberay_settings,
    ray_settings,
)
from workbook.params.verl_config import VERL_CONFIG_NAME, check_overrides, checkout_config_dir

__all__ = ["WHERE", "load_scenario", "ready_to_launch", "scenario_warnings", "validate_scenario"]

# Whose paths a scenario's are when validated: this machine's ("here", the default), or those of
# the runner that will run it ("runner": an accelerator scenario's model, data and checkout paths
# are not looked for; a cpu scenario runs on this machine by definition and is always checked).
WHERE = ("here", "runner")


def _checks_problems(s: Scenario, params_dir: Path) -> list[tuple[str, str]]:
    """The ``checks:`` section, its steps, and bands that could never fail (against the baseline)."""
    spec, problems = parse_checks(s.checks, params_dir=params_dir)
    baseline = None
    if spec.baseline is not None and spec.baseline.is_file():
        try:
            baseline = load_baseline(spec.baseline)
        except BaselineError as exc:
            problems.append(("checks.baseline", exc.message))
    # A run whose settings differ from the baseline's is not compared with it (a warning says
    # so), so a checks window it does not reach is no problem then.
    compared = baseline is None or not _unlike_baseline(s, baseline)
    return problems + step_problems(spec, s.total_training_steps, compared=compared) + (
        band_problems(spec, baseline))


def _unlike_baseline(s: Scenario, baseline: Any) -> list[str]:

    if not baseline.settings:
        return []
    return differences(baseline.settings, settings_of(s.model_dump(mode="json")))


def load_scenario(
    path: Path | str,
    sets: Iterable[str] = (),
    *,
    check_files: bool = True,
    check_verl: bool = False,
    variables: Mapping[str, str] | None = None,
    where: str | None = None,
) -> Scenario:
    """Resolve and validate; raise :class:`ParamsError` listing every problem found.

    ``variables`` override the path variables (``HOME``, ``WORKBOOK_ASSETS``) for a scenario
    whose paths belong to another machine (see ``workbook.params.loader.resolve``). With
    ``check_files``, the model, data and verl checkout must exist here, unless ``where``
    (default ``$WORKBOOK_WHERE``) is ``runner`` and the profile is not ``cpu``.
    """
    path = Path(path)
    data, problems = resolve(path, sets, variables)
    scenario, schema_problems = parse_scenario(data)
    problems += schema_problems
    if scenario is None:  # still check what can be checked: drop the fields that failed
        bad = {path.split(".")[0] for path, _ in schema_problems}
        kept = {k: v for k, v in data.items() if k not in bad}
        if "name" in bad:  # required: a stand-in, so a bad name hides no other problem
            kept["name"] = "scenario"
        scenario, _ = parse_scenario(kept)
    if scenario is not None:
        problems += arithmetic(scenario) + raw_overrides(scenario) + ray_settings(scenario)
        problems += data_section(scenario) + kuberay_settings(scenario)
        problems += _checks_problems(scenario, path.resolve().parent)
        if check_files:
            problems += rollouts(scenario)
            if scenario.profile == "cpu" or (where or where_default()) == "here":
                problems += files(scenario)
        if check_verl:
            problems += verl_problems(scenario)
    if problems:
        raise ParamsError(problems, str(path))
    assert scenario is not None
    return scenario


def verl_problems(s: Scenario) -> list[tuple[str, str]]:
    """Compose verl's Hydra config with the exact overrides the command will carry.

    A recipe's own entry (``entry:``) reads its own config, kept with the recipe in the verl
    checkout, not verl's trainer config: it is not composed here (a warning says so)."""
    if not s.entry.is_default:
        return []
    verl_dir = None
    if not s.verl.path:  # the training interpreter's verl, asked where it is (not imported)
        python = config_python(s)
        try:
            verl_dir = interpreter.ask(python).verl_dir
        except InputError as exc:
            # a run here needs it; a job sent elsewhere runs the cluster's (not this machine's)
            return [("python", exc.message)] if runs_here(s) else []
    plan = placeholder_plan(s)
    return check_overrides(plan.argv[len(entry_argv(s)):], checkout=s.verl.path, verl_dir=verl_dir)


def config_python(s: Scenario) -> str:
    """The interpreter here whose verl validation composes: the run's, except a KubeRay run's
    (its pods' python is not here; this machine's training interpreter stands in)."""
    pods = s.launcher == "kuberay"
    return interpreter.choose(s.profile, "local" if pods else s.launcher, None if pods else s.python)


def placeholder_plan(s: Scenario) -> Plan:
    """The command of ``s`` as validation looks at it: its overrides and environment (the run
    dir and plugin path are placeholders)."""
    return build_plan(s, Path("/tmp/wb-validate/run"), plugin_path="/tmp/wb-validate/pythonpath")


def where_default() -> str:
    """``$WORKBOOK_WHERE`` (``here`` or ``runner``), ``here`` when unset."""
    where = os.environ.get("WORKBOOK_WHERE", "").strip() or "here"
    if where not in WHERE:
        raise ParamsError([("WORKBOOK_WHERE", f"must be one of {', '.join(WHERE)} "
                            f"(got {where[:40]!r})")])
    return where


def validate_scenario(path: Path | str, sets: Iterable[str] = (), *, check_files: bool = True,
                      where: str | None = None) -> Scenario:
    """Everything ``workbook validate`` checks, verl's Hydra config included (the checkout's
    when ``verl.path`` names one).

    ``where="runner"`` (or ``$WORKBOOK_WHERE=runner``) validates paths as another machine's:
    everything but their existence; a run launched here always looks for them.
    """
    if where is not None and where not in WHERE:
        raise ParamsError([("where", f"must be one of {', '.join(WHERE)}")])
    return load_scenario(path, sets, check_files=check_files, check_verl=True, where=where)


def scenario_warnings(s: Scenario, params_dir: Path) -> list[tuple[str, str]]:
    """What is valid but will not do what it says (printed, never fatal): ``(field, message)``.

    Raw overrides the trainer never reads, a scenario value that undoes its deterministic mode,
    and a baseline whose runs used other settings (its comparisons will say "not comparable").
    """

    warnings = ignored_settings(s) + undone(s, placeholder_plan(s))
    if s.entry.is_default and not s.verl.path:
        python = config_python(s)
        try:
            found = interpreter.ask(python).verl_dir
        except InputError:
            found = ""  # a problem of its own where it matters (verl_problems)
        if found is None:
            warnings.append(("python", f"{python} has no verl: verl's Hydra config was not "
                             "composed (name the interpreter verl runs with: --python, "
                             f"${interpreter.ENV} or python:)"))
    if not s.entry.is_default:
        warnings.append(("entry", f"{s.entry.module} reads its own config"
                         f"{' ' + s.entry.config_name if s.entry.config_name else ''}, not verl's "
                         "trainer config: its overrides are checked when it starts, not here"
                         + ("" if s.verl.path or s.entry.module.startswith("verl.") else
                            "; run it from the verl checkout it lives in (verl.path or --verl)")))
    spec, _ = parse_checks(s.checks, params_dir=params_dir)
    if spec.baseline is not None and spec.baseline.is_file():
        try:
            unlike = _unlike_baseline(s, load_baseline(spec.baseline))
        except BaselineError:
            unlike = []
        if unlike:
            warnings.append(("checks.baseline", "its runs used other settings ("
                             + "; ".join(unlike) + "): comparisons with it will show "
                             "'not comparable'; the health checks still judge the run"))
    return warnings


def raw_overrides(s: Scenario) -> Problems:
    """Raw overrides must be ``key=value`` and must not fight a first-class field."""
    p: Problems = []
    owned = owned_keys(s)
    for i, item in enumerate(s.overrides):
        if "=" not in item and not item.startswith("~"):
            p.append((f"overrides[{i}]", f"'{cut(item)}' is not a Hydra key=value override"))
            continue
        key = hydra.key_of(item)
        if not key:
            p.append((f"overrides[{i}]", f"'{cut(item)}' has no key: write key=value"))
            continue
        if key in owned:
            p.append((f"overrides[{i}]", f"'{cut(key)}' is set by a first-class field or by the workbook; "
                      "change that field instead"))
    return p


def rollouts(s: Scenario) -> Problems:
    """A pinned rollout dump must exist and hold this scenario's geometry (else nothing replays)."""
    if not s.rollouts.replay:
        return []
    folder = Path(s.rollouts.replay)
    if not folder.is_dir():
        return [("rollouts.replay", f"no such rollout dump folder: {folder}")]
    inner = folder / dump_subdir(s)
    if not inner.is_dir():
        found = sorted(str(p.relative_to(folder)) for p in folder.glob("*/*") if p.is_dir())
        return [("rollouts.replay", f"{folder} holds no dump for this scenario's names and batch "
                 f"shapes ({dump_subdir(s)}); it holds {', '.join(found) or 'nothing'}. Rollouts "
                 "replay only into runs of the same experiment, project and shapes")]
    missing = [str(step) for step in skipped_steps(s) if not _dumped(inner / str(step))]
    if missing and not s.rollouts.record:
        return [("rollouts.replay", f"{folder} holds no rollouts for step {', '.join(missing)} of "
                 f"{dump_subdir(s)}, and a replaying run generates none: record them "
                 "(rollouts.record=true), or list the steps to replay in rollouts.steps")]
    return []


def _dumped(step: Path) -> bool:
    """Whether verl's rollout skip would replay this step's folder: a batch with its metadata in
    each part (``RolloutTqSkip._check_valid_v1_step_path``); else verl generates the step."""
    parts = [d for d in step.iterdir() if d.is_dir()] if step.is_dir() else []
    return bool(parts) and all((d / "tq_batch.pt").is_file() and (d / "meta.json").is_file()
                               for d in parts)


# Rollout-skip settings a trainer accepts but never reads (measured with verl 0.9.1 on CPU:
# no log line, no dump folder), and the keys that act instead.


def runs_here(s: Scenario) -> bool:
    """Whether the run's paths are this machine's: a local run (or a Ray cluster the run starts
    here), on every profile. A job sent to a Ray cluster elsewhere reads the cluster's paths."""
    return s.profile == "cpu" or s.launcher == "local" or s.ray.local_nodes is not None


def files(s: Scenario) -> Problems:
    """The model and data of a run here must exist now, on every profile, before launch.

    Data the scenario's ``data:`` section writes counts as there when that section can run
    (its script and dataset exist): it is prepared before launch.
    """
    if not runs_here(s):
        return []

    prepared = {str(p) for p in outputs_of(s)} if s.data.enabled and not input_problems(s) else set()
    p: Problems = []
    for name in ("model_path", "train_files", "val_files", "critic_model_path"):
        value = getattr(s, name)
        if not value or Path(value).exists() or value in prepared:
            continue
        if "verl-workbook" in value:
            hint = " (run `workbook assets` to build the tiny CPU assets)"
        elif name in ("train_files", "val_files"):
            hint = (" (a data: section prepares it before launch; `workbook data prepare` runs it alone)"
                    if not s.data.enabled else f" (data: writes only {', '.join(sorted(prepared)) or 'nothing it can'})")
        else:
            hint = ""
        p.append((name, f"no such file or folder: {cut(value, 200)}{hint}"))
    return p + verl_checkout(s) + data_inputs(s)


def verl_checkout(s: Scenario) -> Problems:
    """``verl.path`` must be a verl checkout here: its package and its trainer config."""
    if not s.verl.path or not runs_here(s):
        return []

    root = Path(s.verl.path)
    if not root.is_dir():
        return [("verl.path", f"no such verl checkout: {cut(s.verl.path, 200)}")]
    if not (root / "verl" / "__init__.py").is_file():
        return [("verl.path", f"{cut(s.verl.path, 200)} is not a verl checkout (no verl/__init__.py "
                 "in it: give the repository root)")]
    if not (checkout_config_dir(root) / f"{VERL_CONFIG_NAME}.yaml").is_file():
        return [("verl.path", f"{cut(s.verl.path, 200)} has no verl/trainer/config/"
                 f"{VERL_CONFIG_NAME}.yaml")]
    return []


def data_inputs(s: Scenario) -> Problems:
    if not s.data.enabled or not s.data.local_save_dir or not s.data.local_dataset_path:
        return []

    return input_problems(s)


def ready_to_launch(s: Scenario, *, python: str) -> Prepared | None:
    """Prepare the ``data:`` section, then refuse (ParamsError) a run here whose model, data or
    verl checkout is missing: the last check before launch, whatever ``$WORKBOOK_WHERE`` says."""
    prepared = prepare_data(s, python=python)
    problems = files(s)
    if problems:
        raise ParamsError(problems)
    return prepared
