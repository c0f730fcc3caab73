"""VSI-Bench (Yang et al., "Thinking in Space", 2024; nyu-visionx/VSI-Bench): questions on
egocentric scene videos of ScanNet, ScanNet++ and ARKitScenes rooms.

The question file as the dataset publishes it (``test.jsonl``; VSI-Bench-Debiased:
``test_debiased.parquet``; a ``.json`` list works too), one record per question: ``id``,
``dataset`` (arkitscenes | scannet | scannetpp), ``scene_name``, ``question_type`` (ten types:
the categories), ``question``, ``options`` (``["A. …", …]`` for the multiple-choice types,
null for the numeric ones), ``ground_truth`` (a letter, or a number as text). The video of a
question is ``<videos_dir>/<dataset>/<scene_name>.mp4`` (the dataset's zips extract so).

The question a policy sees is built as lmms-eval builds it: the question, then for the
multiple-choice types ``Options:`` and one option per line, then an instruction (ours:
``prompts/mca.txt`` / ``prompts/na.txt``; ``task.prompts_dir`` swaps them).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eqa_runner import capabilities as cap
from eqa_runner.benchmarks.vsibench.config import SOURCES
from eqa_runner.benchmarks.vsibench.config import VSIBenchTaskConfig as Schema
from eqa_runner.benchmarks.vsibench.scoring import MCA_TYPES, NA_TYPES, QUESTION_TYPES, as_number
from eqa_runner.errors import DataError
from eqa_runner.prompts import load_prompt, shipped_dir
from eqa_runner.tasks.base import Task
from eqa_runner.types import Episode

PROMPTS = shipped_dir(__file__)
FILES = {"full": "test.jsonl", "debiased": "test_debiased.parquet"}
FIELDS = ("id", "dataset", "scene_name", "question_type", "question", "ground_truth")
STAGE = (
    "download the dataset's videos (arkitscenes.zip, scannet.zip, scannetpp.zip of the "
    "Hugging Face dataset nyu-visionx/VSI-Bench) and unzip them into task.videos_dir "
    "(default task.data_dir)"
)


def read_records(path: Path) -> list[dict[str, Any]]:
    """The question records of a ``.jsonl``, ``.json`` or ``.parquet`` file."""
    path = Path(path)
    if not path.is_file():
        raise DataError(
            f"{path}: question file not found. Download test.jsonl (or test_debiased.parquet) "
            "of nyu-visionx/VSI-Bench into task.data_dir, or write the offline demo with "
            "`python -m eqa_runner.demo <dir>` and task.data_dir=<dir>/vsibench."
        )
    try:
        if path.suffix == ".parquet":
            frame = _parquet(path)
            return json.loads(frame.to_json(orient="records"))
        text = path.read_text(encoding="utf-8-sig")
        if path.suffix == ".jsonl":
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError, OSError) as e:
        raise DataError(f"{path}: not a readable question file ({e}).") from None
    if not isinstance(data, list):
        raise DataError(f"{path}: expected a JSON list of question records.")
    return data


def _parquet(path: Path) -> Any:
    import pandas as pd

    try:
        return pd.read_parquet(path)
    except ImportError:
        raise DataError(
            f"{path}: reading a .parquet question file needs pyarrow (pip install pyarrow)"
        ) from None


def question_text(rec: dict[str, Any], prompts_dir: str | None = None) -> str:
    """The text a policy is given: question (+ options) + the instruction of its kind."""
    if rec["question_type"] in MCA_TYPES:
        prompt = load_prompt(PROMPTS, "mca", prompts_dir)
        options = "\n".join(str(o) for o in rec.get("options") or [])
        return prompt.format(question=rec["question"], options=options)
    return load_prompt(PROMPTS, "na", prompts_dir).format(question=rec["question"])


def _episode(rec: Any, where: str, prompts_dir: str | None) -> Episode:
    if not isinstance(rec, dict):
        raise DataError(f"{where}: expected an object, got {type(rec).__name__}.")
    missing = [f for f in FIELDS if rec.get(f) is None or rec.get(f) == ""]
    if missing:
        raise DataError(f"{where}: missing field(s) {', '.join(missing)}.")
    qtype = str(rec["question_type"])
    if qtype not in QUESTION_TYPES:
        raise DataError(
            f"{where}: unknown question_type {qtype!r}; expected one of "
            f"{', '.join(QUESTION_TYPES)}."
        )
    if qtype in MCA_TYPES and not rec.get("options"):
        raise DataError(f"{where}: a {qtype} question needs its options (['A. …', …]).")
    if qtype in NA_TYPES and as_number(rec["ground_truth"]) == 0:
        raise DataError(
            f"{where}: ground_truth 0 of a numeric question: Mean Relative Accuracy is "
            "undefined there (the reference scorer raises); fix the record."
        )
    source = str(rec["dataset"])
    return Episode(
        episode_id=str(rec["id"]),
        question=question_text(rec, prompts_dir),
        answer=str(rec["ground_truth"]),
        category=qtype,
        scene=f"{source}/{rec['scene_name']}",
        meta={
            "subset": source,
            "raw_question": rec["question"],
            "options": list(rec.get("options") or []),
        },
    )


def load_questions(path: Path, prompts_dir: str | None = None) -> list[Episode]:
    """Episodes of a VSI-Bench question file (ids unique)."""
    episodes: list[Episode] = []
    seen: set[str] = set()
    for i, rec in enumerate(read_records(path)):
        ep = _episode(rec, f"{path}: record {i}", prompts_dir)
        if ep.episode_id in seen:
            raise DataError(f"{path}: record {i}: duplicate id {ep.episode_id!r}.")
        seen.add(ep.episode_id)
        episodes.append(ep)
    return episodes


class VSIBenchTask(Task):
    """The agent sees K frames sampled from the scene's video (or none: ``policy=blind``)."""

    provides = frozenset({cap.QUESTION, cap.OPEN_ANSWER, cap.FRAMES})

    config_class = Schema
    config: Schema

    def __init__(self, config: Schema | None = None, **overrides: Any) -> None:
        super().__init__(config, **overrides)
        c = self.config
        self.data_dir = Path(c.data_dir)
        self.questions_file = Path(c.questions_file or self.data_dir / FILES[c.variant])
        self.videos_dir = Path(c.videos_dir) if c.videos_dir else self.data_dir
        self.frames_dir = Path(c.frames_dir) if c.frames_dir else self.data_dir / "frames"
        # the frame policies name frames relative to this (their trace's ``frames``)
        self.episodes_dir = self.frames_dir

    def load_episodes(self) -> list[Episode]:
        c = self.config
        eps = load_questions(self.questions_file, c.prompts_dir)
        for key, values, allowed in (
            ("question_types", c.question_types, QUESTION_TYPES),
            ("sources", c.sources, SOURCES),
        ):
            bad = sorted(set(values or ()) - set(allowed))
            if bad:
                raise DataError(
                    f"task.{key}: unknown {', '.join(bad)}; one of {', '.join(allowed)}"
                )
        if c.question_types:
            eps = [e for e in eps if e.category in c.question_types]
        if c.sources:
            eps = [e for e in eps if e.meta["subset"] in c.sources]
        return eps

    def video(self, episode: Episode) -> Path:
        return self.videos_dir / f"{episode.scene}.mp4"

    def frames(self, episode: Episode) -> list[Path]:
        """The K sampled frames of the episode's video (decoded once, then cached)."""
        from eqa_runner.benchmarks.vsibench.video import cached_frames

        video = self.video(episode)
        if not video.is_file():
            raise DataError(f"episode {episode.episode_id}: video {video} missing; {STAGE}.")
        c = self.config
        return cached_frames(video, self.frames_dir / episode.scene, c.num_frames, c.sampling)

    def inputs(self, episodes: Sequence[Episode]) -> dict[str, Path]:
        """The scene videos the questions' frames come from (provenance ``scenes``)."""
        return {s: self.videos_dir / f"{s}.mp4" for s in sorted({e.scene for e in episodes})}

    def missing(self, episodes: Sequence[Episode]) -> dict[str, str]:
        """Questions whose video is not there (one line per video)."""
        bad = {}
        for scene in sorted({e.scene for e in episodes}):
            path = self.videos_dir / f"{scene}.mp4"
            if not path.is_file():
                bad[scene] = f"{path}: missing (the scene video: {STAGE})"
        return {e.episode_id: bad[e.scene] for e in episodes if e.scene in bad}

    def describe(self) -> dict[str, Any]:
        digest = None
        if self.questions_file.is_file():
            digest = hashlib.sha256(self.questions_file.read_bytes()).hexdigest()
        c = self.config
        prompts = {n: load_prompt(PROMPTS, n, c.prompts_dir).record() for n in ("mca", "na")}
        return {
            "name": self.name,
            "variant": c.variant,
            "data_dir": str(self.data_dir),
            "questions_file": str(self.questions_file),
            "questions_sha256": digest,
            "num_frames": c.num_frames,
            "sampling": c.sampling,
            "question_prompts": prompts,
        }
