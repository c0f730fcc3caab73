"""MP3D-EQA's exploration protocol for the runner's exploration policies (``re``, ``fbe``, the
VLM policies).

Upstream's agents (habitat-baselines' PACMAN navigator + VQA answerer) act in 0.25 m / 10 degree
steps, at most 500 of them, stop by a learned action, and answer by classifying the last five
frames over the answer vocabulary. The runner's agents hop between waypoints, so here:

* **budget**: the policy's hop budget, and upstream's 500 actions as a path length
  (``max_path_m`` = 500 x 0.25 m): exploration stops once the hops add up to it;
* **stop check** (``stop_check``): the stop model sees the question and the current frame and
  replies yes/no (``policy.stop_match``), as on EXPRESS-Bench;
* **answer**: the policy's model sees the last ``answer_frames`` frames (upstream's VQA input:
  5) and the answer vocabulary, and replies with one entry; the judge maps the reply to its
  vocabulary index (:func:`eqa_runner_mp3d_eqa.metrics.match_answer`).

The goal (the asked-about object's centre) is above the floor, and the judge needs the
distance to it after every step (d_min): the protocol asks the loop for both
(``goal_on_floor = False``, ``goal_distance_each_step = True``).
"""

from __future__ import annotations

import time
from typing import Any

from eqa_runner.llm import OFFLINE_TAG, ImagePart, Message, RequestEstimate, user
from eqa_runner.policies.context import EpisodeContext
from eqa_runner.policies.exploration import AnswerStep, Exploration
from eqa_runner.policies.frame_memory import FrameMemory
from eqa_runner.policies.protocol import ExploreProtocol
from eqa_runner.prompts import load_prompt, shipped_dir
from eqa_runner.sim.base import Observation
from eqa_runner.types import Episode
from eqa_runner_mp3d_eqa.config import MP3DEQAProtocolConfig as Schema

PROMPTS = shipped_dir(__file__)
STOP_PROMPT, ANSWER_PROMPT = "stop", "answer"
OFFLINE_STOP_AFTER = 2  # offline stand-in: "no" for steps 0 and 1, then "yes"
_MEMORY = "mp3d_eqa_memory"  # the episode's frame memory, kept on its Exploration


def answer_options(episode: Episode) -> list[str]:
    """The answer vocabulary without habitat's special tokens (``<unk>`` …)."""
    return [w for w in episode.meta.get("answer_vocab") or [] if not w.startswith("<")]


class MP3DEQAProtocol(ExploreProtocol):
    """Stop check each step (and upstream's path budget), then one vocabulary answer from the
    last frames."""

    name = "mp3d_eqa"
    goal_on_floor = False
    goal_distance_each_step = True

    config_class = Schema
    config: Schema

    def memory(self, x: Exploration) -> FrameMemory:
        """The episode's last ``answer_frames`` frames (made at its first frame)."""
        state = vars(x)
        if _MEMORY not in state:
            state[_MEMORY] = FrameMemory(
                self.config.answer_frames, "last", self.config.image_size, self.config.image_format
            )
        mem: FrameMemory = state[_MEMORY]
        return mem

    # -------------------------------------------------------------- prompts
    def stop_messages(self, ep: Episode, prompts_dir: str | None, *img: ImagePart) -> list[Message]:
        p = load_prompt(PROMPTS, STOP_PROMPT, prompts_dir)
        return [user(*img, p.format(question=ep.question))]

    def answer_messages(
        self, ep: Episode, prompts_dir: str | None, *img: ImagePart
    ) -> list[Message]:
        p = load_prompt(PROMPTS, ANSWER_PROMPT, prompts_dir)
        text = p.format(question=ep.question, answers=", ".join(answer_options(ep)))
        return [user(*img, text)]

    # -------------------------------------------------------------- the loop's hooks
    def on_frame(self, x: Exploration, obs: Observation, png: bytes) -> None:
        self.memory(x).add(x.state.step, obs.rgb)

    def stops_without_asking(self, x: Exploration, rec: dict[str, Any]) -> bool:
        """Upstream's path budget: stop once the path is ``max_path_m`` long."""
        if self.config.max_path_m is not None and x.path_len >= self.config.max_path_m:
            x.stop_reason = rec["stop_reason"] = "path_budget"
            return True
        return False

    def stop_images(self, x: Exploration) -> tuple[ImagePart, ...] | None:
        """The stop check (``stop_check=true``) asks about the latest frame (none yet: no image)."""
        if not self.config.stop_check:
            return None
        mem = self.memory(x)
        frame = mem.latest
        return (ImagePart(frame.data, mem.mime),) if frame else ()

    async def answer(self, episode: Episode, ctx: EpisodeContext, x: Exploration) -> AnswerStep:
        """One reply naming a vocabulary entry, from the last frames (the judge maps it)."""
        t1 = time.perf_counter()
        mem = self.memory(x)
        chosen = mem.select()
        options = answer_options(episode)
        images = [ImagePart(f.data, mem.mime) for f in chosen]
        c = await ctx.llm.acomplete(
            self.answer_messages(episode, ctx.prompts_dir, *images),
            offline_reply=f"{options[0] if options else 'yes'} {OFFLINE_TAG}",
        )
        return AnswerStep(
            answer=c.text.strip(),
            prompt=ANSWER_PROMPT,
            params=c.params,
            images_for_judge=[x.last_frame] if x.last_frame else [],
            seconds=time.perf_counter() - t1,
            trace={
                "protocol": self.name,
                "answer_frames": [f.step for f in chosen],
                "answer_options": len(options),
                "max_path_m": self.config.max_path_m,
            },
        )

    # -------------------------------------------------------------- dry run / prompts
    def estimate_requests(
        self, episode: Episode, prompts_dir: str | None, steps: int
    ) -> list[RequestEstimate]:
        """A stop check per step (when on), then the answer with K frames."""
        size = (self.config.image_size, self.config.image_size)
        stop = RequestEstimate("policy", self.stop_messages(episode, prompts_dir), [size])
        answer = RequestEstimate(
            "policy", self.answer_messages(episode, prompts_dir), [size] * self.config.answer_frames
        )
        return [stop] * (steps if self.config.stop_check else 0) + [answer]

    def prompts(self, prompts_dir: str | None) -> dict[str, dict[str, object]]:
        return {
            f"mp3d_eqa/{n}": load_prompt(PROMPTS, n, prompts_dir).record()
            for n in (STOP_PROMPT, ANSWER_PROMPT)
        }
