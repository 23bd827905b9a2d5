"""Compose verl's own Hydra config with a scenario's overrides, before anything launches.

A typo in a Hydra key otherwise costs a whole launch (on NPUs, a night): verl only composes
its config after the job has started. This module is the one that imports Hydra/OmegaConf: the
workbook's own (a dependency of its own), whatever the training environment has.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

from workbook import interpreter

VERL_CONFIG_NAME = "ppo_trainer"
# An override whose key verl's config lacks is composed alone (for Hydra's reason) only for the
# first few; the others are judged together in one composition and the first few listed: a
# composition costs half a second, and 300 unknown overrides must not cost 300 of them.
MAX_COMPOSED = 5
MAX_REPORTED = 10
# Clean judgements (a config's files and the overrides, hashed) are handed down through the
# environment to the processes this one starts: the kernel of a `workbook run` validates the
# scenario its driver has just validated, and must not compose verl's config again (2-3 s of
# Hydra on 2 cores, before the launch). Only clean ones: a problem stops the run before that.
CLEAN_ENV = "WORKBOOK_VERL_CONFIG_CLEAN"
CLEAN_KEPT = 64  # a suite validates every entry first; 64 keys are 2 KB of environment


def checkout_config_dir(checkout: str | Path) -> Path:
    """Where a verl checkout (its repository root) keeps the trainer's Hydra config."""
    return Path(checkout) / "verl" / "trainer" / "config"


def verl_config_dir(checkout: str | Path | None = None, verl_dir: str | Path | None = None
                    ) -> Path | None:
    """verl's ``trainer/config`` folder: the checkout's when given, else that of the verl
    package folder ``verl_dir`` (the training interpreter's, as it answered); None when there is
    none. Only the YAML files are read: verl itself is never imported here."""
    if checkout is not None:
        path = checkout_config_dir(checkout)
        return path if (path / f"{VERL_CONFIG_NAME}.yaml").is_file() else None
    if verl_dir is None:
        return None
    path = Path(verl_dir) / "trainer" / "config"
    return path if (path / f"{VERL_CONFIG_NAME}.yaml").exists() else None


def installed_config_dir(python: str) -> Path | None:
    """The trainer config of the verl that ``python`` (a training interpreter) imports: it is
    asked where that verl is (InputError when it cannot answer)."""
    return verl_config_dir(verl_dir=interpreter.ask(python).verl_dir)


def _compose(config_dir: Path, overrides: tuple[str, ...]) -> Any:
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        return compose(config_name=VERL_CONFIG_NAME, overrides=list(overrides))


@lru_cache(maxsize=8)
def _base_keys(config_dir: Path, groups: tuple[str, ...] = ()) -> frozenset[str]:
    """Every key of verl's config, composed with the config-group choices ``groups``
    (``model_engine=megatron`` brings the ``megatron`` sections an FSDP config lacks)."""
    from omegaconf import OmegaConf

    container = OmegaConf.to_container(_compose(config_dir, groups), resolve=False)
    keys: set[str] = set()

    def walk(node: Any, prefix: str) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                path = f"{prefix}{k}"
                keys.add(path)
                walk(v, path + ".")

    walk(container, "")
    return frozenset(keys)


def _key_of(override: str) -> tuple[str, str]:
    key = override.split("=", 1)[0].strip()
    prefix = ""
    while key and key[0] in "+~":
        prefix += key[0]
        key = key[1:]
    return prefix, key


def _is_group_choice(override: str, config_dir: Path) -> bool:
    """``model_engine=megatron``: a top-level choice of one of verl's config groups."""
    prefix, key = _key_of(override)
    return (not prefix and "=" in override and "." not in key and "@" not in key
            and config_dir is not None and (config_dir / key).is_dir())


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _composes(config_dir: Path, overrides: tuple[str, ...]) -> bool:
    try:
        _compose(config_dir, overrides)
    except Exception:  # noqa: BLE001 - Hydra raises many types
        return False
    return True


def _unknown(item: str, known: frozenset[str], reason: str = "") -> tuple[str, str]:
    """The problem of an override whose key verl's config lacks, with the nearest key."""
    key = _key_of(item)[1]
    hint = difflib.get_close_matches(key, known, n=1, cutoff=0.8)
    msg = f"verl has no config key '{key}'"
    msg += f" (did you mean '{hint[0]}'?)" if hint else f" ({reason})" if reason else ""
    return f"overrides: {item}", msg


def check_overrides(overrides: list[str], checkout: str | Path | None = None,
                    verl_dir: str | Path | None = None) -> list[tuple[str, str]]:
    """Problems verl's Hydra config has with ``overrides``, one per offending override.

    The config is the ``checkout``'s (a verl repository root) when given, else the one in the
    verl package folder ``verl_dir``, composed with the workbook's own hydra-core. At most
    :data:`MAX_REPORTED` unknown keys are listed (then how many more), and Hydra composes at most
    ``MAX_COMPOSED + 3`` times however many overrides there are. Returns an empty list when there
    is no config to compose (no verl; a missing checkout is the caller's problem to report): the
    caller decides.
    """
    config_dir = verl_config_dir(checkout, verl_dir)
    if config_dir is None:
        return []
    key = _fingerprint(config_dir, tuple(overrides))
    clean = os.environ.get(CLEAN_ENV, "").split()
    if key in clean:
        return []
    problems = list(_judged(config_dir, tuple(overrides)))
    if not problems:
        os.environ[CLEAN_ENV] = " ".join([*clean[-(CLEAN_KEPT - 1):], key])
    return problems


def _fingerprint(config_dir: Path, overrides: tuple[str, ...]) -> str:
    """What a judgement depends on: the config's files, byte for byte, and the overrides."""
    digest = hashlib.sha256(json.dumps([str(config_dir), list(overrides)]).encode())
    for path in sorted(config_dir.rglob("*.yaml")):
        digest.update(str(path.relative_to(config_dir)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:32]


@lru_cache(maxsize=64)
def _judged(config_dir: Path, overrides: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """check_overrides for one config: a suite's entries of one command cost one judgement."""
    groups = tuple(o for o in overrides if _is_group_choice(o, config_dir))
    known = _base_keys(config_dir, groups)
    unknown = [o for o in overrides
               if "+" not in _key_of(o)[0] and _key_of(o)[1] not in known and o not in groups]
    problems: list[tuple[str, str]] = []
    for item in unknown[:MAX_COMPOSED]:
        try:  # group choices such as model_engine=megatron are not keys; let Hydra judge
            _compose(config_dir, (*groups, item))
        except Exception as exc:  # noqa: BLE001 - Hydra raises many types; we report them
            problems.append(_unknown(item, known, _first_line(exc)))
    rest = unknown[MAX_COMPOSED:]
    if rest and not _composes(config_dir, (*groups, *rest)):
        listed = rest[: max(0, MAX_REPORTED - len(problems))]
        problems += [_unknown(item, known) for item in listed]
        more = len(rest) - len(listed)
        if more:
            problems.append(("overrides", f"{more} more override(s) name keys verl's config "
                             "does not have (not listed)"))
    if problems:
        return tuple(problems)
    try:
        _compose(config_dir, overrides)
    except Exception as exc:  # noqa: BLE001
        problems.append(("overrides", f"verl's Hydra config rejects the overrides: {_first_line(exc)}"))
    return tuple(problems)
