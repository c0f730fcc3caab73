"""The MP3D-EQA v1 episode file: habitat-lab's ``MP3DEQA-v1`` dataset (``{split}/{split}.json.gz``).

One gzipped JSON object per split::

    {"episodes": [...],
     "question_vocab": {"word_list": [...]}, "answer_vocab": {"word_list": [...]}}

Each episode (habitat-lab ``EQAEpisode``, a ``NavigationEpisode``):

* ``episode_id`` (str), ``scene_id`` (``mp3d/<house>/<house>.glb``, relative to the scenes dir;
  a leading ``data/scene_datasets/`` is dropped as habitat-lab does),
* ``start_position`` [x, y, z] and ``start_rotation`` [x, y, z, w] (habitat frame, y up;
  habitat's quaternion order, **x y z w**), ``start_room`` (optional), ``info`` (optional),
* ``question``: ``question_text``, ``answer_text``, ``question_tokens`` (indices into the
  question vocabulary), ``answer_token`` (index into the answer vocabulary), ``question_type``
  (``location`` | ``color`` | ``color_room``),
* ``goals``: one object goal: ``position`` (the object's centroid), ``radius``, ``object_id``,
  ``object_name``, ``object_category``, ``room_id``, ``room_name``, ``view_points`` (a list of
  agent states ``{position, rotation}``),
* ``shortest_paths``: one list of ``{position, rotation, action}`` from the start to the goal
  (actions 0 forward, 1 left, 2 right, 3 stop, as in the v1 data).

A vocabulary is habitat-lab's ``VocabDict``: ``<unk>`` is put first when the file's list lacks it,
and a token is an index into that list. The reader checks every field it uses and names the file,
the episode and the field in a one-line :class:`~eqa_runner.errors.DataError`.
"""

from __future__ import annotations

import gzip
import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eqa_runner.errors import DataError

UNK = "<unk>"
SCENE_PREFIX = "data/scene_datasets/"
QUESTION_TYPES = ("location", "color", "color_room")
ACTIONS = {"forward": 0, "left": 1, "right": 2, "stop": 3}
_SPLIT = re.compile(r"([^\w-]+)")


def episodes_file(data_dir: Path, split: str) -> Path:
    """Where habitat-lab keeps a split: ``<data_dir>/<split>/<split>.json.gz``."""
    return Path(data_dir) / split / f"{split}.json.gz"


def tokenize(sentence: str) -> list[str]:
    """The question's words as habitat's vocabulary has them: lower case, ``'s`` split off,
    commas and question marks dropped, split at every run of non-word characters."""
    s = sentence.lower().replace("'s", " 's")
    for mark in (",", "?"):
        s = s.replace(mark, "")
    return [t.strip() for t in _SPLIT.split(s) if t.strip()]


class Vocab:
    """A word list and its indices (``<unk>`` first, as habitat-lab's ``VocabDict``)."""

    def __init__(self, words: Sequence[str]) -> None:
        self.words = list(words) if UNK in words else [UNK, *words]
        self.index = {w: i for i, w in enumerate(self.words)}

    def token(self, word: str) -> int:
        return self.index.get(word, self.index[UNK])

    def word(self, token: int) -> str:
        return self.words[token] if 0 <= token < len(self.words) else UNK

    def __len__(self) -> int:
        return len(self.words)


def read_dataset(path: Path) -> dict[str, Any]:
    """The decoded file, checked to be a dataset object (one-line error otherwise)."""
    path = Path(path)
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            data = json.load(fh)
    except FileNotFoundError:
        raise DataError(
            f"{path}: MP3D-EQA episodes not found. Set task.data_dir to the directory holding "
            "<split>/<split>.json.gz (habitat-lab's data/datasets/eqa/mp3d/v1), or write the "
            "offline demo with `python -m eqa_runner.demo <dir> --only mp3d_eqa`."
        ) from None
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise DataError(f"{path}: not a gzipped JSON dataset ({e}).") from None
    if not isinstance(data, dict) or not isinstance(data.get("episodes"), list):
        raise DataError(f"{path}: expected an object with an 'episodes' list.")
    for key in ("question_vocab", "answer_vocab"):
        words = (data.get(key) or {}).get("word_list") if isinstance(data.get(key), dict) else None
        if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
            raise DataError(f"{path}: field {key}.word_list must be a list of words.")
    return data


def _vec(value: Any, n: int, where: str, field: str) -> list[float]:
    ok = isinstance(value, (list, tuple)) and len(value) == n
    ok = ok and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    out = [float(v) for v in value] if ok else []
    if len(out) != n or not all(math.isfinite(v) for v in out):
        raise DataError(f"{where}: field {field} must be {n} finite numbers, got {value!r}.")
    return out


def xyzw_to_wxyz(q: Sequence[float]) -> list[float]:
    """habitat-lab's dataset quaternion (x, y, z, w) in the project's order (w, x, y, z)."""
    x, y, z, w = (float(v) for v in q)
    return [w, x, y, z]


def scene_path(scene_id: str) -> str:
    """The scene file relative to the scenes dir (habitat-lab drops the default prefix)."""
    return scene_id[len(SCENE_PREFIX) :] if scene_id.startswith(SCENE_PREFIX) else scene_id


def _question(raw: Any, answers: Vocab, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise DataError(f"{where}: field question must be an object.")
    text, answer = raw.get("question_text"), raw.get("answer_text")
    if not isinstance(text, str) or not text.strip():
        raise DataError(f"{where}: field question.question_text is missing or empty.")
    if not isinstance(answer, str) or not answer.strip():
        raise DataError(f"{where}: field question.answer_text is missing or empty.")
    token = raw.get("answer_token")
    if token is None:
        token = answers.token(answer)
    if not isinstance(token, int) or answers.word(token) != answer:
        raise DataError(
            f"{where}: field question.answer_token={token!r} is not answer_text {answer!r} in "
            f"answer_vocab (index {answers.token(answer)})."
        )
    return {**raw, "answer_token": token}


def _goal(raw: Any, where: str) -> dict[str, Any]:
    goals = raw.get("goals")
    if not isinstance(goals, list) or not goals or not isinstance(goals[0], dict):
        raise DataError(f"{where}: field goals must hold one object goal.")
    goal = goals[0]
    _vec(goal.get("position"), 3, where, "goals[0].position")
    for k, vp in enumerate(goal.get("view_points") or []):
        pos = vp.get("position") if isinstance(vp, dict) else None
        _vec(pos, 3, where, f"goals[0].view_points[{k}].position")
    return goal


def parse_episode(raw: Any, answers: Vocab, where: str) -> dict[str, Any]:
    """One episode's fields, checked; ``start_rotation`` stays in the file's x y z w order."""
    if not isinstance(raw, dict):
        raise DataError(f"{where}: an episode must be an object.")
    for key in ("episode_id", "scene_id"):
        if not isinstance(raw.get(key), (str, int)) or str(raw.get(key)).strip() == "":
            raise DataError(f"{where}: field {key} is missing.")
    ep = dict(raw)
    ep["episode_id"] = str(raw["episode_id"])
    ep["start_position"] = _vec(raw.get("start_position"), 3, where, "start_position")
    ep["start_rotation"] = _vec(raw.get("start_rotation"), 4, where, "start_rotation")
    if abs(math.sqrt(sum(v * v for v in ep["start_rotation"])) - 1.0) > 1e-3:
        raise DataError(f"{where}: field start_rotation is not a unit quaternion (x, y, z, w).")
    ep["question"] = _question(raw.get("question"), answers, where)
    ep["goal"] = _goal(raw, where)
    return ep


def load(path: Path) -> tuple[list[dict[str, Any]], Vocab, Vocab]:
    """(episodes, question vocabulary, answer vocabulary) of one split file."""
    data = read_dataset(path)
    answers = Vocab(data["answer_vocab"]["word_list"])
    questions = Vocab(data["question_vocab"]["word_list"])
    seen: set[str] = set()
    out = []
    for i, raw in enumerate(data["episodes"]):
        where = f"{path}: episodes[{i}]"
        ep = parse_episode(raw, answers, where)
        if ep["episode_id"] in seen:
            raise DataError(f"{where}: episode_id {ep['episode_id']!r} appears twice.")
        seen.add(ep["episode_id"])
        out.append(ep)
    return out, questions, answers


def write(path: Path, episodes: list[dict[str, Any]], questions: Vocab, answers: Vocab) -> Path:
    """Write a split file as habitat-lab reads it (gzipped JSON, vocabularies as word lists)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "episodes": episodes,
        "question_vocab": {"word_list": questions.words},
        "answer_vocab": {"word_list": answers.words},
    }
    with path.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        gz.write(json.dumps(data).encode("utf-8"))  # mtime 0: the same bytes for the same seed
    return path
