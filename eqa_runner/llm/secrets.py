"""Keeping API keys out of configs and run directories.

One screen (:func:`screen_values`) looks at every composed config value before anything is
written (Hydra's callback runs it before the run directory is made, the run loop again for
in-process runs): a value that looks like a credential is refused naming the field, with the
value masked. Three shapes are recognised:

- a field whose *name* says it holds a secret (``api_key``, ``token``, ``password``,
  ``authorization``, … anywhere, e.g. in ``llm.extra_params.headers``) with a value;
- a value that looks like a key whatever its field (provider key prefixes such as ``sk-``,
  ``Bearer …``, a URL with a password or a ``?api_key=`` query, long mixed-case random strings);
- an ``*_env`` field (the NAME of an environment variable) holding something that is not a name.

URLs are written without user-info (:func:`strip_userinfo`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

SECRET_CONFIG_KEY = "api_key"  # config keys with this last component must never hold a value

# a field named like this holds a secret (compared on the last key component, case-insensitive)
_SECRET_NAME = re.compile(
    r"^(x-)?(api[_-]?key|apikey|access[_-]?token|auth[_-]?token|bearer[_-]?token|token|secret|"
    r"client[_-]?secret|secret[_-]?key|password|passwd|authorization|credentials?|private[_-]?key"
    r"|x-goog-api-key|session[_-]?token)$",
    re.I,
)
# well-known key shapes (prefix + a long random tail)
_KEY_SHAPES = re.compile(
    r"(?<![A-Za-z0-9])("
    r"sk-[A-Za-z0-9_-]{16,}|sk_(live|test)_[A-Za-z0-9]{16,}|AIza[0-9A-Za-z_-]{30,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|hf_[A-Za-z0-9]{20,}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|glpat-[A-Za-z0-9_-]{16,}"
    r"|gsk_[A-Za-z0-9]{20,}|pplx-[A-Za-z0-9]{20,}|r8_[A-Za-z0-9]{20,}|nvapi-[A-Za-z0-9_-]{20,}"
    r")"
)
_BEARER = re.compile(r"^\s*(bearer|basic|token)\s+\S{8,}", re.I)
_SECRET_QUERY = re.compile(r"^(api[_-]?key|apikey|key|token|access[_-]?token|secret|password|sig)$",
                           re.I)  # fmt: skip
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_REFUSED_BLANK = ("", "null", "none", "~")


def mask(value: str) -> str:
    """A credential-shaped value as it may be shown: its first 3 characters and its length."""
    v = str(value)
    return f"{v[:3]}…({len(v)} chars)" if len(v) > 6 else "…"


def _random_token(s: str) -> bool:
    """A long single token mixing upper case, lower case and digits (entropy, not a word)."""
    if len(s) < 32 or any(c in s for c in " /\\.:@${}=,"):
        return False
    classes = sum(bool(re.search(p, s)) for p in ("[a-z]", "[A-Z]", "[0-9]"))
    return classes == 3 and len(set(s)) >= 16


def url_credential(value: str) -> str | None:
    """Why a URL value carries a credential (a password in user-info, a key in the query)."""
    if "://" not in value:
        return None
    try:
        parts = urlsplit(value.strip())
    except ValueError:
        return None
    if parts.password:
        return "a URL with a password in it (user:password@host)"
    for k, v in parse_qsl(parts.query, keep_blank_values=False):
        if _SECRET_QUERY.match(k) and v:
            return f"a URL with a credential in its query ({k}=…)"
    return None


def strip_userinfo(url: str) -> str:
    """``scheme://user:pw@host/...`` → ``scheme://host/...`` (other strings unchanged)."""
    if "://" not in str(url) or "@" not in str(url):
        return url
    try:
        parts = urlsplit(str(url))
    except ValueError:
        return url
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


_USERINFO = re.compile(r"(?<=://)[^/@\s]+@")


def strip_urls(obj: Any) -> Any:
    """A copy of nested data with the user-info of every URL in a string removed."""
    if isinstance(obj, Mapping):
        return {k: strip_urls(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strip_urls(v) for v in obj]
    if isinstance(obj, str) and "://" in obj and "@" in obj:
        return _USERINFO.sub("", obj)
    return obj


def credential_problem(key: str, value: Any) -> str | None:
    """Why the config value ``key=value`` must not be written (None when it may be)."""
    if value is None or isinstance(value, bool):
        return None
    s = str(value).strip()
    if s.lower() in _REFUSED_BLANK:
        return None
    name = key.split("@")[0].rsplit(".", 1)[-1]
    if name.endswith("_env") or name.endswith("_env_var"):
        if not _ENV_NAME.match(s):
            return (
                "this field takes the NAME of an environment variable (letters, digits, _), "
                "not its value"
            )
        return None
    if s.startswith("${oc.env:") or s.startswith("${env:"):
        return None  # an interpolation is resolved when used, never written resolved
    if _SECRET_NAME.match(name):
        return "a credential was given as a config value"
    if _KEY_SHAPES.search(s) or _BEARER.match(s):
        return "this value looks like an API key"
    why = url_credential(s)
    if why:
        return why
    if _random_token(s):
        return "this value looks like an API key (a long random token)"
    return None


def refusal(key: str, value: Any, why: str) -> str:
    """The one-line refusal for a credential in ``key`` (the value masked)."""
    group = key.split(".", 1)[0] if "." in key else "llm"
    return (
        f"{key}={mask(str(value))}: {why}; it was not used and nothing was written. Keys are "
        f"never put in configs: export the key in an environment variable and set "
        f"{group}.api_key_env=<VARIABLE_NAME>, e.g. {group}.api_key_env=MY_KEY."
    )


def iter_values(obj: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted key, leaf value) for every leaf of nested mappings and lists."""
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            yield from iter_values(v, f"{prefix}{k}.")
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            yield from iter_values(v, f"{prefix}{i}.")
    else:
        yield prefix.rstrip("."), obj


def screen_values(config: Mapping[str, Any]) -> str | None:
    """The refusal for the first config value that looks like a credential, else None.

    ``config`` is a plain (resolved where possible) container; ``hydra`` is skipped (its
    overrides repeat the values screened here and on the command line)."""
    for key, value in iter_values({k: v for k, v in config.items() if k != "hydra"}):
        why = credential_problem(key, value)
        if why:
            return refusal(key, value, why)
    return None


def secret_overrides(argv: Sequence[str]) -> str | None:
    """Refusal message when a command-line override puts a credential in a config value.

    Run before Hydra composes anything: Hydra writes the overrides into its config copies and
    logs, so a key must be refused before it can reach the run directory or the console.
    """
    for arg in argv:
        if arg.startswith("-") or "=" not in arg:
            continue
        key, value = arg.split("=", 1)
        key = key.lstrip("~+")
        why = None
        for v in _override_values(value):
            why = credential_problem(key, v)
            if why:
                return refusal(key, v, why)
    return None


def _override_values(value: str) -> list[str]:
    """The values of one override (a sweep's ``a,b`` or ``[a,b]`` are screened one by one)."""
    v = value.strip()
    if v.startswith("[") and v.endswith("]"):
        v = v[1:-1]
    if "," in v and "://" not in v:
        return [x.strip().strip("'\"") for x in v.split(",")]
    return [v.strip("'\"")]


def redact_saved_configs(hydra_dir: Path) -> None:
    """Blank ``api_key`` values in ``.hydra/*.yaml`` files (copies written by older versions)."""
    pattern = re.compile(rf"^(\s*(?:-\s*)?\S*{SECRET_CONFIG_KEY}\s*[:=]\s*)(?!null\s*$)\S.*$", re.M)
    for f in Path(hydra_dir).glob("*.yaml"):
        text = f.read_text(encoding="utf-8")
        new = pattern.sub(lambda m: m.group(1) + "'<refused>'", text)
        if new != text:
            f.write_text(new, encoding="utf-8")
