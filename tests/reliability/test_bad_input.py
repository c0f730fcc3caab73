"""Bad input matrix: each case ends in a clear message naming the file / field / episode and the
fix, or in a recorded per-episode error while the run goes on. Nothing is averaged as a sentinel.
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import pytest

from eqa_runner.errors import DataError
from eqa_runner.records import read_records
from eqa_runner.run.loop import run
from tests.conftest import server_overrides
from tests.helpers.datasets import make_openeqa_dataset
from tests.reliability import tally
from tests.reliability.conftest import run_cli

OFFLINE = ["llm=offline", "judge.model=offline"]
HM3D = "episodes/hm3d-v0/000-hm3d-Ep0"  # questions q0000, q0002, ... (even ids)


@pytest.fixture
def data(tmp_path) -> Path:
    tally.add("bad inputs tried")
    return make_openeqa_dataset(tmp_path / "d", n_questions=8, n_episodes=2, frames=4)


def _edit_questions(data: Path, fn) -> Path:
    qfile = data / "open-eqa-v0.json"
    recs = json.loads(qfile.read_text())
    qfile.write_text(json.dumps(fn(recs)))
    return qfile


def _run(compose_cfg, data: Path, *extra: str):
    return run(compose_cfg([f"task.data_dir={data}", *OFFLINE, *extra]))


def _records(tmp_path: Path) -> dict[str, dict]:
    return {r["episode_id"]: r for r in read_records(tmp_path / "run" / "episodes.jsonl")}


def _assert_errors_only_in_hm3d(tmp_path: Path, out: dict, error_type: str, *needles: str):
    """Episodes of the broken folder are error records naming it; the others are ok."""
    recs = _records(tmp_path)
    assert len(recs) == 8 and out["counts"]["ok"] == 4 and out["counts"]["error"] == 4
    for eid, r in recs.items():
        if int(eid[1:]) % 2 == 0:
            assert r["status"] == "error", eid
            assert r["error"]["type"] == error_type
            for needle in needles:
                assert needle in r["error"]["message"], (needle, r["error"]["message"])
            assert r["metrics"] == {}
        else:
            assert r["status"] == "ok", eid
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["headline"]["llm_match"]["n"] == 4, "errors are not averaged in"
    assert summary["errors_by_type"] == {error_type: 4}


# --- question file ---------------------------------------------------------------------------


@pytest.mark.slow
def test_question_file_not_json_cli_exit_2_names_file(tmp_path, data):
    (data / "open-eqa-v0.json").write_text('[{"question_id": "q0",')
    res = run_cli(
        [f"task.data_dir={data}", *OFFLINE, f"hydra.run.dir={tmp_path / 'run'}", "run.progress=0"]
    )
    assert res.returncode == 2
    assert "open-eqa-v0.json: not valid JSON" in res.stderr
    assert "Re-download or fix the file" in res.stderr
    assert "Traceback" not in res.stderr


def test_question_file_not_a_list(compose_cfg, data):
    (data / "open-eqa-v0.json").write_text('{"questions": []}')
    with pytest.raises(DataError, match=r"open-eqa-v0\.json: expected a JSON list.*got dict"):
        _run(compose_cfg, data)


def test_question_missing_field_names_record_and_field(compose_cfg, data):
    _edit_questions(data, lambda r: [*r[:3], {k: v for k, v in r[3].items() if k != "answer"}])
    with pytest.raises(DataError, match=r"open-eqa-v0\.json: record 3: missing field\(s\) answer"):
        _run(compose_cfg, data)


def test_duplicate_question_ids(compose_cfg, data):
    _edit_questions(data, lambda r: [*r, {**r[1], "question": "again?"}])
    with pytest.raises(
        DataError, match=r"record 8: duplicate question id 'q0001' \(also record 1\)"
    ):
        _run(compose_cfg, data)


def test_unknown_category_names_the_valid_ones_and_the_switch(compose_cfg, data):
    _edit_questions(data, lambda r: [*r[:2], {**r[2], "category": "vibes"}, *r[3:]])
    with pytest.raises(DataError, match=r"record 2: unknown category 'vibes'") as e:
        _run(compose_cfg, data)
    assert "object recognition" in str(e.value)
    assert "task.allow_unknown_categories=true" in str(e.value)


@pytest.mark.parametrize("history", ["../outside", "hm3d-v0/../../etc", "/etc/passwd"])
def test_episode_history_escaping_the_data_root_is_refused(compose_cfg, data, history):
    _edit_questions(data, lambda r: [*r[:5], {**r[5], "episode_history": history}, *r[6:]])
    with pytest.raises(DataError, match=r"record 5: episode_history .* must be a relative path"):
        _run(compose_cfg, data)


# --- episode folders and frames --------------------------------------------------------------


def test_missing_episode_folder_fails_at_start_naming_it_and_the_switch(compose_cfg, data):
    for f in (data / HM3D).iterdir():
        f.unlink()
    (data / HM3D).rmdir()
    with pytest.raises(DataError, match=r"000-hm3d-Ep0: missing") as e:
        _run(compose_cfg, data)
    assert "task.check_data=false" in str(e.value)


def test_missing_episode_folder_with_check_off_is_a_recorded_error(tmp_path, compose_cfg, data):
    for f in (data / HM3D).iterdir():
        f.unlink()
    (data / HM3D).rmdir()
    out = _run(compose_cfg, data, "task.check_data=false")
    _assert_errors_only_in_hm3d(tmp_path, out, "DataError", "000-hm3d-Ep0 missing", "data fetch")


def test_empty_episode_folder_with_check_off_is_a_recorded_error(tmp_path, compose_cfg, data):
    for f in (data / HM3D).iterdir():
        f.unlink()
    with pytest.raises(DataError, match=r"000-hm3d-Ep0: no RGB frames"):
        _run(compose_cfg, data)
    out = _run(compose_cfg, data, "task.check_data=false")
    _assert_errors_only_in_hm3d(tmp_path, out, "DataError", "has no RGB frames")


def test_zero_byte_frame_is_a_recorded_error(tmp_path, compose_cfg, data):
    (data / HM3D / "00002-rgb.png").write_bytes(b"")
    out = _run(compose_cfg, data)
    _assert_errors_only_in_hm3d(tmp_path, out, "FrameError", "00002-rgb.png: empty file")


def test_truncated_frame_is_a_recorded_error(tmp_path, compose_cfg, data):
    f = data / HM3D / "00001-rgb.png"
    f.write_bytes(f.read_bytes()[:200])
    out = _run(compose_cfg, data)
    _assert_errors_only_in_hm3d(tmp_path, out, "FrameError", "00001-rgb.png: cannot decode")


def test_non_image_frame_is_a_recorded_error(tmp_path, compose_cfg, data):
    (data / HM3D / "00003-rgb.png").write_text("this is not a picture\n")
    out = _run(compose_cfg, data)
    _assert_errors_only_in_hm3d(tmp_path, out, "FrameError", "00003-rgb.png: cannot decode")


def _png_bomb(path: Path, side: int = 10_000) -> None:
    """A valid all-black ``side``x``side`` RGB PNG of ~300 MB raw pixels in a few hundred KB."""
    z = zlib.compressobj(9)
    row = b"\x00" * (side * 3 + 1)
    idat = b"".join(z.compress(row) for _ in range(side)) + z.flush()

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body)
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    ihdr = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
    )


@pytest.mark.slow
def test_decompression_bomb_frame_is_refused_without_decoding(tmp_path, compose_cfg, data):
    import resource

    _png_bomb(data / HM3D / "00000-rgb.png")
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out = _run(compose_cfg, data)
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024
    _assert_errors_only_in_hm3d(
        tmp_path, out, "FrameError", "10000x10000 pixels", "decompression-bomb guard"
    )
    assert grown_mb < 150, f"the 300 MB image must not be decoded (peak RSS +{grown_mb:.0f} MB)"


def test_k_larger_than_the_number_of_frames_uses_every_frame_once(tmp_path, compose_cfg, data):
    out = _run(compose_cfg, data, "policy=multiframe", "policy.num_frames=50")
    assert out["counts"]["ok"] == 8
    for r in _records(tmp_path).values():
        assert r["trace"]["frame_indices"] == [0, 1, 2, 3]
        assert "4 frames < policy.num_frames=50" in r["trace"]["warning"]


def test_unknown_episode_id_in_selection(compose_cfg, data):
    with pytest.raises(DataError, match=r"run.episodes: 1 id\(s\) not in .*'nope'"):
        _run(compose_cfg, data, "run.episodes=[q0001,nope]")


# --- unknown names (Hydra composition through the CLI) ---------------------------------------


@pytest.mark.parametrize(
    ("override", "group", "valid"),
    [
        ("policy=multifame", "policy", ["blind", "multiframe", "single"]),
        ("task=openeqa", "task", ["openeqa_em"]),
        ("judge=llm_mtach", "judge", ["llm_match"]),
    ],
)
@pytest.mark.slow
def test_unknown_group_option_names_it_and_the_choices(tmp_path, override, group, valid):
    tally.add("bad inputs tried")
    res = run_cli([override, f"hydra.run.dir={tmp_path / 'run'}"], timeout=60)
    assert res.returncode != 0
    bad = override.split("=", 1)[1]
    assert f"Could not find '{group}/{bad}'" in res.stderr
    assert f"Available options in '{group}'" in res.stderr
    for v in valid:
        assert f"\t{v}\n" in res.stderr
    assert not (tmp_path / "run").exists(), "nothing is written for a config that cannot compose"


# --- judge replies ----------------------------------------------------------------------------


def test_garbage_judge_reply_is_counted_unparsable_not_averaged(
    tmp_path, compose_cfg, llm_server, data
):
    llm_server.configure(
        rules=[
            {"pattern": r"object [13]\?.*Your mark", "reply": "Hmm. ¯\\_(ツ)_/¯ 7/10, maybe 2-3"},
            {"pattern": "Your mark", "reply": "Your mark: 5"},
            {"pattern": r"\nQ: ", "reply": "A: a chair"},
        ]
    )
    over = [f"task.data_dir={data}", "policy=blind", *server_overrides(llm_server)]
    out = run(compose_cfg(over))
    assert out["counts"]["ok"] == 8 and out["counts"]["judge_unparsable"] == 2
    assert out["llm_match"] == pytest.approx(100.0), "only the six parsable marks are averaged"
    recs = _records(tmp_path)
    for eid in ("q0001", "q0003"):
        assert recs[eid]["judge_ok"] is False and recs[eid]["metrics"] == {}
        assert "7/10" in recs[eid]["judge_raw"], "the raw reply is kept for inspection"
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["headline"]["llm_match"]["n"] == 6


def test_empty_judge_reply_is_an_error_record_naming_the_cause(
    tmp_path, compose_cfg, llm_server, data
):
    llm_server.configure(
        rules=[
            {"pattern": r"object 2\?.*Your mark", "reply": ""},
            {"pattern": "Your mark", "reply": "Your mark: 1"},
            {"pattern": r"\nQ: ", "reply": "A: a chair"},
        ]
    )
    over = [f"task.data_dir={data}", "policy=blind", *server_overrides(llm_server)]
    out = run(compose_cfg(over))
    assert out["counts"]["ok"] == 7 and out["counts"]["error"] == 1
    err = _records(tmp_path)["q0002"]
    assert err["status"] == "error" and err["error"]["stage"] == "judge"
    assert err["error"]["type"] == "EmptyReplyError"
    assert "(judge) returned an empty reply twice" in err["error"]["message"]
    assert err["prediction"] == "a chair", "the prediction is kept for a later rejudge"
    assert out["llm_match"] == pytest.approx(0.0)
