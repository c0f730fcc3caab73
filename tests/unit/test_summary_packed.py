"""A summary's slim records are packed (one tuple of values each, the keys shared: issue 27):
they read like the dicts they came from, keep every value exactly, and take a few hundred
bytes a record, so a rejudge's peak memory hardly grows with the run's length."""

from __future__ import annotations

import json
import math
import tracemalloc

import pytest

from eqa_runner.benchmarks.express.eac import EACJudge
from eqa_runner.run.packed import Packed, pack, unpack
from eqa_runner.run.summary import slim_record


def _line(i: int) -> str:
    """An EXPRESS-shaped final record (as the bench's), its numbers unique per episode."""
    x = 1.0 + i / 7919
    rec = {"episode_id": f"ep-{i:05d}", "status": "ok", "judge_ok": True, "category": "knowledge",
           "subset": "val", "scene": f"hm3d/val/{800 + i % 174:05d}-FullApt", "question": "q" * 80,
           "answer": "a" * 40, "prediction": "p" * 60, "judge_raw": "Your mark: 1, 3",
           "error": None, "usage": {"calls": 1, "prompt_tokens": 0, "cost_usd": None},
           "metrics": {"sigma": 1.0, "delta": 3.0, "c": 3.0, "c_star": 3.0, "path_len": x,
                       "gt_geodesic": x + 1, "d_t": x + 2, "d_t_valid": 1.0, "weight": 0.5},
           "trace": {"steps": [{"pose": [x, 0.0, x], "action": "move"}] * 20,
                     "stop_reason": "view_suffices", "stopped_early": True, "gt_geodesic": x + 1,
                     "d_t": x + 2, "d_t_valid": True, "vlm": {"waypoints_parsed": 3}}}  # fmt: skip
    return json.dumps(rec)


def test_a_packed_record_reads_like_its_dict() -> None:
    d = {"a": 1, "m": {"x": 0.5, "neg": -0.0, "nan": math.nan}, "t": {"v": {"k": 2}, "l": [1]},
         "e": None, "raw": {"kept": "as a dict"}}  # fmt: skip
    p = pack(d, {"m": {}, "t": {"v": {}}})
    assert isinstance(p["m"], Packed) and isinstance(p["t"]["v"], Packed)
    assert type(p["raw"]) is dict and p["t"]["l"] == [1] and p["e"] is None
    assert p["m"]["x"] == 0.5 and p.get("missing") is None and p.get("a") == 1
    assert "a" in p and "x" not in p and list(p) == ["a", "m", "t", "e", "raw"] and len(p) == 5
    assert p["t"].get("v") == {"k": 2} and p["t"]["v"]["k"] == 2
    with pytest.raises(KeyError):
        p["m"]["y"]
    with pytest.raises(TypeError):
        p["a"] = 2  # type: ignore[index]
    assert math.copysign(1.0, p["m"]["neg"]) == -1.0 and math.isnan(p["m"]["nan"])
    assert json.dumps(unpack(p)) == json.dumps(d)


def test_slim_records_are_packed_exactly_and_small() -> None:
    reads = EACJudge.aggregate_reads
    assert reads is not None and reads.metrics is not None
    n = 2000
    lines = [_line(i) for i in range(n)]
    slim_record(json.loads(lines[0]), reads)  # the shapes and the float cache exist
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        kept = [slim_record(json.loads(ln), reads) for ln in lines]
        per_record = (tracemalloc.get_traced_memory()[0] - base) / n
    finally:
        tracemalloc.stop()
    # plain dicts: about 1.5 KB a record; packed: the tuple, its handle, the unique numbers
    assert per_record < 600, per_record
    a, b = (unpack(kept[i]) for i in (0, 1))
    full = json.loads(lines[1])
    assert b["metrics"] == {k: v for k, v in full["metrics"].items() if k in reads.metrics}
    assert b["trace"]["d_t"] == full["trace"]["d_t"] and b["trace"]["vlm"] == {
        "waypoints_parsed": 3
    }
    assert b["usage"] == {"calls": 1} and b["episode_id"] == "ep-00001"
    assert kept[1]["metrics"]["sigma"] is kept[0]["metrics"]["sigma"]  # a recurring float: one
    assert a.keys() == b.keys()
