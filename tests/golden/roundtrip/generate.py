"""Regenerates the round-trip goldens beside this file (see README.md): per benchmark, a run of
the project on its demo data with the test LLM server (an error record, an unparsable answer or
judge reply, a task filter or a partial run), its records, summary numbers and export.

    python tests/golden/roundtrip/generate.py <scratch dir>

The upstream scripts' printed numbers on each export (upstream.txt) are produced separately,
in checkouts of the upstream repositories (README.md has the commands).
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from eqa_runner.report.cli import main as report_main
from eqa_runner.report.runs import load_run
from eqa_runner.run.configstore import register_configs
from eqa_runner.run.loop import run
from eqa_runner.testing.llm_server import LLMTestServer

HERE = Path(__file__).resolve().parent
CONF = HERE.parents[2] / "eqa_runner" / "conf"
KEY = r'([^\n"]*\?)'


def _cfg(overrides: list[str], out: Path):
    register_configs()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=[f"run.output_dir={out}", "run.progress=false",
                                           f"run.cache_dir={out}-cache", "run.cache=false",
                                           "run.workers=1", *overrides])  # fmt: skip
    GlobalHydra.instance().clear()
    return cfg


def _server(srv: LLMTestServer) -> list[str]:
    return ["llm.model=openai/test-model", f"llm.api_base={srv.url}",
            "judge.model=openai/test-judge", f"judge.api_base={srv.url}", "llm.max_retries=0",
            "llm.backoff_base_s=0.01", "llm.timeout_s=10"]  # fmt: skip


def _keep(name: str, run_dir: Path, fmt: str) -> None:
    """records, the project's numbers and the export, into HERE/<name>/."""
    dest = HERE / name
    shutil.rmtree(dest / "export", ignore_errors=True)
    (dest / "export").mkdir(parents=True)
    assert report_main([str(run_dir), "--export", fmt, "--out", str(dest / "export")]) == 0
    meta = json.loads((dest / "export" / "export.json").read_text())
    meta["run_dir"], meta["questions_file"] = "<run>", Path(meta["questions_file"]).name
    meta["upstream_command"] = meta["upstream_command"].replace(str(dest / "export"), "{out}")
    (dest / "export" / "export.json").write_text(json.dumps(meta, indent=2) + "\n")
    shutil.copy(run_dir / "episodes.jsonl", dest / "episodes.jsonl")
    s = load_run(run_dir).summary
    keep = {k: s[k] for k in ("counts", "published_comparability") if k in s}
    keep["headline"] = {k: v.get("mean") for k, v in s["headline"].items()}
    (dest / "project.json").write_text(json.dumps(keep, indent=2, default=str) + "\n")


def _as_error(run_dir: Path, episode_id: str) -> None:
    """Rewrite one record as an error record (a start pose on no island, in the policy), as a
    run writes it; the summary is then recomputed from the records by ``report``."""
    lines = (run_dir / "episodes.jsonl").read_text().splitlines()
    out = []
    for line in lines:
        r = json.loads(line)
        if r["episode_id"] == episode_id:
            r.update(status="error", prediction=None, judge_raw=None, judge_ok=False, metrics={},
                     error={"type": "SceneError", "message": "the start pose is on no island",
                            "stage": "policy", "where": "generate.py"})  # fmt: skip
        out.append(json.dumps(r))
    (run_dir / "episodes.jsonl").write_text("\n".join(out) + "\n")
    summary = json.loads((run_dir / "summary.json").read_text())
    (run_dir / ".hydra").mkdir(exist_ok=True)  # the run's config, as a command-line run has it
    (run_dir / ".hydra" / "config.yaml").write_text(json.dumps(summary["config"]))
    (run_dir / "summary.json").unlink()


def express(work: Path, srv: LLMTestServer) -> None:
    from eqa_runner.benchmarks.express.demo import write_express_demo

    demo = work / "express-demo"
    write_express_demo(demo, seed=0)
    # the judge: row 2 "1, 4", row 6 unparsable, row 10 "0.5, 3"
    srv.configure(rules=[
        {"pattern": "color is the door", "model": "test-judge", "reply": "1, 4"},
        {"pattern": "drinks cold", "model": "test-judge", "reply": "no idea"},
        {"pattern": "color is the desk", "model": "test-judge", "reply": "0.5, 3"},
    ], default_reply="A: In the kitchen.")  # fmt: skip
    out = work / "express-run"
    run(_cfg(["task=express", "policy=re", f"task.data_dir={demo}", "policy.max_steps=3",
              "sim.width=32", "sim.height=32", "task.types=[knowledge,attribute]",
              *_server(srv)], out))  # fmt: skip
    _as_error(out, "0")
    _keep("express", out, "express")


def hmeqa(work: Path, srv: LLMTestServer) -> None:
    from eqa_runner.benchmarks.hmeqa.demo import write_hmeqa_demo

    demo = work / "hmeqa-demo"
    write_hmeqa_demo(demo, seed=0)
    # row 3 (truth A): every answer reply unparsable; the other rows as the upstream tests
    srv.configure(rules=[
        {"pattern": "(?s)How many toilets.*Reply with the letter", "reply": "maybe"},
        {"pattern": "Reply with the letter", "key": KEY, "reply": ["A", "C", "A"],
         "token_probs": [{"A": 0.7, "B": 0.1, "C": 0.1, "D": 0.1},
                         {"C": 0.45, "B": 0.4, "A": 0.1, "D": 0.05},
                         {"A": 0.9, "B": 0.05, "C": 0.03, "D": 0.02}]},
        {"pattern": "Reply with Yes or No", "key": KEY, "reply": ["No", "Yes", "Yes"],
         "token_probs": [{"No": 0.8, "Yes": 0.2}, {"Yes": 0.9, "No": 0.1},
                         {"Yes": 0.85, "No": 0.15}]},
    ])  # fmt: skip
    out = work / "hmeqa-run"
    run(_cfg(["task=hmeqa", "policy=fbe", f"task.data_dir={demo}", "policy.max_steps=3",
              "sim.width=48", "sim.height=36", "task.categories=[count,location,state]",
              *_server(srv)], out))  # fmt: skip
    _as_error(out, "5")
    _keep("hmeqa", out, "hmeqa")


def openeqa(work: Path, srv: LLMTestServer) -> None:
    """8 questions, run.limit=6 (a partial run), q0001 an error record; the blind policy
    answers even questions right and odd ones "zqx thing." (the judge: 1, else 5)."""
    sys.path.insert(0, str(HERE.parents[2]))
    from tests.helpers.datasets import make_openeqa_dataset

    data = make_openeqa_dataset(work / "openeqa-data", n_questions=8)
    answers = [
        {
            "pattern": rf"What is object {i}\\?",
            "model": "test-model",
            "reply": f"object {i}." if i % 2 == 0 else "zqx thing.",
        }
        for i in range(8)
    ]
    srv.configure(rules=[*answers, {"pattern": "zqx", "reply": "1"}], default_reply="5")
    out = work / "openeqa-run"
    run(_cfg(["task=openeqa_em", "policy=blind", f"task.data_dir={data}", "run.limit=6",
              *_server(srv)], out))  # fmt: skip
    _as_error(out, "q0001")
    _keep("openeqa", out, "openeqa")


def aeqa(work: Path, srv: LLMTestServer) -> None:
    """The blind baseline over every demo question (its answers "zqx guess.", marked 2), then
    policy=re with the published protocol on run.limit=4 (marked 4; the first question 1),
    its second record an error record."""
    from eqa_runner.benchmarks.aeqa.demo import write_aeqa_demo

    demo = work / "aeqa-demo"
    write_aeqa_demo(demo, seed=0)
    srv.configure(rules=[{"pattern": "zqx", "reply": "2"}], default_reply="zqx guess.")
    blind = work / "aeqa-blind"
    run(_cfg(["experiment=aeqa_blind", f"task.data_dir={demo}", *_server(srv)], blind))
    first = json.loads((demo / "aeqa_questions-184.json").read_text())[0]["question"]
    srv.configure(rules=[{"pattern": "Your mark|mark:", "model": "test-model", "reply": "4"},
                         {"pattern": re.escape(first), "model": "test-judge", "reply": "1"},
                         {"pattern": ".", "model": "test-judge", "reply": "4"}],
                  default_reply="a lamp.")  # fmt: skip
    out = work / "aeqa-run"
    run(_cfg(["experiment=aeqa_published", f"task.data_dir={demo}", "policy=re",
              "policy.max_steps=3", "sim.width=32", "sim.height=32", "run.limit=4",
              f"judge.blind_run_dir={blind}", *_server(srv)], out))  # fmt: skip
    _as_error(out, json.loads((out / "episodes.jsonl").read_text().splitlines()[1])["episode_id"])
    _keep("aeqa", out, "aeqa")
    marks = {json.loads(x)["episode_id"]: int(json.loads(x)["metrics"]["score_1to5"])
             for x in (blind / "episodes.jsonl").read_text().splitlines()}  # fmt: skip
    (HERE / "aeqa" / "blind-metrics.json").write_text(json.dumps(marks, indent=2) + "\n")


if __name__ == "__main__":
    work = Path(sys.argv[1])
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    with LLMTestServer() as srv:
        for name in sys.argv[2:] or ["express"]:
            globals()[name](work / name, srv)
