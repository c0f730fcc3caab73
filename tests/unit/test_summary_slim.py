"""A summary aggregates slim records (what each judge's ``aggregate`` reads, issue 27): the
``summary.json`` written from them is byte-identical to one written from the full records, on
each benchmark's demo run, with error and unparsable records added."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from eqa_runner.records import read_records
from eqa_runner.run import loop
from eqa_runner.run import summary as summary_mod
from eqa_runner.run.summary import SummaryInputs, slim_record


def _openeqa(d: Path) -> None:
    from eqa_runner.benchmarks.openeqa_em.demo import write_openeqa_demo

    write_openeqa_demo(d, seed=0)


def _aeqa(d: Path) -> None:
    from eqa_runner.benchmarks.aeqa.demo import write_aeqa_demo

    write_aeqa_demo(d, seed=0)


def _express(d: Path) -> None:
    from eqa_runner.benchmarks.express.demo import write_express_demo

    write_express_demo(d, seed=0)


def _hmeqa(d: Path) -> None:
    from eqa_runner.benchmarks.hmeqa.demo import write_hmeqa_demo

    write_hmeqa_demo(d, seed=0)


def _mp3d(d: Path) -> None:
    demo = pytest.importorskip("eqa_runner_mp3d_eqa.demo")
    demo.write_mp3d_eqa_demo(d)


EXPLORE = ["policy.max_steps=3", "sim.width=64", "sim.height=64"]
CASES: dict[str, tuple[list[str], Callable[[Path], None]]] = {
    "openeqa_em": (["task=openeqa_em", "policy=blind"], _openeqa),
    "aeqa": (["task=aeqa", "policy=re", *EXPLORE], _aeqa),
    "express": (["task=express", "policy=re", *EXPLORE], _express),
    "hmeqa": (["task=hmeqa", "policy=re", *EXPLORE], _hmeqa),
    "mp3d_eqa": (["task=mp3d_eqa", "policy=re", *EXPLORE], _mp3d),
}


def _variants(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records of the ways an episode ends besides ok: an error of the judge's stage, another
    error, an unparsable judgement (each a copy of a demo record under a new id)."""
    a, b, c = (json.loads(json.dumps(r)) for r in (recs[0], recs[-1], recs[0]))
    a.update(episode_id="x-judge", status="error",
             error={"type": "JudgeError", "stage": "judge", "message": "m" * 300})  # fmt: skip
    b.update(episode_id="x-sim", status="error", error={"type": "SimError", "stage": "policy"})
    c.update(episode_id="x-unparsable", judge_ok=False, metrics={})
    return [a, b, c]


@pytest.mark.parametrize(  # OpenEQA (no simulator) in the fast subset, the rest slow
    "bench",
    sorted(CASES),
)
@pytest.mark.slow  # a run per benchmark (openeqa_em alone takes several seconds)
def test_summary_from_slim_records_equals_the_one_from_full_records(
    bench: str, tmp_path: Path, compose_cfg: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    over, write = CASES[bench]
    write(tmp_path / "data")
    seen: list[SummaryInputs] = []
    real = loop.write_summary
    monkeypatch.setattr(loop, "write_summary", lambda inputs: seen.append(inputs) or real(inputs))
    cfg = compose_cfg([*over, f"task.data_dir={tmp_path / 'data'}", "llm=offline",
                       "judge.model=offline", "run.limit=4", "run.cache=false",
                       "run.bootstrap_samples=50"], out=tmp_path / "run")  # fmt: skip
    loop.run(cfg)
    (inputs,) = seen
    jsonl = tmp_path / "run" / "episodes.jsonl"
    recs = read_records(jsonl)
    assert len(recs) == 4 and all(r["status"] == "ok" for r in recs), [r["error"] for r in recs]
    extra = _variants(recs)
    with jsonl.open("a") as f:
        f.writelines(json.dumps(r) + "\n" for r in extra)
    inputs = replace(inputs, episode_ids=[*inputs.episode_ids, *(r["episode_id"] for r in extra)])
    judge = inputs.judge
    assert judge.aggregate_reads is not None, f"{type(judge).__name__} declares aggregate_reads"
    summary_mod.write_summary(inputs, summary_name="slim.json")
    monkeypatch.setattr(type(judge), "aggregate_reads", None)
    summary_mod.write_summary(inputs, summary_name="full.json")
    slim, full = ((tmp_path / "run" / n).read_bytes() for n in ("slim.json", "full.json"))
    assert slim == full
    assert json.loads(slim)["counts"]["error"] == 2 and json.loads(slim)["counts"]["scored"] >= 3


def test_a_slim_record_keeps_only_what_is_read() -> None:
    from eqa_runner.scoring.base import AggregateReads

    rec = {"episode_id": "e", "status": "error", "judge_ok": True, "scene": "s", "question": "q",
           "category": "c", "metrics": {"a": 1.0, "b": 2.0},
           "usage": {"calls": 2, "retries": 0, "cost_usd": None},
           "error": {"type": "T", "stage": "judge", "traceback": "..."},
           "trace": {"steps": [{}], "stop_reason": "budget", "d": 1, "big": [0] * 100,
                     "vlm": {"waypoints_parsed": 3, "raw": ["reply"]}}}  # fmt: skip
    reads = AggregateReads(fields=frozenset({"category"}), metrics=frozenset({"a"}),
                           trace=frozenset({"d"}))  # fmt: skip
    assert slim_record(rec, reads) == {  # type: ignore[arg-type]
        "episode_id": "e", "status": "error", "judge_ok": True, "scene": "s", "category": "c",
        "metrics": {"a": 1.0}, "usage": {"calls": 2}, "error": {"type": "T", "stage": "judge"},
        "trace": {"stop_reason": "budget", "d": 1, "vlm": {"waypoints_parsed": 3}},
    }  # fmt: skip
