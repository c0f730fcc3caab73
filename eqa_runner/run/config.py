"""Typed schema of the ``run:`` block (in Hydra's ConfigStore: a typo fails at composition)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from eqa_runner.schema import bounded, one_of

T = TypeVar("T")


@dataclass
class RunConfig:
    """Run-loop knobs users type on the command line (``run.limit=5`` ...)."""

    output_dir: str | None = None  # defaults to Hydra's runtime output dir
    limit: int | None = bounded(None, ge=0)  # keep the first N selected episodes
    episodes: Any = None  # list of ids, a comma string, or a file of ids (JSON list or lines)
    shard: str | None = None  # "i/n": keep every n-th episode starting at i
    num_shards: int | None = bounded(None, ge=1)  # sweeps: expands to run.shard=0/n..n-1/n
    workers: int = bounded(4, ge=1)  # concurrent episodes
    seed: int = 1234
    resume: bool = False
    # resume a dir that has records but no provenance.json (you vouch they came from this config)
    adopt: bool = False
    dry_run: bool = False
    save_artifacts: bool = False
    # a top-down map PNG per exploration episode (maps/<episode>.png); with save_artifacts also
    # an animated replay (frames beside the map position)
    trajectory_maps: bool = True
    episode_timeout_s: float = bounded(1800.0, gt=0)
    # per-step part timings (render, fuse, plan, encode, prompt, model …) of exploration
    # episodes in each step's trace entry (trace.steps[i].profile); bench/step_profile.py
    profile: bool = False
    progress: bool = True
    cache: bool = True  # disk cache of model calls
    cache_dir: str = "${oc.env:EQA_RUNNER_CACHE_DIR,.cache/eqa_runner}"
    bootstrap_samples: int = bounded(1000, ge=0)
    # summary intervals: resample whole scenes / episode histories (cluster) or episodes (iid)
    interval: str = one_of("cluster", ("cluster", "iid"))
    # stop starting episodes before the spend (records + in-flight estimate) would pass this
    max_cost_usd: float | None = bounded(None, gt=0)
    allow_unpriced: bool = False  # with a cap: count calls to models without a price as $0
    extra: dict[str, Any] = field(default_factory=dict)


def typed(node: Any, schema: type[T]) -> T:
    """``schema``'s object from a config node: the composed (typed) node as
    ``OmegaConf.to_object`` gives it, or a recorded one (a run dir's ``.hydra/config.yaml``,
    untyped; keys an older version did not write take the schema's defaults, keys it no longer
    has are left out)."""
    from dataclasses import fields

    from omegaconf import OmegaConf

    if OmegaConf.is_config(node) and OmegaConf.get_type(node) is schema:
        return cast(T, OmegaConf.to_object(node))
    names = {f.name for f in fields(cast(Any, schema))}
    data = OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node
    known = {k: v for k, v in cast(dict[str, Any], data or {}).items() if k in names}
    return cast(T, OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(schema), known)))
