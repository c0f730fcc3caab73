"""Round trips with the upstream code (issue "Round trips with the upstream code"): each
numbered defect, the bounded unpickler, typed upstream fields and the question-file hash.
The upstream scorers' arithmetic is written here from their field lists (the committed goldens
under tests/golden/roundtrip/ hold the upstream scripts' own printed numbers)."""

from __future__ import annotations

import asyncio
import json
import pickle
import time
from pathlib import Path

import numpy as np
import pytest

from eqa_runner.benchmarks.aeqa.upstream import AEQAPredictions
from eqa_runner.benchmarks.express.task import load_questions
from eqa_runner.benchmarks.express.upstream import ExpressResults
from eqa_runner.benchmarks.hmeqa.upstream import HMEQAResults
from eqa_runner.benchmarks.openeqa_em.llm_match import LLMMatchJudge
from eqa_runner.errors import DataError
from eqa_runner.report.cli import main as report_main
from eqa_runner.run.loop import run
from eqa_runner.run.summary import build_summary
from eqa_runner.scoring.upstream import load_pickle
from eqa_runner.types import Episode, Prediction
from tests.upstream.test_upstream import _upstream_express_score

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "roundtrip"
OFFLINE = ["llm=offline", "judge.model=offline", "run.workers=1", "run.progress=false"]


def _rec(eid: str, *, status: str = "ok", answer: str = "A", prediction: str | None = "A",
         steps: list | None = None, metrics: dict | None = None, judge_ok: bool = True,
         trace: dict | None = None) -> dict:  # fmt: skip
    return {"episode_id": eid, "status": status, "answer": answer, "prediction": prediction,
            "judge_ok": judge_ok, "judge_raw": "reply", "metrics": metrics or {},
            "trace": {"steps": steps or [], **(trace or {})}, "error": None,
            "question": "q", "category": "c", "subset": None, "scene": "s",
            "usage": {}}  # fmt: skip


def _explore_eqa_block(res: dict, answer: str) -> tuple[bool, bool]:
    """run_vlm_exp.py's end-of-question success_weighted / success_max, from its field list."""
    n = sum(1 for k in res if k.startswith("step_"))
    rows = np.stack(
        [res[f"step_{t}"]["smx_vlm_rel"][0] * res[f"step_{t}"]["smx_vlm_pred"] for t in range(n)]
    )  # fmt: skip  (np.stack of nothing raises, as upstream)
    rel = [res[f"step_{t}"]["smx_vlm_rel"][0] for t in range(n)]
    weighted = "ABCD"[int(np.argmax(rows.max(axis=0)))] == answer
    return weighted, "ABCD"[int(np.argmax(rows[int(np.argmax(rel))]))] == answer


# ----------------------------------------------------------------------------- 1, 2: HM-EQA


def test_1_hmeqa_export_unparsable_episode_and_error_record(tmp_path) -> None:
    """All replies unparsable (our answer: none, wrong) and the truth on A: upstream's block
    must score it wrong too; an error record must not be an item its block crashes on."""
    unparsable = [{"position": [0, 0, 0], "answer_probs": None, "confidence": None}] * 3
    recs = [_rec("0", prediction=None, answer="A", steps=unparsable),
            _rec("1", status="error", prediction=None, steps=[])]  # fmt: skip
    (f,) = HMEQAResults().export(recs, [], tmp_path)
    items = pickle.loads(f.read_bytes())
    assert [it["question_ind"] for it in items] == [0]  # the error record is left out
    assert _explore_eqa_block(items[0], "A") == (False, False)
    (back,) = HMEQAResults().read(f, [Episode("0", "q", "A", "c")])
    assert back.answer is None  # read back: still no answer


def test_2_hmeqa_import_maps_question_ind_to_the_csv_row(tmp_path) -> None:
    """The task's episodes are sorted by scene (and filtered): row 2 is not position 2."""
    eps = [Episode(i, "q", "A", "c") for i in ("2", "0", "1")]  # scene-sorted order
    step = {"pts": [0.0, 0.0, 0.0], "smx_vlm_pred": np.array([0.7, 0.1, 0.1, 0.1]),
            "smx_vlm_rel": np.array([0.9, 0.1])}  # fmt: skip
    f = tmp_path / "results.pkl"
    f.write_bytes(pickle.dumps([{"question_ind": q, "step_0": step} for q in (0, 1, 2)]))
    assert [r.episode_id for r in HMEQAResults().read(f, eps)] == ["0", "1", "2"]
    with pytest.raises(DataError, match=r"item 0: question_ind 0 is not a row"):
        HMEQAResults().read(f, eps[:1])  # row 0 filtered out of the task: refused, not moved


# ----------------------------------------------------------------------------- 3, 4, 6: EXPRESS


def _express_rec(ep: Episode, **kw) -> dict:
    m = {"sigma": 1.0, "delta": 4.0, "path_len": 3.0, "d_t": 1.0, "gt_geodesic": 2.0, **kw}
    return _rec(
        ep.episode_id,
        answer=ep.answer,
        prediction="the kitchen",
        metrics=m,
        steps=[{"position": [1.0, 0.0, 2.0], "rotation": [1.0, 0.0, 0.0, 0.0]}],
    )


def test_3_express_question_ind_under_a_task_filter(tmp_path, express_demo) -> None:
    every = load_questions(express_demo / "express-bench.json")
    kept = [every[5], every[2]]  # a filter (and the scene sort) keeps rows 5 and 2
    (f,) = ExpressResults().export([_express_rec(e) for e in kept], kept, tmp_path)
    assert [it["question_ind"] for it in pickle.loads(f.read_bytes())] == [5, 2]
    back = ExpressResults().read(f, every)  # re-imported without the filter
    assert [r.episode_id for r in back] == [every[5].episode_id, every[2].episode_id]


def test_4_express_imports_a_genuine_results_pkl_with_quaternions(express_demo) -> None:
    """results.pkl written by numpy-quaternion as main.py does (make_genuine.py beside it)."""
    f = GOLDEN / "express" / "genuine" / "results.pkl"
    assert b"quaternion" in f.read_bytes()
    every = load_questions(express_demo / "express-bench.json")
    back = ExpressResults().read(f, every)
    assert [r.episode_id for r in back] == [every[i].episode_id for i in (0, 3, 7)]
    steps = back[0].trace["steps"]
    assert steps[0]["rotation"] == pytest.approx(every[0].meta["start_rotation"], abs=1e-6)
    assert sum(v * v for v in steps[1]["rotation"]) == pytest.approx(1.0)  # (w, x, y, z)
    assert back[2].trace["path_len"] is None and back[2].trace["d_t_valid"] is False


def test_6_express_export_of_a_judge_unparsable_record(tmp_path, express_demo) -> None:
    """Upstream's score() must read it (not raise) and leave it out of C, C*, E_path, as we
    do, keeping its d_T."""
    eps = load_questions(express_demo / "express-bench.json")[:2]
    recs = [
        _express_rec(eps[0]),
        {**_express_rec(eps[1], sigma=None, delta=None, d_t=3.0), "judge_ok": False},
    ]
    (f,) = ExpressResults().export(recs, eps, tmp_path)
    items = pickle.loads(f.read_bytes())
    c, c_star, e_path, d_t = _upstream_express_score(items)
    g = eps[0].meta["geodesic_distance"]
    assert (c, c_star, e_path) == pytest.approx((80.0, 80.0, 80.0 * g / max(g, 3.0)))
    assert d_t == pytest.approx(2.0)  # both goal distances
    back = ExpressResults().read(f, eps)
    assert back[1].trace["path_len"] == 3.0  # the measured length, kept beside


# ----------------------------------------------------------------------------- 5, 7: OpenEQA, A-EQA


def test_5_openeqa_null_answer_scores_zero_without_a_judge_call() -> None:
    class NoCalls:
        def __getattr__(self, name):
            raise AssertionError(f"the judge model was called ({name})")

    judge = LLMMatchJudge(model="test-judge")
    ep = Episode("q1", "What colour is the sofa?", "red", "attribute")
    s = asyncio.run(judge.score(ep, Prediction(answer=None), NoCalls()))  # type: ignore[arg-type]
    assert s.ok and s.metrics["llm_match"] == 0.0 and s.metrics["score_1to5"] == 1.0


def test_7_aeqa_export_names_and_the_printed_commands(tmp_path, compose_cfg, openeqa_data,
                                                      capsys) -> None:  # fmt: skip
    recs = [
        _rec("a", metrics={"has_path": 1.0, "path_len": 2.0}),
        _rec("b", status="error", prediction=None),
    ]
    eps = [Episode(i, "q", "x", "c") for i in "abc"]
    written = AEQAPredictions().export(recs, eps, tmp_path)
    assert [p.name for p in written] == ["gpt_answer.json", "path_length_list.pkl"]
    assert json.loads(written[0].read_text()) == [{"question_id": "a", "answer": "A"}]
    # an OpenEQA run.limit run: the printed command carries open-eqa's -f
    run(compose_cfg([f"task.data_dir={openeqa_data}", "run.limit=3", *OFFLINE],
                    out=tmp_path / "r"))  # fmt: skip
    assert report_main([str(tmp_path / "r"), "--export", "openeqa"]) == 0
    out = capsys.readouterr().out
    assert "score it upstream: python evaluate-predictions.py" in out and " -f" in out
    meta = json.loads((tmp_path / "r" / "export" / "openeqa" / "export.json").read_text())
    assert len(meta["questions_sha256"]) == 64


def test_export_refuses_a_changed_question_file(tmp_path, compose_cfg, openeqa_data,
                                                capsys) -> None:  # fmt: skip
    run(compose_cfg([f"task.data_dir={openeqa_data}", "run.limit=2", *OFFLINE],
                    out=tmp_path / "r"))  # fmt: skip
    qf = openeqa_data / "open-eqa-v0.json"
    qs = json.loads(qf.read_text())
    qf.write_text(json.dumps(list(reversed(qs))))
    assert report_main([str(tmp_path / "r"), "--export", "openeqa"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not the one the run used" in err
    assert not (tmp_path / "r" / "export").exists()


# ----------------------------------------------------------------------------- 8: comparability


@pytest.mark.parametrize("judge_block", [None, {"comparable": True, "note": "as published"}])
def test_8_error_records_make_every_benchmark_not_comparable(judge_block) -> None:
    recs = {"a": _rec("a"), "b": _rec("b", status="error")}
    agg = {"headline": {}, **({"published_comparability": judge_block} if judge_block else {})}
    s = build_summary(config={}, task_info={}, selected_ids=["a", "b"], final=recs,
                      aggregate=agg, models={}, prompts={})  # fmt: skip
    comp = s["published_comparability"]
    assert comp["comparable"] is False and comp["error_records_excluded"] == 1
    assert "run.resume=true" in comp["note"] and "--export" in comp["note"]
    clean = build_summary(config={}, task_info={}, selected_ids=["a"], final=recs,
                          aggregate=agg, models={}, prompts={})  # fmt: skip
    assert clean["published_comparability"]["comparable"] is True


# ----------------------------------------------------------------------------- the unpickler


def _shared_dag(levels: int = 40, width: int = 2) -> bytes:
    x: list = []
    for _ in range(levels):
        x = [x] * width
    return pickle.dumps(x, protocol=4)


class _Bomb:
    def __reduce__(self):
        from numpy._core.multiarray import _reconstruct

        return (_reconstruct, (np.ndarray, (10_000_000,), b"b"))


class _BadReduce:
    def __reduce__(self):
        return (dict, (1,))


@pytest.mark.parametrize("payload, words", [
    (_shared_dag(20, 8), "values"),  # ~600 bytes, 8**20 values as a tree
    (_shared_dag(40), "nested deeper"),
    (pickle.dumps([_Bomb()], protocol=4), "array elements"),
    (pickle.dumps([_BadReduce()], protocol=4), "not a results pickle"),
    (pickle.dumps([np.array([1, "a"], dtype=object)]), "object array"),
], ids=["shared-dag", "deep", "array-bomb", "bad-reduce", "object-array"])  # fmt: skip
def test_unpickler_limits_are_one_line(tmp_path, payload, words) -> None:
    f = tmp_path / "results.pkl"
    f.write_bytes(payload)
    assert len(payload) < 1000
    t0 = time.perf_counter()
    with pytest.raises(DataError, match=words) as e:
        load_pickle(f)
    assert time.perf_counter() - t0 < 5 and str(f) in str(e.value)


def test_numpy_scalars_and_arrays_are_data(tmp_path) -> None:
    f = tmp_path / "x.pkl"
    f.write_bytes(pickle.dumps({"a": np.float32(1.5), "b": np.arange(3.0), "c": np.int64(2)}))
    got = load_pickle(f)
    assert got["a"] == 1.5 and list(got["b"]) == [0.0, 1.0, 2.0] and got["c"] == 2


@pytest.mark.parametrize("fmt, item, field", [
    ("hmeqa", {"question_ind": "0"}, "question_ind"),
    ("hmeqa", {"question_ind": 0, "step_0": {"smx_vlm_pred": np.ones(5) / 5,
                                             "smx_vlm_rel": np.array([0.5, 0.5])}},
     "step_0.smx_vlm_pred"),
    ("hmeqa", {"question_ind": 0, "step_0": {"smx_vlm_pred": [[0.25] * 4],
                                             "smx_vlm_rel": [0.5, 0.5]}}, "step_0.smx_vlm_pred"),
    ("express", {"question_ind": "1", "gen_answer": "x", "EAC": "1, 4", "path_len": 1.0,
                 "geodesic_distance": 1.0, "goal_dis": 1.0}, "question_ind"),
    ("express", {"question_ind": 1, "gen_answer": "x", "EAC": "1, 4", "path_len": [[1.0]],
                 "geodesic_distance": 1.0, "goal_dis": 1.0}, "path_len"),
])  # fmt: skip
def test_a_field_of_the_wrong_type_is_one_line(tmp_path, express_demo, fmt, item, field) -> None:
    f = tmp_path / "results.pkl"
    f.write_bytes(pickle.dumps([item]))
    if fmt == "hmeqa":
        reader, eps = HMEQAResults(), [Episode("0", "q", "A", "c")]
    else:
        reader, eps = ExpressResults(), load_questions(express_demo / "express-bench.json")
    with pytest.raises(DataError) as e:
        reader.read(f, eps)
    msg = str(e.value)
    assert str(f) in msg and "item 0" in msg and f"field {field} must be" in msg


def test_import_paths_with_quotes_and_commas(tmp_path, openeqa_data) -> None:
    d = tmp_path / "it's,a=dir"
    d.mkdir()
    q = json.loads((openeqa_data / "open-eqa-v0.json").read_text())[0]["question_id"]
    (d / "p.json").write_text(json.dumps([{"question_id": q, "answer": None}]))
    code = report_main(["--import", str(d / "p.json"), "--format", "openeqa", "--out",
                        str(d / "out"), f"task.data_dir={openeqa_data}", *OFFLINE])  # fmt: skip
    assert code == 0
    (rec,) = [json.loads(x) for x in (d / "out" / "episodes.jsonl").read_text().splitlines()]
    assert rec["metrics"]["llm_match"] == 0.0  # a null answer: 0 %, as open-eqa
