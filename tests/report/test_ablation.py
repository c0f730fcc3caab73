"""Ablations researchers can believe (issue 18), on crafted run directories whose answer is known:
paired Δ on common episodes, clustered intervals, judge agreement, power, reproducibility stamps,
and the forest plot / agreement scatter in report.html."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score

from eqa_runner.benchmarks.express.eac import EACJudge
from eqa_runner.benchmarks.openeqa_em.llm_match import LLMMatchJudge
from eqa_runner.records import complete_record
from eqa_runner.report.agreement import judges_report, judges_tables, power_report
from eqa_runner.report.cli import main as report_main
from eqa_runner.report.compare import paired_differences, stamp_warnings
from eqa_runner.report.runs import load_runs
from eqa_runner.run.stamp import git_state, reproducibility_stamp
from eqa_runner.scoring.aggregate import interval_of
from eqa_runner.scoring.stats import power_analysis

LLM_MATCH = {
    "_target_": "eqa_runner.benchmarks.openeqa_em.llm_match.LLMMatchJudge",
    "model": "openai/j",
}
EAC = {"_target_": "eqa_runner.benchmarks.express.eac.EACJudge", "model": "openai/j"}


def _rec(eid: str, scene: str, metrics: dict, **kw) -> dict:
    return {"episode_id": eid, "status": "ok", "judge_ok": True, "scene": scene,
            "question": f"question {eid}?", "answer": "a", "category": "c", "prediction": "p",
            "judge_raw": "Your mark: 3", "metrics": metrics, "trace": {}, **kw}  # fmt: skip


def _mark(eid: str, scene: str, s: int) -> dict:
    return _rec(eid, scene, {"score_1to5": float(s), "llm_match": (s - 1) / 4})


def write_run(d: Path, recs: list[dict], *, policy: str = "blind", judge: dict = LLM_MATCH,
              summary_extra: dict | None = None, name: str = "episodes.jsonl",
              summary_name: str = "summary.json") -> Path:  # fmt: skip
    """A run dir as the runner leaves it (records + summary with config and stamp)."""
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_text("".join(json.dumps(r) + "\n" for r in recs))
    j = (
        LLMMatchJudge(model="offline")
        if "llm_match" in judge["_target_"]
        else EACJudge(model="offline")
    )
    config = {"judge": judge, "policy": {"name": policy}, "run": {"seed": 0}}
    summary = {"counts": {"selected": len(recs), "scored": len(recs), "missing": 0},
               "config": config, "models": {"judge": judge["model"]},
               "intervals": {"method": "cluster"},
               "reproducibility": reproducibility_stamp(config=config,
                                                        task_info={"questions_sha256": "q" * 64},
                                                        prompts={}, judge_model=judge["model"]),
               **j.aggregate([complete_record(r) for r in recs], bootstrap_samples=200),
               **(summary_extra or {})}  # fmt: skip
    (d / summary_name).write_text(json.dumps(summary))
    return d


def _marks(n: int, seed: int) -> list[int]:
    return np.random.default_rng(seed).integers(1, 6, size=n).tolist()


def _scene(i: int) -> str:
    return f"hm3d-v0/{i // 4:03d}-scene"  # 4 questions per episode history


# ----------------------------------------------------------------------------- paired Δ


def test_identical_runs_give_delta_0_and_p_1(tmp_path, capsys):
    marks = _marks(40, 0)
    recs = [_mark(f"e{i:02d}", _scene(i), s) for i, s in enumerate(marks)]
    write_run(tmp_path / "a", recs, policy="blind")
    write_run(tmp_path / "b", recs, policy="single")
    runs = load_runs([tmp_path / "a", tmp_path / "b"])
    d = paired_differences(runs, 0).diffs[1]["llm_match"]
    assert (d.delta, d.lo, d.hi, d.p_value, d.n) == (0.0, 0.0, 0.0, 1.0, 40)
    assert d.method == "cluster" and d.n_clusters == 10
    assert report_main([str(tmp_path / "a"), str(tmp_path / "b"), "--compare"]) == 0
    out = capsys.readouterr().out
    assert "| policy=single | llm_match | +0.0 | [+0.0, +0.0] | 1.000 | 40 |" in out


def test_shifted_run_gives_the_shift_and_names_unpaired_episodes(tmp_path, capsys):
    marks = [int(m) for m in np.clip(_marks(48, 1), 1, 4)]
    base = [_mark(f"e{i:02d}", _scene(i), s) for i, s in enumerate(marks)]
    # every common episode one mark higher (+25 points); e00 scored only by the baseline, x1/x2
    # only by the other run, with extreme marks that would move a naive difference of means
    other = [_mark(f"e{i:02d}", _scene(i), s + 1) for i, s in enumerate(marks) if i > 0]
    other += [_mark("x1", "hm3d-v0/900-x", 1), _mark("x2", "hm3d-v0/900-x", 1)]
    write_run(tmp_path / "a", base, policy="blind")
    write_run(tmp_path / "b", other, policy="single")
    runs = load_runs([tmp_path / "a", tmp_path / "b"])
    paired = paired_differences(runs, 0)
    d = paired.diffs[1]["llm_match"]
    assert d.delta == pytest.approx(25.0) and d.n == 47
    assert d.lo == pytest.approx(25.0) and d.hi == pytest.approx(25.0)
    assert d.p_value == pytest.approx(2 / 2**12)  # 12 clusters, exact sign-flip: the minimum
    assert d.only_a == ("e00",) and d.only_b == ("x1", "x2")
    naive = runs[1].summary["headline"]["llm_match"]["mean"] - runs[0].summary["headline"][
        "llm_match"]["mean"]  # fmt: skip
    assert abs(naive - 25.0) > 1.0  # the unpaired difference is wrong here
    assert report_main([str(tmp_path / "a"), str(tmp_path / "b"), "--compare"]) == 0
    out = capsys.readouterr().out
    assert "| single | 100.0" not in out and "+25.0" in out
    assert "Δ on the 47 episodes both runs scored; 2 scored only here (x1, x2); " in out
    assert "1 scored only by the baseline (e00): left out of every Δ" in out


def test_runs_recorded_before_the_package_layout_still_compare(tmp_path, capsys):
    """A run dir written before the one-package layout names its judge by the old path
    (``eqa_runner.scoring.llm_match``): report reads it as today's judge."""
    marks = _marks(24, 3)
    recs = [_mark(f"e{i:02d}", _scene(i), s) for i, s in enumerate(marks)]
    old = {**LLM_MATCH, "_target_": "eqa_runner.scoring.llm_match.LLMMatchJudge"}
    write_run(tmp_path / "old", recs, policy="blind", judge=old)
    write_run(tmp_path / "new", [_mark(r["episode_id"], r["scene"], 5) for r in recs],
              policy="single")  # fmt: skip
    assert report_main([str(tmp_path / "old"), str(tmp_path / "new"), "--compare"]) == 0
    out = capsys.readouterr().out
    want = 100 - 25 * (np.mean(marks) - 1)
    assert f"+{want:.1f}" in out and "| 24 |" in out


def test_paired_iid_option_and_p_on_a_real_effect(tmp_path, capsys):
    rng = np.random.default_rng(5)
    a = [int(m) for m in rng.integers(1, 5, size=60)]
    b = [m + int(rng.random() < 0.5) for m in a]  # about +12.5 points
    write_run(tmp_path / "a", [_mark(f"e{i:02d}", _scene(i), s) for i, s in enumerate(a)])
    write_run(tmp_path / "b", [_mark(f"e{i:02d}", _scene(i), s) for i, s in enumerate(b)],
              policy="single")  # fmt: skip
    runs = load_runs([tmp_path / "a", tmp_path / "b"])
    iid = paired_differences(runs, 0, method="iid").diffs[1]["llm_match"]
    want = 25 * np.mean(np.array(b) - np.array(a))
    assert iid.delta == pytest.approx(want) and iid.method == "iid" and iid.p_value < 0.001
    assert iid.lo < want < iid.hi
    assert report_main([str(tmp_path / "a"), str(tmp_path / "b"), "--compare",
                        "--interval", "iid"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "resampling episodes (i.i.d.)" in out and "<0.001" in out


# ----------------------------------------------------------------------------- clustered intervals


def _width(iv: dict) -> float:
    return iv["ci95"][1] - iv["ci95"][0]


def test_clustered_interval_widens_on_correlated_data_and_matches_iid_otherwise():
    rng = np.random.default_rng(11)
    k, m = 40, 10
    scenes = {f"e{c}_{j}": f"s{c}" for c in range(k) for j in range(m)}
    # strong within-scene correlation: a scene effect dominates
    effect = rng.normal(0, 1, size=k)
    corr = {e: effect[int(s[1:])] + 0.2 * rng.normal() for e, s in scenes.items()}
    indep = {e: rng.normal() for e in scenes}
    kw = {"samples": 2000, "seed": 3}
    c_corr = interval_of(corr, scenes, method="cluster", **kw)
    i_corr = interval_of(corr, scenes, method="iid", **kw)
    assert c_corr["interval"] == "cluster" and c_corr["n_clusters"] == k
    assert _width(c_corr) > 2.5 * _width(i_corr)  # DEFF ≈ 1 + 9·0.96 → ~3× wider
    c_ind = interval_of(indep, scenes, method="cluster", **kw)
    i_ind = interval_of(indep, scenes, method="iid", **kw)
    # independent data: the same width within Monte-Carlo error (SE of a bootstrap width ~5%)
    assert _width(c_ind) == pytest.approx(_width(i_ind), rel=0.15)
    assert c_ind["mean"] == pytest.approx(i_ind["mean"])


def test_summary_intervals_follow_run_interval(tmp_path):
    recs = [_mark(f"e{i:02d}", f"s{i // 5}", 1 + 4 * ((i // 5) % 2)) for i in range(40)]
    recs = [complete_record(r) for r in recs]
    judge = LLMMatchJudge(model="offline")
    cl = judge.aggregate(recs, bootstrap_samples=500)["headline"]["llm_match"]
    iid = judge.aggregate(recs, bootstrap_samples=500, interval="iid")["headline"]["llm_match"]
    assert (cl["interval"], cl["n_clusters"], iid["interval"]) == ("cluster", 8, "iid")
    assert _width(cl) > 1.5 * _width(iid)
    # scenes all-or-nothing: the breakdown is clustered too
    by = LLMMatchJudge(model="offline").aggregate(recs, bootstrap_samples=500)["by_category"]["c"]
    assert by["interval"] == "cluster"
    # report --interval iid re-computes a clustered summary's intervals from the records
    write_run(tmp_path / "r", recs)
    runs = load_runs([tmp_path / "r"])
    from eqa_runner.report.compare import reinterval

    assert reinterval(runs[0], "iid") is True
    assert runs[0].summary["headline"]["llm_match"]["ci95"] == pytest.approx(
        LLMMatchJudge(model="offline").aggregate(recs, interval="iid")["headline"]["llm_match"][
            "ci95"
        ]
    )


# ----------------------------------------------------------------------------- judges


def test_judges_agreement_matches_scipy_and_sklearn(tmp_path, capsys):
    rng = np.random.default_rng(2)
    a = rng.integers(1, 6, size=50)
    b = np.clip(a + rng.integers(-1, 2, size=50) - (rng.random(50) < 0.3), 1, 5)
    c = np.clip(6 - a, 1, 5)  # a judge that got the scale backwards
    d = tmp_path / "run"
    write_run(d, [_mark(f"e{i:02d}", _scene(i), int(s)) for i, s in enumerate(a)])
    for tag, marks in (("openai_b", b), ("openai_c", c)):
        write_run(d, [_mark(f"e{i:02d}", _scene(i), int(s)) for i, s in enumerate(marks)],
                  judge={**LLM_MATCH, "model": f"openai/{tag[7:]}"},
                  name=f"episodes.rejudged-{tag}.jsonl",
                  summary_name=f"summary.rejudged-{tag}.json")  # fmt: skip
    rep = judges_report(load_runs([d])[0])
    assert [j.name for j in rep.judges] == ["openai/j (original)", "openai/b", "openai/c"]
    ab = rep.pairs[0]
    assert (ab.a, ab.b) == ("openai/j (original)", "openai/b")
    assert ab.agreement.spearman == pytest.approx(sps.spearmanr(a, b)[0])
    assert ab.agreement.kendall == pytest.approx(sps.kendalltau(a, b)[0])
    kl, kq, n = ab.kappas["score_1to5"]
    assert kl == pytest.approx(cohen_kappa_score(a, b, weights="linear"))
    assert kq == pytest.approx(cohen_kappa_score(a, b, weights="quadratic")) and n == 50
    assert ab.agreement.shift.delta == pytest.approx(25 * np.mean(b - a))
    ac = rep.pairs[1]
    assert ac.agreement.spearman == pytest.approx(-1.0)
    worst = ac.agreement.largest[0]
    assert abs(worst[2] - worst[1]) == 100.0  # a 5 marked 1 (or the reverse)
    tables = judges_tables(rep)
    assert list(tables["judges"]["judge"]) == [j.name for j in rep.judges]
    assert report_main([str(d), "--judges"]) == 0
    out = capsys.readouterr().out
    assert "κ mark 1–5 (lin / quad)" in out and "largest disagreements" in out
    assert f"{sps.spearmanr(a, b)[0]:.2f}" in out


def test_judges_kappa_on_eac_sigma_and_delta_separately(tmp_path):
    rng = np.random.default_rng(4)
    n = 30
    sig_a = rng.choice([0.0, 0.5, 1.0], size=n)
    del_a = rng.integers(1, 6, size=n)
    sig_b = np.where(rng.random(n) < 0.7, sig_a, rng.choice([0.0, 0.5, 1.0], size=n))
    del_b = np.clip(del_a + rng.integers(-1, 2, size=n), 1, 5)

    def recs(sig, dl):
        return [_rec(f"e{i:02d}", f"0080{i // 5}-s", {
            "sigma": float(s), "delta": float(x), "c": float(s * x), "c_star": float(x),
            "path_len": 4.0, "gt_geodesic": 4.0}, trace={"d_t": 1.0})
            for i, (s, x) in enumerate(zip(sig, dl, strict=True))]  # fmt: skip

    d = tmp_path / "run"
    write_run(d, recs(sig_a, del_a), judge=EAC)
    write_run(d, recs(sig_b, del_b), judge={**EAC, "model": "openai/k"},
              name="episodes.rejudged-k.jsonl", summary_name="summary.rejudged-k.json")  # fmt: skip
    rep = judges_report(load_runs([d])[0])
    (pair,) = rep.pairs
    assert pair.metric == "C"
    s_lin = cohen_kappa_score((2 * sig_a).astype(int), (2 * sig_b).astype(int), weights="linear")
    d_quad = cohen_kappa_score(del_a, del_b, weights="quadratic")
    assert pair.kappas["sigma"][0] == pytest.approx(s_lin)
    assert pair.kappas["delta"][1] == pytest.approx(d_quad)
    assert "score_1to5" not in pair.kappas
    cols = list(judges_tables(rep)["agreement"].columns)
    assert "κ σ (lin / quad)" in cols and "κ δ (lin / quad)" in cols


def test_judges_needs_a_rejudged_run(tmp_path, capsys):
    write_run(tmp_path / "r", [_mark("e1", "s", 3), _mark("e2", "s", 4)])
    assert report_main([str(tmp_path / "r"), "--judges"]) == 2
    assert "python -m eqa_runner.rejudge" in capsys.readouterr().err


# ----------------------------------------------------------------------------- power


def test_power_from_the_runs_clustered_variance(tmp_path, capsys):
    recs = [_mark(f"e{i:02d}", _scene(i), s) for i, s in enumerate(_marks(60, 8))]
    write_run(tmp_path / "r", recs)
    rep = power_report(load_runs([tmp_path / "r"]), 10.0)
    vals = {r["episode_id"]: 100 * r["metrics"]["llm_match"] for r in recs}
    want = power_analysis(vals, 10.0, {r["episode_id"]: r["scene"] for r in recs})
    assert rep.power == want and rep.metric == "llm_match" and rep.n_observed == 60
    assert report_main([str(tmp_path / "r"), "--power", "--delta", "10"]) == 0
    out = capsys.readouterr().out
    assert f"episodes needed: {want.n_episodes}" in out and "ICC" in out
    assert report_main([str(tmp_path / "r"), "--power"]) == 2


# ----------------------------------------------------------------------------- stamps


def test_stamp_records_seeds_hashes_and_the_fingerprint():
    stamp = reproducibility_stamp(config={"run": {"seed": 3}, "llm": {"seed": 3}},
                                  task_info={"questions_sha256": "a" * 64, "name": "x"},
                                  prompts={"p": {"sha256": "b" * 64}}, judge_model="m")  # fmt: skip
    assert stamp["seeds"] == {"llm.seed": 3, "run.seed": 3}
    assert stamp["data_sha256"] == {"questions_sha256": "a" * 64}
    assert stamp["prompts_sha256"] == {"p": "b" * 64} and stamp["judge_model"] == "m"
    assert len(stamp["config_fingerprint"]) == 64


@pytest.mark.slow
def test_git_state_is_none_outside_a_checkout_and_without_git(tmp_path, monkeypatch):
    assert git_state(tmp_path) is None  # not a checkout
    with monkeypatch.context() as m:
        m.setenv("PATH", str(tmp_path))  # no git at all
        git_state.cache_clear()
        try:
            assert git_state() is None
        finally:
            git_state.cache_clear()


def test_git_state_never_raises_when_git_fails(tmp_path, monkeypatch):
    """The same without starting git: a missing git and a failing one are both None."""
    import eqa_runner.run.stamp as stamp

    for err in (FileNotFoundError("git"), subprocess.CalledProcessError(128, "git")):

        def fail(*args, err=err, **kwargs):
            raise err

        monkeypatch.setattr(stamp.subprocess, "run", fail)
        assert git_state.__wrapped__(tmp_path) is None


def test_compare_warns_when_stamps_differ_beyond_the_compared_keys(tmp_path, capsys):
    recs = [_mark(f"e{i}", _scene(i), 3) for i in range(8)]
    write_run(tmp_path / "a", recs, policy="blind")
    other = {"reproducibility": {**json.loads((tmp_path / "a" / "summary.json").read_text())[
        "reproducibility"], "data_sha256": {"questions_sha256": "z" * 64}}}  # fmt: skip
    write_run(tmp_path / "b", recs, policy="single", summary_extra=other)
    runs = load_runs([tmp_path / "a", tmp_path / "b"])
    (w,) = stamp_warnings(runs, ["policy"])
    assert w.startswith("runs differ in data_sha256.questions_sha256 (")
    assert report_main([str(tmp_path / "a"), str(tmp_path / "b"), "--compare"]) == 0
    assert "warning: runs differ in data_sha256.questions_sha256" in capsys.readouterr().out
    # a judge model difference is explained when judge.model is a compared key
    s = json.loads((tmp_path / "b" / "summary.json").read_text())
    s["reproducibility"] = {**s["reproducibility"], "judge_model": "openai/other",
                            "data_sha256": {"questions_sha256": "q" * 64}}  # fmt: skip
    (tmp_path / "b" / "summary.json").write_text(json.dumps(s))
    runs = load_runs([tmp_path / "a", tmp_path / "b"])
    assert stamp_warnings(runs, ["judge.model"]) == []
    assert stamp_warnings(runs, ["policy"])[0].startswith("runs differ in judge_model")


# ----------------------------------------------------------------------------- HTML


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _screenshot(page: Path, shot: Path, size: str = "1300,900") -> np.ndarray:
    chromium = _chromium()
    if chromium is None:
        pytest.skip("chromium not installed (Debian: apt-get install -y chromium)")
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--hide-scrollbars", f"--screenshot={shot}", f"--window-size={size}",
                    page.as_uri()], check=True, capture_output=True, timeout=120)  # fmt: skip
    return np.asarray(Image.open(shot).convert("RGB"), dtype=float)


@pytest.mark.slow
def test_html_forest_plot_and_agreement_scatter(tmp_path):
    marks = [int(m) for m in np.clip(_marks(24, 3), 1, 4)]
    write_run(tmp_path / "a", [_mark(f"e{i:02d}", _scene(i), s) for i, s in enumerate(marks)])
    write_run(tmp_path / "b", [_mark(f"e{i:02d}", _scene(i), s + 1) for i, s in enumerate(marks)],
              policy="single")  # fmt: skip
    write_run(tmp_path / "b", [_mark(f"e{i:02d}", _scene(i), s) for i, s in enumerate(marks)],
              judge={**LLM_MATCH, "model": "openai/k"}, name="episodes.rejudged-k.jsonl",
              summary_name="summary.rejudged-k.json")  # fmt: skip
    out = tmp_path / "cmp.html"
    assert report_main([str(tmp_path / "a"), str(tmp_path / "b"), "--compare", "--html",
                        "--html-out", str(out)]) == 0  # fmt: skip
    page = out.read_text()
    assert page.count('<svg class="forest"') == 1 and "Paired differences" in page
    assert "+25.0 [+25.0, +25.0]  p=0.031  n=24" in page  # 6 clusters: p = 2/2^6
    px = _screenshot(out, tmp_path / "cmp.png")
    assert px.std() > 10
    jout = tmp_path / "judges.html"
    assert report_main([str(tmp_path / "b"), "--judges", "--html", "--html-out", str(jout)]) == 0
    jpage = jout.read_text()
    assert jpage.count('<svg class="scatter"') == 1 and "<circle" in jpage
    assert _screenshot(jout, tmp_path / "judges.png").std() > 10


# ----------------------------------------------------------------------------- a real run


def test_real_run_records_interval_method_and_stamp(tmp_path, compose_cfg, llm_server):
    from eqa_runner.errors import ConfigError
    from eqa_runner.run.loop import run
    from eqa_runner.schema import check_config
    from tests.conftest import server_overrides
    from tests.helpers.datasets import make_openeqa_dataset

    llm_server.configure(rules=[{"pattern": "Your mark", "reply": "Your mark: 4"}])
    data = make_openeqa_dataset(tmp_path / "data", n_questions=6, n_episodes=2, frames=4)
    over = [f"task.data_dir={data}", "policy=blind", *server_overrides(llm_server)]
    for method in ("cluster", "iid"):
        cfg = compose_cfg([*over, f"run.interval={method}"], out=tmp_path / method)
        run(cfg)
        s = json.loads((tmp_path / method / "summary.json").read_text())
        assert s["intervals"]["method"] == method
        assert s["headline"]["llm_match"]["interval"] == method  # 2 episode histories
        stamp = s["reproducibility"]
        assert stamp["data_sha256"]["questions_sha256"] == s["task"]["questions_sha256"]
        assert set(stamp["prompts_sha256"]) == set(s["prompts"])
        assert stamp["judge_model"] == "openai/test-judge" and stamp["seeds"]["run.seed"] == 1234
        from omegaconf import OmegaConf

        from eqa_runner.run.provenance import fingerprint

        assert stamp["config_fingerprint"] == fingerprint(OmegaConf.to_container(cfg, resolve=True))
        assert stamp["git"] is None or len(stamp["git"]["commit"]) == 40
    with pytest.raises(ConfigError, match="run.interval"):
        check_config(compose_cfg([*over, "run.interval=bogus"]))
