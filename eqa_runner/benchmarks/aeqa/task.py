"""A-EQA, OpenEQA's active mode: explore an HM3D scene from a start pose, answer in free form.

Files (all in ``task.data_dir`` by default, names as published):

* the questions, in either shape:
  - a pose file (UMass-Embodied-AGI/3D-Mem ``aeqa_questions-184.json``): a list of OpenEQA
    records (``question_id``, ``question``, ``answer``, ``category``, optional ``extra_answers``)
    with ``episode_history`` naming the HM3D scene (``00826-BFRyYbPCCPE``), a start ``position``
    (habitat frame, metres) and ``rotation`` (w, x, y, z);
  - a list of question ids (facebookresearch/open-eqa ``open-eqa-v0-184-questions.json``),
    joined with ``open-eqa-v0.json`` for the text and with the pose file for the start poses;
* reference path lengths (3D-Mem ``gt_path_length.json``: ``{question_id: metres}``), the
  human exploration length ``l`` of the path-efficiency weight ``l / max(l, p)``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eqa_runner import capabilities as cap
from eqa_runner.benchmarks.aeqa.config import AEQATaskConfig
from eqa_runner.benchmarks.openeqa_em.task import load_questions as load_openeqa
from eqa_runner.errors import DataError
from eqa_runner.safe_io import read_json
from eqa_runner.sim.base import parse_scene_id
from eqa_runner.tasks.base import Task
from eqa_runner.tasks.duplicates import Duplicates
from eqa_runner.tasks.scenes import (
    missing_by_episode,
    missing_scenes,
    scene_inputs,
    simulator_stub,
)
from eqa_runner.types import Episode

POSES_FILE = "aeqa_questions-184.json"
OPENEQA_FILE = "open-eqa-v0.json"
PATH_LENGTHS_FILE = "gt_path_length.json"
# HM3D is licensed: the check prints how access is obtained and where the val scenes go
FETCH_HINT = (
    "the HM3D v0.2 val scenes are licensed by Matterport: `python -m eqa_runner.data check aeqa` "
    "prints how to get access and stage them"
)
SOURCES = {  # where each published file comes from (eqa_runner/benchmarks/aeqa/README.md, Data)
    "reference path lengths": "yyuncong/3D-Mem-AEQA-Eval data/gt_path_length.json",
    "question file": "UMass-Embodied-AGI/3D-Mem data/aeqa_questions-184.json",
    "OpenEQA question file": "facebookresearch/open-eqa data/open-eqa-v0.json",
}
_POS = ("position", "start_position")
_ROT = ("rotation", "start_rotation")
_SCENE = ("episode_history", "scene_id", "scene")


def _read_json(path: Path, what: str) -> Any:
    try:
        return read_json(path)  # bounded: size and nesting (safe_io)
    except FileNotFoundError:
        src = f" (from {SOURCES[what]})" if what in SOURCES else ""
        off = (
            ", or pass task.require_path_lengths=false to run without them (llm_match_spl "
            "is then left out)"
            if what == "reference path lengths"
            else ""
        )
        raise DataError(
            f"{path}: {what} not found{src}. Set task.data_dir (or the file's task key), stage "
            "the files as eqa_runner/benchmarks/aeqa/README.md (Data) says, or write the offline "
            f"demo with `python -m eqa_runner.demo <dir>` and task.data_dir=<dir>/aeqa{off}."
        ) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise DataError(f"{path}: not valid JSON ({e}). Re-download or fix the file.") from None


def _first(rec: dict[str, Any], keys: Sequence[str]) -> Any:
    return next((rec[k] for k in keys if rec.get(k) not in (None, "")), None)


def _vector(value: Any, n: int, where: str, field: str) -> list[float]:
    ok = isinstance(value, (list, tuple)) and len(value) == n
    vals = (
        [float(v) for v in value] if ok and all(isinstance(v, (int, float)) for v in value) else []
    )
    if not vals or not all(math.isfinite(v) for v in vals):
        raise DataError(f"{where}: field {field} must be {n} finite numbers, got {value!r:.60}.")
    return vals


def start_pose(rec: dict[str, Any], where: str) -> dict[str, Any]:
    """Start position, rotation (w, x, y, z, normalised) and HM3D scene of one pose record."""
    pos, rot, scene = _first(rec, _POS), _first(rec, _ROT), _first(rec, _SCENE)
    if pos is None or rot is None or scene is None:
        missing = [
            n
            for n, v in (("position", pos), ("rotation", rot), ("episode_history", scene))
            if v is None
        ]
        raise DataError(f"{where}: missing field(s) {', '.join(missing)} of the start pose.")
    q = _vector(rot, 4, where, "rotation")
    norm = math.sqrt(math.fsum(x * x for x in q))
    if norm < 1e-9:
        raise DataError(f"{where}: field rotation is a zero quaternion.")
    try:
        key = parse_scene_id(str(scene))[1]
    except ValueError:
        raise DataError(
            f"{where}: episode_history {scene!r} is not an HM3D scene dir (NNNNN-<hash>); the "
            "pose file (3D-Mem's aeqa_questions-184.json) names the scene."
        ) from None
    return {
        "start_position": _vector(pos, 3, where, "position"),
        "start_rotation": [x / norm for x in q],
        "scene": key,
    }


def load_path_lengths(path: Path) -> dict[str, float]:
    data = _read_json(path, "reference path lengths")
    if not isinstance(data, dict):
        raise DataError(f"{path}: expected an object {{question_id: metres}}.")
    out = {}
    for qid, v in data.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise DataError(f"{path}: {qid}: a path length must be a number >= 0, got {v!r}.")
        out[str(qid)] = float(v)
    return out


def _texts_and_poses(
    questions_file: Path, openeqa_file: Path, poses_file: Path, dups: Duplicates
) -> tuple[list[Episode], Any, Path]:
    """The questions (OpenEQA records), the pose records and the file that holds them (an id
    listed twice is kept once, counted in ``dups``)."""
    data = _read_json(questions_file, "question file")
    if not isinstance(data, list) or not data:
        raise DataError(f"{questions_file}: expected a non-empty JSON list.")
    if not all(isinstance(x, str) for x in data):  # pose records that hold the questions too
        return load_openeqa(questions_file), data, questions_file
    data = dups.unique(questions_file, data, "question id")
    by_id = {e.episode_id: e for e in load_openeqa(openeqa_file)}  # ids only: text from OpenEQA
    unknown = [q for q in data if q not in by_id]
    if unknown:
        raise DataError(
            f"{questions_file}: {len(unknown)} question id(s) not in {openeqa_file}, "
            f"e.g. {unknown[:2]}."
        )
    return [by_id[q] for q in data], _read_json(poses_file, "pose file"), poses_file


def _poses(pose_recs: list[Any], poses_file: Path, dups: Duplicates) -> dict[str, Any]:
    """question id -> start pose; a repeated id with the same pose is kept once, with another
    pose refused."""
    poses: dict[str, Any] = {}
    first: dict[str, int] = {}
    for i, rec in enumerate(pose_recs):
        if isinstance(rec, dict) and rec.get("question_id"):
            qid, where = str(rec["question_id"]), f"{poses_file}: record {i}"
            first.setdefault(qid, i)
            dups.put(
                poses,
                qid,
                start_pose(rec, where),
                where,
                poses_file,
                "question id",
                f"record {first[qid]}",
            )
    return poses


def load_aeqa(
    questions_file: Path,
    openeqa_file: Path,
    poses_file: Path,
    lengths: dict[str, float] | None,
    no_pose: list[str] | None = None,
    dups: Duplicates | None = None,
) -> list[Episode]:
    """A-EQA episodes from either question-file shape (see the module docstring).

    A question without a start pose is an error, unless ``no_pose`` is given: then its id is
    appended there and the question is left out (``data check`` lists them all). An id listed
    twice is kept once, two different start poses for one id are refused
    (:mod:`eqa_runner.tasks.duplicates`; ``dups`` counts what was dropped)."""
    dups = dups if dups is not None else Duplicates()
    texts, pose_recs, poses_file = _texts_and_poses(questions_file, openeqa_file, poses_file, dups)
    if not isinstance(pose_recs, list):
        raise DataError(f"{poses_file}: expected a JSON list of records with start poses.")
    poses = _poses(pose_recs, poses_file, dups)
    episodes = []
    for ep in texts:
        pose = poses.get(ep.episode_id)
        if pose is None and no_pose is not None:
            no_pose.append(ep.episode_id)
            continue
        if pose is None:
            raise DataError(
                f"{poses_file}: no start pose for question {ep.episode_id}; A-EQA needs one "
                "per question (3D-Mem's aeqa_questions-184.json)."
            )
        meta = {
            "start_position": pose["start_position"],
            "start_rotation": pose["start_rotation"],
            "episode_history": ep.scene,
            "reference_path_length": None if lengths is None else lengths.get(ep.episode_id),
            "subset": "hm3d",
        }
        episodes.append(
            Episode(
                ep.episode_id,
                ep.question,
                ep.answer,
                ep.category,
                list(ep.extra_answers),
                pose["scene"],
                meta,
            )
        )
    return episodes


class AEQATask(Task):
    """A-EQA: the 184 active-mode questions of OpenEQA, from recorded start poses."""

    provides = frozenset(
        {cap.QUESTION, cap.OPEN_ANSWER, cap.SIMULATOR, cap.PROTOCOL, cap.REFERENCE_PATH}
    )

    config_class = AEQATaskConfig
    config: AEQATaskConfig

    def __init__(self, config: AEQATaskConfig | None = None, **overrides: Any) -> None:
        super().__init__(config, **overrides)
        c = self.config
        self.data_dir = Path(c.data_dir)
        self.poses_file = Path(c.poses_file or self.data_dir / POSES_FILE)
        self.questions_file = Path(c.questions_file) if c.questions_file else self.poses_file
        self.openeqa_file = Path(c.openeqa_file or self.data_dir / OPENEQA_FILE)
        self.path_lengths_file = Path(c.path_lengths_file or self.data_dir / PATH_LENGTHS_FILE)
        self.scenes_dir = Path(c.scenes_dir) if c.scenes_dir else self.data_dir / "scenes"

    def load_episodes(self) -> list[Episode]:
        lengths = None
        if self.path_lengths_file.is_file() or self.config.require_path_lengths:
            lengths = load_path_lengths(self.path_lengths_file)
        self.duplicates.clear()
        eps = load_aeqa(
            self.questions_file, self.openeqa_file, self.poses_file, lengths, dups=self.duplicates
        )
        if self.config.categories:
            eps = [e for e in eps if e.category in self.config.categories]
        return sorted(eps, key=lambda e: e.scene)  # one scene load per scene

    def resolve_scene(self, episode: Episode, sim: Any) -> Any:
        return sim.resolve_scene(self.scenes_dir, episode.scene)

    def inputs(self, episodes: Sequence[Episode]) -> dict[str, Path]:
        """The scene (and navmesh) files the episodes load (provenance ``scenes``)."""
        return scene_inputs(
            (e.scene for e in episodes), self.scenes_dir, simulator_stub(self.simulator)
        )

    def missing(self, episodes: Sequence[Episode]) -> dict[str, str]:
        """Questions whose (val) scene the selected backend cannot find."""
        sim = simulator_stub(self.simulator)

        def expected(scene: str) -> Path:
            _, d, h = parse_scene_id(scene)
            return self.scenes_dir / "val" / d / f"{h}.basis.glb"

        scenes = missing_scenes(
            (e.scene for e in episodes), self.scenes_dir, sim, FETCH_HINT, expected
        )
        return missing_by_episode(episodes, scenes)

    def check(self, episodes: Sequence[Episode]) -> list[str]:
        problems = super().check(episodes)
        if self.config.require_path_lengths:
            problems += [
                f"question {e.episode_id}: no reference path length in {self.path_lengths_file}"
                for e in episodes
                if e.meta.get("reference_path_length") is None
            ]
        return problems

    def describe(self) -> dict[str, Any]:
        def digest(p: Path) -> str | None:
            return hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else None

        files = {
            "questions": self.questions_file,
            "poses": self.poses_file,
            "path_lengths": self.path_lengths_file,
        }
        return {
            "name": self.name,
            "data_dir": str(self.data_dir),
            **{f"{k}_file": str(p) for k, p in files.items()},
            **{f"{k}_sha256": digest(p) for k, p in files.items()},
            "scenes_dir": str(self.scenes_dir),
            **self.duplicates.describe(),
        }
