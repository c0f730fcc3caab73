"""A task's rules for the exploration loop: the step budget, the question asked at every step,
and the answer step.

Every exploration task runs the same loop (:class:`~eqa_runner.policies.explore.ExplorePolicy`
with any waypoint proposer: ``re``, ``fbe`` …); what differs between them is an
:class:`ExploreProtocol`, chosen by the task's config (``defaults: -
/protocol@_global_.protocol: <name>`` in the benchmark's ``conf/task/<name>.yaml``) and handed
to the policy through ``policy.protocol: ${protocol}``. Each benchmark's protocol is in its
package (``eqa_runner/benchmarks/<name>/protocol.py``, its option in the package's ``conf/``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from eqa_runner.configured import Configured
from eqa_runner.llm import OFFLINE_TAG, ImagePart, Message, RequestEstimate
from eqa_runner.policies.config import ExplorePolicyConfig, ProtocolConfig
from eqa_runner.policies.context import EpisodeContext
from eqa_runner.policies.exploration import AnswerStep, Exploration
from eqa_runner.records import artifact_name
from eqa_runner.sim.base import Observation
from eqa_runner.sim.config import STANDALONE_SIM
from eqa_runner.types import Episode

JUDGE_IMAGES_DIR = "judge_images"
OFFLINE_STOP_AFTER = 2  # offline stand-in: "no" for steps 0 and 1, then "yes"


@dataclass(frozen=True)
class StepBudget:
    """The steps of one exploration: ``int(sqrt(area) * step_ratio)`` (at least 1), capped by
    ``max_steps`` when set (``policy.step_ratio``, ``policy.max_steps``)."""

    step_ratio: float = 3.0
    max_steps: int | None = None

    def capped(self, n: int) -> int:
        """``n`` steps, at most ``max_steps`` when that is set."""
        return min(n, self.max_steps) if self.max_steps else n

    def steps(self, scene_area: float) -> int:
        """The budget of a scene of ``scene_area`` m²."""
        return self.capped(max(1, int(math.sqrt(max(scene_area, 0.0)) * self.step_ratio)))


@dataclass(frozen=True)
class LoopTerms:
    """What a protocol applies of its exploration policy's config, handed to it once when the
    policy is built (:meth:`ExploreProtocol.bind`); the protocol never reads the policy."""

    budget: StepBudget = field(default_factory=StepBudget)
    stop_match: str = "contains"  # how the stop check reads a reply (:func:`is_yes`)
    frame_size: tuple[int, int] = (512, 512)  # (width, height) of a frame, for dry-run estimates

    @classmethod
    def of(cls, c: ExplorePolicyConfig) -> LoopTerms:
        """The terms of an exploration policy's typed config."""
        return cls(
            StepBudget(c.step_ratio, c.max_steps), c.stop_match, (c.image_size[0], c.image_size[1])
        )


class ExploreProtocol(Configured):
    """The base rules: a budget from the scene area and no per-step question. Subclasses implement
    :meth:`answer` and usually :meth:`check_step`.

    Built as ``Cls(config=None, **overrides)`` (:mod:`eqa_runner.configured`): ``config_class``
    names the protocol's schema (a :class:`~eqa_runner.policies.config.ProtocolConfig`)."""

    config_class: ClassVar[type[Any]] = ProtocolConfig
    config_key: ClassVar[str] = "protocol"
    config_context: ClassVar[dict[str, Any]] = {"sim": STANDALONE_SIM}
    config: ProtocolConfig
    name: str = "protocol"
    # the episode's goal (``meta["goal_position"]``) is a point on the floor, checked to be on it
    # at the start; False: an object's centre, which may be above the floor (its distance is the
    # simulator's geodesic to its navmesh projection)
    goal_on_floor: bool = True
    # record the geodesic distance to the goal at every step, not only the final one (the
    # trace's ``goal_distances``: the start, each step, the end)
    goal_distance_each_step: bool = False
    # the policy's terms (:meth:`bind`); a protocol built alone has the schema defaults'
    terms: LoopTerms = LoopTerms()

    def bind(self, terms: LoopTerms) -> ExploreProtocol:
        """Take the policy's ``terms``, once, when the policy is built; returns ``self`` (a
        protocol serves the one policy it is handed to: the run builds one per policy)."""
        self.terms = terms
        return self

    def budget(self, scene_area: float) -> int:
        """The step budget of the policy's terms for a scene of ``scene_area`` m²."""
        return self.terms.budget.steps(scene_area)

    async def check_step(self, x: Exploration, rec: dict[str, Any], ctx: EpisodeContext) -> bool:
        """The stop check of every non-black frame; True stops the exploration.

        The one stop check of the yes/no protocols: unless :meth:`stops_without_asking`, the
        stop model is asked :meth:`stop_messages` with :meth:`stop_images` (None: no question
        at this step) and its reply read by ``terms.stop_match`` (:func:`is_yes`); the reply
        and its time go in the step's record. A protocol with another per-step question (a
        confidence score) overrides this method."""
        if self.stops_without_asking(x, rec):
            return True
        t1 = time.perf_counter()
        images = self.stop_images(x)
        if images is None:
            return False
        word = "yes" if rec["step"] >= OFFLINE_STOP_AFTER else "no"
        with ctx.times.part("prompt"):
            msgs = self.stop_messages(x.episode, ctx.prompts_dir, *images)
        c = await x.stop_llm.acomplete(msgs, offline_reply=f"{word} {OFFLINE_TAG}")
        rec["stop_reply"] = c.text
        rec["t_stop_s"] = round(time.perf_counter() - t1, 4)
        return is_yes(c.text, self.terms.stop_match)

    def stops_without_asking(self, x: Exploration, rec: dict[str, Any]) -> bool:
        """A stop the protocol decides before any question (a path budget); default: none."""
        return False

    def stop_images(self, x: Exploration) -> tuple[ImagePart, ...] | None:
        """The images the stop question shows at this step; None: no question (the default:
        a protocol without a stop check)."""
        return None

    def stop_messages(self, ep: Episode, prompts_dir: str | None, *img: ImagePart) -> list[Message]:
        """The stop question: does this view suffice to answer ``ep``'s question?"""
        raise NotImplementedError(f"{type(self).__name__} asks a stop question: define it")

    def on_frame(self, x: Exploration, obs: Observation, png: bytes) -> None:
        """Every non-black frame (e.g. into a frame memory for the answer step)."""
        return None

    async def answer(self, episode: Episode, ctx: EpisodeContext, x: Exploration) -> AnswerStep:
        """The episode's answer from the finished exploration."""
        raise NotImplementedError

    def estimate_requests(
        self, episode: Episode, prompts_dir: str | None, steps: int
    ) -> list[RequestEstimate]:
        """The requests of ``steps`` exploration steps and the answer (for ``run.dry_run``)."""
        return []

    def prompts(self, prompts_dir: str | None) -> dict[str, dict[str, object]]:
        """Prompt files used, with their SHA-256 (the summary and cache keys record them)."""
        return {}


def is_yes(reply: str, mode: str) -> bool:
    """The stop check's verdict: the reply contains "yes" (``contains``, upstream's
    ``"yes" in reply.lower()``) or starts with it (``prefix``)."""
    text = reply.strip().lower()
    if mode == "contains":
        return "yes" in text
    return text.lstrip("*_`'\"“‘([ \t\n").startswith("yes")


def save_judge_image(ctx: EpisodeContext, episode: Episode, png: bytes) -> list[str]:
    """Write the frame the judge sees under ``judge_images/`` (run-dir relative paths)."""
    if ctx.run_dir is None or not png:
        return []
    rel = Path(JUDGE_IMAGES_DIR) / f"{artifact_name(episode.episode_id)}.png"
    (ctx.run_dir / rel).parent.mkdir(parents=True, exist_ok=True)
    (ctx.run_dir / rel).write_bytes(png)
    return [rel.as_posix()]
