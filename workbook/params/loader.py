"""Load a scenario: ``defaults:`` chain, then the file, then ``-s key=value`` overrides.

Precedence is explicit and in this order: base files (earlier listed first) < the scenario
file < ``$WORKBOOK_VERL`` (``verl.path``) < overrides (CLI ``-s`` and notebook parameters, later
wins). Mappings merge key by key;
lists and scalars replace, except ``-s overrides+=KEY=VALUE`` which appends one raw override.
Paths expand ``~``, ``${HOME}`` and ``${WORKBOOK_ASSETS}`` (the tiny CPU assets cache); a
relative ``rollouts.replay``, ``verl.path`` or ``data`` path is relative to the scenario file's
folder, like ``checks.baseline`` (``data.script`` is relative to the verl checkout).
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from workbook.core.project import params_dir, root
from workbook.core.quoting import cut, short
from workbook.core.serialization import load_yaml, parse_scalar
from workbook.errors import InputError, ParamsError

VERL_ENV = "WORKBOOK_VERL"  # a verl checkout every scenario loaded here runs (`--verl` of a suite)
PATH_FIELDS = ("model_path", "critic_model_path", "train_files", "val_files")
_VAR = re.compile(r"\$\{(\w+)\}|\$(\w+)")


def assets_dir() -> Path:
    """Where ``workbook assets`` builds the tiny model and data (``${WORKBOOK_ASSETS}`` in files)."""
    from workbook.profiles.cpu.assets import ASSETS_VERSION, default_cache_dir

    return default_cache_dir().resolve() / f"v{ASSETS_VERSION}"


def expand(text: str, variables: Mapping[str, str], *, home: bool = True) -> str:
    """Expand ``~`` (unless ``home`` is false) and ``${VAR}``/``$VAR`` from ``variables``;
    unknown names stay as written."""

    def sub(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        return variables.get(name, m.group(0))

    text = _VAR.sub(sub, text)
    if not home:
        return text
    if (text == "~" or text.startswith("~/")) and "HOME" in variables:
        text = str(Path(variables["HOME"] + text[1:]))  # ~ is the HOME the caller chose
    elif text.startswith("~"):
        text = str(Path(text).expanduser())
    return text


def path_variables() -> dict[str, str]:
    return {"HOME": str(Path.home()), "WORKBOOK_ASSETS": str(assets_dir())}


def read_layers(path: Path, _seen: tuple[Path, ...] = (),
                _roots: tuple[Path, ...] = ()) -> list[dict[str, Any]]:
    """The scenario file and its ``defaults:`` bases, base-most first.

    A base must resolve (symlinks followed) inside the first scenario's own folder, the
    project's ``params/`` or ``$WORKBOOK_PARAMS``: a scenario never reads a file elsewhere on
    the machine.
    """
    path = Path(path).resolve()
    if path in _seen:
        raise ParamsError([("defaults", f"cycle: {' -> '.join(str(p) for p in (*_seen, path))}")])
    if not path.exists():
        raise ParamsError([("", f"no such scenario file: {path}")])
    roots = _roots or tuple(dict.fromkeys((path.parent, (root() / "params").resolve(),
                                           params_dir())))
    data = load_yaml(path, what="scenario file") or {}
    if not isinstance(data, dict):
        raise ParamsError([("", "a scenario file must be a YAML mapping")], str(path))
    layers: list[dict[str, Any]] = []
    for base in _bases(data.pop("defaults", None), path, roots):
        layers += read_layers(base, (*_seen, path), roots)
    return layers + [data]


def _bases(value: Any, path: Path, roots: tuple[Path, ...]) -> list[Path]:
    """The ``defaults:`` entries of ``path`` as files it may read (ParamsError if not)."""
    value = [value] if isinstance(value, str) else [] if value is None else value
    if not isinstance(value, list):
        raise ParamsError([("defaults", f"must be a list of base files, got {short(value)}")],
                          str(path))
    out, problems = [], []
    for index, item in enumerate(value):
        where = f"defaults[{index}]"
        if not isinstance(item, str) or not item.strip():
            problems.append((where, f"must be a base file path, got {short(item)}"))
            continue
        try:
            base = (path.parent / item).resolve()
            is_file = base.is_file()
        except (OSError, ValueError, RuntimeError) as exc:
            problems.append((where, f"{short(item)} cannot be read: {cut(str(exc))}"))
            continue
        if not any(base == r or r in base.parents for r in roots):
            problems.append((where, f"{short(item)} resolves to {cut(str(base))}, outside the "
                             f"scenario's folder and the params folder {roots[-1]}"))
        elif not is_file:
            problems.append((where, f"no such base file: {cut(str(base))}"))
        else:
            out.append(base)
    if problems:
        raise ParamsError(problems, str(path))
    return out


def merge(base: dict[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """Mappings merge key by key; everything else in ``top`` replaces."""
    out = copy.deepcopy(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


# One part of a ``-s`` key: a field name or a metric name (``timing_s/step``), never empty.
_KEY_PART = re.compile(r"[^\s.=+]+")


def apply_sets(data: dict[str, Any], sets: Iterable[str]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """Apply ``key=value`` / ``a.b=value`` / ``overrides+=raw`` strings in order."""
    out = copy.deepcopy(data)
    problems: list[tuple[str, str]] = []
    for item in sets:
        key, sep, raw = str(item).partition("=")
        key = key.strip()
        append = key.endswith("+")
        key = key[:-1].rstrip() if append else key
        if not sep or not key:
            problems.append((f"-s {cut(str(item))}", "an override must look like key=value "
                             "(or overrides+=RAW to append a raw Hydra override)"))
            continue
        parts = key.split(".")
        if not all(_KEY_PART.fullmatch(part) for part in parts):
            problems.append((f"-s {cut(str(item))}", f"{short(key)} is not a field path: "
                             "names joined by single dots (a.b=value), without spaces or '+'"))
            continue
        if append and not raw.strip():
            problems.append((f"-s {cut(str(item))}", f"'{cut(key)}+=' appends nothing: give "
                             f"the item to append, e.g. {cut(key)}+=trainer.balance_batch=False"))
            continue
        node = out
        *parents, leaf = parts
        for part in parents:
            if node.get(part) is None:
                node[part] = {}
            nxt = node[part]
            if not isinstance(nxt, dict):
                problems.append((key, f"'{part}' is not a mapping"))
                break
            node = nxt
        else:
            if not append:
                try:
                    node[leaf] = parse_scalar(raw)
                except InputError as exc:
                    problems.append((key, exc.message))
            elif isinstance(node.setdefault(leaf, []), list):
                node[leaf].append(raw)
            else:
                problems.append((key, "'+=' appends to a list field only"))
    return out, problems


# Paths inside sections: ``(section, key)``; a relative one is relative to the scenario's folder
# (except ``data.script``, which is relative to the verl checkout, as verl's jobs run it).
SECTION_PATHS = (("verl", "path"), ("data", "script"), ("data", "local_dataset_path"),
                 ("data", "local_save_dir"))


def expand_paths(data: dict[str, Any], variables: Mapping[str, str],
                 folder: Path | None = None) -> dict[str, Any]:
    out = dict(data)
    for name in PATH_FIELDS:
        if isinstance(out.get(name), str):
            out[name] = expand(out[name], variables)
    for section, key in SECTION_PATHS:
        inner = out.get(section)
        if isinstance(inner, dict) and isinstance(inner.get(key), str) and inner[key]:
            inner = out[section] = dict(inner)
            value = expand(inner[key], variables)
            relative = not value.startswith(("/", "$")) and (section, key) != ("data", "script")
            inner[key] = str(folder / value) if relative and folder is not None else value
    if isinstance(out.get("overrides"), list):
        # a leading ``~`` of an override is Hydra's delete (``~trainer.logger``), not a home
        out["overrides"] = [expand(o, variables, home=False) if isinstance(o, str) else o
                            for o in out["overrides"]]
    return out


def resolve(
    path: Path, sets: Iterable[str] = (), variables: Mapping[str, str] | None = None
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The merged, path-expanded scenario mapping and the problems met on the way.

    ``variables`` replace some of :func:`path_variables` in the scenario's paths (a RayJob maps
    ``HOME`` to ``${HOME}``: the paths are the pods', not this machine's). ``rollouts.replay``
    is always this machine's: the workbook copies it before launch.
    """
    data: dict[str, Any] = {}
    for layer in read_layers(path):
        data = merge(data, layer)
    data.setdefault("name", Path(path).stem)
    checkout = os.environ.get(VERL_ENV, "").strip()
    if checkout:  # `suite run --verl PATH`: above the files, below -s
        verl = data.get("verl")
        data["verl"] = {**(verl if isinstance(verl, dict) else {}), "path": checkout}
    data, problems = apply_sets(data, sets)
    data = expand_paths(data, {**path_variables(), **(variables or {})}, Path(path).resolve().parent)
    rollouts = data.get("rollouts")
    if isinstance(rollouts, dict) and isinstance(rollouts.get("replay"), str):
        replay = Path(expand(rollouts["replay"], path_variables()))
        rollouts["replay"] = str(replay if replay.is_absolute() else Path(path).resolve().parent / replay)
    return data, problems
