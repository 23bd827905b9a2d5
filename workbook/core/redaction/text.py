"""Credentials in text: by name and by shape, line by line (logs can be gigabytes).

Two rules, applied to any text (a log line, a command, one string of a JSON document):

- by **name**: the value of a setting whose name holds a credential (:func:`is_secret_name`):
  ``NAME=v``, ``name: v``, ``"name": "v"``, ``?name=v``, ``--name v``, ``--name=v``;
- by **shape**: anything that looks like a credential wherever it appears: provider tokens
  (detect-secrets' own patterns, plus the few it lacks), JWTs, ``Bearer …``, ``user:pw@`` in
  URLs, ``curl -u user:pw`` / ``--user user:pw`` and whole ``-----BEGIN … PRIVATE KEY-----``
  blocks.

Names are read as words so that the exact command survives: ``ppo_max_token_len_per_gpu`` is a
length, ``HF_TOKEN`` a token, ``"pass": 16`` a verdict count and ``DB_PASS`` a password. A
token-shaped path part (``/models/hf_Qwen2Instruct7BChat``) names a folder, not a credential.
A line holding none of the trigger substrings comes back after those ``in`` tests alone, and
every pattern starts with a literal. Structured files are redacted inside their structure by
:mod:`.structure`, which calls :func:`redact_text` on each string.
"""

from __future__ import annotations

import functools
import re
from typing import Literal

REDACTED = "[REDACTED]"
# Values that tell nothing under any name: flags, nulls, a CI token's permission
# (``id-token: write`` in a GitHub workflow) and a usage line's placeholder (``-s KEY=VALUE``).
HARMLESS_VALUES = frozenset({"none", "null", "true", "false", "read", "write", "value"})

# ---- names ------------------------------------------------------------------------------

_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_ANYWHERE = frozenset(
    {"secret", "secrets", "password", "passwords", "passwd", "passphrase", "credential",
     "credentials"}
)  # fmt: skip
# Run-together names end in these: PGPASSWORD, MYSQLPASSWD, GHSECRET, OPENAIAPIKEY.
_RUN_ON = ("password", "passwd", "passphrase", "secret", "credential", "credentials", "apikey")
_LAST = frozenset({"token", "auth", "authorization", "apikey", "accesskey", "privatekey"})
# "*_key" holds a key after these words; a lower-case ``prompt_key`` names a data field.
_KEY_KINDS = frozenset(
    {"api", "access", "secret", "private", "client", "auth", "service", "account", "signing",
     "encryption", "master", "ssh", "deploy", "license", "subscription",
     # services whose key is a credential (verl's loggers among them): ``wandb_key``
     "wandb", "swanlab", "mlflow", "comet", "neptune", "clearml", "hf", "hub", "openai",
     "github", "gitlab", "aws", "gcp", "azure", "stripe", "slack", "npm", "pypi"}
)  # fmt: skip
# A ``--*-key`` flag holds a key (``--wandb-key``) unless it names a field of the data or a sort.
_FIELD_KEYS = frozenset(
    {"prompt", "response", "reward", "answer", "question", "label", "text", "image", "video",
     "audio", "input", "output", "data", "metric", "sort", "group", "partition", "cache", "index",
     "column", "field", "ground", "extra", "chat", "message", "messages", "solution", "public",
     "full", "fn", "primary", "foreign", "hash", "lookup", "join", "dict"}
)  # fmt: skip
# "*_token" after these words is a vocabulary entry or a count, not a credential.
_VOCABULARY = frozenset(
    {"pad", "eos", "bos", "unk", "sep", "cls", "mask", "special", "image", "video", "audio",
     "vision", "start", "end", "think", "call", "observation", "max", "min", "num", "total",
     "all", "global", "valid", "next"}
)  # fmt: skip
# In a slashed metric name ("section/name") "*_token" is a per-token quantity unless it follows
# one of these (``trainer/access_token`` is a credential, ``rollout_corr/chi2_token`` is not).
_TOKEN_KINDS = frozenset(
    {"access", "auth", "api", "refresh", "bearer", "oauth", "session", "hub", "hf", "github",
     "gh", "bot", "secret", "private", "personal", "service"}
)  # fmt: skip
# A lower-case "*_pass" is a password after these words ("forward_pass", "first_pass" are not);
# an upper-case one (``DB_PASS``, ``PASS``) is an environment variable holding one.
_PASS_OWNERS = frozenset(
    {"db", "user", "admin", "root", "login", "smtp", "mail", "imap", "ftp", "sftp", "ldap",
     "mysql", "postgres", "pg", "redis", "mongo", "proxy", "http", "https", "basic", "app",
     "api", "my", "wandb", "hub", "registry", "docker", "sudo", "vnc", "ssh", "rabbitmq"}
)  # fmt: skip


@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Whether a setting called ``name`` holds a credential (and so its value must go).

    A kebab-case ``--flag`` ending in "key" holds one (``--wandb-key``) unless a data field
    names it (``--prompt-key``, ``--public-key``); ``--reward_fn_key`` is a config key. Only the last dotted or slashed segment counts, read as words (split on ``_``, ``-`` and
    camelCase): "secret", "password", "passwd", "credential(s)" count anywhere, and as the end
    of a run-together word (``PGPASSWORD``; "token" too in upper case: ``GHTOKEN``); "token",
    "auth", "pwd" and "api/access/private… key" only as the last word; "pass" as the last word
    of an upper-case environment name (``DB_PASS``) or after a word that owns a password
    (``db_pass``), never alone in lower case (``"pass": 16`` counts checks, "Validation pass:
    3" a loop). In a slashed metric name (``trainer/api_key``) a key or a credential token
    counts, a per-token quantity (``rollout_corr/chi2_token``) does not. A file path
    (``/root/.ray/auth_token``) is no name.

    Example:
        >>> is_secret_name("HF_TOKEN"), is_secret_name("actor.ppo_max_token_len_per_gpu")
        (True, False)
    """
    flag = str(name).startswith("--") and "_" not in str(name)  # a --kebab-case flag
    name = str(name).lstrip("-+~")
    if name.startswith(("/", ".")):  # a file path, not a setting
        return False
    leaf = re.split(r"[./]", name)[-1]
    words = [w.lower() for w in _WORDS.findall(leaf)]
    while words and words[-1].isdigit():
        words.pop()
    if not words:
        return False
    if _ANYWHERE.intersection(words) or any(
        w.endswith(_RUN_ON) and w not in _RUN_ON for w in words
    ):
        return True
    if leaf.isupper() and _run_on_token(words[-1]):  # GHTOKEN, NPMTOKEN: environment names
        return True
    last, before = words[-1], words[-2] if len(words) > 1 else ""
    if "/" in name:  # verl logs metrics as section/name: only an unmistakable credential
        if last in ("key", "keys"):
            return before in _KEY_KINDS
        return last in ("apikey", "accesskey", "privatekey") or (
            last == "token" and before in _TOKEN_KINDS
        )
    if last in ("key", "keys"):  # an upper-case *_KEY is an environment variable: a key
        # a --flag's key too (``--wandb-key``), unless it names a field of the data
        return before in _KEY_KINDS or leaf.isupper() or (flag and before not in _FIELD_KEYS)
    if last == "token":
        return before not in _VOCABULARY
    if last == "pwd":  # PWD alone is the working directory
        return bool(before)
    if last == "pass":
        return leaf.isupper() or before in _PASS_OWNERS
    return last in _LAST


def _run_on_token(word: str) -> bool:
    head = word[: -len("token")]
    return bool(head) and word.endswith("token") and head not in _VOCABULARY


# ---- patterns ---------------------------------------------------------------------------

_QUOTE = r"(?:[\"'`]|&quot;|&#x27;|&#39;)"  # raw or HTML-escaped
_VALUE = rf"(?:(?P<q>{_QUOTE})(?P<quoted>[^\n]*?)(?:(?P=q)|$)|(?P<bare>[^\s\"'`<>,;&}}\]\\]+))"
# From a secret word on: the rest of the name, then "=v" / ": v" (any name), " v" / "', 'v'"
# (a --flag), or the line's end after "--flag," / "--flag \" (its value on the next line).
_AFTER_WORD = re.compile(
    rf"(?P<rest>[\w.\-/]*)(?:(?P<eol>{_QUOTE}?[ \t]*[,\\]\s*\Z)|(?:{_QUOTE}?[ \t]*[:=](?!=)[ \t]*"
    rf"|(?P<sep>{_QUOTE}[ \t]*,[ \t]*(?={_QUOTE})|[ \t]+(?![-\\]))){_VALUE})"
)
_NAME_START = re.compile(r"[\w.\-/]*")  # matched on the reversed text before a word
_VALUE_AT_START = re.compile(rf"[ \t]*(?![-\\]){_VALUE}")
_AUTH_HEADER = re.compile(
    rf"(?i)authorization{_QUOTE}?[ \t]*[:=][ \t]*{_QUOTE}?"
    r"(?:(?:bearer|basic|token|digest|negotiate|ntlm)[ \t]+)?(?P<v>[^\s\"'`<>,;&]+)"
)
_BEARER = re.compile(r"(?i)bearer[ \t]+(?P<v>(?=[\w\-.~+/]*[\d.\-_~+/])[\w\-.~+/]{8,}=*)")
_URL_USERINFO = re.compile(r"://[^/\s:@'\"<>]*:(?P<v>[^/\s@'\"<>]+)@")
_VALUE_RULES = (("authorization", _AUTH_HEADER), ("bearer", _BEARER), ("://", _URL_USERINFO))
# curl's, wget's and git's credentials flag: ``-u user:pw``, ``--user=user:pw``, ``'-u', 'u:pw'``
# in an argv; the password goes, the user stays. ``-u 1000:1000`` (docker's uid:gid) is no secret.
_USER_FLAG_NAME = r"(?<![\w-])(?:-[uU]|--(?:proxy-)?user)"
_USER_FLAG = re.compile(
    rf"{_USER_FLAG_NAME}(?:{_QUOTE}?(?:[ \t]+|=)|{_QUOTE}[ \t]*,[ \t]*)(?:(?P<q>{_QUOTE})"
    rf"(?P<qu>[^:\n]*?):(?P<qv>[^\n]*?)(?P=q)|(?P<user>[^\s:'\"`<>]*):(?P<v>[^\s'\"`<>]+))"
)
_USER_FLAG_EOL = re.compile(rf"{_USER_FLAG_NAME}{_QUOTE}?[ \t]*[,\\]\s*\Z")
# Password flags of common clients, which no name gives away: ``mysql -pPW`` (glued only: in
# ``mysql -p db`` the ``-p`` asks and ``db`` is the database), ``sshpass -p PW`` or ``-pPW``,
# ``redis-cli -a PW``, ``mongosh -p PW``. Only the client's first such flag (``sshpass -p PW ssh
# -p 22`` keeps ssh's port); in a command or a printed argv (``'-p', 'PW'``).
_CLIENT = re.compile(
    r"(?<![\w.-])(?P<c>(?:mysql|mariadb)[\w-]*|sshpass|redis-cli|mongo(?:sh|dump|restore|import|"
    r"export|files|stat|top)?)(?![\w.-])"
)
_CLIENT_GATES = ("mysql", "mariadb", "sshpass", "redis-cli", "mongo")
_CLIENT_FLAG = re.compile(
    rf"(?<![\w-])(?P<f>-[pa])(?:{_QUOTE}?(?:[ \t]+|{_QUOTE}[ \t]*,[ \t]*)(?:(?P<aq>{_QUOTE})"
    rf"(?P<av>[^\n]*?)(?P=aq)|(?P<a>[^\s'\"`<>,;&|\\-][^\s'\"`<>,;&|]*))|(?P<gq>{_QUOTE})"
    rf"(?P<gv>[^\n]*?)(?P=gq)|(?P<g>[^\s'\"`<>,;&|]+))"
)
_COMMAND_END = re.compile(r"[;|&\n]")


def client_password(client: str) -> tuple[str, bool, bool]:
    """``(flag, glued, apart)``: how ``client`` (a program's name, ``""`` if none) takes its
    password: ``-p`` or ``-a``, glued to the flag (``-pPW``) and/or the next argument."""
    name = client.rsplit("/", 1)[-1]
    found = _CLIENT.fullmatch(name)
    if not found:
        return "", False, False
    if name.startswith(("mysql", "mariadb")):
        return "-p", True, False
    if name == "sshpass":
        return "-p", True, True
    return ("-a" if name == "redis-cli" else "-p"), False, True


def _client_spans(text: str) -> list[tuple[int, int]]:
    """The password of each client command's first password flag (see _CLIENT)."""
    spans = []
    for client in _CLIENT.finditer(text):
        flag, glued, apart = client_password(client["c"])
        end = _COMMAND_END.search(text, client.end())
        for found in _CLIENT_FLAG.finditer(text, client.end(), end.start() if end else len(text)):
            if found["f"] != flag:
                continue
            group = next(g for g in ("av", "a", "gv", "g") if found[g] is not None)
            if (group[0] == "g" and glued) or (group[0] == "a" and apart):
                value = found[group]
                if value and REDACTED[:-1] not in value and value.lower() not in HARMLESS_VALUES:
                    spans.append(found.span(group))
            break
    return spans


_USERINFO = re.compile(r"(?P<user>[^:]*):(?P<v>.+)", re.DOTALL)
_KEY_BEGIN = re.compile(r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
_KEY_END = re.compile(r"-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
_KEY_MAX_LINES = 400  # longer than any key: a stray BEGIN must not swallow the rest of a log
# Inline images are left alone: base64 can spell ``Key...==`` by chance, and no secret hides there.
_DATA_URI = re.compile(r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=]+")

# Shapes detect-secrets 1.5.0 lacks (or knows only in an older form).
_HF = r"hf_(?<![A-Za-z0-9]hf_)(?=[a-z]*[A-Z0-9])[A-Za-z0-9]{16,}"
_GITHUB_PAT = r"github_pat_[A-Za-z0-9_]{22,}"  # fine-grained; the plugin knows the classic ones
_OPENAI = r"sk-(?<![A-Za-z0-9]sk-)(?=[\w\-]*[A-Z0-9])[A-Za-z0-9_\-]{16,}"  # sk-proj-…, sk-ant-…
_GOOGLE_OAUTH = r"ya29\.[0-9A-Za-z_\-]{20,}"
_GOOGLE_API = r"AIza[0-9A-Za-z_\-]{30,}"  # 39 characters as issued; shorter ones are still keys
_NPM = r"npm_[A-Za-z0-9]{36}"  # the plugin knows npm tokens only in an .npmrc line


@functools.cache
def _shapes() -> tuple[tuple[str, int, re.Pattern[str]], ...]:
    """``(gate, offset, pattern)``: ``pattern`` is tried ``offset`` characters before each
    ``gate`` in a line (lower-cased unless ``gate`` has capitals). Every gate is in _triggered."""
    from detect_secrets.plugins.aws import AWSKeyDetector
    from detect_secrets.plugins.github_token import GitHubTokenDetector
    from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
    from detect_secrets.plugins.jwt import JwtTokenDetector
    from detect_secrets.plugins.mailchimp import MailchimpDetector
    from detect_secrets.plugins.openai import OpenAIDetector
    from detect_secrets.plugins.pypi_token import PypiTokenDetector
    from detect_secrets.plugins.sendgrid import SendGridDetector
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.plugins.square_oauth import SquareOAuthDetector
    from detect_secrets.plugins.stripe import StripeDetector
    from detect_secrets.plugins.twilio import TwilioKeyDetector

    gitlab = GitLabTokenDetector.denylist
    slack, webhook = SlackDetector.denylist
    twilio_account, twilio_key = TwilioKeyDetector.denylist
    return (
        ("hf_", 0, _token(_HF)),
        ("gh", 0, _token(*GitHubTokenDetector.denylist)),
        ("github_pat_", 0, _token(_GITHUB_PAT)),
        ("gl", 0, _token(*(p for p in gitlab if p.pattern.lstrip("(").startswith("gl")))),
        ("gr1348941", 0, _token(*(p for p in gitlab if p.pattern.startswith("GR1348941")))),
        ("sk-", 0, _token(*OpenAIDetector.denylist, _OPENAI)),
        ("xox", 0, _token(slack)),
        ("hooks.slack.com", len("https://"), _token(webhook)),
        ("ya29.", 0, _token(_GOOGLE_OAUTH)),
        # the AWS secret key: by name
        ("A", 0, _token(AWSKeyDetector.denylist[0], _GOOGLE_API, twilio_account)),
        ("J", len("ey"), _token(*JwtTokenDetector.denylist)),
        ("k_live_", 1, _token(*StripeDetector.denylist)),
        ("SG.", 0, _token(*SendGridDetector.denylist)),
        ("SK", 0, _token(twilio_key)),
        ("sq0csp-", 0, _token(*SquareOAuthDetector.denylist)),
        ("pypi-", 0, _token(*PypiTokenDetector.denylist)),
        ("npm_", 0, _token(_NPM)),
        ("-us", 32, _token(*MailchimpDetector.denylist)),
    )


@functools.cache
def _searched() -> tuple[tuple[tuple[str | re.Pattern[str], ...], re.Pattern[str]], ...]:
    """``(gates, pattern)``: detect-secrets' patterns that carry their own context (a boundary
    around the token, a ``name =`` before the value), searched in a line holding one of
    ``gates`` (each lower-cased unless it has capitals; in _triggered) or where a gate pattern
    is found in the lower-cased line: what the token needs, far cheaper to search for than the
    plugin's pattern (the cloud providers' ``<prefix>_key = <value>`` needs :data:`_ASSIGNED`).
    The secret is the pattern's last group, else its whole match less the boundary."""
    from detect_secrets.plugins.artifactory import ArtifactoryDetector
    from detect_secrets.plugins.cloudant import CloudantDetector
    from detect_secrets.plugins.discord import DiscordBotTokenDetector
    from detect_secrets.plugins.ibm_cloud_iam import IbmCloudIamDetector
    from detect_secrets.plugins.ibm_cos_hmac import IbmCosHmacDetector
    from detect_secrets.plugins.softlayer import SoftlayerDetector
    from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector

    token, password = ArtifactoryDetector.denylist
    return (
        (("AKC",), token),
        (("AP",), password),
        ((_ASSIGNED, "cloudant.com"), _any(*IbmCloudIamDetector.denylist, *SoftlayerDetector.denylist,
                                     *CloudantDetector.denylist)),
        (("key",), _any(*IbmCosHmacDetector.denylist)),
        ((_DISCORD_GATE,), _any(*DiscordBotTokenDetector.denylist)),
        ((_TELEGRAM_GATE,), _any(*TelegramBotTokenDetector.denylist)),
    )


def _any(*patterns: re.Pattern[str]) -> re.Pattern[str]:
    """One pattern for several of a plugin's (their flags kept, each group its own)."""
    return re.compile("|".join(
        f"(?i:{p.pattern})" if p.flags & re.IGNORECASE else f"(?:{p.pattern})" for p in patterns
    ))


def _token(*patterns: re.Pattern[str] | str) -> re.Pattern[str]:
    """One pattern for ``patterns`` whose match runs on to the token's end (fixed-length
    patterns stop short of it, a JWT's lazy pattern before its signature)."""
    sources = [
        p if isinstance(p, str) else f"(?i:{p.pattern})" if p.flags & re.IGNORECASE else p.pattern
        for p in patterns
    ]
    return re.compile(f"(?:{'|'.join(sources)})[A-Za-z0-9_\\-]*")


_NAME_WORDS = ("token", "key", "pass", "auth", "secret", "pwd", "credential")


def _triggered(text: str, low: str) -> bool:
    """The fast path: whether ``text`` (``low`` lower-cased) may hold a secret for any rule.

    One gate per rule: the name words, "bearer", "@" (URL userinfo), "-u" (``curl -u``) and
    each gate of :func:`_shapes` (a private key's BEGIN line says "key"). Spelled out rather
    than looped, one-character tests (``memchr``) first: this runs on every line of every
    published log.
    """
    return (
        "A" in text or "J" in text or "@" in low or "token" in low or "key" in low or "pass" in low
        or "auth" in low or "secret" in low or "pwd" in low or "credential" in low
        or "bearer" in low or "hf_" in low or "gh" in low or "github_pat_" in low or "gl" in low
        or "gr1348941" in low or "sk-" in low or "xox" in low or "hooks.slack.com" in low
        or "ya29." in low or "-u" in low or "k_live_" in low or "SG." in text or "SK" in text
        or "sq0csp-" in low or "pypi-" in low or "npm_" in low or "-us" in low or "pw" in low
        or "AKC" in text or "AP" in text or "cloudant.com" in low or "mysql" in low
        or "mariadb" in low or "sshpass" in low or "redis-cli" in low or "mongo" in low
    )  # fmt: skip


def _lower(text: str) -> str:
    """``text`` lower-cased, offsets kept (a few characters' lower case is longer)."""
    low = text.lower()
    if len(low) == len(text):
        return low
    return "".join(c if len(c.lower()) > 1 else c.lower() for c in text)


# ---- redaction --------------------------------------------------------------------------


class LineRedactor:
    """Redacts a stream line by line, remembering what spans lines.

    A private key's BEGIN line opens a block dropped up to its END line (the BEGIN line's text
    before it stays, then one ``[REDACTED]``); a secret ``--flag`` ending a line (``"--token",``
    in a JSON argv, ``--token \\`` in a shell command) redacts the next line's first value, a
    ``-u`` / ``--user`` flag the password of the next line's ``user:pw``.

    Example:
        >>> r = LineRedactor()
        >>> [r.line(s) for s in ("key:\\n", "-----BEGIN EC PRIVATE KEY-----\\n", "MHc\\n",
        ...                      "-----END EC PRIVATE KEY-----\\n")]
        ['key:\\n', '[REDACTED]', '', '\\n']
    """

    def __init__(self) -> None:
        self._key_lines = 0  # lines seen inside an open private-key block; 0: none open
        self._value_next: _Next = ""  # the last line ended with a secret --flag or -u

    @property
    def pending(self) -> bool:
        """Whether the next line depends on earlier ones (inside a key block, after a flag)."""
        return bool(self._key_lines or self._value_next)

    def line(self, text: str) -> str:
        """``text`` (one line, its end included) redacted."""
        if self._key_lines:
            return self._inside_key(text)
        low = text.lower()
        if not (self._value_next or _triggered(text, low)):
            return text
        return self._redact(text, low if len(low) == len(text) else _lower(text))

    def _redact(self, text: str, low: str) -> str:
        if self._value_next:
            span = _first_value_span(text, self._value_next)
            self._value_next = ""
            if span is not None:
                text = _replace(text, [span])
                low = _lower(text)
        begin = _KEY_BEGIN.search(text) if "-----begin" in low else None
        if begin:
            head, _ = _redact_line(text[: begin.start()])
            self._key_lines = 1
            return head + REDACTED + self._inside_key(text[begin.end() :])
        text, self._value_next = _redact_line(text, low)
        return text

    def _inside_key(self, text: str) -> str:
        end = _KEY_END.search(text)
        if end:
            self._key_lines = 0
            return self.line(text[end.end() :])
        self._key_lines += 1
        if self._key_lines > _KEY_MAX_LINES:
            self._key_lines = 0
            return self.line(text)
        return ""


def redact_text(text: str) -> str:
    """``text`` with every credential-looking value (a private key: its whole block) replaced."""
    if not text or not _triggered(text, text.lower()):
        return text
    redactor = LineRedactor()
    return "".join(map(redactor.line, text.splitlines(keepends=True)))


_Next = Literal["", "value", "user"]  # what the next line's first value is: nothing, a secret…


def _first_value_span(text: str, kind: _Next) -> tuple[int, int] | None:
    """The span to redact of the line's first value, after a secret ``--flag`` (``value``: all of
    it) or a ``-u`` flag (``user``: the password of ``user:pw``) ended the previous line."""
    first = _VALUE_AT_START.match(text)
    if not first or _harmless(first):
        return None
    begin, end = _value_span(first)
    if kind == "value":
        return begin, end
    userinfo = _USERINFO.match(text, begin, end)
    if not userinfo or _uid_gid(userinfo["user"], userinfo["v"]):
        return None
    return userinfo.span("v")


def _uid_gid(user: str, password: str) -> bool:
    """``1000:1000``: docker's and sudo's ``-u uid:gid``, not a credential."""
    return user.isdigit() and password.isdigit()


def _redact_line(text: str, low: str | None = None) -> tuple[str, _Next]:
    """``text`` redacted, and what of the next line's first value is secret (a flag ended it)."""
    low = _lower(text) if low is None else low
    if "base64," not in low:
        return _redact_plain(text, low)
    parts, last = [], 0
    for match in _DATA_URI.finditer(text):
        parts += [_redact_plain(text[last : match.start()])[0], match.group(0)]
        last = match.end()
    tail, value_next = _redact_plain(text[last:])
    return "".join(parts) + tail, value_next


def _redact_plain(text: str, low: str | None = None) -> tuple[str, _Next]:
    low = _lower(text) if low is None else low
    spans = _shape_spans(text, low) + _searched_spans(text, low)
    if any(client in low for client in _CLIENT_GATES):
        spans += _client_spans(text)
    for gate, pattern in _VALUE_RULES:
        if gate in low:
            spans += [found.span("v") for found in pattern.finditer(text)]
    names, value_next = _name_spans(text, low)
    after: _Next = "value" if value_next else ""
    if "-u" in low:
        spans += _user_flag_spans(text)
        if not after and _USER_FLAG_EOL.search(text):
            after = "user"
    return _replace(text, spans + names), after


def _user_flag_spans(text: str) -> list[tuple[int, int]]:
    """The passwords of ``-u user:pw`` / ``--user user:pw`` (quoted or not, in an argv too)."""
    spans = []
    for found in _USER_FLAG.finditer(text):
        group = "qv" if found["q"] else "v"
        user, password = found["qu" if found["q"] else "user"], found[group]
        if not _uid_gid(user, password) and REDACTED[:-1] not in password:
            spans.append(found.span(group))
    return spans


def _shape_spans(text: str, low: str) -> list[tuple[int, int]]:
    spans = []
    for gate, offset, pattern in _shapes():
        hay = text if gate[0].isupper() else low
        at = hay.find(gate)
        while at >= 0:
            found = pattern.match(text, at - offset) if at >= offset else None
            if found and not _path_part(text, *found.span()):
                spans.append(found.span())
            at = hay.find(gate, found.end() if found else at + 1)
    return spans


# A keyword of the assignment patterns, an assignment, then 24 value characters at least.
# Searched in the lower-cased line: without IGNORECASE the search skips ahead on a literal.
_ASSIGNED = re.compile(r"(?:key|pwd|pass|token|pw)['\"\]]?[ \t]*(?:[=:]|=>|[ \t])[ \t]*['\"]?"
                       r"[a-z0-9_\-]{24}")
# What Discord's and Telegram's tokens hold (two dots six apart; a colon before 35 characters),
# searched before their patterns, which would be tried at every capital or digit of a line.
_DISCORD_GATE = re.compile(r"\.[\w-]{6}\.")
_TELEGRAM_GATE = re.compile(r":[\w-]{35}")


def _searched_spans(text: str, low: str) -> list[tuple[int, int]]:
    spans = []
    for gates, pattern in _searched():
        if not any(g in (text if g.lower() != g else low) if isinstance(g, str) else g.search(low)
                   for g in gates):
            continue
        for found in pattern.finditer(text):
            if found.lastindex:
                spans.append(found.span(found.lastindex))
                continue
            begin, end = found.span()
            while begin < end and text[begin] in _BOUNDARY:
                begin += 1
            while end > begin and text[end - 1] in _BOUNDARY:
                end -= 1
            if REDACTED[:-1] not in text[begin:end] and not _path_part(text, begin, end):
                spans.append((begin, end))
    return spans


_BOUNDARY = frozenset(" \t\r\n=:\"")  # what a plugin's pattern holds around its token


def _path_part(text: str, begin: int, end: int) -> bool:
    """Whether ``text[begin:end]`` is a folder or file name in a path (``/models/hf_Qwen2…``,
    ``hf_Qwen2…/config.json``): a token-shaped name, not a token. A URL's ``//`` is no path."""
    before = text[begin - 1] if begin else ""
    return (before == "/" and text[begin - 2 : begin] != "//") or text[end : end + 1] == "/"


def _name_spans(text: str, low: str) -> tuple[list[tuple[int, int]], bool]:
    """Values after secret names, and whether the line ends with a secret flag (value next)."""
    spans, value_next = [], False
    for word in _NAME_WORDS:
        at = low.find(word)
        while at >= 0:
            found = _AFTER_WORD.match(text, at)
            at = low.find(word, at + len(word))
            if not found:
                continue
            name = text[_name_start(text, found.start()) : found.end("rest")]
            flag_form = found["sep"] is not None or found["eol"] is not None
            if (flag_form and not name.startswith("-")) or not is_secret_name(name):
                continue
            if name.lower().endswith("authorization"):  # a header: _AUTH_HEADER keeps its scheme
                continue
            if found["eol"] is not None:
                value_next = True
            elif not _harmless(found):
                spans.append(_value_span(found))
    return spans, value_next


def _name_start(text: str, at: int) -> int:
    """Where the name holding ``text[at]`` begins (letters, digits, ``_ . - /``)."""
    head = _NAME_START.match(text[max(0, at - 200) : at][::-1])
    return at - (head.end() if head else 0)


def _replace(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each span (overlapping ones merged) replaced by ``[REDACTED]``."""
    parts, last = [], 0
    for begin, end in sorted(spans):
        if begin >= last:
            parts += [text[last:begin], REDACTED]
        last = max(last, end)
    return "".join(parts) + text[last:] if parts else text


def _value_span(match: re.Match[str]) -> tuple[int, int]:
    return match.span("quoted" if match["q"] else "bare")


def _harmless(match: re.Match[str]) -> bool:
    """An empty, already redacted, boolean or null value: it tells nothing, and stays."""
    value = match["quoted"] if match["q"] else match["bare"]
    return not value or REDACTED[:-1] in value or value.lower() in HARMLESS_VALUES
