"""YAML in and out: the one module that imports PyYAML."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from workbook.errors import InputError


def load_yaml_text(text: str, source: str = "<text>") -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError(f"{source}: not valid YAML: {exc}") from None


def load_yaml(path: Path) -> Any:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: cannot read: {exc.strerror}") from None
    return load_yaml_text(text, str(path))


def parse_scalar(text: str) -> Any:
    """A ``-s key=value`` value as YAML reads it: ``6e-4`` -> 0.0006, ``[1]`` -> [1], ``x`` -> 'x'."""
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    # YAML 1.1 reads "6e-4" as a string (no dot); people mean a number.
    if isinstance(value, str):
        try:
            return float(value) if any(c in value for c in "eE.") else int(value)
        except ValueError:
            return value
    return value


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (e.g. a RayJob's runtimeEnvYAML) as readable ``|`` blocks."""


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def dump_yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False,
                     allow_unicode=True, width=100)
