"""docs/extending.md's one-file policy is real: its module and its YAML, read from the page,
compose from a user's config dir and run offline; on a task without frames it is refused in one
line naming the missing capability."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from eqa_runner.errors import ConfigError
from eqa_runner.records import read_records
from eqa_runner.run.loop import run
from tests.conftest import ROOT

PAGE = ROOT / "docs" / "extending.md"


def _block(first_line: str) -> str:
    """The code block of the page whose first line is ``first_line``."""
    for body in re.findall(r"```\w*\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.S):
        if body.splitlines()[0].strip() == first_line:
            return body
    raise AssertionError(f"docs/extending.md has no code block starting {first_line!r}")


@pytest.fixture
def lab(tmp_path: Path, monkeypatch) -> Path:
    """The page's two files, where the page puts them: my_lab/first_last.py and
    lab_conf/policy/first_last.yaml."""
    root = tmp_path / "lab"
    (root / "my_lab").mkdir(parents=True)  # a namespace package: no __init__.py needed
    (root / "my_lab" / "first_last.py").write_text(_block("# my_lab/first_last.py"))
    (root / "lab_conf" / "policy").mkdir(parents=True)
    yaml = _block("# lab_conf/policy/first_last.yaml")
    (root / "lab_conf" / "policy" / "first_last.yaml").write_text(yaml)
    monkeypatch.syspath_prepend(str(root))
    yield root
    sys.modules.pop("my_lab.first_last", None)
    sys.modules.pop("my_lab", None)


def test_the_example_policy_is_two_files_and_runs(lab, compose_cfg, openeqa_data, tmp_path):
    files = sorted(p.relative_to(lab).as_posix() for p in lab.rglob("*") if p.is_file())
    assert files == ["lab_conf/policy/first_last.yaml", "my_lab/first_last.py"]
    out = tmp_path / "run"
    cfg = compose_cfg(
        [f"hydra.searchpath=[file://{lab / 'lab_conf'}]", "policy=first_last",
         "task=openeqa_em", f"task.data_dir={openeqa_data}", "llm=offline",
         "judge.model=offline", "run.limit=3"],
        out=out,
    )  # fmt: skip
    run(cfg)
    recs = read_records(out / "episodes.jsonl")
    assert len(recs) == 3 and all(r["status"] == "ok" for r in recs), [r["error"] for r in recs]
    for r in recs:
        first, last = r["trace"]["frames"]
        assert first < last and first.endswith("-rgb.png")


def test_the_example_policy_is_refused_where_there_are_no_frames(lab, compose_cfg, tmp_path):
    cfg = compose_cfg([f"hydra.searchpath=[file://{lab / 'lab_conf'}]", "policy=first_last",
                       "task=express", f"task.data_dir={tmp_path}"])  # fmt: skip
    with pytest.raises(ConfigError) as e:
        run(cfg)
    msg = str(e.value)
    assert "\n" not in msg and "policy=first_last needs an episode's recorded frames" in msg


def test_the_example_policy_takes_its_typed_config(lab, compose_cfg, tmp_path):
    """The page's policy follows the constructor contract: a run hands it its schema's object,
    and the one checker refuses a value out of the schema's range in the usual line."""
    from eqa_runner.policies.base import Policy
    from eqa_runner.run.build import build

    searchpath = f"hydra.searchpath=[file://{lab / 'lab_conf'}]"
    cfg = compose_cfg([searchpath, "policy=first_last", "task=openeqa_em", "policy.image_size=96"])
    policy = build(cfg.policy, Policy, "policy")
    assert type(policy.config).__name__ == "FirstLastConfig"
    assert (policy.config.image_size, policy.name) == (96, "first_last")
    bad = compose_cfg([searchpath, "policy=first_last", "task=openeqa_em", "policy.image_size=0"])
    with pytest.raises(ConfigError, match=r"^policy.image_size=0: must be > 0$"):
        build(bad.policy, Policy, "policy")
    with pytest.raises(ConfigError, match=r"^policy.image_sise: not a key of FirstLastFrames"):
        type(policy)(image_sise=96)
