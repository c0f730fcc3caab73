"""One episode's exploration (:class:`Exploration`) and what an answer step makes of it.

The exploration loop of :class:`~eqa_runner.policies.explore.ExplorePolicy` advances an
:class:`Exploration`; an answer step reads it and returns an :class:`AnswerStep`; the trace
recorded for the episode is :meth:`Exploration.trace` of both.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from eqa_runner.llm import LLMClient
from eqa_runner.policies.proposer import AgentState, WaypointProposer
from eqa_runner.types import Episode


@dataclass
class Exploration:
    """One episode's exploration: the state the loop advances, read by the answer step."""

    episode: Episode
    proposer: WaypointProposer
    stop_llm: LLMClient
    goal: np.ndarray | None  # the task's goal position (final distance); None without one
    state: AgentState  # the agent now (after the last hop)
    area: float = 0.0  # x-z area of the scene's navmesh bounds
    budget: int = 0
    steps: list[dict[str, Any]] = field(default_factory=list)  # one trace entry per step
    path_len: float = 0.0
    unreachable: int = 0
    stopped: bool = False  # the stop check said the view suffices
    stop_reason: str | None = None  # a designed stop (policies/proposer.py DesignedStop), if any
    last_frame: bytes = b""  # PNG of the last observed frame (the decision frame when stopped)
    d_t: float = math.nan  # final geodesic distance to the goal
    goal_via: list[list[float]] = field(default_factory=list)  # that path's corners (maps)
    # the goal distance at every step's start, then the final one (None: not recorded)
    goal_distances: list[float] | None = None
    explore_s: float = 0.0

    def trace(self, answer: AnswerStep) -> dict[str, Any]:
        """The episode's trace: exploration numbers, every step, and the answer step's fields."""
        trace: dict[str, Any] = {
            "proposer": self.proposer.name,
            "scene_area": round(float(self.area), 4),
            "num_steps": self.budget,
            "steps_taken": len(self.steps),
            "stopped_early": self.stopped,
            "stop_reason": self.stop_reason
            or ("view_suffices" if self.stopped else "budget_exhausted"),
            "answer_prompt": answer.prompt,
            "path_len": self.path_len,
            "unreachable_hops": self.unreachable,
            "final_position": vec(self.state.position),
            "steps": self.steps,
            "judge_images": answer.judge_images,
            "stop_model": self.stop_llm.model,
            "timings": {
                "explore_s": round(self.explore_s, 3),
                "answer_s": round(answer.seconds, 3),
            },
            "params": answer.params,
        }
        if self.goal is not None:  # the reference length and the final goal distance
            trace["gt_geodesic"] = float(self.episode.meta["geodesic_distance"])
            trace["d_t"] = float(self.d_t)
            trace["d_t_valid"] = bool(math.isfinite(self.d_t))
            trace["goal_position"] = vec(self.goal)
            if self.goal_via:
                trace["goal_via"] = self.goal_via
            if self.goal_distances is not None:  # null: not finite (unreachable)
                trace["goal_distances"] = [
                    round(d, 5) if math.isfinite(d) else None for d in self.goal_distances
                ]
        trace["source_counts"] = dict(Counter(s["source"] for s in self.steps if "source" in s))
        trace.update(answer.trace)
        return trace


@dataclass
class AnswerStep:
    """What the answer step produced from an :class:`Exploration`."""

    answer: str | None  # None: no parsable answer (multiple choice), counted, never scored
    prompt: str  # name of the prompt file used (recorded as ``answer_prompt``)
    params: dict[str, Any]  # sampling parameters actually sent
    images_for_judge: list[bytes] = field(default_factory=list)
    judge_images: list[str] = field(default_factory=list)  # the same, saved (run-dir relative)
    seconds: float = 0.0
    trace: dict[str, Any] = field(default_factory=dict)  # extra trace fields of this step


def vec(a: Any) -> list[float]:
    """A vector as a list of floats rounded to 5 decimals (for traces)."""
    return [round(float(v), 5) for v in np.asarray(a, dtype=float).reshape(-1)]
