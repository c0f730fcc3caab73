"""Fixtures for the EXPRESS-Bench tests: synthetic question files and the procedural demo."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `from tests.conftest import ...` without `python -m pytest`
    sys.path.insert(0, str(ROOT))

TYPES = ["object", "existence", "attribute", "location", "state", "knowledge", "counting"]


def original_record(i: int, n_scenes: int = 174) -> dict[str, Any]:
    """A record in the original EXPRESS-Bench layout (scene numbers spread over train + val)."""
    k = i % n_scenes
    num = 800 + (k - n_scenes + 40) if k >= n_scenes - 40 else k * 4
    scene = f"{num:05d}-Scene{k:03d}x"
    split = "val" if num >= 800 else "train"
    yaw = (i % 12) * math.pi / 6
    return {
        "episode_id": str(i),
        "trajectory_id": str(i // 3),
        "scene_id": f"hm3d/{split}/{scene}",
        "episode_path": f"episode/{i // 3:04d}-{scene}",
        "type": TYPES[i % len(TYPES)],
        "question": f"Question number {i}?",
        "answer": f"Answer {i}.",
        "start_position": [0.5 + i % 7, 0.1, -1.0 - i % 5],
        "start_rotation": [math.cos(yaw / 2), 0.0, math.sin(yaw / 2), 0.0],
        "goal_position": [2.0, 0.1, -3.0],
        "goal_rotation": [1.0, 0.0, 0.0, 0.0],
        "geodesic_distance": 3.5 + (i % 9),
        "step_length": 0.25,
        "actions": [1, 2, 2, 3] * 10,
    }


def repackaged_record(i: int, n_scenes: int = 174) -> dict[str, Any]:
    """The same question in the re-packaged (OpenEQA-style) layout."""
    r = original_record(i, n_scenes)
    return {
        "question_id": r["episode_id"],
        "episode_history": r["scene_id"].split("/")[-1],
        "category": r["type"],
        "question": r["question"],
        "answer": r["answer"],
        "position": r["start_position"],
        "rotation": r["start_rotation"],
        "goal_position": r["goal_position"],
        "goal_rotation": r["goal_rotation"],
        "geodesic_distance": r["geodesic_distance"],
    }


def write_questions(path: Path, records: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(records), encoding="utf-8")
    return path
