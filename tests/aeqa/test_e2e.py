"""A-EQA end to end on the procedural demo against the local model server: scripted stop-check
and answer replies, both metrics recomputed from the trace, resume, rejudge, report tables."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from eqa_runner.records import read_records
from eqa_runner.rejudge import rejudge
from eqa_runner.report.cli import main as report_main
from eqa_runner.run.loop import run
from tests.conftest import server_overrides

# First matching rule wins (case-insensitive). The judge: 5 for colour questions, 2 otherwise.
# The stop check is keyed by its question: colour questions say no twice then yes, the others
# always no.
RULES = [
    {"pattern": r"Question: What color[\s\S]*Your mark", "reply": "Your mark: 5"},
    {"pattern": r"Your mark:\s*$", "reply": "Your mark: 2"},
    {"pattern": r"\nAnswer:\s*$", "reply": "Answer: A blue sofa."},
    {"pattern": r"QUESTION: .*color", "key": r"QUESTION: (.*)", "reply": ["no", "no", "yes"]},
    {"pattern": r"QUESTION: ", "reply": "no"},
]
BUDGET = 4


def _overrides(demo: Path, srv, policy: str = "re") -> list[str]:
    return [
        "task=aeqa",
        f"policy={policy}",
        f"task.data_dir={demo}",
        f"protocol.num_steps={BUDGET}",
        "protocol.memory_frames=3",
        "protocol.image_size=48",
        "sim.width=96",
        "sim.height=96",
        "run.workers=4",
        "run.cache=false",
        "run.bootstrap_samples=100",
        *server_overrides(srv),
    ]


def _images(q) -> int:
    return sum(
        1
        for m in q["body"]["messages"]
        if isinstance(m["content"], list)
        for p in m["content"]
        if p.get("type") == "image_url"
    )


def _save_cfg(cfg, out: Path) -> None:
    (out / ".hydra").mkdir(exist_ok=True)
    OmegaConf.save(cfg, out / ".hydra" / "config.yaml")


def _expected(r) -> tuple[float, float]:
    """(llm_match, llm_match_spl) of one record, recomputed from its trace and judge reply."""
    s = int(r["judge_raw"].rsplit(":", 1)[1])
    l_ref, p = r["trace"]["reference_path_length"], r["trace"]["path_len"]
    return (s - 1) / 4, (s - 1) / 4 * l_ref / max(l_ref, p)


@pytest.fixture
def short_refs(tmp_path, aeqa_demo) -> Path:
    """The demo with the first apartment's reference lengths cut to 1.5 m (so p > l there)."""
    data = tmp_path / "data"
    shutil.copytree(aeqa_demo, data)
    f = data / "gt_path_length.json"
    lengths = json.loads(f.read_text())
    f.write_text(json.dumps({q: 1.5 if "-000-" in q else v for q, v in lengths.items()}))
    return data


@pytest.mark.slow
def test_aeqa_end_to_end_resume_rejudge_report(tmp_path, compose_cfg, llm_server, short_refs):
    aeqa_demo = short_refs
    llm_server.configure(rules=RULES)
    out = tmp_path / "re"
    cfg = compose_cfg(_overrides(aeqa_demo, llm_server), out=out)
    assert (cfg.sim.hfov_deg, cfg.sim.tilt_deg, cfg.sim.width) == (120.0, -30.0, 96)  # preset
    run(cfg)
    _save_cfg(cfg, out)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counts"]["ok"] == 13 and summary["counts"]["error"] == 0
    recs = read_records(out / "episodes.jsonl")
    early = [r for r in recs if r["trace"]["stopped_early"]]
    assert sorted(r["question"] for r in early) == sorted(
        r["question"] for r in recs if "What color" in r["question"]
    )
    assert len(early) == 2 and all(r["trace"]["steps_taken"] == 3 for r in early)
    for r in recs:
        t = r["trace"]
        assert t["num_steps"] == BUDGET and r["prediction"] == "A blue sofa."
        mem = t["memory"]
        assert mem["frames_seen"] == t["steps_taken"] and mem["frames_sent"] == 3
        assert mem["sizes_sent"] == ["48x48"] and mem["steps_sent"][-1] == t["steps_taken"] - 1
        assert t["reference_path_length"] == 1.5 or t["reference_path_length"] > 5
        assert t["path_len"] > 0
        lm, spl = _expected(r)
        assert r["metrics"]["llm_match"] == pytest.approx(lm)
        assert r["metrics"]["llm_match_spl"] == pytest.approx(spl)
        assert r["metrics"]["score_1to5"] == (5 if "What color" in r["question"] else 2)
    head = summary["headline"]
    assert head["llm_match"]["mean"] == pytest.approx(100 * (2 * 1 + 11 * 0.25) / 13)
    exp_spl = sum(_expected(r)[1] for r in recs) / 13
    assert any(r["metrics"]["weight"] < 1 for r in recs)
    assert head["llm_match_spl"]["mean"] == pytest.approx(100 * exp_spl)
    assert summary["path_stats"]["stopped_early"] == 2
    assert summary["models"]["judge"] == "openai/test-judge"
    assert {"aeqa-stop", "aeqa-answer", "mmbench"} <= set(summary["prompts"])
    # every stop check and every answer carries frames; the judge sees text only
    reqs = llm_server.requests
    stops = [q for q in reqs if q["rule"] in ("3", "4")]
    answers = [q for q in reqs if q["rule"] == "2"]
    judges = [q for q in reqs if q["rule"] in ("0", "1")]
    assert len(stops) == sum(r["trace"]["steps_taken"] for r in recs)
    assert all(_images(q) == 1 for q in stops) and all(_images(q) == 3 for q in answers)
    assert len(answers) == len(judges) == 13 and not any(map(_images, judges))

    # resume: nothing left to do, no new request
    n = len(llm_server.requests)
    run(compose_cfg([*_overrides(aeqa_demo, llm_server), "run.resume=true"], out=out))
    assert len(llm_server.requests) == n
    again = json.loads((out / "summary.json").read_text())
    assert again["headline"]["llm_match_spl"]["mean"] == pytest.approx(100 * exp_spl)

    # rejudge with another judge that gives 4 everywhere: same paths, new marks
    llm_server.configure(rules=[{"pattern": "Your mark", "reply": "Your mark: 4"}])
    rejudge(out, ["judge.model=openai/judge-b", f"judge.api_base={llm_server.url}"])
    rj = read_records(out / "episodes.rejudged-openai_judge-b.jsonl")
    assert len(rj) == 13
    for r in rj:
        t = r["trace"]
        w = t["reference_path_length"] / max(t["reference_path_length"], t["path_len"])
        assert r["metrics"]["llm_match_spl"] == pytest.approx(0.75 * w)
    re_sum = json.loads((out / "summary.rejudged-openai_judge-b.json").read_text())
    assert re_sum["headline"]["llm_match"]["mean"] == pytest.approx(75.0)
    assert re_sum["path_stats"] == summary["path_stats"]

    # fbe on the same questions, then the report: the run table and --compare
    llm_server.configure(rules=RULES)
    out_fbe = tmp_path / "fbe"
    cfg_fbe = compose_cfg(
        _overrides(aeqa_demo, llm_server, "fbe"),
        out=out_fbe,
    )
    run(cfg_fbe)
    _save_cfg(cfg_fbe, out_fbe)
    assert report_main([str(out), str(out_fbe), "--compare", "--by", "category"]) == 0


@pytest.mark.slow
def test_report_compare_tables(tmp_path, compose_cfg, llm_server, aeqa_demo, capsys):
    llm_server.configure(rules=RULES)
    runs = {}
    for policy in ("re", "blind"):
        out = tmp_path / policy
        cfg = compose_cfg([*_overrides(aeqa_demo, llm_server, policy), "run.limit=4"], out=out)
        run(cfg)
        _save_cfg(cfg, out)
        runs[policy] = json.loads((out / "summary.json").read_text())
    assert report_main([str(tmp_path / "re"), str(tmp_path / "blind"), "--compare"]) == 0
    text = capsys.readouterr().out
    header = next(ln for ln in text.splitlines() if ln.startswith("| policy"))
    assert "llm_match" in header and "llm_match_spl" in header
    blind_row = next(ln for ln in text.splitlines() if ln.startswith("| blind"))
    # the blind policy explores nothing: llm_match_spl is n/a ("-"), not 0
    cols = [c.strip() for c in header.strip("|").split("|")]
    cells = dict(zip(cols, (c.strip() for c in blind_row.strip("|").split("|")), strict=True))
    lm = runs["blind"]["headline"]["llm_match"]["mean"]
    assert cells["llm_match_spl"] == "-" and cells["llm_match"].startswith(f"{lm:.1f}")
    assert lm == runs["re"]["headline"]["llm_match"]["mean"]  # the judge marks by question only
    assert runs["blind"]["headline"]["llm_match_spl"]["n"] == 0
    assert math.isfinite(runs["re"]["headline"]["llm_match_spl"]["mean"])
    assert json.loads((tmp_path / "blind" / "summary.json").read_text())["policy"] == "blind"
