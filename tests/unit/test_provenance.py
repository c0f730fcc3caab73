"""Run provenance: which config keys count for results, the fingerprint and the refusal."""

from __future__ import annotations

import json

import pytest

from eqa_runner.errors import RunDirError
from eqa_runner.run.provenance import (
    PROVENANCE_FILE,
    check_same_config,
    differing_keys,
    fingerprint,
    is_plumbing,
    provenance_record,
    result_config,
)

BASE = {
    "task": {"name": "express", "data_dir": "/data/a", "split": "val"},
    "policy": {"name": "fbe", "proposer": {"planner": {"voxel_size": 0.1}}},
    "llm": {"model": "openai/gpt-4o-mini", "api_base": None, "temperature": 0.2},
    "judge": {"model": "openai/gpt-4o-mini-2024-07-18", "api_base": "http://x"},
    "run": {"seed": 1, "workers": 4, "limit": 10, "resume": False},
}


def _with(**changes):
    cfg = json.loads(json.dumps(BASE))
    for dotted, v in changes.items():
        node = cfg
        *path, last = dotted.split("__")
        for p in path:
            node = node[p]
        node[last] = v
    return cfg


@pytest.mark.parametrize(
    "key", ["run.workers", "run.limit", "task.data_dir", "judge.api_base", "llm.api_base",
            "hydra.run.dir", "run.resume", "prompts.dir", "sim.gpu_device_id"],
)  # fmt: skip
def test_plumbing_keys(key):
    assert is_plumbing(key)


@pytest.mark.parametrize(
    "key", ["run.seed", "llm.model", "llm.temperature", "judge.model", "policy.num_frames",
            "policy.proposer.planner.voxel_size", "task.split", "sim.hfov_deg"],
)  # fmt: skip
def test_result_keys(key):
    assert not is_plumbing(key)


def test_plumbing_changes_keep_the_fingerprint():
    a = fingerprint(BASE)
    assert a == fingerprint(_with(run__workers=32, run__limit=None, task__data_dir="/elsewhere"))
    assert a == fingerprint(_with(judge__api_base="http://other:8000/v1"))


def test_result_changes_change_the_fingerprint_and_are_named():
    new = _with(llm__temperature=0.0, policy__proposer__planner__voxel_size=0.05)
    assert fingerprint(BASE) != fingerprint(new)
    assert differing_keys(result_config(BASE), result_config(new)) == [
        "llm.temperature",
        "policy.proposer.planner.voxel_size",
    ]


def test_fingerprint_is_order_independent():
    shuffled = dict(reversed(list(BASE.items())))
    assert fingerprint(shuffled) == fingerprint(BASE)


def test_check_same_config_refuses_another_config_and_names_keys(tmp_path):
    (tmp_path / PROVENANCE_FILE).write_text(json.dumps(provenance_record(BASE)))
    check_same_config(tmp_path, _with(run__workers=64))  # plumbing only: accepted
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(RunDirError, match=r"llm\.model: \"openai/gpt-4o-mini\" -> \"openai/o3\""):
        check_same_config(tmp_path, _with(llm__model="openai/o3"))
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


def test_no_provenance_yet_is_accepted_and_corrupt_one_refused(tmp_path):
    check_same_config(tmp_path, BASE)
    (tmp_path / PROVENANCE_FILE).write_text("{torn")
    with pytest.raises(RunDirError, match="provenance.json: unreadable"):
        check_same_config(tmp_path, BASE)
