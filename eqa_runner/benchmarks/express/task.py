"""EXPRESS-Bench (Jiang et al., ICCV 2025): exploration-aware EQA in HM3D scenes.

Two published layouts of the question file load:

* the original ``express-bench.json`` of the EXPRESS-Bench repository: ``episode_id``,
  ``trajectory_id``, ``scene_id`` (``hm3d/train/00006-HkseAnWCgqk``), ``episode_path``, ``type``,
  ``question``, ``answer``, ``start_position``, ``start_rotation``, ``goal_position``,
  ``goal_rotation``, ``geodesic_distance``, ``step_length``, ``actions``;
* the re-packaged (OpenEQA-style) layout: ``question_id``, ``episode_history``
  (``00006-HkseAnWCgqk``), ``category``, ``position`` / ``rotation`` (start pose), and the same
  goal / ``geodesic_distance`` fields (also accepted nested as ``start: {position, rotation}``,
  ``goal: {position, rotation}``).

Positions are in the habitat frame; rotations are (w, x, y, z) quaternions kept verbatim.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eqa_runner import capabilities as cap
from eqa_runner.benchmarks.express.config import ExpressTaskConfig
from eqa_runner.errors import DataError
from eqa_runner.safe_io import read_json
from eqa_runner.sim.base import parse_scene_id
from eqa_runner.tasks.base import Task
from eqa_runner.tasks.scenes import (
    missing_by_episode,
    missing_scenes,
    scene_inputs,
    scene_key,
    simulator_stub,
)
from eqa_runner.types import Episode

QUESTIONS_FILE = "express-bench.json"
TYPES = ("object", "existence", "attribute", "location", "state", "knowledge", "counting")
VAL_MIN_SCENE = 800  # HM3D scenes 00800-00899 are the val split, 00000-00799 train
FETCH_HINT = "python -m eqa_runner.data fetch express"  # the question file and prompts
SCENES_HINT = (
    "the HM3D v0.2 scenes are licensed by Matterport: `python -m eqa_runner.data check express` "
    "prints how to get access and stage them"
)

# field -> accepted keys, in order of preference (a dotted key looks inside a nested object)
_ALIASES: dict[str, tuple[str, ...]] = {
    "episode_id": ("episode_id", "question_id", "id"),
    "scene": ("scene_id", "episode_history", "scene"),
    "category": ("type", "category", "question_type"),
    "question": ("question",),
    "answer": ("answer",),
    "start_position": ("start_position", "position", "start.position"),
    "start_rotation": ("start_rotation", "rotation", "start.rotation"),
    "goal_position": ("goal_position", "goal.position", "goals.0.position"),
    "goal_rotation": ("goal_rotation", "goal.rotation", "goals.0.rotation"),
    "geodesic_distance": ("geodesic_distance", "info.geodesic_distance", "reference_path_length"),
}
_REQUIRED = (
    "episode_id",
    "scene",
    "category",
    "question",
    "answer",
    "start_position",
    "start_rotation",
    "goal_position",
    "geodesic_distance",
)


def _lookup(rec: dict[str, Any], key: str) -> Any:
    cur: Any = rec
    for part in key.split("."):
        if isinstance(cur, dict):
            cur = cur.get(part)
        elif isinstance(cur, list) and part.isdigit() and int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return None
    return cur


def _pick(rec: dict[str, Any], field: str) -> Any:
    for key in _ALIASES[field]:
        v = _lookup(rec, key)
        if v is not None and v != "":
            return v
    return None


def _vector(value: Any, n: int, where: str, field: str) -> list[float]:
    if not isinstance(value, (list, tuple)) or len(value) != n:
        got = f"{len(value)} values" if isinstance(value, (list, tuple)) else repr(value)[:40]
        raise DataError(f"{where}: field {field} must be a list of {n} numbers, got {got}.")
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise DataError(f"{where}: field {field} holds a non-number {v!r}.")
        if not math.isfinite(v):
            raise DataError(f"{where}: field {field} holds a non-finite value ({v}).")
        out.append(float(v))
    return out


def scene_split(scene: str) -> str:
    """``val`` for HM3D scenes numbered >= 800, else ``train`` (from the NNNNN- prefix)."""
    _, dirname, _ = parse_scene_id(scene)
    return "val" if int(dirname[:5]) >= VAL_MIN_SCENE else "train"


def parse_record(rec: Any, where: str) -> Episode:
    """One question record (either layout) -> :class:`Episode`; raises :class:`DataError`."""
    if not isinstance(rec, dict):
        raise DataError(f"{where}: expected an object, got {type(rec).__name__}.")
    v = {f: _pick(rec, f) for f in _ALIASES}
    missing = [f for f in _REQUIRED if v[f] is None]
    if missing:
        names = ", ".join(f"{m} (or {'/'.join(_ALIASES[m][1:]) or '-'})" for m in missing)
        raise DataError(f"{where}: missing field(s) {names}.")
    scene = str(v["scene"]).strip()
    try:
        split = scene_split(scene)
    except ValueError:
        raise DataError(
            f"{where}: field scene_id {scene!r} is not an HM3D scene id "
            "(expected e.g. hm3d/val/00800-TEEsavR23oF or 00800-TEEsavR23oF)."
        ) from None
    geo_d = v["geodesic_distance"]
    if isinstance(geo_d, bool) or not isinstance(geo_d, (int, float)) or not math.isfinite(geo_d):
        raise DataError(f"{where}: field geodesic_distance must be a finite number, got {geo_d!r}.")
    if geo_d < 0:
        raise DataError(f"{where}: field geodesic_distance is negative ({geo_d}).")
    rot = _vector(v["start_rotation"], 4, where, "start_rotation")
    if math.fsum(x * x for x in rot) < 1e-12:
        raise DataError(f"{where}: field start_rotation is a zero quaternion.")
    goal_rot = v["goal_rotation"]
    meta = {
        "start_position": _vector(v["start_position"], 3, where, "start_position"),
        "start_rotation": rot,  # (w, x, y, z), verbatim
        "goal_position": _vector(v["goal_position"], 3, where, "goal_position"),
        "goal_rotation": None if goal_rot is None else _vector(goal_rot, 4, where, "goal_rotation"),
        "geodesic_distance": float(geo_d),
        "split": split,
        "subset": split,
    }
    for extra in ("trajectory_id", "episode_path", "step_length"):
        if rec.get(extra) is not None:
            meta[extra] = rec[extra]
    return Episode(
        episode_id=str(v["episode_id"]),
        question=str(v["question"]),
        answer=str(v["answer"]),
        category=str(v["category"]).strip().lower(),
        scene=scene,
        meta=meta,
    )


def _records(data: Any, path: Path) -> list[Any]:
    if isinstance(data, dict):
        for key in ("episodes", "questions", "data"):
            if isinstance(data.get(key), list):
                return data[key]
    if not isinstance(data, list):
        raise DataError(
            f"{path}: expected a JSON list of question records, got {type(data).__name__}."
        )
    return data


def load_questions(path: Path) -> list[Episode]:
    """Parse an EXPRESS-Bench question file (either layout), validating every record."""
    path = Path(path)
    try:
        data = read_json(path)  # bounded: size and nesting (safe_io)
    except FileNotFoundError:
        raise DataError(
            f"{path}: question file not found. Set task.data_dir / task.questions_file, or stage "
            f"the data with `{FETCH_HINT}` (or `python -m eqa_runner.demo <dir>` and "
            "task.data_dir=<dir>/express for the offline demo)."
        ) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise DataError(f"{path}: not valid JSON ({e}). Re-download or fix the file.") from None
    episodes: list[Episode] = []
    seen: dict[str, int] = {}
    for i, rec in enumerate(_records(data, path)):
        where = f"{path}: record {i}"
        ep = parse_record(rec, where)
        if ep.episode_id in seen:
            raise DataError(
                f"{where}: duplicate episode id {ep.episode_id!r} (also record "
                f"{seen[ep.episode_id]}). Ids must be unique."
            )
        seen[ep.episode_id] = i
        ep.meta["row"] = i  # upstream's question_ind (main.py loops over the file's list)
        episodes.append(ep)
    return episodes


class ExpressTask(Task):
    """EXPRESS-Bench: explore an HM3D scene from a recorded start pose, then answer."""

    provides = frozenset({cap.QUESTION, cap.OPEN_ANSWER, cap.SIMULATOR, cap.PROTOCOL, cap.GOAL})

    config_class = ExpressTaskConfig
    config: ExpressTaskConfig

    def __init__(self, config: ExpressTaskConfig | None = None, **overrides: Any) -> None:
        super().__init__(config, **overrides)
        c = self.config
        self.data_dir = Path(c.data_dir)
        self.questions_file = Path(c.questions_file or self.data_dir / QUESTIONS_FILE)
        self.scenes_dir = Path(c.scenes_dir) if c.scenes_dir else self.data_dir / "scenes"

    def load_episodes(self) -> list[Episode]:
        c = self.config
        eps = load_questions(self.questions_file)
        if c.split != "all":
            eps = [e for e in eps if e.meta["split"] == c.split]
        if c.scenes:
            wanted = {scene_key(s) for s in c.scenes}
            eps = [e for e in eps if scene_key(e.scene) in wanted]
        if c.types:
            types = {t.lower() for t in c.types}
            eps = [e for e in eps if e.category in types]
        # group by scene (stable inside a scene) so one simulator serves consecutive episodes
        return sorted(eps, key=lambda e: scene_key(e.scene))

    def make_simulator_stub(self) -> Any:
        """A default-configured instance of the selected backend, used only for scene lookup."""
        return simulator_stub(self.simulator)

    def resolve_scene(self, episode: Episode, sim: Any) -> Any:
        return sim.resolve_scene(self.scenes_dir, episode.scene)

    def inputs(self, episodes: Sequence[Episode]) -> dict[str, Path]:
        """The scene (and navmesh) files the episodes load (provenance ``scenes``)."""
        return scene_inputs(
            (e.scene for e in episodes), self.scenes_dir, self.make_simulator_stub()
        )

    def missing(self, episodes: Sequence[Episode]) -> dict[str, str]:
        """Episodes whose scene the selected backend cannot find; the message names the HM3D
        layout (``scenes/<split>/<NNNNN-id>/<id>.basis.glb``)."""

        def expected(scene: str) -> Path:
            split, d, h = parse_scene_id(scene)
            return self.scenes_dir / (split or "val") / d / f"{h}.basis.glb"

        scenes = missing_scenes(
            (e.scene for e in episodes),
            self.scenes_dir,
            self.make_simulator_stub(),
            SCENES_HINT,
            expected,
        )
        return missing_by_episode(episodes, scenes)

    def describe(self) -> dict[str, Any]:
        digest = None
        if self.questions_file.exists():
            digest = hashlib.sha256(self.questions_file.read_bytes()).hexdigest()
        return {
            "name": self.name,
            "data_dir": str(self.data_dir),
            "questions_file": str(self.questions_file),
            "questions_sha256": digest,
            "scenes_dir": str(self.scenes_dir),
            "split": self.config.split,
            "scenes": self.config.scenes,
        }
