"""OpenEQA EM-EQA question loading (aliases, errors) and frame listing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from eqa_runner.benchmarks.openeqa_em.task import (
    CATEGORIES,
    OpenEQATask,
    list_frames,
    load_questions,
)
from eqa_runner.errors import ConfigError, DataError


def rec(**kw: Any) -> dict[str, Any]:
    base = {
        "question_id": "q0",
        "question": "What colour is the sofa?",
        "answer": "red",
        "category": "attribute recognition",
        "episode_history": "hm3d-v0/000-hm3d-BFRyYbPCCPE",
    }
    base.update(kw)
    return {k: v for k, v in base.items() if v is not None}


def write(tmp_path: Path, data: Any, name: str = "q.json") -> Path:
    p = tmp_path / name
    p.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return p


def touch(d: Path, *names: str) -> None:
    d.mkdir(parents=True, exist_ok=True)
    for n in names:
        (d / n).write_bytes(b"not decoded")


# ----------------------------------------------------------------------------- loading


def test_canonical_fields(tmp_path: Path) -> None:
    (ep,) = load_questions(write(tmp_path, [rec(extra_answers=["crimson", "dark red"])]))
    assert ep.episode_id == "q0"
    assert ep.question == "What colour is the sofa?"
    assert ep.answer == "red"
    assert ep.category == "attribute recognition"
    assert ep.scene == "hm3d-v0/000-hm3d-BFRyYbPCCPE"
    assert ep.extra_answers == ["crimson", "dark red"]
    assert ep.meta["subset"] == "hm3d"


def test_aliases(tmp_path: Path) -> None:
    data = [
        {
            "id": "a1",
            "question": "Q?",
            "answers": ["first", "second"],
            "type": "Object Recognition",
            "episode": "scannet-v0/002-scannet-scene0709_00",
        },
        {
            "id": 7,
            "question": "Q2?",
            "answer": "x",
            "category": "world knowledge",
            "scene": "hm3d-v0/001",
        },
    ]
    a, b = load_questions(write(tmp_path, data))
    assert (a.episode_id, a.answer, a.category, a.scene) == (
        "a1",
        "first",
        "object recognition",
        "scannet-v0/002-scannet-scene0709_00",
    )
    assert a.meta["subset"] == "scannet"
    assert a.extra_answers == []
    assert (b.episode_id, b.meta["subset"]) == ("7", "hm3d")


@pytest.mark.parametrize("field", ["question_id", "question", "answer", "category"])
def test_missing_field_names_file_record_and_field(tmp_path: Path, field: str) -> None:
    bad = {**rec(question_id="q1"), field: None}
    path = write(tmp_path, [rec(question_id="ok"), {k: v for k, v in bad.items() if v is not None}])
    with pytest.raises(DataError) as e:
        load_questions(path)
    msg = str(e.value)
    assert str(path) in msg
    assert "record 1" in msg
    canonical = {"question_id": "episode_id"}.get(field, field)
    assert canonical in msg


def test_missing_episode_history(tmp_path: Path) -> None:
    path = write(tmp_path, [rec(episode_history=None)])
    with pytest.raises(DataError, match=r"record 0.*episode_history"):
        load_questions(path)


def test_not_json(tmp_path: Path) -> None:
    path = write(tmp_path, "[{'question': 'single quotes'}]")
    with pytest.raises(DataError, match="not valid JSON") as e:
        load_questions(path)
    assert str(path) in str(e.value)


def test_not_a_list(tmp_path: Path) -> None:
    path = write(tmp_path, {"questions": [rec()]})
    with pytest.raises(DataError, match="list") as e:
        load_questions(path)
    assert str(path) in str(e.value)


def test_record_not_an_object(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="record 1"):
        load_questions(write(tmp_path, [rec(), "oops"]))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="not found"):
        load_questions(tmp_path / "nope.json")


def test_duplicate_ids(tmp_path: Path) -> None:
    path = write(tmp_path, [rec(question_id="x"), rec(question_id="y"), rec(question_id="x")])
    with pytest.raises(DataError, match=r"record 2.*duplicate.*'x'.*record 0"):
        load_questions(path)


def test_unknown_category_lists_valid_ones(tmp_path: Path) -> None:
    path = write(tmp_path, [rec(category="counting")])
    with pytest.raises(DataError) as e:
        load_questions(path)
    msg = str(e.value)
    assert "counting" in msg and "record 0" in msg
    assert len(CATEGORIES) == 7
    for c in CATEGORIES:
        assert c in msg
    (ep,) = load_questions(path, allow_unknown_categories=True)
    assert ep.category == "counting"


@pytest.mark.parametrize(
    "history", ["../outside", "hm3d-v0/../../etc", "/abs/path/episode", "..\\windows\\path"]
)
def test_unsafe_episode_history_rejected(tmp_path: Path, history: str) -> None:
    with pytest.raises(DataError, match="episode_history"):
        load_questions(write(tmp_path, [rec(episode_history=history)]))


def test_extra_answers_must_be_list(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="extra_answers"):
        load_questions(write(tmp_path, [rec(extra_answers="red-ish")]))


def _task_data(tmp_path: Path) -> Path:
    data = [
        rec(question_id="h1", category="object recognition"),
        rec(question_id="h2", category="world knowledge"),
        rec(question_id="s1", category="object recognition", episode_history="scannet-v0/002"),
        rec(question_id="s2", category="spatial understanding", episode_history="scannet-v0/003"),
    ]
    write(tmp_path, data, "open-eqa-v0.json")
    return tmp_path


def test_task_filters_subset_and_categories(tmp_path: Path) -> None:
    d = str(_task_data(tmp_path))
    ids = lambda t: [e.episode_id for e in t.load_episodes()]  # noqa: E731
    assert ids(OpenEQATask(data_dir=d)) == ["h1", "h2", "s1", "s2"]
    assert ids(OpenEQATask(data_dir=d, subset="scannet")) == ["s1", "s2"]
    assert ids(OpenEQATask(data_dir=d, subset="hm3d")) == ["h1", "h2"]
    assert ids(OpenEQATask(data_dir=d, categories=["Object Recognition"])) == ["h1", "s1"]
    assert ids(OpenEQATask(data_dir=d, subset="hm3d", categories=["object recognition"])) == ["h1"]
    with pytest.raises(
        ConfigError, match=r"^task.subset=replica: must be one of hm3d, scannet \(or null\)$"
    ):
        OpenEQATask(data_dir=d, subset="replica")


# ----------------------------------------------------------------------------- frames


def test_frames_in_episode_folder_exclude_non_rgb(tmp_path: Path) -> None:
    d = tmp_path / "ep"
    touch(
        d,
        "00002-rgb.png",
        "00000-rgb.png",
        "00001-rgb.png",
        "00000-depth.png",
        "00000-seg.png",
        "00000-semantic.png",
        "00000.txt",
        "intrinsic_color.txt",
        "._00000-rgb.png",
    )
    (d / "subdir.png").mkdir()
    assert [p.name for p in list_frames(d)] == ["00000-rgb.png", "00001-rgb.png", "00002-rgb.png"]
    assert all(p.parent == d for p in list_frames(d))


def test_natural_sort(tmp_path: Path) -> None:
    d = tmp_path / "ep"
    touch(d, "frame_10.jpg", "frame_2.jpg", "frame_1.jpg", "frame_100.jpg", "frame_12-depth.png")
    assert [p.name for p in list_frames(d)] == [
        "frame_1.jpg",
        "frame_2.jpg",
        "frame_10.jpg",
        "frame_100.jpg",
    ]


@pytest.mark.parametrize("sub", ["frames", "rgb", "color", "images"])
def test_frames_in_subfolder(tmp_path: Path, sub: str) -> None:
    d = tmp_path / "ep"
    touch(d, "pose.txt", "00000-depth.png")
    touch(d / sub, "frame_2.jpg", "frame_10.jpg")
    assert list_frames(d) == [d / sub / "frame_2.jpg", d / sub / "frame_10.jpg"]


def test_first_non_empty_folder_wins(tmp_path: Path) -> None:
    d = tmp_path / "ep"
    touch(d / "frames", "a-depth.png")  # exists but holds no RGB frames
    touch(d / "rgb", "0.png", "1.png")
    touch(d / "images", "9.png")
    assert list_frames(d) == [d / "rgb" / "0.png", d / "rgb" / "1.png"]
    touch(d, "top.png")
    assert list_frames(d) == [d / "top.png"]


def test_listing_decodes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = _task_data(tmp_path) / "episodes" / "hm3d-v0" / "000-hm3d-BFRyYbPCCPE"
    touch(d, "00000-rgb.png", "00001-rgb.png")  # not images at all

    def boom(*a: object, **k: object) -> None:
        raise AssertionError("listing must not open images")

    monkeypatch.setattr(Image, "open", boom)
    task = OpenEQATask(data_dir=str(tmp_path))
    eps = task.load_episodes()
    assert [p.name for p in task.frames(eps[0])] == ["00000-rgb.png", "00001-rgb.png"]
    assert len(list_frames(d)) == 2


def test_task_frames_missing_and_empty(tmp_path: Path) -> None:
    task = OpenEQATask(data_dir=str(_task_data(tmp_path)))
    eps = {e.episode_id: e for e in task.load_episodes()}
    folder = tmp_path / "episodes" / "hm3d-v0" / "000-hm3d-BFRyYbPCCPE"
    with pytest.raises(DataError, match="missing") as e:
        task.frames(eps["h1"])
    assert str(folder) in str(e.value) and "h1" in str(e.value)
    touch(folder, "00000-depth.png", "notes.txt")
    with pytest.raises(DataError, match="no RGB frames") as e:
        task.frames(eps["h1"])
    assert str(folder) in str(e.value)


def test_task_check_lists_missing_folders(tmp_path: Path) -> None:
    task = OpenEQATask(data_dir=str(_task_data(tmp_path)))
    eps = task.load_episodes()
    touch(tmp_path / "episodes" / "hm3d-v0" / "000-hm3d-BFRyYbPCCPE", "00000-rgb.png")
    touch(tmp_path / "episodes" / "scannet-v0" / "003", "x-depth.png")
    problems = task.check(eps)
    assert len(problems) == 2  # one per distinct folder, the good one is not listed
    joined = "\n".join(problems)
    assert str(tmp_path / "episodes" / "scannet-v0" / "002") in joined
    assert str(tmp_path / "episodes" / "scannet-v0" / "003") in joined
    assert "000-hm3d" not in joined
    touch(tmp_path / "episodes" / "scannet-v0" / "002", "0.png")
    touch(tmp_path / "episodes" / "scannet-v0" / "003", "0.png")
    assert task.check(eps) == []
