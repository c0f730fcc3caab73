"""VSI-Bench's question file, frames sampled from the videos, and refusals of bad records."""

from __future__ import annotations

import json

import pytest

from eqa_runner.benchmarks.vsibench.task import VSIBenchTask, load_questions
from eqa_runner.benchmarks.vsibench.video import sample_indices
from eqa_runner.errors import ConfigError, DataError
from tests.vsibench.conftest import records


def test_loads_every_field(vsi_data) -> None:
    eps = VSIBenchTask(data_dir=str(vsi_data)).load_episodes()
    assert len(eps) == 10
    mca = next(e for e in eps if e.category == "route_planning")
    assert mca.question == (
        "Question 4 about route_planning?\nOptions:\nA. sofa\nB. chair\nC. table\nD. lamp\n"
        "Reply with the letter of the correct option and nothing else."
    )
    assert mca.answer == "B" and mca.scene == "arkitscenes/scene0"
    num = next(e for e in eps if e.category == "object_counting")
    assert num.question.startswith("Question 7 about object_counting?\nReply with one number")
    assert num.meta["subset"] == "scannet" and num.answer == "3"


def test_sampling_is_lmms_evals_floor_linspace() -> None:
    assert sample_indices(100, 8) == [0, 14, 28, 42, 56, 70, 84, 99]
    assert sample_indices(100, 8, "uniform_round") == [0, 14, 28, 42, 57, 71, 85, 99]
    assert sample_indices(5, 32) == [0, 1, 2, 3, 4]  # K = min(K, n)


def test_frames_are_the_sampled_ones_and_cached(vsi_data, tmp_path) -> None:
    task = VSIBenchTask(data_dir=str(vsi_data), frames_dir=str(tmp_path), num_frames=5)
    ep = task.load_episodes()[0]
    frames = task.frames(ep)
    assert [f.name for f in frames] == [f"frame_{i:06d}.png" for i in sample_indices(12, 5)]
    assert frames[0].parent == tmp_path / "arkitscenes" / "scene0" / "uniform-5"
    mtime = frames[0].stat().st_mtime_ns
    assert task.frames(ep) == frames and frames[0].stat().st_mtime_ns == mtime
    assert task.describe()["num_frames"] == 5


def test_a_replaced_video_is_sampled_again(tmp_path) -> None:
    from tests.vsibench.conftest import write_dataset

    data = write_dataset(tmp_path / "d", n_frames=12)
    task = VSIBenchTask(data_dir=str(data), frames_dir=str(tmp_path / "f"), num_frames=20)
    ep = task.load_episodes()[0]
    assert len(task.frames(ep)) == 12
    write_dataset(data, n_frames=30)  # new videos, same names
    assert len(task.frames(ep)) == 20


def test_missing_video_named_with_staging(vsi_data, tmp_path) -> None:
    task = VSIBenchTask(data_dir=str(vsi_data), videos_dir=str(tmp_path))
    eps = task.load_episodes()
    missing = task.missing(eps)
    assert len(missing) == 10
    assert (
        "arkitscenes/scene0.mp4: missing" in missing["0"]
        and "nyu-visionx/VSI-Bench" in missing["0"]
    )
    with pytest.raises(DataError, match="scene0.mp4 missing"):
        task.frames(eps[0])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"question_type": "object_colour"}, "unknown question_type 'object_colour'"),
        ({"scene_name": ""}, "missing field"),
        ({"options": None}, "needs its options"),
    ],
)
def test_bad_records_are_one_line(tmp_path, change, message) -> None:
    recs = records()
    recs[0].update(change)
    path = tmp_path / "test.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    with pytest.raises(DataError, match=message) as e:
        load_questions(path)
    assert "record 0" in str(e.value)


def test_zero_ground_truth_and_duplicates_refused(tmp_path) -> None:
    recs = records()
    recs[8]["ground_truth"] = "0"
    path = tmp_path / "q.json"
    path.write_text(json.dumps(recs))
    with pytest.raises(DataError, match="record 8: ground_truth 0"):
        load_questions(path)
    recs = records()
    recs[3]["id"] = 0
    path.write_text(json.dumps(recs))
    with pytest.raises(DataError, match="duplicate id '0'"):
        load_questions(path)


def test_parquet_and_filters(tmp_path) -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    recs = records()
    pd.DataFrame(recs).to_parquet(tmp_path / "test_debiased.parquet", index=False)
    task = VSIBenchTask(data_dir=str(tmp_path), variant="debiased", sources=["scannet"],
                        question_types=["object_counting", "route_planning"])  # fmt: skip
    eps = task.load_episodes()
    assert [e.category for e in eps] == ["object_counting"]
    with pytest.raises(DataError, match="task.sources: unknown scannet\\+\\+"):
        VSIBenchTask(
            data_dir=str(tmp_path), variant="debiased", sources=["scannet++"]
        ).load_episodes()


def test_schema_rules() -> None:
    with pytest.raises(ConfigError, match="task.num_frames=0"):
        VSIBenchTask(num_frames=0)
    with pytest.raises(ConfigError, match="task.variant=tiny"):
        VSIBenchTask(variant="tiny")


def test_lmms_evals_instruction_hashes_are_known_originals(vsi_data, tmp_path) -> None:
    """The descriptor's hashes reach the prompt records; our own files are not originals."""
    from eqa_runner.benchmarks.vsibench import BENCHMARK
    from eqa_runner.prompts import known_originals

    assert len(BENCHMARK.original_prompts) == 3
    assert set(BENCHMARK.original_prompts) <= set(known_originals())
    ours = VSIBenchTask(data_dir=str(vsi_data)).describe()["question_prompts"]
    assert set(ours) == {"mca", "na"}
    assert not any(p["benchmark_original"] for p in ours.values())
