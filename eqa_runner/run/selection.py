"""Which episodes a run attempts: ``run.episodes`` (ids or a file), ``run.limit``, ``run.shard``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from eqa_runner.errors import ConfigError, DataError
from eqa_runner.types import Episode


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
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            data = json.loads(text)
            if isinstance(data, dict):
                data = list(data)
            return [
                str(x if not isinstance(x, dict) else x.get("question_id", x.get("id")))
                for x in data
            ]
        return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    return [x.strip() for x in s.split(",") if x.strip()]


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


def select_episodes(episodes: Sequence[Episode], run: DictConfig) -> list[Episode]:
    """Apply ``run.episodes`` (ids / file), ``run.limit`` and ``run.shard`` in that order."""
    eps = list(episodes)
    wanted = _read_ids(run.get("episodes"))
    if wanted:
        by_id = {e.episode_id: e for e in eps}
        unknown = [w for w in wanted if w not in by_id]
        if unknown:
            raise DataError(
                f"run.episodes: {len(unknown)} id(s) not in the selected question "
                f"set, e.g. {unknown[:3]}"
            )
        keep = set(wanted)
        eps = [e for e in eps if e.episode_id in keep]
    if run.get("limit") is not None:
        eps = eps[: int(run.limit)]
    shard = parse_shard(run.get("shard"))
    if shard:
        i, n = shard
        eps = eps[i::n]
    return eps
