"""What produced a run directory: the config that matters for its results, and its fingerprint.

A run directory records ``provenance.json`` before its first record: the result-relevant part
of the composed config (everything except plumbing such as paths, concurrency, caches,
endpoints and which episodes are selected) and its SHA-256 fingerprint. A resume or a re-run
into the same directory with another fingerprint is refused before anything is written, naming
the keys that differ, so a directory's records always come from the config it names.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from eqa_runner.errors import RunDirError

PROVENANCE_FILE = "provenance.json"

# Keys that never change a record's content: where files are, how fast and with how many
# workers it runs, which endpoint serves a model, and which episodes are selected (a resume may
# extend a run with a larger ``run.limit``). ``report --compare`` never shows them as ablation
# axes either.
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
    "hydra.*",
    "logger",
    "logger.*",
)


def is_plumbing(key: str) -> bool:
    """True for a dotted config key that does not affect results (see :data:`PLUMBING_KEYS`)."""
    return any(fnmatch.fnmatchcase(key, pat) for pat in PLUMBING_KEYS)


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
    return {k: flat[k] for k in sorted(flat) if not is_plumbing(k)}


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
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise RunDirError(
            f"{path}: unreadable ({type(e).__name__}); it says which config produced this run "
            "directory: restore it, or start a new run in a new hydra.run.dir."
        ) from None
    if not isinstance(data, dict) or "fingerprint" not in data:
        raise RunDirError(f"{path}: not a provenance record; start a new hydra.run.dir.")
    return data


def check_same_config(run_dir: Path, config: Mapping[str, Any]) -> None:
    """Refuse (before anything is written) when ``run_dir`` was produced by another config."""
    old = read_provenance(run_dir)
    if old is None or old["fingerprint"] == fingerprint(config):
        return
    before, now = old.get("config") or {}, result_config(config)
    diff = differing_keys(before, now)
    shown = ", ".join(
        f"{k}: {_short(before[k]) if k in before else 'unset'} -> "
        f"{_short(now[k]) if k in now else 'unset'}"
        for k in diff[:5]
    )
    more = f" (+{len(diff) - 5} more)" if len(diff) > 5 else ""
    raise RunDirError(
        f"{Path(run_dir)} was produced by another config ({shown}{more}); its records would be "
        "mislabelled. Resume with the same settings, or start a new hydra.run.dir."
    )


def provenance_record(config: Mapping[str, Any], **extra: Any) -> dict[str, Any]:
    """What ``provenance.json`` holds: fingerprint, the result config and ``extra`` facts."""
    return {"fingerprint": fingerprint(config), "config": result_config(config), **extra}


def _short(v: Any, n: int = 40) -> str:
    s = json.dumps(v, default=str)
    return s if len(s) <= n else s[: n - 1] + "…"
