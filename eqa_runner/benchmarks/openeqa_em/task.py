"""OpenEQA episodic-memory mode (EM-EQA): questions over pre-recorded episode frames."""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from eqa_runner import capabilities as cap
from eqa_runner.benchmarks.openeqa_em.config import CATEGORIES
from eqa_runner.benchmarks.openeqa_em.config import OpenEQATaskConfig as Schema
from eqa_runner.errors import DataError
from eqa_runner.safe_io import read_json
from eqa_runner.tasks.base import Task
from eqa_runner.types import Episode

QUESTIONS_FILE = "open-eqa-v0.json"
IMAGE_EXTS = {".png", ".jpg", ".jpeg", ".webp", ".bmp"}
FRAME_SUBDIRS = ("", "frames", "rgb", "color", "images")
_NON_RGB = re.compile(r"[-_.](depth|seg|semantic|semantics|instance|normal|normals|mask)$", re.I)
_ALIASES = {
    "episode_id": ("question_id", "id", "episode_id"),
    "question": ("question",),
    "answer": ("answer", "answers"),
    "category": ("category", "type", "question_type"),
    "scene": ("episode_history", "episode", "scene"),
}


def natural_key(name: str) -> list[Any]:
    """Sort key that orders ``frame_2`` before ``frame_10``."""
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", name)]


def is_rgb_frame(name: str) -> bool:
    p = PurePosixPath(name)
    if name.startswith("."):  # hidden files, e.g. macOS "._00000-rgb.png" resource forks
        return False
    return p.suffix.lower() in IMAGE_EXTS and not _NON_RGB.search(p.stem)


def list_frames(episode_dir: Path) -> list[Path]:
    """RGB frame paths of an episode in natural order; nothing is decoded.

    Looks in the episode folder, then ``frames/ rgb/ color/ images/``; the first non-empty wins.
    """
    for sub in FRAME_SUBDIRS:
        d = episode_dir / sub if sub else episode_dir
        try:
            with os.scandir(d) as it:
                names = [e.name for e in it if e.is_file() and is_rgb_frame(e.name)]
        except (FileNotFoundError, NotADirectoryError):
            continue
        if names:
            return [d / n for n in sorted(names, key=natural_key)]
    return []


def _pick(rec: dict[str, Any], field: str) -> Any:
    for key in _ALIASES[field]:
        if key in rec and rec[key] not in (None, ""):
            value = rec[key]
            if key == "answers" and isinstance(value, list):
                value = value[0] if value else None
            return value
    return None


def safe_relative(path_str: str, *, where: str) -> PurePosixPath:
    """Reject episode paths that are absolute or climb out of the data root."""
    p = PurePosixPath(str(path_str).replace("\\", "/"))
    if p.is_absolute() or ".." in p.parts or not p.parts:
        raise DataError(
            f"{where}: episode_history {path_str!r} must be a relative path inside the "
            "episodes folder (no '..', not absolute). Fix the question file."
        )
    return p


def subset_of_history(history: str) -> str:
    head = history.split("/", 1)[0].lower()
    for name in ("hm3d", "scannet"):
        if head.startswith(name):
            return name
    return head


def load_questions(path: Path, *, allow_unknown_categories: bool = False) -> list[Episode]:
    """Parse an OpenEQA-format question file into episodes (tolerant field aliases)."""
    try:
        data = read_json(path)  # bounded: size and nesting (safe_io)
    except FileNotFoundError:
        raise DataError(
            f"{path}: question file not found. Set task.data_dir / task.questions_file, or stage "
            "the data with `python -m eqa_runner.data fetch openeqa` (or "
            "`python -m eqa_runner.demo <dir>` for the offline demo)."
        ) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise DataError(f"{path}: not valid JSON ({e}). Re-download or fix the file.") from None
    if not isinstance(data, list):
        raise DataError(
            f"{path}: expected a JSON list of question records, got {type(data).__name__}."
        )
    episodes: list[Episode] = []
    seen: dict[str, int] = {}
    for i, rec in enumerate(data):
        where = f"{path}: record {i}"
        if not isinstance(rec, dict):
            raise DataError(f"{where}: expected an object, got {type(rec).__name__}.")
        values = {f: _pick(rec, f) for f in _ALIASES}
        missing = [f for f, v in values.items() if v is None]
        if missing:
            names = ", ".join(f"{m} (or {'/'.join(_ALIASES[m])})" for m in missing)
            raise DataError(f"{where}: missing field(s) {names}.")
        eid = str(values["episode_id"])
        if eid in seen:
            raise DataError(
                f"{where}: duplicate question id {eid!r} (also record {seen[eid]}). "
                "Ids must be unique."
            )
        seen[eid] = i
        category = str(values["category"]).strip().lower()
        if category not in CATEGORIES and not allow_unknown_categories:
            raise DataError(
                f"{where}: unknown category {values['category']!r}; expected one of "
                f"{', '.join(CATEGORIES)} (or set task.allow_unknown_categories=true)."
            )
        history = str(safe_relative(str(values["scene"]), where=where))
        extra = rec.get("extra_answers") or []
        if not isinstance(extra, list):
            raise DataError(f"{where}: extra_answers must be a list of strings.")
        episodes.append(
            Episode(
                episode_id=eid,
                question=str(values["question"]),
                answer=str(values["answer"]),
                category=category,
                extra_answers=[str(x) for x in extra],
                scene=history,
                meta={"subset": subset_of_history(history)},
            )
        )
    return episodes


class OpenEQATask(Task):
    """EM-EQA: the agent sees K frames sampled from a recorded episode."""

    provides = frozenset({cap.QUESTION, cap.OPEN_ANSWER, cap.FRAMES})

    config_class = Schema
    config: Schema

    def __init__(self, config: Schema | None = None, **overrides: Any) -> None:
        super().__init__(config, **overrides)
        c = self.config
        self.data_dir = Path(c.data_dir)
        self.questions_file = Path(c.questions_file or self.data_dir / QUESTIONS_FILE)
        self.episodes_dir = Path(c.episodes_dir) if c.episodes_dir else self.data_dir / "episodes"

    def load_episodes(self) -> list[Episode]:
        c = self.config
        eps = load_questions(
            self.questions_file, allow_unknown_categories=c.allow_unknown_categories
        )
        if c.subset:
            eps = [e for e in eps if e.meta["subset"] == c.subset]
        if c.categories:
            wanted = {x.lower() for x in c.categories}
            eps = [e for e in eps if e.category in wanted]
        return eps

    def episode_dir(self, episode: Episode) -> Path:
        return self.episodes_dir / safe_relative(episode.scene, where=episode.episode_id)

    def frames(self, episode: Episode) -> list[Path]:
        """Frame paths of the episode (paths only); raises DataError when there are none."""
        d = self.episode_dir(episode)
        frames = list_frames(d)
        if not frames:
            what = "missing" if not d.exists() else "has no RGB frames"
            raise DataError(
                f"episode {episode.episode_id}: frame folder {d} {what}. Stage it "
                "with `python -m eqa_runner.data fetch openeqa` or check "
                "task.episodes_dir."
            )
        return frames

    def inputs(self, episodes: Sequence[Episode]) -> dict[str, Path]:
        """The episode folders whose frames the questions read (provenance ``scenes``)."""
        return {h: self.episodes_dir / h for h in sorted({e.scene for e in episodes})}

    def missing(self, episodes: Sequence[Episode]) -> dict[str, str]:
        """Questions whose episode folder has no RGB frames (one listing per folder)."""
        bad = {}
        for hist in sorted({e.scene for e in episodes}):
            d = self.episodes_dir / hist
            if not list_frames(d):
                bad[hist] = (
                    f"{d}: {'missing' if not d.exists() else 'no RGB frames'} (the episode "
                    "frames: `python -m eqa_runner.data fetch openeqa`, or task.episodes_dir)"
                )
        return {e.episode_id: bad[e.scene] for e in episodes if e.scene in bad}

    def describe(self) -> dict[str, Any]:
        digest = None
        if self.questions_file.exists():
            digest = hashlib.sha256(self.questions_file.read_bytes()).hexdigest()
        return {
            "name": self.name,
            "data_dir": str(self.data_dir),
            "questions_file": str(self.questions_file),
            "questions_sha256": digest,
            "subset": self.config.subset,
        }
