"""Secrets never reach a report: redact credentials by name and by content.

Everything the workbook derives or renders (notebook outputs, ``params.resolved.yaml``,
``run.json``, the HTML, the index, the published tree) passes through here. Two rules:

- by **name**: a value whose key looks like a credential (``*TOKEN*``, ``*KEY*``, ``*SECRET*``,
  ``*PASSWORD*``, ``*PASSWD*``, ``*CREDENTIAL*``, ``*AUTH*``) is replaced whole;
- by **content**: anything that looks like a credential wherever it appears (``hf_…``/``sk-…``
  tokens, ``Authorization:`` headers, ``user:password@`` in URLs, ``NAME=value`` and
  ``name: value`` assignments with a credential-looking name).

The raw ``run.log`` is never rewritten (nothing is lost); ``publish`` ships a redacted copy.
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "[REDACTED]"

# Names of settings that hold credentials. "KEY" is matched as a word part so that
# ``monkey`` or ``keyboard`` do not trip it, but API_KEY, hf-key, apiKey and KEY do.
_SECRET_NAME = re.compile(
    r"(?i)token|secret|passw(or)?d|credential|auth|apikey|(^|[^a-z])key($|[^a-z])|(?-i:[a-z]Key$)"
)
# Names that contain a secret word but hold no secret (metric and config names people need).
_HARMLESS_NAME = re.compile(
    r"(?i)^(max_\w*tokens?|\w*_tokens|tokens_\w*|tokeni[sz]\w*|\w*_auth_mode|auth_mode|"
    r"(prompt|response|reward_fn|image|video|answer|data|label|sort|cache|full|primary|foreign|parent|"
    r"metric|dict|group|batch|row|column|input|output)_key|key_?(padding|name|s)\w*)$"
)

_TOKEN_PATTERNS = (
    re.compile(r"\bhf_[A-Za-z0-9]{8,}"),  # Hugging Face tokens
    re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"),  # OpenAI-style keys
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{16,}"),  # GitHub tokens
    re.compile(r"\bxox[baprs]-[A-Za-z0-9-]{8,}"),  # Slack tokens
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),  # AWS access key ids
    re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{5,}"),  # JWTs
)
_AUTH_HEADER = re.compile(
    r"(?i)\b((?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?)((?:bearer|basic|token)\s+)?[^\s'\"<>,;]+"
)
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/\s:@'\"<>]+):([^/\s@'\"<>]+)@")
# NAME=value, NAME: value, "name": "value", name='value': the name decides.
_ASSIGNMENT = re.compile(
    r"(?<![A-Za-z0-9_.\-])(?P<name>[A-Za-z_][A-Za-z0-9_.\-]*)[\"']?\s*(?:=|:)\s*"
    r"(?:\"(?P<dq>[^\"\n]*)\"|'(?P<sq>[^'\n]*)'|(?P<value>[^\s\"'<>,;&}\]]+))"
)
# --hf-token VALUE (a command-line flag and its separate value)
_FLAG = re.compile(
    r"(?P<name>--[A-Za-z][A-Za-z0-9_\-]*)\s+[\"']?(?P<value>[^\s\"'<>,;&-][^\s\"'<>,;&]*)"
)


def is_secret_name(name: str) -> bool:
    """Whether a setting called ``name`` holds a credential (and so its value must go)."""
    leaf = re.split(r"[./]", str(name).lstrip("-+"))[-1]
    if not leaf or _HARMLESS_NAME.search(leaf):
        return False
    return bool(_SECRET_NAME.search(leaf))


# Inline images are left alone: base64 can spell ``Key...==`` by chance, and no secret hides there.
_DATA_URI = re.compile(r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=]+")


def redact_text(text: str) -> str:
    """``text`` with every credential-looking value replaced by ``[REDACTED]``."""
    if not text:
        return text
    if "base64," in text:
        parts, last = [], 0
        for match in _DATA_URI.finditer(text):
            parts += [_redact_plain(text[last : match.start()]), match.group(0)]
            last = match.end()
        return "".join(parts) + _redact_plain(text[last:])
    return _redact_plain(text)


def _redact_plain(text: str) -> str:
    for pattern in _TOKEN_PATTERNS:
        text = pattern.sub(REDACTED, text)
    text = _AUTH_HEADER.sub(lambda m: m.group(1) + (m.group(2) or "") + REDACTED, text)
    text = _URL_CREDENTIALS.sub(lambda m: f"{m.group(1)}{m.group(2)}:{REDACTED}@", text)
    text = _FLAG.sub(_redact_named, text)
    return _ASSIGNMENT.sub(_redact_named, text)


def _redact_named(match: re.Match[str]) -> str:
    group = next(
        g for g in ("value", "dq", "sq") if g in match.re.groupindex and match.group(g) is not None
    )
    name, value = match.group("name"), match.group(group)
    if (
        REDACTED[:-1] in value
        or not value
        or not is_secret_name(name)
        or name.lower().endswith("authorization")
    ):  # headers: handled by _AUTH_HEADER
        return match.group(0)
    start, end = match.start(group) - match.start(0), match.end(group) - match.start(0)
    whole = match.group(0)
    return whole[:start] + REDACTED + whole[end:]


def redact_mapping(obj: Any) -> Any:
    """A copy of ``obj`` (dicts, lists, strings, numbers) with secrets replaced.

    A value under a secret-looking key is replaced whole (whatever its type); every string
    elsewhere goes through :func:`redact_text`.
    """
    if isinstance(obj, dict):
        out: dict[Any, Any] = {}
        for key, value in obj.items():
            if isinstance(key, str) and is_secret_name(key) and value not in (None, "", [], {}):
                out[key] = REDACTED if not isinstance(value, (dict, list)) else _blank(value)
            else:
                out[key] = redact_mapping(value)
        return out
    if isinstance(obj, (list, tuple)):
        return [redact_mapping(v) for v in obj]
    if isinstance(obj, str):
        return redact_text(obj)
    return obj


def _blank(value: Any) -> Any:
    """Every leaf of a secret-named structure becomes ``[REDACTED]`` (its shape stays readable)."""
    if isinstance(value, dict):
        return {k: _blank(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_blank(v) for v in value]
    return REDACTED
