"""Issue 33, items 2 and 3: paths read from a finished run stay in its dir (one resolver,
``safe_io.confine``: the HTML report, rejudge); every output file goes through one writer
(``safe_io.write_atomic``: temp file, fsync, rename, never through a link); a rejudged row's
page has its own file name."""

from __future__ import annotations

import base64
import io
import json
import os
from pathlib import Path

import pytest
from PIL import Image

from eqa_runner import safe_io
from eqa_runner.errors import UnsafeWriteError
from eqa_runner.records import write_json_atomic
from eqa_runner.rejudge import prediction_from_record
from eqa_runner.report.cli import main as report_main
from tests.reliability import tally
from tests.report.test_ablation import _mark, write_run

SENTINEL = b"root:x:0:0:SENTINEL-OUTSIDE-THE-RUN:/root:/bin/bash\n"


def _png(color: tuple[int, int, int]) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (16, 16), color).save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture
def outside(tmp_path: Path) -> dict[str, Path]:
    """Files a hostile record names: a text file and an image, both outside the run dir."""
    d = tmp_path / "elsewhere"
    d.mkdir()
    (d / "passwd").write_bytes(SENTINEL)
    (d / "private.png").write_bytes(_png((250, 10, 10)))
    return {"text": d / "passwd", "png": d / "private.png"}


# ----------------------------------------------------------------------------- confine


def test_confine_keeps_inside_paths_and_refuses_every_way_out(tmp_path, outside):
    run = tmp_path / "run"
    (run / "maps").mkdir(parents=True)
    (run / "maps" / "ok.png").write_bytes(b"x")
    (run / "maps" / "out.png").symlink_to(outside["png"])  # a link that leaves the dir
    (run / "maps" / "in.png").symlink_to(run / "maps" / "ok.png")  # a link that stays
    (run / "loop").symlink_to(run / "loop")
    before = sum(safe_io.refused_paths().values())
    assert safe_io.confine("maps/ok.png", run) == (run / "maps" / "ok.png").resolve()
    assert safe_io.confine(run / "maps" / "in.png", run) == (run / "maps" / "ok.png").resolve()
    hostile = ["/etc/passwd", "../../etc/passwd", "maps/../../elsewhere/passwd",
               str(outside["png"]), "maps/out.png", "loop", "a\x00b"]  # fmt: skip
    for p in hostile:
        tally.add("bad inputs tried")
        assert safe_io.confine(p, run) is None, p
    assert sum(safe_io.refused_paths().values()) - before == len(hostile)
    tally.add("paths confined", len(hostile))


def _hostile_run(tmp_path: Path, outside: dict[str, Path]) -> Path:
    run = tmp_path / "run"
    (run / "maps").mkdir(parents=True)
    (run / "maps" / "e01.png").symlink_to(outside["png"])
    traces = [
        {"trajectory_map": "/etc/passwd"},
        {"trajectory_map": str(outside["text"])},
        {"trajectory_map": "../elsewhere/passwd", "replay": "../elsewhere/passwd"},
        {"trajectory_map": "maps/e01.png"},  # inside by name, a link out of the dir
        {"judge_images": ["../elsewhere/private.png", str(outside["png"])]},
    ]
    recs = [_mark(f"e{i:02d}", f"s{i}", 3) for i in range(len(traces))]
    for r, t in zip(recs, traces, strict=True):
        r["trace"] = t
    return write_run(run, recs)


def test_html_report_embeds_no_file_from_outside_the_run_dir(tmp_path, outside, capsys):
    """It embedded ``/etc/passwd``, ``../../…`` and links out of the dir as data URIs."""
    run = _hostile_run(tmp_path, outside)
    assert report_main([str(run), "--html"]) == 0
    html = (run / "report.html").read_text()
    secret_text = base64.b64encode(SENTINEL).decode()[:40]
    png = base64.b64encode(outside["png"].read_bytes()).decode()[:40]
    embedded = secret_text in html or png in html
    tally.add("bad inputs tried", 6)
    tally.add("keys leaked", int(embedded))
    assert not embedded
    assert "data:image/jpeg" not in html  # no thumbnail of the outside image either
    err = capsys.readouterr().err
    assert "[eqa_runner] 7 path(s) named in the records lead outside their run dir" in err
    tally.add("paths confined", 7)
    assert len(err.splitlines()) == 1  # one line, however many paths


def test_rejudge_reads_judge_images_only_inside_the_run_dir(tmp_path, outside):
    run = tmp_path / "run"
    run.mkdir()
    (run / "artifacts").mkdir()
    (run / "artifacts" / "judge.png").write_bytes(b"inside")
    (run / "artifacts" / "link.png").symlink_to(outside["png"])
    rec = _mark("e00", "s", 3)
    rec["trace"] = {"judge_images": ["artifacts/judge.png", "/etc/passwd", str(outside["text"]),
                                     "../elsewhere/private.png", "artifacts/link.png"]}  # fmt: skip
    pred = prediction_from_record(rec, run)
    assert pred.images_for_judge == [b"inside"]  # nothing from outside is uploaded
    tally.add("paths confined", 4)


# ----------------------------------------------------------------------------- the writer


def test_the_writer_never_writes_through_a_link(tmp_path, outside):
    link = tmp_path / "summary.json"
    link.symlink_to(outside["text"])
    for write in (lambda: safe_io.write_atomic(link, "{}"), lambda: write_json_atomic(link, {})):
        tally.add("bad inputs tried")
        with pytest.raises(UnsafeWriteError, match="symbolic link"):
            write()
        tally.add("links refused")
    assert outside["text"].read_bytes() == SENTINEL and link.is_symlink()


def test_the_writer_is_atomic_and_leaves_no_temp_file(tmp_path, monkeypatch):
    dest = tmp_path / "report.html"
    safe_io.write_atomic(dest, "old")
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    safe_io.write_atomic(dest, "new")
    assert dest.read_text() == "new" and synced, "the data is fsynced before the rename"

    def boom(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        safe_io.write_atomic(dest, "half")
    assert dest.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def test_html_report_through_a_link_is_refused_and_the_target_is_untouched(
    tmp_path, outside, capsys
):
    """``report.html`` as a link to another file: that file was replaced by the report."""
    run = write_run(tmp_path / "run", [_mark("e00", "s", 3)])
    (run / "report.html").symlink_to(outside["text"])
    tally.add("bad inputs tried")
    assert report_main([str(run), "--html"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "symbolic link" in err and len(err.splitlines()) == 1
    tally.add("links refused")
    assert outside["text"].read_bytes() == SENTINEL


def test_a_rejudged_rows_page_does_not_overwrite_the_original_judges(tmp_path):
    run = write_run(tmp_path / "run", [_mark(f"e{i}", "s", 3) for i in range(4)])
    write_run(run, [_mark(f"e{i}", "s", 5) for i in range(4)], name="episodes.rejudged-k.jsonl",
              summary_name="summary.rejudged-k.json")  # fmt: skip
    assert report_main([str(run), "--html"]) == 0
    original, rejudged = run / "report.html", run / "report.rejudged-k.html"
    assert original.is_file() and rejudged.is_file()
    assert "rejudged: k" in rejudged.read_text() and "rejudged: k" not in original.read_text()


def _tree(d: Path) -> dict[str, bytes]:
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in d.rglob("*") if p.is_file()}


def test_a_refused_import_leaves_the_dir_as_it_was(tmp_path, compose_cfg, openeqa_data, capsys):
    """An import into a dir holding another run's records is refused by the run's start check;
    ``imported/`` was written before that check and stayed behind."""
    from eqa_runner.run.loop import run

    done = tmp_path / "r"
    run(compose_cfg([f"task.data_dir={openeqa_data}", "run.limit=3", "llm=offline",
                     "judge.model=offline", "run.progress=false"], out=done))  # fmt: skip
    before = _tree(done)
    questions = json.loads((openeqa_data / "open-eqa-v0.json").read_text())[:3]
    f = tmp_path / "preds.json"
    f.write_text(json.dumps([{"question_id": q["question_id"], "answer": "a"} for q in questions]))
    tally.add("bad inputs tried")
    code = report_main(["--import", str(f), "--format", "openeqa", "--out", str(done),
                        f"task.data_dir={openeqa_data}", "judge.model=offline",
                        "run.progress=false"])  # fmt: skip
    assert code == 2 and capsys.readouterr().err.startswith("error: ")
    assert _tree(done) == before and not (done / "imported").exists()


@pytest.mark.parametrize("link", ["export", "export/openeqa", "export/openeqa/predictions.json"])
def test_an_export_through_a_link_is_refused_and_the_target_is_untouched(
    tmp_path, outside, compose_cfg, openeqa_data, capsys, link
):
    from eqa_runner.run.loop import run

    done = tmp_path / "r"
    run(compose_cfg([f"task.data_dir={openeqa_data}", "run.limit=2", "llm=offline",
                     "judge.model=offline", "run.progress=false"], out=done))  # fmt: skip
    target = outside["text"] if link.endswith(".json") else outside["text"].parent
    (done / link).parent.mkdir(parents=True, exist_ok=True)
    (done / link).symlink_to(target)
    before = _tree(outside["text"].parent)
    tally.add("bad inputs tried")
    assert report_main([str(done), "--export", "openeqa"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "symbolic link" in err
    assert _tree(outside["text"].parent) == before
    tally.add("links refused")
