"""Small synthetic OpenEQA-format datasets for tests (fast: tiny PIL frames)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image

from eqa_runner.benchmarks.openeqa_em.task import CATEGORIES as OPENEQA_CATEGORIES

CATEGORIES = list(OPENEQA_CATEGORIES)


def make_openeqa_dataset(
    root: Path,
    *,
    n_questions: int = 20,
    n_episodes: int = 2,
    frames: int = 12,
    size: tuple[int, int] = (96, 54),
    seed: int = 0,
) -> Path:
    """``root/open-eqa-v0.json`` + ``root/episodes/<subset>-v0/<id>/NNNNN-rgb.png``."""
    rng = np.random.default_rng(seed)
    histories = []
    for k in range(n_episodes):
        subset = "hm3d" if k % 2 == 0 else "scannet"
        hist = f"{subset}-v0/{k:03d}-{subset}-Ep{k}"
        d = root / "episodes" / hist
        d.mkdir(parents=True, exist_ok=True)
        for i in range(frames):
            arr = rng.integers(0, 255, size=(size[1], size[0], 3), dtype=np.uint8)
            Image.fromarray(arr).save(d / f"{i:05d}-rgb.png", compress_level=1)
        histories.append(hist)
    qs = []
    for i in range(n_questions):
        rec = {
            "question_id": f"q{i:04d}",
            "question": f"What is object {i}?",
            "answer": f"object {i}",
            "category": CATEGORIES[i % 7],
            "episode_history": histories[i % n_episodes],
        }
        if i % 5 == 0:
            rec["extra_answers"] = [f"thing {i}"]
        qs.append(rec)
    (root / "open-eqa-v0.json").write_text(json.dumps(qs, indent=1))
    return root
