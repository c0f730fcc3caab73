"""The project's three file mechanisms for what comes from outside and what goes out.

- :func:`write_atomic`: the ONE writer of every output file (reports, exports, imports,
  summaries, tracker files): a temp file in the same directory, fsync, an atomic rename; never
  through a symbolic link (a link at the destination is refused, its target untouched).
- :func:`confine`: the ONE resolver of a path read from a record, summary or config of a
  finished run: resolved against the run dir, refused (``None``, counted, one warning line)
  when it leaves the dir, directly (``/etc/passwd``, ``../../…``) or through a link.
- :func:`read_json` / :func:`loads_json`: the bounded JSON readers of every file from outside
  (question files, id lists, upstream imports, records on resume): a size and a nesting-depth
  limit checked before the parser runs, so a hostile file is one line naming it
  (:class:`~eqa_runner.errors.UnsafeInputError`), never a ``RecursionError`` traceback.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import tempfile
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from eqa_runner.errors import UnsafeInputError, UnsafeWriteError, UserError
from eqa_runner.redact import redact

log = logging.getLogger(__name__)

MAX_JSON_BYTES = 512 * 1024 * 1024  # a question file or an import; records are read per line
MAX_JSON_DEPTH = 200  # no format the project reads nests deeper than ~10


# ----------------------------------------------------------------------------- writes


def write_atomic(path: Path | str, data: str | bytes, *, redacted: bool = True) -> Path:
    """Write ``data`` to ``path`` whole or not at all; text passes the redaction filter unless
    ``redacted=False`` (bytes never do). A symbolic link at ``path`` is refused."""
    path = Path(path)
    if path.is_symlink():
        raise UnsafeWriteError(
            f"{path}: is a symbolic link (to {os.readlink(path)}); refusing to write through "
            "it: remove the link or write elsewhere"
        )
    if isinstance(data, str):
        data = (redact(data) if redacted else data).encode("utf-8")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644 & ~_umask())
        os.replace(tmp, path)  # replaces a link raced in after the check, never its target
    except BaseException:
        Path(tmp).unlink(missing_ok=True)  # no half-written temp file left behind
        raise
    return path


def refuse_links(d: Path | str, *, within: Path | str | None = None) -> None:
    """Refuse (:class:`UnsafeWriteError`) to write into ``d`` when an entry of it is a link, or
    ``d`` or a dir between ``within`` and ``d`` is one (a writer would follow it)."""
    d = Path(d)
    chain = [d]
    if within is not None:
        chain += [p for p in d.parents if p.is_relative_to(within) and p != Path(within)]
    for p in chain:
        if p.is_symlink():
            raise UnsafeWriteError(
                f"{p}: is a symbolic link; refusing to write through it: "
                "remove the link or write elsewhere"
            )
    if d.is_dir() and not d.is_symlink():
        for entry in d.iterdir():
            if entry.is_symlink():
                raise UnsafeWriteError(
                    f"{entry}: is a symbolic link (to {os.readlink(entry)}); refusing to write "
                    "through it: remove the link or write elsewhere"
                )


@contextmanager
def as_it_was_on_refusal(d: Path | str) -> Iterator[None]:
    """Leave ``d`` byte for byte as it was when the block raises a :class:`UserError` (a
    refused start): a dir it made is removed, a dir it changed is restored from a copy."""
    d = Path(d)
    backup = None
    if d.exists():
        backup = Path(tempfile.mkdtemp(prefix=f".{d.name}.", dir=d.parent))
        shutil.copytree(d, backup / "copy", symlinks=True)
    try:
        yield
    except UserError:
        if d.is_dir() and not d.is_symlink():
            shutil.rmtree(d)
        if backup is not None:
            os.replace(backup / "copy", d)
        raise
    finally:
        if backup is not None:
            shutil.rmtree(backup, ignore_errors=True)


_UMASK: list[int] = []


def _umask() -> int:
    if not _UMASK:
        old = os.umask(0)
        os.umask(old)
        _UMASK.append(old)
    return _UMASK[0]


# ----------------------------------------------------------------------------- confinement

_REFUSED: Counter[str] = Counter()
_FIRST: dict[str, str] = {}
_LOCK = threading.Lock()


def confine(value: Any, run_dir: Path | str, *, what: str = "path") -> Path | None:
    """The file ``value`` (a path read from a record, summary or config of the run in
    ``run_dir``; relative paths are relative to it) when it stays inside ``run_dir`` once every
    link is followed; else ``None``, counted for the command's one line (:func:`refused_line`)."""
    root = Path(run_dir).resolve()
    try:
        raw = Path(str(value))
        resolved = (raw if raw.is_absolute() else root / raw).resolve()
    except (OSError, RuntimeError, ValueError):  # a link loop, a NUL byte
        resolved = None
    if resolved is not None and resolved.is_relative_to(root):
        return resolved
    with _LOCK:
        _REFUSED[what] += 1
        _FIRST.setdefault("example", f"{what} {str(value)[:120]!r} in {root}")
    log.debug("%s: %s %r is outside the run dir; not read", root, what, str(value)[:200])
    return None


def refused_paths() -> dict[str, int]:
    """How many paths :func:`confine` refused in this process, by ``what``."""
    return dict(_REFUSED)


def refused_line(*, reset: bool = True) -> str | None:
    """The one line a command prints when it refused paths: how many, of what, one example
    (the count starts again after it, unless ``reset=False``)."""
    with _LOCK:
        counts, example = dict(_REFUSED), _FIRST.get("example", "")
        if reset:
            _REFUSED.clear()
            _FIRST.clear()
    n = sum(counts.values())
    if not n:
        return None
    kinds = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    return (
        f"[eqa_runner] {n} path(s) named in the records lead outside their run dir (or through a "
        f"link out of it) and were not read ({kinds}; e.g. {example})"
    )


# ----------------------------------------------------------------------------- JSON


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def nesting_depth_over(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether JSON ``text`` nests deeper than ``limit`` (brackets outside strings), without
    parsing: strings are cut out, the brackets become +1/-1 and their running sum is the depth."""
    import numpy as np

    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text)).encode("ascii")
    if len(brackets) <= 2 * limit and brackets.count(b"[") + brackets.count(b"{") <= limit:
        return False
    arr = np.frombuffer(brackets, dtype=np.uint8)
    steps = np.where((arr == ord("[")) | (arr == ord("{")), 1, -1)
    return int(np.cumsum(steps).max(initial=0)) > limit


def loads_json(text: str | bytes, source: str, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` with a nesting limit; bad JSON is one line naming ``source``."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise UnsafeInputError(
                f"{source}: not UTF-8 text ({e.reason} at byte {e.start})"
            ) from None
    if ("[" in text or "{" in text) and nesting_depth_over(text, max_depth):
        raise UnsafeInputError(
            f"{source}: JSON nested more than {max_depth} levels deep; not read (no format "
            "this reads nests that deep)"
        )
    try:
        return json.loads(text)
    except ValueError as e:
        where = f"line {e.lineno} column {e.colno}: " if isinstance(e, json.JSONDecodeError) else ""
        msg = e.msg if isinstance(e, json.JSONDecodeError) else str(e)
        raise UnsafeInputError(
            f"{source}: not valid JSON ({where}{msg}). Re-download or fix the file."
        ) from None
    except RecursionError:  # a depth the scan allowed but this interpreter's stack did not
        raise UnsafeInputError(f"{source}: JSON nested too deeply; not read") from None


def read_json(
    path: Path | str, *, max_bytes: int = MAX_JSON_BYTES, max_depth: int = MAX_JSON_DEPTH
) -> Any:
    """A JSON file from outside, read with a size and a nesting limit (one line naming it)."""
    path = Path(path)
    size = path.stat().st_size
    if size > max_bytes:
        raise UnsafeInputError(
            f"{path}: {size:,} bytes, over the {max_bytes:,}-byte limit for a JSON file; not read"
        )
    return loads_json(path.read_bytes(), str(path), max_depth=max_depth)


def expect_type(
    value: Any, types: type | tuple[type, ...], source: str, field: str, fix: str = ""
) -> Any:
    """``value`` when it is of ``types``; else one line naming the file, item and field."""
    if isinstance(value, types) and not (isinstance(value, bool) and bool not in _as_tuple(types)):
        return value
    names = " or ".join(_json_name(t) for t in _as_tuple(types))
    got = f"{_json_name(type(value))} ({str(value)[:60]!r})"
    raise UnsafeInputError(
        f"{source}: {field} must be {names}, not {got}" + (f"; {fix}" if fix else "")
    )


def _as_tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


_JSON_NAMES = {
    dict: "an object",
    list: "a list",
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "true/false",
    type(None): "null",
}


def _json_name(t: type) -> str:
    return _JSON_NAMES.get(t, t.__name__)
