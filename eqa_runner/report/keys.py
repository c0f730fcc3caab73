"""Config keys as a report sees them: flattened, plumbing ignored, and which differ between runs."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from eqa_runner.run.provenance import PLUMBING_KEYS, flatten, is_plumbing, judge_input_keys

__all__ = ["GROUPS", "IGNORED_KEYS", "cell", "config_key", "differing_keys", "flatten"]

# run plumbing: never an ablation axis (paths, concurrency, caches, endpoints); the one list,
# shared with the run's provenance fingerprint
IGNORED_KEYS = PLUMBING_KEYS
# config groups whose choice is shown as one column (``policy=single``) instead of its sub-keys
GROUPS = ("task", "policy", "llm", "judge", "sim", "experiment")


def is_ignored(key: str, inputs: Sequence[str] = ()) -> bool:
    return is_plumbing(key, inputs)


def config_key(config: dict[str, Any]) -> str:
    """The config without plumbing keys, as one comparable string (shards of one config match)."""
    inputs = judge_input_keys(config)
    flat = {k: v for k, v in flatten(config).items() if not is_ignored(k, inputs)}
    return json.dumps(flat, sort_keys=True, default=str)


def cell(v: Any) -> str:
    """A config value as a table cell."""
    if isinstance(v, (list, dict)):
        return json.dumps(v)
    return "null" if v is None else str(v)


def differing_keys(
    configs: Sequence[dict[str, Any]], choices: Sequence[Mapping[str, str]]
) -> list[str]:
    """Config keys (dotted, or a group name for a group choice) that differ between runs.

    A group's choice (``policy``) replaces its sub-keys (``policy.num_frames``) unless a sub-key
    also varies between runs with the same choice (then it is shown too).
    """
    flats = []
    for config, chosen in zip(configs, choices, strict=True):
        inputs = judge_input_keys(config)
        f = {k: v for k, v in flatten(config).items() if not is_ignored(k, inputs)}
        for g, choice in chosen.items():
            f[g] = choice
        flats.append(f)
    keys: list[str] = []
    for f in flats:
        for k in f:
            if k not in keys:
                keys.append(k)
    missing = object()

    def values(k: str) -> list[str]:
        return [json.dumps(f.get(k, missing), sort_keys=True, default=str) for f in flats]

    diff = [k for k in keys if len(set(values(k))) > 1]
    groups = [g for g in GROUPS if g in diff]
    keep = []
    for k in diff:
        g = k.split(".", 1)[0]
        if g in groups and k != g:
            by_choice: dict[str, set[str]] = {}
            for f, v in zip(flats, values(k), strict=False):
                by_choice.setdefault(str(f.get(g)), set()).add(v)
            if all(len(vs) == 1 for vs in by_choice.values()):
                continue  # follows from the group choice
        keep.append(k)
    # group choices first, in GROUPS order, then the dotted keys in config order
    return [g for g in GROUPS if g in keep] + [k for k in keep if k not in GROUPS]
