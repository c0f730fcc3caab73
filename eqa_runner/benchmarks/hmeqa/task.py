"""HM-EQA (Ren et al., "Explore until Confident", RSS 2024): multiple-choice EQA on HM3D floors.

Two CSV files, as in the Stanford-ILIAD/explore-eqa repository:

* ``questions.csv``: ``scene`` (``NNNNN-hash``), ``floor``, ``question``, ``choices`` (a Python
  or JSON list of 4 strings, padded with "(Do not choose this option)"), ``answer`` (a letter
  A-D), ``label`` (location, existence, state, identification, count). Separate option columns
  (``choice_a`` … ``choice_d`` or ``A`` … ``D``) are accepted too, and an answer given as an
  option's text is mapped to its letter.
* ``scene_init_poses.csv``: ``scene_floor`` (``<scene>_<floor>``), ``init_x``, ``init_y``,
  ``init_z`` (habitat frame, y up, metres; ``init_y`` is the floor height), ``init_angle`` (yaw in
  radians about +y).

Each (scene, floor) is its own single-floor scene; an episode's id is the question's row index
(upstream's ``question_ind``). Choices are parsed as literals (upstream splits the string and
mangles the 13 options that contain an apostrophe; this is a deliberate fix,
eqa_runner/benchmarks/hmeqa/README.md).
"""

from __future__ import annotations

import ast
import csv
import hashlib
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eqa_runner import capabilities as cap
from eqa_runner.benchmarks.hmeqa.config import HMEQATaskConfig as Schema
from eqa_runner.errors import DataError
from eqa_runner.sim.base import parse_scene_id
from eqa_runner.tasks.base import Task
from eqa_runner.tasks.duplicates import Duplicates
from eqa_runner.tasks.scenes import (
    missing_by_episode,
    missing_scenes,
    scene_inputs,
    scene_key,
    simulator_stub,
)
from eqa_runner.types import Episode

QUESTIONS_FILE = "questions.csv"
POSES_FILE = "scene_init_poses.csv"
PADDING = "(Do not choose this option)"
LETTERS = "ABCD"
CATEGORIES = ("location", "existence", "state", "identification", "count")
FETCH_HINT = "python -m eqa_runner.data fetch hmeqa"  # the two CSV files (explore-eqa data/)
SCENES_HINT = (
    "the HM3D v0.2 train scenes are licensed by Matterport: `python -m eqa_runner.data check "
    "hmeqa` prints how to get access and stage them"
)

_Q_ALIASES = {
    "scene": ("scene", "scene_id"),
    "floor": ("floor", "floor_id"),
    "question": ("question",),
    "choices": ("choices", "options"),
    "answer": ("answer", "answer_letter"),
    "label": ("label", "category", "type"),
}
_OPTION_COLUMNS = (("choice_a", "choice_b", "choice_c", "choice_d"), ("a", "b", "c", "d"))
_P_ALIASES = {
    "scene_floor": ("scene_floor",),
    "x": ("init_x", "x"),
    "y": ("init_y", "y"),
    "z": ("init_z", "z"),
    "angle": ("init_angle", "angle", "yaw"),
}


def _read_csv(path: Path, what: str) -> list[dict[str, str]]:
    try:
        with Path(path).open(newline="", encoding="utf-8-sig") as fh:
            rows = list(csv.DictReader(fh, skipinitialspace=True))
    except FileNotFoundError:
        raise DataError(
            f"{path}: {what} not found. Set task.data_dir (or task.{what.replace(' ', '_')}), "
            f"stage it with `{FETCH_HINT}`, or write the offline demo with "
            "`python -m eqa_runner.demo <dir>` and task.data_dir=<dir>/hmeqa."
        ) from None
    except (UnicodeDecodeError, csv.Error) as e:
        raise DataError(f"{path}: not a readable CSV file ({e}).") from None
    return [{(k or "").strip().lower(): (v or "").strip() for k, v in r.items()} for r in rows]


def _get(row: dict[str, str], aliases: tuple[str, ...]) -> str | None:
    for key in aliases:
        if row.get(key):
            return row[key]
    return None


def parse_choices(raw: str, where: str) -> list[str]:
    """The option list of a ``choices`` cell: a Python or JSON list literal of strings."""
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError, RecursionError, MemoryError):
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):  # nested past the parser's depth: not an option list
            raise DataError(
                f"{where}: field choices is not a list literal ({raw[:60]!r}); expected e.g. "
                "['yes', 'no', '(Do not choose this option)', '(Do not choose this option)']."
            ) from None
    if not isinstance(value, (list, tuple)) or not all(isinstance(c, str) for c in value):
        raise DataError(f"{where}: field choices must be a list of strings, got {raw[:60]!r}.")
    return [c.strip() for c in value]


def pad_choices(choices: Sequence[str], n: int = 4) -> list[str]:
    """Options padded to ``n`` with the upstream filler (more than ``n`` is an error)."""
    if len(choices) > n:
        raise ValueError(f"{len(choices)} options; HM-EQA has {n}")
    return list(choices) + [PADDING] * (n - len(choices))


def _answer_letter(raw: str, choices: Sequence[str], where: str) -> str:
    s = raw.strip()
    if len(s) == 1 and s.upper() in LETTERS[: len(choices)]:
        return s.upper()
    lowered = [c.lower() for c in choices]
    if s.lower() in lowered:
        return LETTERS[lowered.index(s.lower())]
    raise DataError(
        f"{where}: field answer {raw!r} is neither a letter A-{LETTERS[len(choices) - 1]} "
        "nor one of the options."
    )


def _number(value: str | None, where: str, field: str) -> float:
    try:
        x = float(value) if value is not None else math.nan
    except ValueError:
        x = math.nan
    if not math.isfinite(x):
        raise DataError(f"{where}: field {field} must be a finite number, got {value!r}.")
    return x


def load_poses(path: Path, dups: Duplicates | None = None) -> dict[str, dict[str, Any]]:
    """``scene_floor`` -> start pose (habitat position, yaw, quaternion w-x-y-z, floor height).
    A row repeated as it is is kept once (counted in ``dups``); two different poses for one
    floor are refused (upstream's dict keeps the last one silently)."""
    dups = dups if dups is not None else Duplicates()
    out: dict[str, dict[str, Any]] = {}
    first: dict[str, int] = {}
    for i, row in enumerate(_read_csv(path, "poses file"), start=2):
        where = f"{path}: line {i}"
        sf = _get(row, _P_ALIASES["scene_floor"])
        if not sf and row.get("scene") and row.get("floor"):
            sf = f"{row['scene']}_{row['floor']}"
        if not sf:
            raise DataError(f"{where}: missing field scene_floor (or scene + floor).")
        x, y, z = (_number(_get(row, _P_ALIASES[k]), where, f"init_{k}") for k in "xyz")
        yaw = _number(_get(row, _P_ALIASES["angle"]), where, "init_angle")
        pose = {
            "start_position": [x, y, z],
            "start_yaw": yaw,
            "start_rotation": [math.cos(yaw / 2), 0.0, math.sin(yaw / 2), 0.0],
            "floor_height": y,
        }
        first.setdefault(sf, i)
        dups.put(out, sf, pose, where, path, "scene_floor", f"line {first[sf]}")
    return out


def check_options(choices: Sequence[str], where: str) -> None:
    """Refuse an option list whose letters would be ambiguous (one option twice, padding aside)
    or that offers nothing to choose (every option empty or the padding)."""
    real = [c for c in choices if c and c != PADDING]
    if not real:
        raise DataError(
            f"{where}: field choices: every option is empty or {PADDING!r}; nothing to choose."
        )
    seen: dict[str, int] = {}
    for k, c in enumerate(choices):
        if not c or c == PADDING:
            continue
        key = " ".join(c.lower().split())
        if key in seen:
            raise DataError(
                f"{where}: field choices: option {c!r} appears twice ({LETTERS[seen[key]]} and "
                f"{LETTERS[k]}), so its letter is ambiguous; keep one."
            )
        seen[key] = k


def load_questions(path: Path, poses: dict[str, dict[str, Any]], poses_file: Path) -> list[Episode]:
    """Parse ``questions.csv`` and join each question with its floor's start pose."""
    episodes = []
    for i, row in enumerate(_read_csv(path, "questions file")):
        where = f"{path}: line {i + 2}"
        v = {k: _get(row, a) for k, a in _Q_ALIASES.items()}
        options = [row[c] for cols in _OPTION_COLUMNS for c in cols if row.get(c)]
        if v["choices"] is None and options:
            v["choices"] = json.dumps(options)
        missing = [k for k in ("scene", "floor", "question", "choices", "answer") if not v[k]]
        if missing:
            raise DataError(f"{where}: missing field(s) {', '.join(missing)}.")
        parsed = parse_choices(str(v["choices"]), where)  # a DataError naming file and line
        try:
            choices = pad_choices(parsed)
        except ValueError as e:
            raise DataError(f"{where}: field choices: {e}.") from None
        check_options(choices, where)
        letter = _answer_letter(str(v["answer"]), choices, where)
        scene, floor = str(v["scene"]), str(v["floor"])
        sf = f"{scene}_{floor}"
        if sf not in poses:
            raise DataError(
                f"{where}: no start pose for {sf} in {poses_file}; add a row "
                f"'{sf},x,y,z,yaw' or fix the question's scene/floor."
            )
        meta = {
            **poses[sf],
            "choices": choices,
            "answer_text": choices[LETTERS.index(letter)],
            "padding": [k for k, c in enumerate(choices) if c == PADDING],
            "floor": floor,
            "scene_floor": sf,
            "subset": (v["label"] or "").lower() or None,
        }
        if meta["answer_text"] == PADDING:
            meta["answer_is_padding"] = True  # an upstream data defect, kept and flagged
        episodes.append(
            Episode(
                episode_id=str(i),
                question=str(v["question"]),
                answer=letter,
                category=(v["label"] or "unlabelled").lower(),
                scene=scene,
                meta=meta,
            )
        )
    return episodes


class HMEQATask(Task):
    """HM-EQA: explore one floor of an HM3D scene from a start pose, then pick one of 4 options."""

    provides = frozenset({cap.QUESTION, cap.CHOICES, cap.SIMULATOR, cap.PROTOCOL})

    config_class = Schema
    config: Schema

    def __init__(self, config: Schema | None = None, **overrides: Any) -> None:
        super().__init__(config, **overrides)
        c = self.config
        self.data_dir = Path(c.data_dir)
        self.questions_file = Path(c.questions_file or self.data_dir / QUESTIONS_FILE)
        self.poses_file = Path(c.poses_file or self.data_dir / POSES_FILE)
        self.scenes_dir = Path(c.scenes_dir) if c.scenes_dir else self.data_dir / "scenes"

    def load_episodes(self) -> list[Episode]:
        self.duplicates.clear()
        poses = load_poses(self.poses_file, self.duplicates)
        eps = load_questions(self.questions_file, poses, self.poses_file)
        if self.config.categories:
            wanted_cats = {c.lower() for c in self.config.categories}
            unknown = sorted(wanted_cats - {e.category for e in eps})
            if unknown:
                raise DataError(
                    f"task.categories: {unknown} not in {self.questions_file} "
                    f"(categories there: {sorted({e.category for e in eps})})."
                )
            eps = [e for e in eps if e.category in wanted_cats]
        if self.config.scenes:
            wanted = {scene_key(s) for s in self.config.scenes}
            eps = [e for e in eps if scene_key(e.scene) in wanted]
        return sorted(eps, key=lambda e: (scene_key(e.scene), e.meta["floor"], int(e.episode_id)))

    def resolve_scene(self, episode: Episode, sim: Any) -> Any:
        return sim.resolve_scene(self.scenes_dir, episode.scene)

    def inputs(self, episodes: Sequence[Episode]) -> dict[str, Path]:
        """The scene (and navmesh) files the episodes load (provenance ``scenes``)."""
        return scene_inputs(
            (e.scene for e in episodes), self.scenes_dir, simulator_stub(self.simulator)
        )

    def missing(self, episodes: Sequence[Episode]) -> dict[str, str]:
        """Questions whose scene the selected backend cannot find; the message names the train
        layout upstream reads (``scenes/<NNNNN-id>/<id>.basis.glb``)."""
        sim = simulator_stub(self.simulator)

        def expected(scene: str) -> Path:
            _, d, h = parse_scene_id(scene)
            return self.scenes_dir / d / f"{h}.basis.glb"

        scenes = missing_scenes(
            (e.scene for e in episodes), self.scenes_dir, sim, SCENES_HINT, expected
        )
        return missing_by_episode(episodes, scenes)

    def describe(self) -> dict[str, Any]:
        def digest(p: Path) -> str | None:
            return hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else None

        return {
            "name": self.name,
            "data_dir": str(self.data_dir),
            "questions_file": str(self.questions_file),
            "questions_sha256": digest(self.questions_file),
            "poses_file": str(self.poses_file),
            "poses_sha256": digest(self.poses_file),
            "scenes_dir": str(self.scenes_dir),
            **self.duplicates.describe(),
        }

    def subset_of(self, episode: Episode) -> str | None:
        return episode.category
