"""MP3D-EQA v1 as a :class:`~eqa_runner.tasks.base.Task`: habitat-lab's ``MP3DEQA-v1`` episodes
(:mod:`eqa_runner_mp3d_eqa.episodes`) turned into the runner's episodes.

An episode's ``meta`` carries what the exploration loop and the judge read: the start pose
(``start_rotation`` converted to the project's w x y z order), the goal (``goal_position``, the
object's centre, which is not on the floor: distances are geodesic to its projection, as
habitat-sim's path finder snaps it), the view points, ``answer_token`` and the answer
vocabulary, and ``geodesic_distance`` (the reference path's length from the spawn point).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eqa_runner import capabilities as cap
from eqa_runner.tasks.base import Task
from eqa_runner.tasks.scenes import (
    missing_by_episode,
    missing_scenes,
    scene_inputs,
    simulator_stub,
)
from eqa_runner.types import Episode
from eqa_runner_mp3d_eqa.config import MP3DEQATaskConfig as Schema
from eqa_runner_mp3d_eqa.episodes import Vocab, episodes_file, load, scene_path, xyzw_to_wxyz

FETCH_HINT = "python -m eqa_runner.data fetch mp3d_eqa"


def house_of(scene: str) -> str:
    """The Matterport house id of a scene path (``mp3d/<house>/<house>.glb`` -> ``<house>``)."""
    return Path(scene).stem.split(".")[0]


def _path_length(points: Sequence[dict[str, Any]]) -> float:
    pos = [p["position"] for p in points if isinstance(p, dict) and "position" in p]
    return float(sum(math.dist(a, b) for a, b in zip(pos, pos[1:], strict=False)))


def spawn(raw: dict[str, Any], steps: int | None) -> tuple[list[float], list[float], float]:
    """(position, rotation x y z w, reference path length from there): the episode's start, or
    ``steps`` actions before the end of its shortest path (habitat-baselines' index
    ``len(path) - steps``)."""
    path = (raw.get("shortest_paths") or [[]])[0] or []
    if steps is None or not path:
        return raw["start_position"], raw["start_rotation"], _path_length(path)
    k = max(0, len(path) - int(steps))
    return list(path[k]["position"]), list(path[k]["rotation"]), _path_length(path[k:])


def to_episode(raw: dict[str, Any], answers: Vocab, steps: int | None) -> Episode:
    """One runner episode of a checked MP3D-EQA episode."""
    q, goal = raw["question"], raw["goal"]
    pos, rot, length = spawn(raw, steps)
    return Episode(
        episode_id=raw["episode_id"],
        question=q["question_text"],
        answer=q["answer_text"],
        category=str(q.get("question_type") or "unknown"),
        scene=scene_path(str(raw["scene_id"])),
        meta={
            "start_position": [float(v) for v in pos],
            "start_rotation": xyzw_to_wxyz(rot),
            "goal_position": [float(v) for v in goal["position"]],
            "goal_view_points": [vp["position"] for vp in goal.get("view_points") or []],
            "goal_object": goal.get("object_name"),
            "goal_room": goal.get("room_name"),
            "geodesic_distance": length,
            "answer_token": int(q["answer_token"]),
            "answer_vocab": answers.words,
            "question_type": q.get("question_type"),
            "subset": q.get("question_type"),
        },
    )


class MP3DEQATask(Task):
    """MP3D-EQA v1: explore a Matterport3D house from a start pose, answer with one word."""

    config_class = Schema
    config: Schema
    provides = frozenset({cap.QUESTION, cap.SIMULATOR, cap.PROTOCOL, cap.GOAL})

    def __init__(self, config: Schema | None = None, **overrides: Any) -> None:
        super().__init__(config, **overrides)
        c = self.config
        self.data_dir = Path(c.data_dir)
        self.questions_file = Path(c.questions_file or episodes_file(self.data_dir, c.split))
        self.scenes_dir = Path(c.scenes_dir) if c.scenes_dir else self.data_dir / "scenes"

    def load_episodes(self) -> list[Episode]:
        c = self.config
        raw, _, answers = load(self.questions_file)
        eps = [to_episode(r, answers, c.spawn_steps) for r in raw]
        if c.types:
            eps = [e for e in eps if e.category in c.types]
        if c.scenes:
            eps = [e for e in eps if house_of(e.scene) in set(c.scenes)]
        return sorted(eps, key=lambda e: (house_of(e.scene), _id_key(e.episode_id)))

    def resolve_scene(self, episode: Episode, sim: Any) -> Any:
        return sim.resolve_scene(self.scenes_dir, episode.scene)

    def inputs(self, episodes: Sequence[Episode]) -> dict[str, Path]:
        """The scene (and navmesh) files the episodes load (provenance ``scenes``)."""
        return scene_inputs(
            (e.scene for e in episodes), self.scenes_dir, simulator_stub(self.simulator)
        )

    def missing(self, episodes: Sequence[Episode]) -> dict[str, str]:
        """Episodes whose house the selected backend (``sim=``) cannot find: the one presence
        check of a run, a dry run and ``data check``."""
        sim = simulator_stub(self.simulator)
        scenes = missing_scenes((e.scene for e in episodes), self.scenes_dir, sim, FETCH_HINT)
        return missing_by_episode(episodes, scenes)

    def describe(self) -> dict[str, Any]:
        f = self.questions_file
        return {
            "name": self.name,
            "split": self.config.split,
            "data_dir": str(self.data_dir),
            "questions_file": str(f),
            "questions_sha256": hashlib.sha256(f.read_bytes()).hexdigest() if f.is_file() else None,
            "scenes_dir": str(self.scenes_dir),
            "spawn_steps": self.config.spawn_steps,
        }

    def subset_of(self, episode: Episode) -> str | None:
        return episode.category


def _id_key(episode_id: str) -> tuple[int, str]:
    return (int(episode_id), "") if episode_id.isdigit() else (1 << 62, episode_id)
