"""What the sweep-scale report speed-up (issue 27, item 4) changed, as behaviour: ``--html``
reads each run's records once (the numbers and the episode table share them), the record
reader leaves the garbage collector as it found it, and the ``.hydra`` files read with the fast
YAML loader give what ``OmegaConf.load`` gives."""

from __future__ import annotations

import gc
import json

import pytest
from omegaconf import OmegaConf

import eqa_runner.records as records_mod
from eqa_runner.report.cli import main as report_main
from eqa_runner.report.runs import load_yaml
from tests.speed.test_report_pinned import write_sweep


def test_html_compare_reads_each_run_once(tmp_path, monkeypatch, capsys):
    sweep = write_sweep(tmp_path, runs=3, episodes=12)
    reads: list[str] = []
    real = records_mod.iter_records

    def counting(path):
        reads.append(str(path))
        return real(path)

    monkeypatch.setattr(records_mod, "iter_records", counting)
    out = tmp_path / "r.html"
    assert report_main([str(sweep), "--compare", "--html", "--html-out", str(out)]) == 0
    capsys.readouterr()
    assert sorted(reads) == sorted(str(sweep / k / "episodes.jsonl") for k in "012")
    html = out.read_text()
    for k in range(12):  # every episode row is in the table, from the one read
        assert f"q {k}?" in html


def test_html_rows_beyond_the_kept_head_are_counted(tmp_path, capsys):
    sweep = write_sweep(tmp_path, runs=2, episodes=12)
    out = tmp_path / "r.html"
    args = [str(sweep), "--compare", "--html", "--html-out", str(out), "--max-episodes", "5"]
    assert report_main(args) == 0
    capsys.readouterr()
    html = out.read_text()
    assert "q 4?" in html and "q 5?" not in html
    assert html.count("7 more episodes not shown") == 2  # 12 - 5, in each run's section


@pytest.mark.parametrize("enabled", [True, False])
def test_read_records_leaves_the_collector_as_it_was(tmp_path, enabled):
    f = tmp_path / "episodes.jsonl"
    f.write_text(json.dumps({"episode_id": "1", "status": "error"}) + "\n")
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        assert [r["episode_id"] for r in records_mod.read_records(f)] == ["1"]
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_load_yaml_reads_as_omegaconf_does(tmp_path):
    f = tmp_path / "config.yaml"
    f.write_text("a:\n  lr: 1e-3\n  n: 10\n  s: 'x'\n  t: 2026-01-02\n  interp: ${a.n}\n"
                 "  none: null\n  lst: [1, 2.5, .inf]\nb: yes\n")  # fmt: skip
    assert load_yaml(f) == OmegaConf.to_container(OmegaConf.load(f), resolve=False)
    assert load_yaml(f)["a"]["lr"] == 0.001  # OmegaConf's float rule, not YAML 1.1's string
    dup = tmp_path / "dup.yaml"
    dup.write_text("a: 1\na: 2\n")
    with pytest.raises(Exception, match="duplicate key a"):
        OmegaConf.load(dup)
    with pytest.raises(Exception, match="duplicate key a"):
        load_yaml(dup)
