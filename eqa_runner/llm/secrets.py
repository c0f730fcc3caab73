"""Keeping API keys out of configs and run directories.

One screen (:func:`screen_values`) looks at every composed config value before anything is
written (Hydra's callback runs it before the run directory is made, the run loop again for
in-process runs): a value that looks like a credential is refused naming the field, with the
value masked. The shapes and names are a table (:mod:`eqa_runner.redact`); four kinds:

- a field whose *name* says it holds a secret, matched by parts
  (:func:`eqa_runner.redact.credential_name`: ``openai_api_key``, ``hf_token``,
  ``Ocp-Apim-Subscription-Key``, ``X-Api-Token``, … anywhere, e.g. in
  ``llm.extra_params.headers`` or ``hydra.job.env_set``) with a value;
- a value that looks like a key whatever its field (provider key prefixes such as ``sk-``,
  ``Bearer …``, a URL with a password or a credential query such as ``?key=``, ``?code=``,
  ``?subscription-key=``, long random strings that are not made of words);
- a ``name=value;…`` string (a connection string) one of whose names is a credential name
  (``AccountKey``, ``Password``, ``Pwd``);
- an ``*_env`` field (the NAME of an environment variable) holding something that is not a
  name, or a name that is itself key-shaped (``hf_…``, 32+ hex digits, ``sk-…``).

Every value refused here, and the value of every variable an ``*_env`` field names, is
registered with the redaction filter (:mod:`eqa_runner.redact`), so it never reaches a sink.

URLs are written without user-info (:func:`strip_userinfo`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from eqa_runner.redact import KEY_SHAPES, credential_name, register, secret_pair_name

SECRET_CONFIG_KEY = "api_key"  # config keys with this last component must never hold a value

_BEARER = re.compile(r"^\s*(bearer|basic|token)\s+\S{8,}", re.I)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_HEX_KEY = re.compile(r"^(?=.*[a-fA-F])(?=.*[0-9])[0-9a-fA-F]{32,}$")
_REFUSED_BLANK = ("", "null", "none", "~")


def mask(value: str) -> str:
    """A credential-shaped value as it may be shown: its first 3 characters and its length."""
    v = str(value)
    return f"{v[:3]}…({len(v)} chars)" if len(v) > 6 else "…"


_RUN = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+|[^A-Za-z0-9]+")
_WORD = re.compile(r"[A-Z]?[a-z]{2,}")
_VOWEL = re.compile(r"[aeiouyAEIOUY]")


def _random_token(s: str) -> bool:
    """A long single token mixing upper case, lower case and digits that is not made of words:
    random keys have short character-class runs (about 1.9 characters on average) and few
    word-like runs; ``AblationRunQwen25VL72BInstructSeed1234`` has runs of 3.8 and is 71 %
    words. Ids joined by ``-`` / ``_`` (``scene_00843_DYehNKdT76V_floor0``) are judged by their
    longest part (the corpus in ``tests/reliability/fixtures/identifiers.txt``)."""
    if len(s) < 32 or len(s) > 512 or any(c in s for c in " /\\.:@${}=,"):
        return False
    part = max(re.split(r"[-_]", s), key=len)
    if len(part) < 24:
        return False
    classes = sum(bool(re.search(p, part)) for p in ("[a-z]", "[A-Z]", "[0-9]"))
    if classes < 3 or len(set(part)) < 14:
        return False
    mean_run = len(part) / len(_RUN.findall(part))
    words = sum(len(w) for w in _WORD.findall(part) if _VOWEL.search(w)) / len(part)
    return mean_run < 3.2 and words < 0.5


def key_shaped(s: str) -> bool:
    """A value shaped like a key: a provider prefix (``sk-``, ``hf_`` …), 32+ hex digits, or a
    long random token."""
    return bool(KEY_SHAPES.search(s) or _HEX_KEY.match(s) or _random_token(s))


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
        if v and secret_pair_name(k, query=True):
            return f"a URL with a credential in its query ({k}=…)"
    return None


_PAIR = re.compile(r"^\s*([A-Za-z][A-Za-z0-9 _.-]{0,40}?)\s*=\s*(.*?)\s*$")


def structured_credential(value: str) -> str | None:
    """Why a ``name=value;…`` string (an Azure connection string, an ODBC string) carries a
    credential (``AccountKey=…``, ``Password=…``, ``Pwd=…``, ``SharedAccessSignature=…``)."""
    if "=" not in value:
        return None
    for part in value.split(";"):
        m = _PAIR.match(part)
        if m and m.group(2).strip("{}'\"") and secret_pair_name(m.group(1).replace(" ", "")):
            return f"a connection string with a credential in it ({m.group(1)}=…)"
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
        return _env_name_problem(s)
    if s.startswith("${oc.env:") or s.startswith("${env:"):
        return None  # an interpolation is resolved when used, never written resolved
    if isinstance(value, str) and credential_name(name):
        return "a credential was given as a config value"
    if KEY_SHAPES.search(s) or _BEARER.match(s):
        return "this value looks like an API key"
    why = url_credential(s) or structured_credential(s)
    if why:
        return why
    if _random_token(s):
        return "this value looks like an API key (a long random token)"
    return None


def _env_name_problem(s: str) -> str | None:
    """Why the value of an ``*_env`` field is not the NAME of an environment variable."""
    if not _ENV_NAME.match(s):
        return (
            "this field takes the NAME of an environment variable (letters, digits, _), "
            "not its value"
        )
    if key_shaped(s):
        return (
            "this field takes the NAME of an environment variable, and this looks like the key "
            "itself"
        )
    return None


# keys whose credential is given another way than an ``api_key_env`` (the fix the refusal names)
KEY_FIXES = {
    "logger.mlflow.": "MLflow reads them from the environment: export MLFLOW_TRACKING_USERNAME "
    "and MLFLOW_TRACKING_PASSWORD (or MLFLOW_TRACKING_TOKEN) and keep MLFLOW_TRACKING_URI "
    "without user:password@ (e.g. https://mlflow.example.org)",
    "logger.wandb.": "W&B reads its key from the environment: export WANDB_API_KEY "
    "(or run `wandb login`)",
}


def refusal(key: str, value: Any, why: str) -> str:
    """The one-line refusal for a credential in ``key`` (the value masked)."""
    group = key.split(".", 1)[0] if "." in key else "llm"
    fix = next((f for prefix, f in KEY_FIXES.items() if key.startswith(prefix)), None)
    fix = fix or (
        f"export the key in an environment variable and set {group}.api_key_env="
        f"<VARIABLE_NAME>, e.g. {group}.api_key_env=MY_KEY"
    )
    return (
        f"{key}={mask(str(value))}: {why}; it was not used and nothing was written. Keys are "
        f"never put in configs: {fix}."
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

    ``config`` is a plain (resolved where possible) container, ``hydra`` included
    (``hydra.job.env_set`` from a config file or ``+hydra.job.env_set.X=…``); the override
    strings Hydra keeps under ``hydra.overrides`` are screened as the ``key=value`` they are.
    The value of every variable an ``*_env`` field names is registered for redaction."""
    import os

    for key, value in iter_values(config):
        if key.startswith("hydra.overrides."):
            why = secret_overrides([str(value)])
            if why:
                return why
            continue
        why = credential_problem(key, value)
        if why:
            register(str(value))
            return refusal(key, value, why)
        if key.endswith("_env") and isinstance(value, str) and value:
            register(os.environ.get(value, ""))
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
                register(v)
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
    from eqa_runner.safe_io import write_atomic

    pattern = re.compile(rf"^(\s*(?:-\s*)?\S*{SECRET_CONFIG_KEY}\s*[:=]\s*)(?!null\s*$)\S.*$", re.M)
    for f in Path(hydra_dir).glob("*.yaml"):
        text = f.read_text(encoding="utf-8")
        new = pattern.sub(lambda m: m.group(1) + "'<refused>'", text)
        if new != text:
            write_atomic(f, new)
