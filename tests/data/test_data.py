"""`python -m eqa_runner.data fetch|check` against local fake sources (no network)."""

from __future__ import annotations

import functools
import http.server
import io
import json
import re
import shutil
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from eqa_runner.benchmarks.express import data as xdata
from eqa_runner.benchmarks.openeqa_em import data as oedata
from eqa_runner.data import commands as datacmd
from eqa_runner.data.sources import FetchError, LocalFrameSource, extract_episode
from tests.helpers.datasets import make_openeqa_dataset


@pytest.fixture
def upstream(tmp_path: Path) -> Iterator[dict]:
    """A raw-file server (question file + prompts) and a hub-like directory of episode tars."""
    src = make_openeqa_dataset(tmp_path / "src", n_questions=16, n_episodes=4, frames=5)
    raw = tmp_path / "raw"
    (raw / "data").mkdir(parents=True)
    shutil.copy(src / "open-eqa-v0.json", raw / "data" / "open-eqa-v0.json")
    (raw / "prompts").mkdir()
    for name in oedata.OPENEQA_PROMPTS:
        (raw / "prompts" / f"{name}.txt").write_text(f"prompt {name} {{question}}\n")
    (raw / "express" / "data").mkdir(parents=True)
    (raw / "express" / "prompt").mkdir()
    hub = tmp_path / "hub"
    for sub in sorted((src / "episodes").iterdir()):
        (hub / sub.name).mkdir(parents=True)
        for ep in sorted(sub.iterdir()):
            with tarfile.open(hub / sub.name / f"{ep.name}.tar", "w") as tar:
                tar.add(ep, arcname=ep.name)  # packaged with the episode id as top folder
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(raw))
    handler.log_message = lambda *a, **k: None  # type: ignore[method-assign]
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield {
            "url": f"http://127.0.0.1:{srv.server_address[1]}/",
            "hub": hub,
            "raw": raw,
            "src": src,
        }
    finally:
        srv.shutdown()
        srv.server_close()


def _fetch(up: dict, dest: Path, *extra: str) -> int:
    return datacmd.main(
        ["fetch", "openeqa", "--data-dir", str(dest), "--base-url", up["url"],
         "--frames-dir", str(up["hub"]), "--no-progress", *extra]
    )  # fmt: skip


def test_fetch_builds_a_tree_check_accepts(upstream, tmp_path, capsys):
    dest = tmp_path / "staged"
    assert _fetch(upstream, dest) == 0
    assert json.loads((dest / "open-eqa-v0.json").read_text())
    assert sorted(p.name for p in (dest / "prompts").iterdir()) == [
        "blind-llm.txt", "gpt4v.txt", "mmbench-extra.txt", "mmbench.txt"
    ]  # fmt: skip
    ep = dest / "episodes" / "hm3d-v0" / "000-hm3d-Ep0"
    assert (ep / "00000-rgb.png").is_file(), "extracted without the archive's top folder"
    assert (ep / ".complete").is_file()
    out = capsys.readouterr().out
    assert "hm3d: 2/2 episodes present" in out and "scannet: 2/2" in out

    assert datacmd.main(["check", "openeqa", "--data-dir", str(dest)]) == 0
    out = capsys.readouterr().out
    assert "hm3d: 2/2 episodes present, 8 questions; 10 frames; sizes 96x54 x10" in out
    assert out.strip().endswith("OK")

    gone = dest / "episodes" / "scannet-v0" / "001-scannet-Ep1"
    shutil.rmtree(gone)
    assert datacmd.main(["check", "openeqa", "--data-dir", str(dest)]) == 1
    out = capsys.readouterr().out
    assert f"missing: {gone} (folder missing" in out and "FAILED: 1 missing" in out


def test_check_detects_broken_frames(upstream, tmp_path, capsys):
    dest = tmp_path / "staged"
    assert _fetch(upstream, dest, "--subset", "hm3d") == 0
    ep = dest / "episodes" / "hm3d-v0" / "002-hm3d-Ep2"
    (ep / "00001-rgb.png").write_bytes(b"")
    (ep / "00002-rgb.png").write_bytes(b"not an image at all, just text" * 3)
    rep = oedata.check_openeqa(dest, subset="hm3d")
    assert not rep.ok and not rep.missing
    assert any("00001-rgb.png: empty file" in b for b in rep.broken)
    assert any("00002-rgb.png: undecodable" in b for b in rep.broken)
    assert datacmd.main(["check", "openeqa", "--data-dir", str(dest), "--subset", "hm3d"]) == 1


def test_resume_skips_finished_episodes(upstream, tmp_path, monkeypatch, capsys):
    dest = tmp_path / "staged"
    assert _fetch(upstream, dest, "--subset", "scannet", "--limit-episodes", "1") == 0
    assert "scannet: 1/1 episodes present (1 extracted" in capsys.readouterr().out
    # an interrupted extraction: folder without marker is redone; finished ones are skipped
    (dest / "episodes" / "scannet-v0" / "001-scannet-Ep1" / ".complete").unlink()
    calls: list[str] = []
    real = oedata.extract_episode
    monkeypatch.setattr(
        oedata, "extract_episode", lambda a, d: calls.append(Path(d).name) or real(a, d)
    )
    assert _fetch(upstream, dest, "--subset", "scannet") == 0
    assert calls == ["001-scannet-Ep1", "003-scannet-Ep3"]
    calls.clear()
    assert _fetch(upstream, dest, "--subset", "scannet") == 0
    assert calls == []
    assert "scannet: 2/2 episodes present (0 extracted, 2 already complete)" in (
        capsys.readouterr().out
    )


def test_missing_archive_is_reported(upstream, tmp_path, capsys):
    (upstream["hub"] / "hm3d-v0" / "000-hm3d-Ep0.tar").unlink()
    assert _fetch(upstream, tmp_path / "s", "--subset", "hm3d") == 1
    out = capsys.readouterr().out
    assert "hm3d: 1/2 episodes present" in out
    assert "not in source: 000-hm3d-Ep0 (expected hm3d-v0/000-hm3d-Ep0.tar)" in out


def test_archive_pattern_is_configurable(upstream, tmp_path):
    flat = tmp_path / "flat"
    flat.mkdir()
    for tar in upstream["hub"].rglob("*.tar"):
        shutil.copy(tar, flat / f"frames_{tar.name}")
    src = LocalFrameSource(flat, "frames_{episode}.tar")
    assert sorted(src.archives("hm3d")) == ["000-hm3d-Ep0", "001-scannet-Ep1", "002-hm3d-Ep2",
                                            "003-scannet-Ep3"]  # fmt: skip


def _tar_with(path: Path, member: tarfile.TarInfo, payload: bytes = b"x") -> Path:
    with tarfile.open(path, "w") as tar:
        ok = tarfile.TarInfo("ep/00000-rgb.png")
        ok.size = 1
        tar.addfile(ok, io.BytesIO(b"x"))
        if member.isreg():
            member.size = len(payload)
            tar.addfile(member, io.BytesIO(payload))
        else:
            tar.addfile(member)
    return path


@pytest.mark.parametrize(
    ("name", "kind", "link"),
    [
        ("../evil.txt", tarfile.REGTYPE, ""),
        ("ep/../../evil.txt", tarfile.REGTYPE, ""),
        ("/tmp/evil_abs.txt", tarfile.REGTYPE, ""),
        ("ep/link", tarfile.SYMTYPE, "../../outside"),
        ("ep/abslink", tarfile.SYMTYPE, "/etc/passwd"),
        ("ep/hard", tarfile.LNKTYPE, "../outside"),
    ],
)
def test_tar_escape_is_refused(tmp_path, name, kind, link):
    m = tarfile.TarInfo(name)
    m.type = kind
    m.linkname = link
    archive = _tar_with(tmp_path / "bad.tar", m)
    dest = tmp_path / "out" / "sub" / "ep"
    with pytest.raises(FetchError, match="refused"):
        extract_episode(archive, dest)
    assert not dest.exists()
    assert not (tmp_path / "evil.txt").exists() and not (tmp_path / "out" / "evil.txt").exists()
    assert [p.name for p in (tmp_path / "out" / "sub").iterdir()] == []


def test_fetch_express_prints_scene_instructions(upstream, tmp_path, capsys):
    raw = upstream["raw"] / "express"
    q = [
        {
            "episode_id": "0", "scene_id": "hm3d/val/00800-TEEsavR23oF", "type": "object",
            "question": "What is on the table?", "answer": "A cup.",
            "start_position": [0.0, 0.0, 0.0], "start_rotation": [1.0, 0.0, 0.0, 0.0],
            "goal_position": [1.0, 0.0, 0.0], "geodesic_distance": 1.0,
        }
    ]  # fmt: skip
    (raw / "data" / "express-bench.json").write_text(json.dumps(q))
    for name in xdata.EXPRESS_PROMPTS:
        (raw / "prompt" / f"{name}.txt").write_text(f"[user]: {name}\n")
    dest = tmp_path / "ex"
    base = upstream["url"] + "express/"
    assert datacmd.main(["fetch", "express", "--data-dir", str(dest), "--base-url", base]) == 0
    out = capsys.readouterr().out
    assert (dest / "express-bench.json").is_file() and (dest / "prompts" / "explore.txt").is_file()
    assert "--uids hm3d_val_v0.2" in out
    assert f"{dest / 'scenes'}/<split>/<NNNNN-id>/<id>.basis.glb" in out
    assert "1 val and 0 train scenes" in out

    assert datacmd.main(["check", "express", "--data-dir", str(dest)]) == 1
    out = capsys.readouterr().out
    assert "scene hm3d/val/00800-TEEsavR23oF: no scene file for sim=mesh at " in out
    assert f"{dest / 'scenes' / 'val' / '00800-TEEsavR23oF'}" in out
    scene = dest / "scenes" / "val" / "00800-TEEsavR23oF"
    scene.mkdir(parents=True)
    (scene / "TEEsavR23oF.basis.glb").write_bytes(b"glTF....")
    assert datacmd.main(["check", "express", "--data-dir", str(dest)]) == 1
    assert "no navmesh" in capsys.readouterr().out
    (scene / "TEEsavR23oF.basis.navmesh").write_bytes(b"nav")
    assert datacmd.main(["check", "express", "--data-dir", str(dest)]) == 0
    assert "val: 1/1 scenes present, 1 questions" in capsys.readouterr().out


def test_check_decodes_every_frame_like_a_run(upstream, tmp_path):
    """A PNG cut after its header passes a header check but not a decode; data check decodes."""
    dest = tmp_path / "staged"
    assert _fetch(upstream, dest, "--subset", "hm3d") == 0
    ep = dest / "episodes" / "hm3d-v0" / "002-hm3d-Ep2"
    frame = ep / "00001-rgb.png"
    frame.write_bytes(frame.read_bytes()[:60])  # signature + IHDR intact, pixel data cut
    rep = oedata.check_openeqa(dest, subset="hm3d")
    assert [b for b in rep.broken if "00001-rgb.png: undecodable" in b], rep.broken


@pytest.mark.slow
def test_check_express_poses_lists_starts_off_the_floor(express_demo, tmp_path, capsys):
    """`data check express --poses` names each start on no island (the scene and why) and
    each goal off the navigable floor, with the distance (a run would record that episode as
    a SceneError / an OffFloorError)."""
    import json
    import shutil

    demo = Path(shutil.copytree(express_demo, tmp_path / "express"))
    qfile = demo / "express-bench.json"  # the demo also writes the two-storey house file
    recs = json.loads(qfile.read_text())
    key = "start_position" if "start_position" in recs[0] else "position"
    recs[0][key] = [recs[0][key][0], recs[0][key][1] + 25.0, recs[0][key][2]]
    qfile.write_text(json.dumps(recs))
    assert datacmd.main(["check", "express", "--data-dir", str(demo)]) == 0  # files only
    assert datacmd.main(["check", "express", "--data-dir", str(demo), "--poses"]) == 1
    out = capsys.readouterr().out
    eid = str(recs[0].get("episode_id") or recs[0].get("question_id"))
    name = recs[0]["scene_id"].split("/")[-1]  # the scene's directory, e.g. 00800-DemoApt0
    assert re.search(rf"episode {eid}: scene \S*{name}: start \[", out)
    assert out.count("is on no island (nothing navigable within 2 m)") == 1
    assert "off the floor" not in out


@pytest.mark.parametrize("bench", ["openeqa", "express", "aeqa", "hmeqa"])
def test_a_missing_file_names_the_check_commands_options(tmp_path, capsys, bench):
    """The error is the run's (it names task.data_dir); the data command says --data-dir."""
    assert datacmd.main(["check", bench, "--data-dir", str(tmp_path / "none")]) == 1
    (line,) = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("FAILED: ")]
    assert "not found" in line and "Set --data-dir" in line, line
    assert "task.data_dir" not in line and "task.questions_file" not in line, line


def test_only_keys_the_command_has_become_options():
    args = datacmd.build_parser().parse_args(["check", "hmeqa"])
    line = "Set task.data_dir (or task.poses_file); task.data_dir_x stays"
    assert datacmd.in_option_terms(line, args) == (
        "Set --data-dir (or task.poses_file); task.data_dir_x stays"
    )
