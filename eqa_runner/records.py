"""Per-episode JSONL records (append-only, one flush per line), the resume index and run locks.

Reading is versioned by content: :func:`read_records` returns complete
:class:`~eqa_runner.types.EpisodeRecord` s, filling the fields that lines written by older
versions lack with the defaults in :data:`RECORD_DEFAULTS` (docs/records.md), so no reader
needs ``r.get(x) or {}`` guards. The defaults, the read-time check of each field's type
(:data:`RECORD_TYPES`) and a new record (:func:`new_record`) all come from the one declaration
of the fields, :class:`~eqa_runner.types.EpisodeRecord`.
"""

from __future__ import annotations

import copy
import gc
import json
import logging
import math
import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from types import UnionType
from typing import Any, Union, cast, get_args, get_origin, get_type_hints, is_typeddict

from eqa_runner.errors import RunDirError
from eqa_runner.redact import redact
from eqa_runner.safe_io import write_atomic
from eqa_runner.types import Episode, EpisodeRecord, RecordField

log = logging.getLogger(__name__)

EPISODES_FILE = "episodes.jsonl"
SUMMARY_FILE = "summary.json"
PROVENANCE_FILE = "provenance.json"  # what produced the records (eqa_runner.run.provenance)
LOCK_FILE = ".eqa_runner.lock"


def _fields(declared: Any = EpisodeRecord) -> dict[str, tuple[Any, RecordField]]:
    """``name -> (static type, RecordField)`` of every :class:`EpisodeRecord` field, in order;
    a field declared without its :class:`RecordField` stops the import."""
    out = {}
    for name, hint in get_type_hints(declared, include_extras=True).items():
        meta = [m for m in getattr(hint, "__metadata__", ()) if isinstance(m, RecordField)]
        if not meta:
            raise TypeError(
                f"{declared.__name__}.{name}: declare it as Annotated[<type>, RecordField(…)]"
            )
        out[name] = (get_args(hint)[0], meta[0])
    return out


def _json_types(hint: Any) -> tuple[type, ...]:
    """The JSON types a static type admits (``str | None``: str, None; a TypedDict: dict)."""
    if get_origin(hint) in (Union, UnionType):
        return tuple(t for arg in get_args(hint) for t in _json_types(arg))
    if is_typeddict(hint):
        return (dict,)
    return (get_origin(hint) or hint,)


def _factory(value: Any) -> Callable[[], Any]:
    """A new copy of a default (a list or object is never shared between records)."""
    if isinstance(value, (list, dict)):
        return partial(copy.copy, value) if value else type(value)
    return lambda: value


# Everything below comes from the one declaration, EpisodeRecord (eqa_runner/types.py).
_FIELDS = _fields()
RECORD_FIELDS: dict[str, RecordField] = {k: f for k, (_, f) in _FIELDS.items()}
_NEW = {k: _factory(f.default) for k, f in RECORD_FIELDS.items()}
# what every line ever written holds (DESIGN.md §3); a line without them is not a record (an
# ok line also needs its ``metrics`` object: an "ok" without a score is not an ok record)
REQUIRED_FIELDS = tuple(k for k, f in RECORD_FIELDS.items() if f.required)
STATUSES: tuple[str, ...] = get_args(_FIELDS["status"][0])
# What a field of an older line holds when it is missing (or null where a container belongs).
RECORD_DEFAULTS: dict[str, Callable[[], Any]] = {
    k: new for k, new in _NEW.items() if not RECORD_FIELDS[k].required
}
# the type of every field a line may hold (checked on read; None is allowed where it is listed)
RECORD_TYPES: dict[str, tuple[type, ...]] = {
    k: tuple(dict.fromkeys(_json_types(t) + ((type(None),) if f.null != "refuse" else ())))
    for k, (t, f) in _FIELDS.items()
    if f.checked and not f.required
}
_CONTAINERS = tuple(k for k, f in RECORD_FIELDS.items() if f.null == "default")
_MERGED = tuple(k for k, f in RECORD_FIELDS.items() if isinstance(f.default, dict) and f.default)
QUARANTINE_SUFFIX = ".quarantine"


def new_record(ep: Episode, subset: str | None) -> EpisodeRecord:
    """The record of an episode not attempted yet: the episode's own fields, its subset, and
    every other field's default (``status`` "error" until the judge has run)."""
    rec = {
        k: _copied(f.default, getattr(ep, k)) if f.from_episode else _NEW[k]()
        for k, f in RECORD_FIELDS.items()
    }
    rec["subset"] = subset
    return cast(EpisodeRecord, rec)


def _copied(default: Any, value: Any) -> Any:
    """An episode's value for a record (its own list, as ``list(ep.extra_answers)``)."""
    return type(default)(value) if isinstance(default, (list, dict)) else value


def incomplete_reason(obj: Any) -> str | None:
    """Why a parsed line is not a complete record (None when it is): the record schema.

    Every line has ``episode_id`` and ``status``; every field has its type
    (:data:`RECORD_TYPES`); an ``ok`` line has its ``metrics`` object, and, unless its judge
    reply was unparsable (``judge_ok: false``), at least one metric, every metric a number."""
    if not isinstance(obj, dict):
        return f"not a JSON object ({type(obj).__name__})"
    missing = [k for k in REQUIRED_FIELDS if k not in obj]
    if missing:
        return f"incomplete record (no {', '.join(missing)})"
    if obj["status"] not in STATUSES:
        return f"status {obj['status']!r} is not {'/'.join(STATUSES)}"
    if not isinstance(obj["episode_id"], (str, int)) or isinstance(obj["episode_id"], bool):
        return "episode_id is not a string"
    for key, types in RECORD_TYPES.items():
        if key in obj and not isinstance(obj[key], types):
            return f"field {key} is a {type(obj[key]).__name__}"
    if obj["status"] == "ok":
        return _ok_reason(obj)
    return None


def _ok_reason(obj: dict[str, Any]) -> str | None:
    metrics = obj.get("metrics")
    if not isinstance(metrics, dict):
        return "incomplete record (an ok line without its metrics object)"
    if obj.get("judge_ok") is False:
        return None  # an unparsable judge reply: counted, no metrics
    if not metrics:
        return "incomplete record (an ok line with no metrics and no judge_ok: false)"
    bad = [k for k, v in metrics.items() if v is not None and not isinstance(v, (int, float))]
    if bad:
        return f"metric {bad[0]} is not a number"
    return None


def complete_record(raw: dict[str, Any]) -> EpisodeRecord:
    """A full :class:`EpisodeRecord` from one parsed line (older lines lack some fields)."""
    rec: dict[str, Any] = dict(raw)
    rec["episode_id"] = str(rec["episode_id"])
    for key, default in RECORD_DEFAULTS.items():
        if key not in rec or (rec[key] is None and key in _CONTAINERS):
            rec[key] = default()
    for key in _MERGED:  # usage: completed counter by counter
        rec[key] = {**RECORD_FIELDS[key].default, **rec[key]}
    return cast(EpisodeRecord, rec)


def artifact_name(episode_id: str, max_len: int = 120) -> str:
    """A file-name-safe name for an episode's artifacts, unique per episode id: when the
    sanitiser changes the id (``a/b`` and ``a:b`` both become ``a_b``), a short hash of the
    exact id is appended."""
    import hashlib

    s = str(episode_id)
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in s)
    if safe == s and len(s) <= max_len and s not in (".", ".."):
        return s
    digest = hashlib.sha256(s.encode()).hexdigest()[:10]
    return f"{safe[: max_len - 11]}-{digest}"


def to_jsonable(obj: Any) -> Any:
    """Plain-JSON copy: numpy scalars/arrays to Python, non-finite floats to None, paths to str."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, (str, int, bool)) or obj is None:
        return obj
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "tolist"):  # numpy arrays and scalars
        return to_jsonable(obj.tolist())
    return str(obj)


class RecordWriter:
    """Appends one JSON line per finished episode and flushes it, so a kill tears at most one line.

    On open, a torn (newline-less) tail left by a killed run is moved to ``<file>.torn`` and
    cut off, so the next record starts on its own line.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.dropped_torn = repair_torn_tail(self.path)
        self.quarantined = quarantine_bad_lines(self.path)
        # unbuffered: a failed write (full disk) leaves nothing queued to fail again at close
        self._fh = self.path.open("ab", buffering=0)

    def write(self, record: EpisodeRecord | dict[str, Any]) -> None:
        line = redact(json.dumps(to_jsonable(record), ensure_ascii=False, allow_nan=False))
        view = memoryview((line + "\n").encode("utf-8"))
        while view:  # a partial write is a torn line: the next writer moves it to .torn
            n = self._fh.write(view)
            view = view[n or 0 :]

    def close(self) -> None:
        if not self._fh.closed:
            try:
                os.fsync(self._fh.fileno())
            except OSError as e:
                log.warning("%s: fsync failed (%s)", self.path, e.strerror)
            self._fh.close()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def repair_torn_tail(path: Path) -> bool:
    """Cut a final line without newline (a killed writer) off ``path``; keep it in ``.torn``."""
    if not path.exists() or path.stat().st_size == 0:
        return False
    with path.open("rb+") as fh:
        size = fh.seek(0, os.SEEK_END)
        fh.seek(max(0, size - 1))
        if fh.read(1) == b"\n":
            return False
        # find the start of the torn line, scanning back block by block (it may exceed a block)
        start, end = 0, size
        while end > 0:
            begin = max(0, end - (1 << 20))
            fh.seek(begin)
            cut = fh.read(end - begin).rfind(b"\n")
            if cut >= 0:
                start = begin + cut + 1
                break
            end = begin
        fh.seek(start)
        torn = fh.read()
        with path.with_suffix(path.suffix + ".torn").open("ab") as side:
            side.write(torn + b"\n")
        fh.truncate(start)
    log.warning(
        "%s: dropped a torn final line (%d bytes, kept in %s.torn)", path, len(torn), path.name
    )
    return True


def quarantine_bad_lines(path: Path) -> int:
    """Move lines that are not complete records (non-JSON, non-object, incomplete) out of
    ``path`` into ``<file>.quarantine`` (atomic rewrite); returns how many were moved. Reads
    one line at a time (a resume of a long run: memory of one record, not of the file)."""
    if not path.exists() or path.stat().st_size == 0:
        return 0
    bad = [(i, why) for i, raw in _lines(path) if (why := _bad_line(raw))]
    if not bad:
        return 0
    bad_at = dict(bad)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with (
        path.with_suffix(path.suffix + QUARANTINE_SUFFIX).open("ab") as side,
        tmp.open("wb") as out,
    ):
        for i, raw in _lines(path):
            (side if i in bad_at else out).write(raw + b"\n")
    os.replace(tmp, path)
    log.warning(
        "%s: moved %d line(s) that are not complete records to %s%s (line %s: %s)",
        path,
        len(bad),
        path.name,
        QUARANTINE_SUFFIX,
        bad[0][0],
        bad[0][1],
    )
    return len(bad)


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(1-based line number, line without its newline) of each non-blank line of ``path``."""
    with path.open("rb") as fh:
        for i, raw in enumerate(fh):
            raw = raw[:-1] if raw.endswith(b"\n") else raw
            if raw.strip():
                yield i + 1, raw


def _bad_line(raw: bytes) -> str | None:
    """Why ``raw`` is not a complete record (None: it is one)."""
    try:
        return incomplete_reason(json.loads(raw))
    except ValueError:
        return "not JSON"
    except RecursionError:
        return "JSON nested too deeply"


def read_records(path: Path) -> list[EpisodeRecord]:
    """All complete records (:func:`complete_record`). A torn final line is dropped with a
    warning (the next writer moves it to ``<file>.torn``); a line that is not a complete record
    (not JSON, not an object, no ``question``/``metrics``/...) is skipped with a warning naming
    the file and line (the next writer moves it to ``<file>.quarantine``), so it can never
    replace a complete record of the same episode.

    The cyclic garbage collector is paused while the file is read: records are trees (no
    cycles, freed by reference counting), and a collection pass over every record already read,
    triggered again and again while a sweep's files are decoded, cost a third of a report's
    reading time (docs/benchmarks.md, issue 27)."""
    with gc_paused():
        return list(iter_records(path))


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off inside the block (as it was before, after it)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def iter_records(path: Path) -> Iterator[EpisodeRecord]:
    """:func:`read_records` one line at a time (memory: one record, not the file)."""
    path = Path(path)
    if not path.exists():
        return
    bad_json: int | None = None  # a line that is not JSON: torn if nothing follows it
    with path.open("rb") as fh:
        for i, raw in enumerate(fh):
            if not raw.strip():
                continue
            if bad_json is not None:
                log.warning(
                    "%s: line %d is not JSON; skipped (quarantined on resume)", path, bad_json + 1
                )
                bad_json = None
            try:
                rec = json.loads(raw)
            except (ValueError, RecursionError):  # not JSON, a line torn mid-char, or nested
                # deeper than the parser goes (a hostile line): quarantined on resume
                bad_json = i
                continue
            why = incomplete_reason(rec)
            if why:
                log.warning("%s: line %d skipped: %s (quarantined on resume)", path, i + 1, why)
                continue
            yield complete_record(rec)
    if bad_json is not None:
        log.warning("%s: dropped torn final line %d", path, bad_json + 1)


def final_records(records: Iterable[EpisodeRecord]) -> dict[str, EpisodeRecord]:
    """One record per episode: the last ok record if any, else the last record."""
    out: dict[str, EpisodeRecord] = {}
    for rec in records:
        eid = str(rec["episode_id"])
        prev = out.get(eid)
        if prev is None or rec["status"] == "ok" or prev["status"] != "ok":
            out[eid] = rec
    return out


def ok_ids(path: Path) -> set[str]:
    """Episode ids that already have an ok record (skipped on resume)."""
    return {eid for eid, r in final_records(read_records(path)).items() if r["status"] == "ok"}


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write JSON through the one writer (:func:`eqa_runner.safe_io.write_atomic`: temp file,
    fsync, rename, never through a link, redacted), so readers never see half a file."""
    text = json.dumps(to_jsonable(obj), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    write_atomic(path, text)


class RunLock:
    """An exclusive lock on a run directory (released by the OS if the process dies)."""

    def __init__(self, run_dir: Path) -> None:
        from filelock import FileLock

        self.path = Path(run_dir) / LOCK_FILE
        self._lock = FileLock(str(self.path))

    def __enter__(self) -> RunLock:
        from filelock import Timeout

        try:
            self._lock.acquire(timeout=0)
        except Timeout:
            raise RunDirError(
                f"{self.path.parent}: another eqa_runner process is writing to this run directory "
                "(lock held). Wait for it to finish, or pick another hydra.run.dir."
            ) from None
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()
