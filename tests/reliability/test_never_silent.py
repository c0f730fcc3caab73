"""Issue 25, item 5 (counted, never silent): unparsable waypoints are counted per episode and in
the summary and console line (defect 14); duplicates in data files are refused or deduplicated
with a warning and counted (defect 16)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from eqa_runner.errors import DataError
from eqa_runner.records import read_records
from eqa_runner.run.loop import run
from tests.conftest import server_overrides
from tests.reliability import tally
from tests.reliability.conftest import run_cli


@pytest.mark.slow
def test_unparsable_waypoints_are_counted_in_records_summary_and_console(
    compose_cfg, llm_server, express_demo, tmp_path, capsys
):
    """Every vlm_waypoint reply is prose: the agent never moves, and that is said — per
    episode (``trace.vlm.waypoints_unparsable``), in summary.json (``policy_replies``) and on
    the console's summary line."""
    tally.add("bad inputs tried")
    llm_server.configure(
        rules=[
            {"pattern": "Your mark", "reply": "Your mark: 1, 3"},
            {"pattern": r"\nQ: .*\nA:\s*$", "reply": "A: It is open."},
            {"pattern": "position_normal", "reply": "I would walk to the kitchen."},
            {"pattern": r"QUESTION: ", "reply": "no"},
        ]
    )
    out = tmp_path / "wp"
    cfg = compose_cfg(
        ["task=express", "policy=vlm_waypoint", f"task.data_dir={express_demo}",
         "run.episodes=[0,1,2]", "policy.max_steps=4", "sim.width=64", "sim.height=64",
         "run.cache=false", "run.bootstrap_samples=20", *server_overrides(llm_server)],
        out=out,
    )  # fmt: skip
    res = run(cfg)
    assert res["counts"]["ok"] == 3
    recs = read_records(out / "episodes.jsonl")
    assert [r["trace"]["vlm"]["waypoints_unparsable"] for r in recs] == [1, 1, 1]
    summary = json.loads((out / "summary.json").read_text())
    replies = summary["policy_replies"]
    assert replies["waypoints_unparsable"] == 3 and replies["waypoints_parsed"] == 0
    assert replies["episodes_stopped_unparsable"] == 3
    line = next(ln for ln in capsys.readouterr().out.splitlines() if "3/3 ok" in ln)
    assert "3 of 3 waypoint replies unparsable (3 episodes stopped on one)" in line


# --- duplicates in data files (defect 16) -----------------------------------------------------

OFFLINE = ["llm=offline", "judge.model=offline", "run.progress=false"]


@pytest.fixture(scope="module")
def aeqa_data(tmp_path_factory, aeqa_demo) -> Path:
    """A copy of the session's A-EQA demo (tests/conftest.py), this module's to change."""
    return Path(shutil.copytree(aeqa_demo, tmp_path_factory.mktemp("dups") / "aeqa"))


@pytest.fixture(scope="module")
def hmeqa_data(tmp_path_factory, hmeqa_demo) -> Path:
    """A copy of the session's HM-EQA demo (tests/conftest.py), this module's to change."""
    return Path(shutil.copytree(hmeqa_demo, tmp_path_factory.mktemp("dups") / "hmeqa"))


@pytest.mark.slow
def test_an_id_listed_twice_in_an_aeqa_id_list_runs_once_and_is_counted(tmp_path, aeqa_data):
    """The id list names demo-aeqa-000-01 twice: it used to run twice (counts 3, headline n 2)."""
    tally.add("bad inputs tried")
    ids = ["demo-aeqa-000-00", "demo-aeqa-000-01", "demo-aeqa-000-01"]
    f = tmp_path / "ids.json"
    f.write_text(json.dumps(ids))
    run_dir = tmp_path / "r"
    res = run_cli(["task=aeqa", "policy=blind", f"task.data_dir={aeqa_data}",
                   f"task.questions_file={f}", *OFFLINE, f"hydra.run.dir={run_dir}"])  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    assert "is listed more than once; kept once" in res.stdout + res.stderr
    recs = read_records(run_dir / "episodes.jsonl")
    assert sorted(r["episode_id"] for r in recs) == ids[:2]
    s = json.loads((run_dir / "summary.json").read_text())
    assert s["counts"]["selected"] == s["counts"]["recorded"] == 2
    assert s["headline"]["llm_match"]["n"] == 2
    assert s["task"]["duplicates_dropped"] == {str(f): 1}


def test_two_start_poses_for_one_aeqa_question_are_refused(tmp_path, aeqa_data):
    from eqa_runner.benchmarks.aeqa.task import AEQATask

    tally.add("bad inputs tried")
    data = tmp_path / "d"
    shutil.copytree(aeqa_data, data)
    poses = data / "aeqa_questions-184.json"
    recs = json.loads(poses.read_text())
    other = {**recs[0], "position": [1.0, 0.05, 1.0]}
    poses.write_text(json.dumps([*recs, other]))
    task = AEQATask(data_dir=str(data), questions_file=str(data / "open-eqa-v0-184-questions.json"))
    with pytest.raises(DataError) as e:
        task.load_episodes()
    msg = str(e.value)
    assert msg.startswith(f"{poses}: record {len(recs)}: question id 'demo-aeqa-000-00'")
    assert "appears twice with different values (also record 0)" in msg and "\n" not in msg


def _hmeqa_copy(tmp_path: Path, hmeqa_data: Path) -> Path:
    data = tmp_path / "hm"
    shutil.copytree(hmeqa_data, data)
    return data


@pytest.mark.slow
def test_hmeqa_pose_rows_twice_are_kept_once_when_equal_and_refused_when_not(tmp_path, hmeqa_data):
    from eqa_runner.benchmarks.hmeqa.task import HMEQATask

    tally.add("bad inputs tried", 2)
    data = _hmeqa_copy(tmp_path, hmeqa_data)
    f = data / "scene_init_poses.csv"
    lines = f.read_text().splitlines()
    f.write_text("\n".join([*lines, lines[1]]) + "\n")  # the first floor's row copied
    task = HMEQATask(data_dir=str(data))
    n = len(task.load_episodes())
    assert n == len(HMEQATask(data_dir=str(hmeqa_data)).load_episodes())
    assert task.describe()["duplicates_dropped"] == {str(f): 1}
    moved = lines[1].split(",")
    moved[1] = str(float(moved[1]) + 1.0)  # the same floor, another start (last used to win)
    f.write_text("\n".join([*lines, ",".join(moved)]) + "\n")
    with pytest.raises(DataError) as e:
        HMEQATask(data_dir=str(data)).load_episodes()
    msg = str(e.value)
    assert msg.startswith(f"{f}: line {len(lines) + 1}: scene_floor {moved[0]!r} appears twice")
    assert "(also line 2)" in msg


@pytest.mark.parametrize(
    ("choices", "needle"),
    [
        ("['Yes', 'No', 'yes', '(Do not choose this option)']",
         "option 'yes' appears twice (A and C)"),
        ("['(Do not choose this option)', '(Do not choose this option)', "
         "'(Do not choose this option)', '(Do not choose this option)']", "nothing to choose"),
        ("['', '', '', '']", "nothing to choose"),
    ],
)  # fmt: skip
def test_hmeqa_duplicate_or_all_padding_options_are_refused(tmp_path, hmeqa_data, choices, needle):
    from eqa_runner.benchmarks.hmeqa.task import HMEQATask

    tally.add("bad inputs tried")
    data = _hmeqa_copy(tmp_path, hmeqa_data)
    q = data / "questions.csv"
    with q.open(newline="") as fh:
        rows = list(csv.reader(fh))
    rows[2][rows[0].index("choices")] = choices
    with q.open("w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    with pytest.raises(DataError) as e:
        HMEQATask(data_dir=str(data)).load_episodes()
    msg = str(e.value)
    assert msg.startswith(f"{q}: line 3: field choices: ") and needle in msg, msg


@pytest.mark.slow
def test_an_id_twice_in_run_episodes_runs_once_with_a_warning(tmp_path, aeqa_data):
    tally.add("bad inputs tried")
    run_dir = tmp_path / "r"
    res = run_cli(["task=aeqa", "policy=blind", f"task.data_dir={aeqa_data}", *OFFLINE,
                   "run.episodes=[demo-aeqa-000-00,demo-aeqa-000-00]",
                   f"hydra.run.dir={run_dir}"])  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    out = res.stdout + res.stderr
    assert "run.episodes lists 1 id(s) more than once; each episode runs once" in out
    assert len(read_records(run_dir / "episodes.jsonl")) == 1
