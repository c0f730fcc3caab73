"""What produced a run directory: one fingerprint of the config and the inputs behind its records.

A run directory records ``provenance.json`` before its first record: the result-relevant part
of the composed config (everything except plumbing such as paths, concurrency, caches,
endpoints and which episodes are selected), the content hashes of its inputs (the question
file(s) and other data files, every prompt file, the judge's inputs such as a blind run's
records, the scene files and frame folders the selected episodes read:
:mod:`eqa_runner.run.content_hashes`) and one SHA-256 fingerprint over both. A resume or a
re-run into the same directory with another config value or another input content is refused
before anything is written, naming what differs, so a directory's records always come from
what it names (the scenes compared are those both starts read: a resume may select more). A
path may change (``task.questions_file``, ``prompts.dir``) as long as the content it points to
does not. A directory with records but no provenance is refused unless ``run.adopt=true``.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eqa_runner.errors import RunDirError
from eqa_runner.records import PROVENANCE_FILE
from eqa_runner.safe_io import read_json

__all__ = ["PROVENANCE_FILE"]  # re-exported: the run dir code names it from here

# Keys that never change a record's content: where files are, how fast and with how many
# workers it runs, which endpoint serves a model, which episodes are selected (a resume may
# extend a run with a larger ``run.limit``), and how the summary alone is computed.
# ``report --compare`` never shows them as ablation axes either.
PLUMBING_KEYS: tuple[str, ...] = (
    "run.output_dir",
    "run.limit",
    "run.episodes",
    "run.shard",
    "run.num_shards",
    "run.workers",
    "run.cache_dir",
    "run.cache",
    "run.progress",
    "run.resume",
    "run.dry_run",
    "run.save_artifacts",
    "run.trajectory_maps",
    "run.episode_timeout_s",
    "run.profile",
    "run.bootstrap_samples",
    "run.max_cost_usd",
    "run.allow_unpriced",
    "task.data_dir",
    "task.questions_file",
    "task.episodes_dir",
    "task.scenes_dir",
    "task.check_data",
    "prompts.dir",
    "sim.gpu_device_id",
    "sim.instances",
    "*.api_base",
    "*.api_key_env",
    "*.api_key",
    "*.timeout_s",
    "*.max_retries",
    "*.backoff_base_s",
    "*.backoff_max_s",
    "*.max_concurrent_calls",
    "*.transport",
    "*.input_usd_per_mtok",
    "*.output_usd_per_mtok",
    "*.direct_http",
    "*.concurrency",
    "run.interval",
    # how the summary's headline treats an error record: no record changes (a resume may
    # switch it, and a run dir recorded before the key existed has none)
    "judge.error_records",
    "run.adopt",
    "hydra.*",
    "logger",
    "logger.*",
)


# input sections a run dir recorded before issue 33 lacks (not a difference when absent)
NEW_SECTIONS = ("files", "scenes")
# input sections that follow the selected episodes (``run.limit`` may grow on a resume): only
# the scene files / frame folders both starts read are compared
SELECTED_SECTIONS = ("scenes",)


def is_plumbing(key: str, inputs: Sequence[str] = ()) -> bool:
    """True for a dotted config key that does not affect results (see :data:`PLUMBING_KEYS`);
    ``inputs``: the judge's keys naming another run (:func:`judge_input_keys`), whose content
    hash is an input instead."""
    return key in inputs or any(fnmatch.fnmatchcase(key, pat) for pat in PLUMBING_KEYS)


def judge_input_keys(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The dotted keys of the other runs the config's judge declares it reads (``RunInput``)."""
    from eqa_runner.scoring.declare import declaration_for

    d = declaration_for(config)
    return () if d is None else tuple(d.input_keys())


def flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    """Nested mappings to dotted keys; lists are kept as values (compared as a whole)."""
    if isinstance(obj, Mapping) and obj:
        out: dict[str, Any] = {}
        for k, v in obj.items():
            out.update(flatten(v, f"{prefix}{k}."))
        return out
    return {prefix.rstrip("."): obj}


def result_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The flattened, resolved config without plumbing keys, sorted by key."""
    flat = flatten(config)
    inputs = judge_input_keys(config)
    return {k: flat[k] for k in sorted(flat) if not is_plumbing(k, inputs)}


def fingerprint(config: Mapping[str, Any]) -> str:
    """SHA-256 of the result-relevant config (canonical JSON)."""
    blob = json.dumps(result_config(config), sort_keys=True, default=str, ensure_ascii=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def differing_keys(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """Dotted keys whose values differ between two result configs (or exist in one only)."""
    missing = object()
    keys = sorted(set(a) | set(b))
    canon = lambda v: json.dumps(v, sort_keys=True, default=str)  # noqa: E731
    return [
        k
        for k in keys
        if a.get(k, missing) is missing
        or b.get(k, missing) is missing
        or canon(a[k]) != canon(b[k])
    ]


def read_provenance(run_dir: Path) -> dict[str, Any] | None:
    """The recorded provenance of a run directory, or None when it has none."""
    path = Path(run_dir) / PROVENANCE_FILE
    if not path.is_file():
        return None
    try:
        data = read_json(path)
    except (OSError, ValueError) as e:
        raise RunDirError(
            f"{path}: unreadable ({type(e).__name__}); it says which config produced this run "
            "directory: restore it, or start a new run in a new hydra.run.dir."
        ) from None
    if not isinstance(data, dict) or "fingerprint" not in data:
        raise RunDirError(f"{path}: not a provenance record; start a new hydra.run.dir.")
    return data


def input_hashes(
    data: Mapping[str, Any],
    prompts: Mapping[str, Mapping[str, Any]],
    judge_files: Any = (),
    config: Mapping[str, Any] | None = None,
) -> dict[str, dict[str, str]]:
    """The content hashes behind the records: ``data`` (a task's ``describe()``: every
    ``*_sha256`` entry), ``prompts`` (name → record with ``sha256``), ``judge_files``
    (files the judge reads, hashed here; missing files are left out) and, with ``config``, the
    files its ``policy.*_file`` / ``judge.*_file`` keys name (an imported predictions file)."""
    judge: dict[str, str] = {}
    for f in judge_files:
        p = Path(f)
        if p.is_file():
            judge[p.name] = file_sha256(p)
    out = {
        "data": {k: str(v) for k, v in sorted(data.items()) if k.endswith("_sha256") and v},
        "prompts": {n: str(p["sha256"]) for n, p in sorted(prompts.items())},
        "judge": judge,
    }
    if config is not None:
        out["files"] = config_file_hashes(config)
    return out


def config_file_hashes(config: Mapping[str, Any]) -> dict[str, str]:
    """``{key: sha256}`` of every file a ``policy.*_file`` / ``judge.*_file`` key names (the
    task's files are in its ``describe()``)."""
    out = {}
    for key, value in sorted(flatten(dict(config)).items()):
        if key.split(".", 1)[0] in ("policy", "judge") and key.endswith("_file") and value:
            p = Path(str(value))
            if p.is_file():
                out[key] = file_sha256(p)
    return out


_HASHES: dict[tuple[str, int, int], str] = {}


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's content, computed once per (path, size, mtime) in this process."""
    st = Path(path).stat()
    key = (str(Path(path).resolve()), st.st_size, st.st_mtime_ns)
    if key not in _HASHES:
        h = hashlib.sha256()
        with Path(path).open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        _HASHES[key] = h.hexdigest()
    return _HASHES[key]


def run_fingerprint(config: Mapping[str, Any], inputs: Mapping[str, Any] | None) -> str:
    """SHA-256 over the result config and the input content hashes."""
    blob = json.dumps(
        {"config": result_config(config), "inputs": inputs or {}},
        sort_keys=True,
        default=str,
        ensure_ascii=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def differences(
    old: Mapping[str, Any], config: Mapping[str, Any], inputs: Mapping[str, Any] | None
) -> list[str]:
    """What differs between a recorded provenance and this start (``key: old -> new``)."""
    keys = judge_input_keys(config)
    before = {k: v for k, v in (old.get("config") or {}).items() if not is_plumbing(k, keys)}
    now = result_config(config)
    out = [
        f"{k}: {_short(before[k]) if k in before else 'unset'} -> "
        f"{_short(now[k]) if k in now else 'unset'}"
        for k in differing_keys(before, now)
    ]
    old_inputs = old.get("inputs")
    if isinstance(old_inputs, Mapping) and inputs is not None:
        for section in sorted(set(old_inputs) | set(inputs)):
            if section not in old_inputs and section in NEW_SECTIONS:
                continue  # recorded since issue 33: a run dir from before has no such section
            a, b = old_inputs.get(section) or {}, inputs.get(section) or {}
            if section in SELECTED_SECTIONS:  # another selection reads other scenes
                a, b = ({k: v for k, v in x.items() if k in a and k in b} for x in (a, b))
            for name in differing_keys(a, b):
                what = "content hash" if name in a and name in b else "file"
                out.append(f"{section} {name} {what}: {_hash(a.get(name))} -> {_hash(b.get(name))}")
    return out


def check_same_config(
    run_dir: Path,
    config: Mapping[str, Any],
    inputs: Mapping[str, Any] | None = None,
    *,
    has_records: bool = False,
    adopt: bool = False,
) -> None:
    """Refuse (before anything is written) when ``run_dir`` was produced by another config or
    other inputs, or holds records without a provenance (unless ``adopt``)."""
    old = read_provenance(run_dir)
    if old is None:
        if has_records and not adopt:
            raise RunDirError(
                f"{Path(run_dir)} holds records but no {PROVENANCE_FILE}, so nothing says which "
                "config and data produced them. Pass run.adopt=true to label them with this "
                "config (you vouch that it produced them), or start a new hydra.run.dir."
            )
        return
    diff = differences(old, config, inputs)
    if not diff:
        return
    more = f" (+{len(diff) - 5} more)" if len(diff) > 5 else ""
    raise RunDirError(
        f"{Path(run_dir)} was produced by another config ({'; '.join(diff[:5])}{more}); its "
        "records would be mislabelled. Resume with the same settings and files, or start a new "
        "hydra.run.dir."
    )


def provenance_record(
    config: Mapping[str, Any], inputs: Mapping[str, Any] | None = None, **extra: Any
) -> dict[str, Any]:
    """What ``provenance.json`` holds: the fingerprint, the result config, the input hashes and
    ``extra`` facts."""
    rec = {"fingerprint": run_fingerprint(config, inputs), "config": result_config(config)}
    return {**rec, "inputs": dict(inputs or {}), **extra}


def with_new_selected(
    old: Mapping[str, Any], config: Mapping[str, Any], inputs: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """``old`` provenance with the :data:`SELECTED_SECTIONS` entries this start reads for the
    first time added (a resume with a larger ``run.limit``) and its fingerprint recomputed; None
    when nothing is new. Call after :func:`check_same_config` passed."""
    old_inputs = old.get("inputs")
    if not isinstance(old_inputs, Mapping) or not inputs:
        return None
    merged, added = dict(old_inputs), False
    for section in SELECTED_SECTIONS:
        before, now = dict(old_inputs.get(section) or {}), inputs.get(section) or {}
        new = {k: v for k, v in now.items() if k not in before}
        if new:
            merged[section], added = dict(sorted({**before, **new}.items())), True
    if not added:
        return None
    return {**old, "inputs": merged, "fingerprint": run_fingerprint(config, merged)}


def judge_record(judge_config: Mapping[str, Any], inputs: Mapping[str, Any]) -> dict[str, Any]:
    """A rejudge's provenance: the judge's result config (``judge.*`` without plumbing), its
    prompt and input hashes, and one fingerprint over them (names ``rejudged-<tag>`` files)."""
    config = result_config({"judge": dict(judge_config)})
    blob = json.dumps({"config": config, "inputs": inputs}, sort_keys=True, default=str)
    fp = hashlib.sha256(blob.encode()).hexdigest()
    return {"judge_fingerprint": fp, "config": config, "inputs": dict(inputs)}


def check_same_judge(path: Path, new: Mapping[str, Any], *, tag: str) -> None:
    """Refuse resuming ``rejudged-<tag>`` outputs that another judge wrote (naming what
    differs); ``path`` holds their recorded :func:`judge_record`."""
    try:
        old = read_json(path)
    except (OSError, ValueError):
        old = {}
    if old.get("judge_fingerprint") == new["judge_fingerprint"]:
        return
    a, b = old.get("config") or {}, new["config"]
    diff = [f"{k}: {_short(a.get(k))} -> {_short(b.get(k))}" for k in differing_keys(a, b)]
    oi, ni = old.get("inputs") or {}, new["inputs"]
    for section in sorted(set(oi) | set(ni)):
        x, y = oi.get(section) or {}, ni.get(section) or {}
        diff += [
            f"{section} {n}: {_hash(x.get(n))} -> {_hash(y.get(n))}" for n in differing_keys(x, y)
        ]
    what = "; ".join(diff[:5]) or f"{Path(path).name} unreadable"
    raise RunDirError(
        f"--tag {tag}: these rejudged records were scored by another judge ({what}); they would "
        "be labelled with this judge. Pass another --tag for this judge."
    )


def _hash(v: Any) -> str:
    return f"{v[:12]}…" if isinstance(v, str) else "none"


def _short(v: Any, n: int = 40) -> str:
    s = json.dumps(v, default=str)
    return s if len(s) <= n else s[: n - 1] + "…"
