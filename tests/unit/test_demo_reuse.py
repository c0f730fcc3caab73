"""``python -m eqa_runner.demo`` keeps a demo dir written for the same seed by the same code
(``make demo`` runs it every time) and writes it again when anything differs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eqa_runner.demo import cli
from eqa_runner.registry import Benchmark

CALLS: list[tuple[Path, int]] = []


def fake_writer(out: Path, seed: int) -> None:
    """A demo writer that records its calls (the registry resolves it by dotted path)."""
    CALLS.append((out, seed))
    (out / "scenes").mkdir(parents=True, exist_ok=True)
    (out / "questions.json").write_text(json.dumps([{"seed": seed}]))
    (out / "scenes" / "a.ply").write_bytes(b"x" * (10 + seed))


@pytest.fixture
def fake_bench(monkeypatch):
    bench = Benchmark(
        name="fakebench", title="t", task="x.T", judge="j", demo=f"{__name__}.fake_writer"
    )
    monkeypatch.setattr(cli, "benchmarks", lambda: [bench])
    CALLS.clear()
    return bench


def test_same_seed_is_kept_and_said(fake_bench, tmp_path, capsys):
    cli.main([str(tmp_path)])
    cli.main([str(tmp_path)])
    assert len(CALLS) == 1
    out = capsys.readouterr().out
    assert "fakebench: task.data_dir=" in out and "(kept: written for --seed 0" in out


@pytest.mark.parametrize("change", ["seed", "force", "file_removed", "file_changed", "code"])
def test_anything_different_writes_again(fake_bench, tmp_path, monkeypatch, change):
    cli.write_demo(tmp_path, seed=0, reuse=True)
    args: dict = {"seed": 0, "reuse": True}
    if change == "seed":
        args["seed"] = 1
    elif change == "force":
        args["reuse"] = False
    elif change == "file_removed":
        (tmp_path / "fakebench" / "scenes" / "a.ply").unlink()
    elif change == "file_changed":
        (tmp_path / "fakebench" / "questions.json").write_text("[]")
    elif change == "code":
        real = cli.stamp_key
        monkeypatch.setattr(cli, "stamp_key", lambda b, s: {**real(b, s), "writer_sha256": "other"})
    reused: list[str] = []
    cli.write_demo(tmp_path, reused=reused, **args)
    assert len(CALLS) == 2 and reused == []
    stamp = json.loads((tmp_path / "fakebench" / cli.STAMP).read_text())
    assert stamp["seed"] == args["seed"] and stamp["files"]["scenes/a.ply"] == 10 + args["seed"]


def test_the_stamp_hashes_the_writers_code(fake_bench):
    key = cli.stamp_key(fake_bench, 0)
    assert len(str(key["writer_sha256"])) == 64 and key["seed"] == 0
