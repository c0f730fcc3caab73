"""``policy=imported``: another system's answers, read back as a run (``report --import``).

``report --import`` turns an upstream predictions/results file into ``predictions_file``: one
JSON line per episode, ``{"episode_id", "answer", "trace", "judge_images"}`` (image paths
relative to the file). This policy answers each episode from it: no model is called, the
trace carries what the upstream file recorded (path length, final distance to the goal, the
per-step answer distributions …), so the task's own judge and aggregation score it exactly as
they score a run of ours, and ``report --compare`` pairs it with our runs by episode id.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from eqa_runner import capabilities as cap
from eqa_runner.configured import Configured
from eqa_runner.errors import DataError
from eqa_runner.llm import RequestEstimate
from eqa_runner.policies.base import Policy
from eqa_runner.policies.config import ImportedPolicyConfig
from eqa_runner.policies.context import EpisodeContext
from eqa_runner.safe_io import expect_type, loads_json
from eqa_runner.types import Episode, Prediction


def read_predictions(path: Path) -> dict[str, dict[str, Any]]:
    """episode id -> its normalised line; a line that is not JSON is an error naming it."""
    out: dict[str, dict[str, Any]] = {}
    with Path(path).open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            row = expect_type(loads_json(line, f"{path}:{n}"), dict, f"{path}:{n}", "the line")
            eid = expect_type(row.get("episode_id"), (str, int), f"{path}:{n}", "episode_id")
            out[str(eid)] = row
    return out


class ImportedPolicy(Configured, Policy):
    """Answers from ``predictions_file`` (see the module docstring)."""

    config_class = ImportedPolicyConfig
    config: ImportedPolicyConfig
    # what an upstream file records: the path (trajectory) and, where saved, the final frame
    provides = frozenset({cap.TRAJECTORY, cap.FINAL_FRAME})

    def __init__(self, config: ImportedPolicyConfig | None = None, **overrides: Any) -> None:
        super().__init__(config, **overrides)
        self.path = Path(self.config.predictions_file)
        self._rows: dict[str, dict[str, Any]] | None = None

    def rows(self) -> dict[str, dict[str, Any]]:
        if self._rows is None:
            if not str(self.path) or str(self.path) == ".":
                raise DataError(
                    "policy=imported reads policy.predictions_file, which "
                    "`python -m eqa_runner.report --import FILE --format …` writes"
                )
            if not self.path.is_file():
                raise DataError(f"policy.predictions_file={self.path}: not found")
            self._rows = read_predictions(self.path)
        return self._rows

    async def predict(self, episode: Episode, ctx: EpisodeContext) -> Prediction:
        row = self.rows().get(episode.episode_id)
        if row is None:
            raise DataError(
                f"episode {episode.episode_id} is not in {self.config.source or self.path}"
            )
        images = [(self.path.parent / p).read_bytes() for p in row.get("judge_images") or []]
        trace = {**dict(row.get("trace") or {}), "imported_from": self.config.source}
        return Prediction(answer=row.get("answer"), images_for_judge=images, trace=trace)

    def estimate_requests(
        self, episode: Episode, task: Any, prompts_dir: str | None
    ) -> list[RequestEstimate]:
        return []

    def prompts(self, prompts_dir: str | None) -> dict[str, dict[str, object]]:
        return {}
