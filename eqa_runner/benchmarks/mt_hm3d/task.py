"""MT-HM3D (Zhai et al., "Memory-Centric Embodied Question Answering", 2025; memory-eqa/MemoryEQA):
1,587 multi-target questions on HM3D scenes, multiple choice and yes/no.

The files as MemoryEQA reads them (``cfg/react-eqa_mc.yaml``, ``src/modeling/memory_eqa.py``):
a question CSV in explore-eqa's columns (``scene``, ``floor``, ``question``, ``choices``,
``answer`` a letter, optional ``label``) and ``scene_init_poses_all.csv`` (``scene_floor``,
``init_x``, ``init_y``, ``init_z``, ``init_angle``). MemoryEQA starts every question at the pose
of ``<scene>_0`` whatever its floor (``task.pose_floor=zero``, the default;
``question`` uses ``<scene>_<floor>``). A yes/no question has the options ``Yes`` and ``No``
(padded to four as HM-EQA's are); an answer given as an option's text (``yes``) is mapped to
its letter. Parsing, padding and the scene lookup are HM-EQA's
(:mod:`eqa_runner.benchmarks.hmeqa.task`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eqa_runner.benchmarks.hmeqa.task import PADDING, HMEQATask, load_poses, load_questions
from eqa_runner.benchmarks.mt_hm3d.config import MTHM3DTaskConfig as Schema
from eqa_runner.errors import DataError
from eqa_runner.sim.base import parse_scene_id
from eqa_runner.tasks.scenes import (
    missing_by_episode,
    missing_scenes,
    scene_inputs,
    scene_key,
    simulator_stub,
)
from eqa_runner.types import Episode

QUESTIONS_FILE = "MT-HM3D-filtered-new.csv"  # MemoryEQA's cfg/vlm_exp_ov.yaml
POSES_FILE = "scene_init_poses_all.csv"
SCENES_HINT = (
    "MT-HM3D's scenes are HM3D v0.2 scenes licensed by Matterport: `python -m eqa_runner.data "
    "check mt_hm3d` prints how to get access and stage them"
)


class MTHM3DTask(HMEQATask):
    """MT-HM3D: explore an HM3D scene from a start pose, then answer a multi-target question."""

    config_class = Schema
    config: Schema

    def __init__(self, config: Schema | None = None, **overrides: Any) -> None:
        super().__init__(config, **overrides)
        c = self.config
        self.questions_file = Path(c.questions_file or self.data_dir / QUESTIONS_FILE)
        self.poses_file = Path(c.poses_file or self.data_dir / POSES_FILE)

    def load_episodes(self) -> list[Episode]:
        self.duplicates.clear()
        poses = load_poses(self.poses_file, self.duplicates)
        if self.config.pose_floor == "zero":  # every floor starts at <scene>_0 (MemoryEQA)
            poses = _floor_zero(poses, self.questions_file)
        eps = load_questions(self.questions_file, poses, self.poses_file)
        for e in eps:
            real = {c.lower() for c in e.meta["choices"] if c != PADDING}
            e.meta["yes_no"] = real == {"yes", "no"}
        c = self.config
        if c.categories:
            eps = [e for e in eps if e.category in {x.lower() for x in c.categories}]
        if c.scenes:
            eps = [e for e in eps if scene_key(e.scene) in {scene_key(s) for s in c.scenes}]
        return sorted(eps, key=lambda e: (scene_key(e.scene), e.meta["floor"], int(e.episode_id)))

    def inputs(self, episodes: Sequence[Episode]) -> dict[str, Path]:
        """The scene (and navmesh) files the episodes load (provenance ``scenes``)."""
        return scene_inputs(
            (e.scene for e in episodes), self.scenes_dir, simulator_stub(self.simulator)
        )

    def missing(self, episodes: Sequence[Episode]) -> dict[str, str]:
        """Questions whose scene the selected backend cannot find (HM-EQA's lookup and layout),
        naming this benchmark's staging steps."""
        sim = simulator_stub(self.simulator)

        def expected(scene: str) -> Path:
            _, d, h = parse_scene_id(scene)
            return self.scenes_dir / d / f"{h}.basis.glb"

        scenes = missing_scenes(
            (e.scene for e in episodes), self.scenes_dir, sim, SCENES_HINT, expected
        )
        return missing_by_episode(episodes, scenes)


def _floor_zero(poses: dict[str, dict[str, Any]], questions: Path) -> dict[str, dict[str, Any]]:
    """Each question floor's pose is its scene's floor-0 pose (as MemoryEQA's lookup)."""
    import csv

    out = dict(poses)
    try:
        with questions.open(newline="", encoding="utf-8-sig") as fh:
            rows = list(csv.DictReader(fh, skipinitialspace=True))
    except (OSError, UnicodeDecodeError, csv.Error):
        return out  # load_questions names the problem
    for row in rows:
        scene, floor = (row.get("scene") or "").strip(), (row.get("floor") or "").strip()
        if scene and f"{scene}_0" in poses:
            out[f"{scene}_{floor}"] = poses[f"{scene}_0"]
        elif scene and f"{scene}_{floor}" not in poses:
            raise DataError(
                f"{questions}: no start pose {scene}_0 for scene {scene} "
                "(MemoryEQA starts every question there; task.pose_floor=question "
                "uses the question's floor)."
            )
    return out
