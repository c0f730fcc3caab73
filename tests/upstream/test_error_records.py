"""``judge.error_records=missing`` (issue "Round trips with the upstream code", item 4): each
error record scored as the benchmark's own scorer scores a missing prediction, so the headline
is the upstream script's number on the export (tests/golden/roundtrip/<benchmark>/missing/:
that script's printed output on the export of the committed records under this option) and the
row is comparable; the key changes the summary only, so a run dir recorded before it existed
resumes, and switching it on a resume is accepted."""

from __future__ import annotations

import json
import pickle
import re
from pathlib import Path

import pytest

from eqa_runner.benchmarks.aeqa.judge import AEQAJudge
from eqa_runner.benchmarks.aeqa.upstream import AEQAPredictions
from eqa_runner.benchmarks.express.eac import EACJudge
from eqa_runner.benchmarks.express.task import load_questions
from eqa_runner.benchmarks.express.upstream import ExpressResults
from eqa_runner.benchmarks.hmeqa.judge import HMEQAJudge
from eqa_runner.benchmarks.hmeqa.upstream import HMEQAResults
from eqa_runner.benchmarks.openeqa_em.llm_match import LLMMatchJudge
from eqa_runner.benchmarks.openeqa_em.upstream import OpenEQAPredictions
from eqa_runner.benchmarks.vsibench.judge import VSIBenchJudge
from eqa_runner.records import final_records, read_records
from eqa_runner.report.cli import main as report_main
from eqa_runner.report.runs import load_run
from eqa_runner.run.loop import run
from eqa_runner.run.provenance import check_same_config, fingerprint, read_provenance
from eqa_runner.scoring.comparability import headline_records, published_comparability
from tests.upstream.test_roundtrip_goldens import _same

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "roundtrip"
OFFLINE = ["llm=offline", "judge.model=offline", "run.workers=1", "run.progress=false"]


def _records(name: str) -> list:
    return list(final_records(read_records(GOLDEN / name / "episodes.jsonl")).values())


def _printed(name: str) -> list[float]:
    """The numbers the upstream script printed on the missing-mode export (after the command
    line; the metrics line left out)."""
    lines = (GOLDEN / name / "missing" / "upstream.txt").read_text().splitlines()[1:]
    if name == "aeqa":  # get-scores.py's totals (evaluate-predictions.py's own line first)
        lines = [line for line in lines if line.startswith("Total")]
    body = "\n".join(line for line in lines if not line.startswith("(metrics"))
    return [float(x) for x in re.findall(r"\d+\.\d+", body)]


def _blind_run(tmp_path: Path) -> Path:
    """A blind run dir holding the golden's blind marks (what get-scores.py reads as its
    baseline metrics file)."""
    marks = json.loads((GOLDEN / "aeqa" / "blind-metrics.json").read_text())
    lines = [json.dumps({"episode_id": i, "status": "ok", "judge_ok": True, "prediction": "x",
                         "metrics": {"score_1to5": m, "llm_match": (m - 1) / 4},
                         "scene": "s", "category": "c", "subset": "hm3d", "trace": {},
                         "error": None, "usage": {}}) for i, m in marks.items()]  # fmt: skip
    d = tmp_path / "blind"
    d.mkdir()
    (d / "episodes.jsonl").write_text("\n".join(lines) + "\n")
    return d


def _case(name: str, tmp_path: Path, express_demo: Path):
    """(judge under missing, format, episodes, headline names in the printed order)."""
    if name == "openeqa":
        return (
            LLMMatchJudge(model="offline", error_records="missing"),
            OpenEQAPredictions(),
            [],
            ["llm_match"],
        )
    if name == "hmeqa":
        judge = HMEQAJudge(model="offline", error_records="missing")
        return judge, HMEQAResults(), [], ["success_weighted", "success_max"]
    if name == "express":
        eps = load_questions(express_demo / "express-bench.json")
        return EACJudge(model="offline", error_records="missing"), ExpressResults(), eps, [
            "C", "C_star", "E_path", "d_T"
        ]  # fmt: skip
    judge = AEQAJudge(
        model="offline", error_records="missing", blind_run_dir=str(_blind_run(tmp_path))
    )
    return judge, AEQAPredictions(), [], ["llm_match", "llm_match_spl"]


@pytest.mark.parametrize("name", ["openeqa", "hmeqa", "express", "aeqa"])
def test_missing_makes_the_headline_the_upstream_scripts_number_on_the_export(
    name, tmp_path, express_demo
) -> None:
    """Under judge.error_records=missing the golden run's error record is scored as upstream
    scores a missing prediction: the headline is the upstream script's printed number on the
    export (which writes the record so), and the row is comparable."""
    judge, fmt, eps, names = _case(name, tmp_path, express_demo)
    recs, n = headline_records(judge, _records(name))
    assert n == 1
    head = judge.aggregate(recs)["headline"]
    digits = 2 if name == "aeqa" else 4  # get-scores.py prints two decimals
    assert [round(head[k]["mean"], digits) for k in names] == pytest.approx(_printed(name))
    for f in fmt.export(recs, eps, tmp_path / "export"):
        want = GOLDEN / name / "missing" / f.name
        if f.suffix == ".pkl":
            _same(pickle.loads(f.read_bytes()), pickle.loads(want.read_bytes()))
        else:
            assert json.loads(f.read_text()) == json.loads(want.read_text())
    comp = published_comparability(judge.aggregate(recs).get("published_comparability"), 1, n,
                                   "missing")  # fmt: skip
    assert comp["comparable"] is True and comp["error_records_scored_as_missing"] == 1
    assert comp["error_records_excluded"] == 0 and "scored as missing" in comp["note"]


@pytest.mark.parametrize("name", ["openeqa", "hmeqa", "express", "aeqa"])
def test_excluded_stays_the_default_and_leaves_the_error_record_out(name, tmp_path, express_demo):
    judge, *_ = _case(name, tmp_path, express_demo)
    default = type(judge)(model="offline", **({"blind_run_dir": judge.config.blind_run_dir}
                                                if name == "aeqa" else {}))  # fmt: skip
    assert default.config.error_records == "excluded"
    recs, n = headline_records(default, _records(name))
    assert n == 0 and recs == _records(name)


def test_vsibench_scores_an_error_record_as_an_empty_reply() -> None:
    judge = VSIBenchJudge(model="offline", error_records="missing")
    rec = {"episode_id": "1", "status": "error", "category": "object_counting", "scene": "s",
           "judge_ok": False, "metrics": {}, "trace": {}, "error": {"type": "X", "stage": "policy"},
           "prediction": None, "usage": {}}  # fmt: skip
    ok = {**rec, "episode_id": "2", "status": "ok", "judge_ok": True, "metrics": {"score": 1.0},
          "error": None}  # fmt: skip
    recs, n = headline_records(judge, [ok, rec])
    assert n == 1 and judge.aggregate(recs)["headline"]["overall"]["mean"] == pytest.approx(50.0)


def test_a_benchmark_without_an_upstream_rule_keeps_the_record_out_and_says_so() -> None:
    """MT-HM3D's scorer has no rule for a missing question: under missing the record stays
    out of the headline and the row stays not comparable, naming why."""
    from eqa_runner.benchmarks.mt_hm3d.judge import MTHM3DJudge

    judge = MTHM3DJudge(model="offline", error_records="missing")
    rec = {"episode_id": "1", "status": "error", "metrics": {}, "error": None}
    recs, n = headline_records(judge, [rec])
    assert n == 0 and recs == [rec]
    comp = published_comparability(None, 1, n, "missing")
    assert comp["comparable"] is False and comp["error_records_excluded"] == 1
    assert "has no rule for a missing prediction" in comp["note"]


def test_the_summary_counts_the_error_records_scored_as_missing() -> None:
    from eqa_runner.run.summary import build_summary

    rec = {"episode_id": "b", "status": "error", "error": {"type": "SceneError"},
           "judge_ok": False, "metrics": {}, "usage": {}}  # fmt: skip
    ok = {**rec, "episode_id": "a", "status": "ok", "judge_ok": True, "error": None}
    s = build_summary(config={}, task_info={}, selected_ids=["a", "b"], final={"a": ok, "b": rec},
                      aggregate={"headline": {}}, models={}, prompts={},
                      error_records=("missing", 1))  # fmt: skip
    assert s["counts"]["error"] == 1 and s["errors_by_type"] == {"SceneError": 1}
    assert "1 scored as missing predictions" in s["errors_note"]
    comp = s["published_comparability"]
    assert comp["comparable"] is True and comp["error_records"] == "missing"


# ----------------------------------------------------------------------------- a whole run


def _one_error(run_dir: Path, episode_id: str) -> None:
    """Rewrite ``episode_id``'s record as an error record (a start pose on no island, as a run
    writes it)."""
    path = run_dir / "episodes.jsonl"
    out = []
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        if rec["episode_id"] == episode_id:
            rec.update(status="error", prediction=None, judge_ok=False, judge_raw=None,
                       metrics={}, error={"type": "SceneError", "stage": "policy",
                                          "message": "the start pose is on no island"})  # fmt: skip
        out.append(json.dumps(rec))
    path.write_text("\n".join(out) + "\n")
    summary = json.loads((run_dir / "summary.json").read_text())
    (run_dir / ".hydra").mkdir(exist_ok=True)  # the run's config, as a command-line run has it
    (run_dir / ".hydra" / "config.yaml").write_text(json.dumps(summary["config"]))
    (run_dir / "summary.json").unlink()  # report recomputes it from the records


@pytest.mark.slow  # a whole run (in-process) and the report
@pytest.mark.parametrize("mode", ["excluded", "missing"])
def test_a_run_under_missing_is_scored_and_exported_as_upstream_scores_it(
    mode, tmp_path, compose_cfg, openeqa_data, capsys
) -> None:
    """An OpenEQA run with one error record: under missing the report's recomputed headline
    counts it as 0 % and says comparable; the export writes it as a null answer (which
    open-eqa scores 0); under excluded it is left out of both."""
    out = tmp_path / "r"
    run(compose_cfg([f"task.data_dir={openeqa_data}", "run.limit=3", *OFFLINE,
                     f"judge.error_records={mode}"], out=out))  # fmt: skip
    before = load_run(out).summary["headline"]["llm_match"]["mean"]
    _one_error(out, "q0001")
    s = load_run(out).summary
    comp = s["published_comparability"]
    assert comp["error_records"] == mode
    if mode == "missing":
        assert s["headline"]["llm_match"]["n"] == 3
        assert s["headline"]["llm_match"]["mean"] == pytest.approx(before * 2 / 3)
        assert comp["comparable"] is True and comp["error_records_scored_as_missing"] == 1
    else:
        assert s["headline"]["llm_match"]["n"] == 2
        assert comp["comparable"] is False and comp["error_records_excluded"] == 1
    assert report_main([str(out), "--export", "openeqa"]) == 0
    items = json.loads((out / "export" / "openeqa" / "predictions.json").read_text())
    nulls = [i["question_id"] for i in items if i["answer"] is None]
    assert nulls == (["q0001"] if mode == "missing" else [])
    assert ("written as missing predictions" in capsys.readouterr().out) is (mode == "missing")


# ----------------------------------------------------------------------------- resume, rejudge


def test_the_key_is_not_in_the_fingerprint_so_older_run_dirs_resume(
    tmp_path, compose_cfg, openeqa_data
) -> None:
    """A run dir recorded before judge.error_records existed has no such key in its
    provenance: its fingerprint is today's with either value (the records do not change, only
    the summary), so the same-config check passes for the default and for missing."""
    from omegaconf import OmegaConf

    from eqa_runner.records import write_json_atomic
    from eqa_runner.run.provenance import PROVENANCE_FILE, provenance_record

    cfg = OmegaConf.to_container(compose_cfg([f"task.data_dir={openeqa_data}", *OFFLINE]),
                                 resolve=True)  # fmt: skip
    assert isinstance(cfg, dict) and cfg["judge"]["error_records"] == "excluded"
    before_key = {**cfg, "judge": {k: v for k, v in cfg["judge"].items() if k != "error_records"}}
    switched = {**cfg, "judge": {**cfg["judge"], "error_records": "missing"}}
    assert fingerprint(before_key) == fingerprint(cfg) == fingerprint(switched)
    inputs = {"data": {"questions_sha256": "ab" * 32}}
    write_json_atomic(tmp_path / PROVENANCE_FILE, provenance_record(before_key, inputs))
    for now in (cfg, switched):
        check_same_config(tmp_path, now, inputs, has_records=True)  # no RunDirError


@pytest.mark.slow  # three whole runs (in-process)
def test_resuming_with_either_value_is_accepted(tmp_path, compose_cfg, openeqa_data) -> None:
    out = tmp_path / "r"
    run(compose_cfg([f"task.data_dir={openeqa_data}", "run.limit=2", *OFFLINE], out=out))
    old = read_provenance(out)
    assert old is not None and not any("error_records" in k for k in old["config"])
    for mode, limit in (("excluded", 3), ("missing", 4)):
        run(compose_cfg([f"task.data_dir={openeqa_data}", f"run.limit={limit}", *OFFLINE,
                         "run.resume=true", f"judge.error_records={mode}"], out=out))  # fmt: skip
        s = json.loads((out / "summary.json").read_text())
        assert s["counts"]["recorded"] == limit
        assert s["published_comparability"]["error_records"] == mode


@pytest.mark.slow  # a whole run and a rejudge (in-process)
def test_rejudge_honours_missing(tmp_path, compose_cfg, openeqa_data) -> None:
    from eqa_runner.rejudge import rejudge

    out = tmp_path / "r"
    run(compose_cfg([f"task.data_dir={openeqa_data}", "run.limit=3", *OFFLINE], out=out))
    _one_error(out, "q0001")
    rejudge(out, ["judge.model=offline", "judge.error_records=missing"], tag="m")
    s = json.loads((out / "summary.rejudged-m.json").read_text())
    comp = s["published_comparability"]
    assert comp["comparable"] is True and comp["error_records_scored_as_missing"] == 1
    assert s["headline"]["llm_match"]["n"] == 3
