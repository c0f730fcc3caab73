"""The records a summary keeps for aggregation: small, and sharing their keys (issue 27)."""

from __future__ import annotations

import json

from eqa_runner.run.summary import _without_steps


def _line(i: int) -> str:
    trace = {"steps": [{"pose": [0, 0, 0]}] * 3, "path_len": 2.5, "params": {"k": [1]}}
    rec = {"episode_id": str(i), "status": "ok", "judge_ok": True,
           "metrics": {"accuracy": 1.0, "path_len": 2.5}, "trace": trace}  # fmt: skip
    return json.dumps(rec)


def test_kept_records_share_their_key_strings_and_drop_the_steps() -> None:
    a, b = (_without_steps(json.loads(_line(i))) for i in (1, 2))
    assert "steps" not in a["trace"] and a["trace"]["path_len"] == 2.5
    assert a == {**json.loads(_line(1)), "trace": {"path_len": 2.5, "params": {"k": [1]}}}
    # one string object per distinct key across records (each JSON line decodes its own)
    for x, y in [(a, b), (a["metrics"], b["metrics"]), (a["trace"], b["trace"]),
                 (a["trace"]["params"], b["trace"]["params"])]:  # fmt: skip
        assert all(kx is ky for kx, ky in zip(x, y, strict=True))
