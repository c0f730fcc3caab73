"""Which episodes a run attempts: ``run.episodes`` (ids or a file), ``run.limit``, ``run.shard``."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from eqa_runner.errors import ConfigError, DataError, UnsafeInputError
from eqa_runner.run.config import RunConfig
from eqa_runner.safe_io import expect_type, read_json
from eqa_runner.types import Episode

log = logging.getLogger(__name__)


def _read_ids(spec: Any) -> list[str]:
    if spec is None:
        return []
    if isinstance(spec, (list, tuple)) or OmegaConf.is_list(spec):
        return [str(x) for x in spec]
    s = str(spec)
    path = Path(s)
    if path.suffix in (".json", ".txt") or path.is_file():
        if not path.is_file():
            raise DataError(f"run.episodes={s}: file not found.")
        if path.suffix == ".json":
            return _json_ids(path, s)
        text = path.read_text(encoding="utf-8-sig")  # a BOM (Windows editors) is not an id
        return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    return [x.strip() for x in s.split(",") if x.strip()]


_IDS_HINT = 'give a JSON list of ids (["q1", "q2"]) or a .txt file with one id a line'


def _json_ids(path: Path, spec: str) -> list[str]:
    """The ids of a ``run.episodes`` JSON file, read bounded (size, nesting) and type-checked:
    a list of ids (strings, numbers) or of objects with ``question_id``/``id``, or an object
    keyed by id; anything else is one line naming the file, the item and the field."""
    src = f"run.episodes={spec}"
    try:
        data = read_json(path)
    except UnsafeInputError as e:
        why = str(e).removeprefix(f"{path}: ").removesuffix(" Re-download or fix the file.")
        raise DataError(f"{src}: {why}; {_IDS_HINT}") from None
    if isinstance(data, dict):
        data = list(data)
    expect_type(data, list, src, "the file", _IDS_HINT)
    ids = []
    for i, x in enumerate(data):
        if isinstance(x, dict):
            x = x.get("question_id", x.get("id"))
            expect_type(x, (str, int), src, f"item {i}: question_id/id", _IDS_HINT)
        else:
            expect_type(x, (str, int), src, f"item {i}", _IDS_HINT)
        ids.append(str(x))
    return ids


def parse_shard(shard: str | None) -> tuple[int, int] | None:
    if not shard:
        return None
    try:
        i, n = (int(x) for x in str(shard).split("/"))
    except ValueError:
        raise ConfigError(f"run.shard={shard!r}: expected i/n, e.g. run.shard=0/8") from None
    if n < 1 or not 0 <= i < n:
        raise ConfigError(f"run.shard={shard!r}: need 0 <= i < n")
    return i, n


def _task_filters(task: Any) -> str:
    """The task's own filters that are set (``task.categories=[...]``; ``task``: its typed
    config, a benchmark's schema has the filters it has), for an error message."""
    values = {k: getattr(task, k, None) for k in ("categories", "subset", "scenes", "types")}
    set_ = [f"task.{k}={_show(v)}" for k, v in values.items() if v not in (None, [], "")]
    return ", ".join(set_)


def _show(v: Any) -> str:
    if OmegaConf.is_config(v):
        v = OmegaConf.to_container(v, resolve=True)
    return json.dumps(v) if isinstance(v, (list, dict)) else str(v)


def select_episodes(episodes: Sequence[Episode], run: RunConfig, task: Any = None) -> list[Episode]:
    """Apply ``run.episodes`` (ids / file), ``run.limit`` and ``run.shard`` in that order.

    An empty selection is an error naming the filter that emptied it (a run of nothing would
    exit 0 with nothing to show)."""
    eps = list(episodes)
    if not eps:
        filters = _task_filters(task)
        raise ConfigError(
            f"no episodes selected: {filters} matched no question of the data"
            if filters
            else "no episodes selected: the task's question file holds none"
        )
    spec = run.episodes
    wanted = _read_ids(spec)
    if spec is not None and not wanted:
        raise ConfigError(
            f"run.episodes={_show(spec)}: an empty episode list selects nothing; "
            "leave run.episodes unset (null) to run every episode."
        )
    if wanted:
        by_id = {e.episode_id: e for e in eps}
        unknown = [w for w in wanted if w not in by_id]
        if unknown:
            raise DataError(
                f"run.episodes: {len(unknown)} id(s) not in the selected question "
                f"set, e.g. {unknown[:3]}"
            )
        keep = set(wanted)
        if len(keep) < len(wanted):  # a set of ids: each selected episode runs once
            log.warning(
                "run.episodes lists %d id(s) more than once; each episode runs once",
                len(wanted) - len(keep),
            )
        eps = [e for e in eps if e.episode_id in keep]
    if run.limit is not None:
        if run.limit < 1:
            raise ConfigError(f"run.limit={run.limit}: selects no episode; must be >= 1 (or null)")
        eps = eps[: run.limit]
    shard = parse_shard(run.shard)
    if shard:
        i, n = shard
        eps = eps[i::n]
        if not eps:
            raise ConfigError(
                f"run.shard={run.shard}: this shard is empty ({n} shards of a selection smaller "
                f"than {n}); use fewer shards"
            )
    return eps
