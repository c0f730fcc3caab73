"""`python -m eqa_runner.report`: run tables, shard merging, --compare ablations, --html."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf
from PIL import Image

from eqa_runner.report.cli import main as report_main
from eqa_runner.report.compare import compare_table, pick_baseline
from eqa_runner.report.runs import load_runs
from eqa_runner.run.loop import run
from tests.conftest import ROOT, server_overrides
from tests.helpers.datasets import make_openeqa_dataset

RULES = [
    {"pattern": "(?s)(?=.*Your mark)(?=.*chair)", "reply": "Your mark: 5"},
    {"pattern": "(?s)(?=.*Your mark)(?=.*lamp)", "reply": "Your mark: 2"},
    {"pattern": "Your mark", "reply": "Your mark: 3"},
    {"pattern": "User Query", "model": "model-a", "reply": "It is a chair."},
    {"pattern": "User Query", "model": "model-b", "reply": "It is a lamp."},
    {"pattern": r"\nQ: ", "model": "model-a", "reply": "A: a chair\nExplanation: guess."},
    {"pattern": r"\nQ: ", "model": "model-b", "reply": "A: a lamp\nExplanation: guess."},
]


@pytest.fixture
def env(tmp_path, compose_cfg, llm_server):
    llm_server.configure(rules=RULES)
    data = make_openeqa_dataset(tmp_path / "data", n_questions=14, n_episodes=2, frames=6)

    def do_run(out: Path, *over: str, model: str = "model-a") -> Path:
        cfg = compose_cfg(
            [f"task.data_dir={data}", *server_overrides(llm_server, policy_model=model), *over],
            out=out,
        )
        run(cfg)
        (out / ".hydra").mkdir(exist_ok=True)
        OmegaConf.save(cfg, out / ".hydra" / "config.yaml")
        return out

    return do_run


def _sweep(env, root: Path) -> Path:
    k = 0
    for policy in ("blind", "single"):
        for model in ("model-a", "model-b"):
            env(root / f"{k}_{policy}_{model}", f"policy={policy}", model=model)
            k += 1
    (root / "multirun.yaml").write_text("hydra: {}\n")
    return root


@pytest.mark.slow
def test_compare_2x2_sweep_shows_only_swept_keys(env, tmp_path, capsys):
    sweep = _sweep(env, tmp_path / "sweep")
    runs = load_runs([sweep])
    table = compare_table(runs, pick_baseline(runs, "1"))
    assert list(table.columns) == ["policy", "llm.model", "n", "llm_match", "Δ llm_match"]
    assert table["policy"].tolist() == ["blind", "blind", "single", "single"]
    assert table["llm.model"].tolist() == ["openai/model-a", "openai/model-b"] * 2
    assert table["llm_match"].str.startswith("100.0").tolist() == [True, False, True, False]
    assert table["Δ llm_match"].tolist() == ["+75.0", "(baseline)", "+75.0", "+0.0"]

    csv = tmp_path / "cmp.csv"
    assert report_main([str(sweep), "--compare", "--csv", str(csv), "--by", "category"]) == 0
    out = capsys.readouterr().out
    assert "| policy | llm.model      |  n | llm_match            | Δ llm_match |" in out
    assert "by category:" in out and "policy=single, llm.model=openai/model-b" in out
    assert csv.is_file() and "llm_match" in csv.read_text().splitlines()[0]


@pytest.mark.slow
def test_run_table_and_shard_merge(env, tmp_path, capsys):
    full = env(tmp_path / "full", "policy=single")
    shards = tmp_path / "shards"
    for i in range(3):
        env(shards / f"{i}_shard", "policy=single", f"run.shard={i}/3")
    runs = load_runs([shards])
    assert len(runs) == 1 and runs[0].notes == ["3 shards merged"]
    merged = runs[0].summary
    ref = json.loads((full / "summary.json").read_text())
    assert merged["counts"]["scored"] == ref["counts"]["scored"] == 14
    assert merged["headline"]["llm_match"]["mean"] == pytest.approx(
        ref["headline"]["llm_match"]["mean"]
    )
    assert merged["by_category"].keys() == ref["by_category"].keys()

    shutil.rmtree(shards / "1_shard")
    summ = json.loads((shards / "2_shard" / "summary.json").read_text())
    summ["counts"]["missing"] = 2
    (shards / "2_shard" / "summary.json").write_text(json.dumps(summ))
    assert report_main([str(shards), str(full), "--csv", str(tmp_path / "t.csv")]) == 0
    out = capsys.readouterr().out
    assert "2 of 3 shards present (missing shard 1)" in out
    assert "shard 2/3 incomplete: 2 episodes without a record" in out
    df = __import__("pandas").read_csv(tmp_path / "t.csv")
    assert len(df) == 2 and df["n"].tolist()[1] == 14 and df["n"].tolist()[0] < 14


@pytest.mark.parametrize("damage", ["removed", "truncated", "not an object"])
def test_a_run_without_a_readable_summary_is_recomputed_as_its_summary_says(
    env, llm_server, tmp_path, damage
):
    """Killed before its summary, or the summary cut short / edited: the report recomputes the
    row from the records with the run's own interval method (it was labelled i.i.d.) and
    says why; a truncated summary was a traceback."""
    llm_server.configure(rules=[  # marks that differ by question: intervals of some width
        {"pattern": r"(?s)(?=.*Your mark)(?=.*object (1|3|4|8|12)\?)", "reply": "Your mark: 1"},
        *RULES,
    ])  # fmt: skip
    out = env(tmp_path / "run", "policy=single", "run.bootstrap_samples=200")
    ref = json.loads((out / "summary.json").read_text())
    assert ref["intervals"]["method"] == "cluster"
    if damage == "removed":
        (out / "summary.json").unlink()
    else:
        (out / "summary.json").write_text('{"counts": {' if damage == "truncated" else "[1]")
    (run_,) = load_runs([out])
    assert run_.summary["intervals"] == ref["intervals"]
    head, ref_head = run_.summary["headline"]["llm_match"], ref["headline"]["llm_match"]
    assert ref_head["ci95"][0] < ref_head["mean"] < ref_head["ci95"][1]
    assert head["mean"] == pytest.approx(ref_head["mean"])
    assert head["ci95"] == pytest.approx(ref_head["ci95"])
    why = "incomplete: no summary.json" if damage == "removed" else "summary.json unreadable ("
    assert any(n.startswith(why) for n in run_.notes), run_.notes


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.slow
def test_html_report_renders_in_headless_chromium(env, tmp_path):
    run_dir = env(tmp_path / "r", "policy=multiframe", "policy.num_frames=4")
    assert report_main([str(run_dir), "--html", "--by", "category"]) == 0
    page = run_dir / "report.html"
    text = page.read_text()
    assert "http://" not in text.split("<!-- runs:")[0].replace("http://127.0.0.1", "")
    assert text.count('<tr class="ep') == 14 and "data:image/png;base64," in text
    assert text.count("data:image/jpeg;base64,") >= 14  # frame thumbnails
    chromium = _chromium()
    if chromium is None:
        pytest.skip("chromium not installed (Debian: apt-get install -y chromium)")
    art = ROOT / "test-artifacts"
    art.mkdir(exist_ok=True)
    shot = art / "report_openeqa.png"
    shot.unlink(missing_ok=True)
    base = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", f"--user-data-dir={tmp_path / 'chr'}"]  # fmt: skip
    dom = subprocess.run(
        [*base, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=60
    ).stdout
    assert dom.count('<tr class="ep') == 14
    assert dom.count("<img") >= 15
    assert 'id="nshown">14<' in dom, "the filter script ran"
    subprocess.run(
        [*base, f"--screenshot={shot}", "--window-size=1400,1000", page.as_uri()],
        capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    assert shot.is_file()
    pixels = np.asarray(Image.open(shot).convert("L"), dtype=float)
    assert pixels.std() > 10, "screenshot is blank"
