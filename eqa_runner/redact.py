"""One redaction filter for every sink the process writes or prints to.

Every secret the process knows is registered here (:func:`register`): the values of the
credential-named environment variables it can read (:func:`register_environment`), the key an
LLM client reads from its ``api_key_env``, and any value the config screen flagged. The filter
(:func:`redact`) replaces each of them, and anything shaped like a provider key (``sk-…``,
``hf_…``, ``Bearer …``), by ``<redacted>``. It sits at the sinks, not at the call sites:

- records and JSON files (``records.RecordWriter``, ``records.write_json_atomic``: episodes,
  summaries, provenance), ``.hydra/`` files;
- logging: every ``LogRecord`` is redacted when it is made (a record factory), whatever handler
  later writes it (``run.log``, the console, a library's own handler);
- the console: ``sys.stdout`` / ``sys.stderr`` are wrapped (:func:`install`).

The names-by-parts rule (:func:`credential_name`) is shared with the config screen.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
from collections.abc import Mapping
from typing import Any, TextIO

REDACTED = "<redacted>"
MIN_SECRET_LEN = 8  # shorter values are not registered (they would blank ordinary words)

# --- the table: what a secret looks like and what it is called ------------------------------
# Shapes and names are data; the screen (eqa_runner.llm.secrets) and this filter read them.
# A new shape or name is one row here plus a case in tests/reliability/test_secret_table.py.

#: (what, pattern) of values that are keys whatever their field: a prefix + a long random tail
KEY_SHAPE_TABLE: tuple[tuple[str, str], ...] = (
    ("OpenAI-style", r"sk-[A-Za-z0-9_-]{16,}"),
    ("Stripe", r"sk_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("Google API", r"AIza[0-9A-Za-z_-]{30,}"),
    ("GitHub", r"gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"),
    ("Hugging Face", r"hf_[A-Za-z0-9]{20,}"),
    ("Slack", r"xox[abposr]-[A-Za-z0-9-]{10,}"),
    ("AWS access key id", r"AKIA[0-9A-Z]{16}"),
    ("GitLab", r"glpat-[A-Za-z0-9_-]{16,}"),
    ("Groq", r"gsk_[A-Za-z0-9]{20,}"),
    ("Perplexity", r"pplx-[A-Za-z0-9]{20,}"),
    ("Replicate", r"r8_[A-Za-z0-9]{20,}"),
    ("NVIDIA", r"nvapi-[A-Za-z0-9_-]{20,}"),
    ("JWT", r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),
)
#: name parts that say "this holds a secret" (whole parts, after splitting on _ - . and case)
SECRET_NAME_PARTS = frozenset(
    {
        "token",
        "secret",
        "password",
        "passwd",
        "passphrase",
        "authorization",
        "credential",
        "credentials",
        "apikey",
        "bearer",
        "auth",
        "sas",
        "signature",
        "privatekey",
        "accesskey",
        "cookie",
        "cookies",
        "jwt",
        "sessionid",
        "sessid",
        "jsessionid",
        "phpsessid",
    }
)
#: name suffixes that say the same inside one part (``accessToken``, ``dbpassword``)
SECRET_NAME_SUFFIXES = ("token", "secret", "password", "apikey")
#: a name whose LAST part is one of these holds a secret (``X-Session``, ``Session``)
SECRET_LAST_PARTS = frozenset({"session"})
#: ``name=value`` names inside any string (connection strings, ODBC, queries) that carry a
#: credential besides every credential-named one (``PWD`` alone is not: it is the shell's cwd)
SECRET_PAIR_NAMES = frozenset({"pwd", "pass", "jwt"})
#: URL query names that carry credentials (besides the two sets above)
SECRET_QUERY_NAMES = frozenset(
    {
        "key",
        "code",
        "auth",
        "sig",
        "signature",
        "token",
        "apikey",
        "subscription-key",
        "secret",
        "password",
        "access_token",
        "client_secret",
        "pwd",
        "pass",
        "jwt",
        "session",
    }
)
#: ``<x>_key`` is a credential unless <x> says it is a lookup key
ORDINARY_KEY_PREFIXES = frozenset(
    {
        "sort",
        "cache",
        "primary",
        "group",
        "lookup",
        "hash",
        "partition",
        "index",
        "dict",
        "join",
        "metric",
        "score",
        "config",
        "cfg",
        "result",
        "exclude",
        "include",
        "map",
        "foreign",
        "id",
    }
)
#: a name ending in these parts holds *where* a secret is, not the secret itself
POINTER_SUFFIXES = ("env", "var", "file", "path", "dir", "name", "names", "url", "header")

KEY_SHAPES = re.compile(
    r"(?<![A-Za-z0-9])(" + "|".join(f"(?:{p})" for _, p in KEY_SHAPE_TABLE) + ")"
)
_BEARER_IN_TEXT = re.compile(
    r"(?i)\b(bearer|basic)\s+(?=[A-Za-z._~+/=-]*[0-9])[A-Za-z0-9._~+/=-]{12,}"
)
# ``name=value`` inside a structured string (``…;AccountKey=<base64>;…``, ``Password=…`` in an
# ODBC string) or a URL query (``?pwd=…``): the value is a secret when the name says so
_NAME = r"(?<![A-Za-z0-9_.-])([A-Za-z][A-Za-z0-9_-]{1,40})"
# and ``Name: value`` (a header in an error text: ``Cookie: …``, ``X-Session: …``), one pass
_NAMED_IN_TEXT = re.compile(_NAME + r"(?:=([^;&#\s\"'<>…]{6,})|:[ \t]*([^\s\"'<>…,;]{8,}))")
_QUERY_IN_TEXT = re.compile(r"([?&])([A-Za-z][A-Za-z0-9_-]{0,40})=([^&#\s\"'<>…]{6,})")


def name_parts(name: str) -> list[str]:
    """``Ocp-Apim-SubscriptionKey`` → ``['ocp', 'apim', 'subscription', 'key']``."""
    split = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", str(name))
    return [p for p in re.split(r"[^A-Za-z0-9]+", split.lower()) if p]


def credential_name(name: str) -> bool:
    """Whether a field / header / variable / query name says it holds a credential, matched by
    parts: ``openai_api_key``, ``HF_TOKEN``, ``Ocp-Apim-Subscription-Key``, ``X-Api-Token``,
    ``accessToken``; not ``max_tokens``, ``cache_key``, ``api_key_env``."""
    parts = name_parts(name)
    if not parts or parts[-1] in POINTER_SUFFIXES:
        return False
    if parts[-1] in SECRET_LAST_PARTS:
        return True
    for p in parts:
        if p in SECRET_NAME_PARTS or p.endswith(SECRET_NAME_SUFFIXES):
            return True
    if parts[-1] == "key":
        return len(parts) == 1 or parts[-2] not in ORDINARY_KEY_PREFIXES
    return False


def secret_pair_name(name: str, *, query: bool = False) -> bool:
    """Whether ``name`` in ``name=value`` names a secret: in a connection string
    (``AccountKey``, ``Password``, ``Pwd``) or, with ``query``, in a URL query (``?key=``)."""
    low = name.lower()
    return (
        low in SECRET_PAIR_NAMES or (query and low in SECRET_QUERY_NAMES) or credential_name(name)
    )


def _redact_named(m: re.Match[str]) -> str:
    name = m.group(1)
    if m.group(2) is not None:  # name=value
        return f"{name}={REDACTED}" if secret_pair_name(name) else m.group(0)
    return f"{name}: {REDACTED}" if credential_name(name) else m.group(0)


def _redact_query(m: re.Match[str]) -> str:
    sep, name = m.group(1), m.group(2)
    return f"{sep}{name}={REDACTED}" if secret_pair_name(name, query=True) else m.group(0)


class _Registry:
    """The secret values known to this process and one compiled pattern matching them."""

    def __init__(self) -> None:
        self.values: set[str] = set()
        self.pattern: re.Pattern[str] | None = None
        self.lock = threading.Lock()

    def add(self, value: str) -> None:
        v = str(value).strip()
        if len(v) < MIN_SECRET_LEN or v in self.values:
            return
        with self.lock:
            self.values.add(v)
            alts = sorted(self.values, key=len, reverse=True)
            self.pattern = re.compile("|".join(re.escape(a) for a in alts))


_REGISTRY = _Registry()


def register(value: Any) -> None:
    """Remember ``value`` as a secret: it is redacted from everything written from now on."""
    if isinstance(value, str):
        _REGISTRY.add(value)


def register_environment(environ: Mapping[str, str] | None = None) -> None:
    """Register the values of every credential-named environment variable."""
    env = os.environ if environ is None else environ
    for name, value in env.items():
        if credential_name(name):
            register(value)


def known_secrets() -> frozenset[str]:
    return frozenset(_REGISTRY.values)


def redact(text: str) -> str:
    """``text`` with every registered secret and every key-shaped token replaced."""
    if not text:
        return text
    pat = _REGISTRY.pattern
    if pat is not None:
        text = pat.sub(REDACTED, text)
    text = KEY_SHAPES.sub(REDACTED, text)
    if ":" in text or "=" in text:
        text = _NAMED_IN_TEXT.sub(_redact_named, text)
        if "?" in text and "=" in text:
            text = _QUERY_IN_TEXT.sub(_redact_query, text)
    return _BEARER_IN_TEXT.sub(lambda m: f"{m.group(1)} {REDACTED}", text)


def redact_obj(obj: Any) -> Any:
    """A copy of nested data (mappings, lists) with every string redacted (keys too)."""
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, Mapping):
        return {redact(k) if isinstance(k, str) else k: redact_obj(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [redact_obj(v) for v in obj]
    return obj


class RedactingStream:
    """A text stream that redacts what is written before passing it on."""

    def __init__(self, inner: TextIO) -> None:
        self._inner = inner

    def write(self, s: str) -> int:
        self._inner.write(redact(s))
        return len(s)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


_installed = threading.Event()


def install() -> None:
    """Redact the console and every log record from now on (idempotent); registers the
    environment's credential values."""
    register_environment()
    if _installed.is_set():
        return
    _installed.set()
    if not isinstance(sys.stdout, RedactingStream):
        sys.stdout = RedactingStream(sys.stdout)
    if not isinstance(sys.stderr, RedactingStream):
        sys.stderr = RedactingStream(sys.stderr)
    old = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        rec = old(*args, **kwargs)
        return redact_record(rec)

    logging.setLogRecordFactory(factory)


def redact_record(rec: logging.LogRecord) -> logging.LogRecord:
    """Format the record's message (and traceback) now, redacted."""
    try:
        msg = rec.getMessage()
    except Exception:  # noqa: BLE001 - a bad format string: logging reports it later
        return rec
    rec.msg, rec.args = redact(msg), None
    if rec.exc_info and not rec.exc_text:
        rec.exc_text = redact(logging.Formatter().formatException(rec.exc_info))
    return rec
