"""A-EQA's exploration protocol (OpenEQA, active mode): explore from the start pose under a fixed
step budget, stop when the view suffices, answer in free form from a frame memory.

* **Budget**: ``num_steps`` exploration steps (50, 3D-Mem's A-EQA setting), whatever the scene's
  size; ``policy.max_steps`` still caps it.
* **Stop check** (each step, on every non-black frame): the stop model sees the question and the
  current frame (resized like the memory's frames) and replies yes/no (``policy.stop_match``);
  ``stop_check=false`` explores the whole budget.
* **Frame memory** (:class:`~eqa_runner.policies.frame_memory.FrameMemory`): every non-black frame,
  resized so its longer side is ``image_size`` (360, the size 3D-Mem sends to its VLM).
* **Answer**: the policy's model sees ``memory_frames`` frames chosen by ``memory_strategy``
  (``linspace``: spread over the exploration, first and last included — the last being the
  decision frame after an early stop) and answers in free form. No frame at all (every frame was
  black) answers from the question alone; the trace says so.

The trace of each episode records the memory (frames offered, the steps of the frames sent, their
size), the reference path length ``l`` of the episode and, beside the loop's geodesic
``path_len``, the top-down Euclidean length of the same hops (``path_len_xz``, 3D-Mem's way of
measuring). The judge (:mod:`eqa_runner.benchmarks.aeqa.judge`) reads both lengths from the trace.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

from eqa_runner.benchmarks.aeqa.config import AEQAProtocolConfig as Schema
from eqa_runner.images import resized_size
from eqa_runner.llm import OFFLINE_TAG, ImagePart, Message, RequestEstimate, system, user
from eqa_runner.policies.context import EpisodeContext
from eqa_runner.policies.exploration import AnswerStep, Exploration
from eqa_runner.policies.frame_memory import FrameMemory
from eqa_runner.policies.protocol import ExploreProtocol
from eqa_runner.prompts import Prompt, load_prompt, shipped_dir, split_prompt
from eqa_runner.records import artifact_name
from eqa_runner.sim.base import Observation
from eqa_runner.types import Episode

PROMPTS = shipped_dir(__file__)  # the prompt files shipped in this package

STOP_PROMPT, ANSWER_PROMPT = "stop", "answer"
_MEMORY_ATTR = "aeqa_memory"  # the episode's FrameMemory, kept on its Exploration


def aeqa_prompt(name: str, prompts_dir: str | None) -> tuple[str, str, Prompt]:
    """(system, user, prompt) of an A-EQA prompt file: ``<prompts.dir>/<name>.txt`` when that
    file exists (upstream has no A-EQA prompts, so an OpenEQA ``prompts.dir`` holds none), else
    the project's own ``eqa_runner/prompts/aeqa/<name>.txt``."""
    own = prompts_dir if prompts_dir and (Path(prompts_dir) / f"{name}.txt").is_file() else None
    prompt = load_prompt(PROMPTS, name, own)
    sys_text, user_text = split_prompt(prompt.text)
    return sys_text, user_text, prompt


def _messages(sys_text: str, parts: list[str | ImagePart]) -> list[Message]:
    return [*([system(sys_text)] if sys_text else []), user(*parts)]


def path_len_xz(steps: list[dict[str, Any]]) -> float:
    """Sum of the hops' top-down (x, z) Euclidean lengths (3D-Mem measures paths this way)."""
    total = 0.0
    for s in steps:
        a, b = s.get("position"), s.get("next_position")
        if a is not None and b is not None:
            total += math.hypot(float(b[0]) - float(a[0]), float(b[2]) - float(a[2]))
    return total


class AEQAProtocol(ExploreProtocol):
    """A-EQA: fixed budget, stop check each step, free-form answer from K remembered frames."""

    name = "aeqa"

    config_class = Schema
    config: Schema

    def new_memory(self) -> FrameMemory:
        return FrameMemory(
            self.config.memory_frames,
            self.config.memory_strategy,
            self.config.image_size,
            self.config.image_format,
        )

    def memory(self, x: Exploration) -> FrameMemory:
        """The episode's frame memory (made at its first frame, kept on its Exploration)."""
        state = vars(x)
        if _MEMORY_ATTR not in state:
            state[_MEMORY_ATTR] = self.new_memory()
        mem: FrameMemory = state[_MEMORY_ATTR]
        return mem

    # -------------------------------------------------------------- the loop's hooks
    def budget(self, scene_area: float) -> int:
        """``num_steps``, capped by ``policy.max_steps`` when that is set."""
        return self.terms.budget.capped(self.config.num_steps)

    def on_frame(self, x: Exploration, obs: Observation, png: bytes) -> None:
        self.memory(x).add(x.state.step, obs.rgb)

    def stop_messages(self, ep: Episode, prompts_dir: str | None, *img: ImagePart) -> list[Message]:
        sys_text, user_text, _ = aeqa_prompt(STOP_PROMPT, prompts_dir)
        return _messages(sys_text, [f"{user_text}\n\nQUESTION: {ep.question}", *img])

    def answer_messages(
        self, ep: Episode, prompts_dir: str | None, *img: ImagePart, blind: bool | None = None
    ) -> list[Message]:
        sys_text, user_text, _ = aeqa_prompt(ANSWER_PROMPT, prompts_dir)
        if not img if blind is None else blind:
            user_text += "\n(No picture is available: answer from the question alone.)"
        return _messages(sys_text, [user_text, *img, f"Question: {ep.question}\nAnswer:"])

    def stop_images(self, x: Exploration) -> tuple[ImagePart, ...] | None:
        """The stop check (``stop_check=true``) asks about the latest remembered frame."""
        if not self.config.stop_check:
            return None
        mem = self.memory(x)
        frame = mem.latest
        return None if frame is None else (ImagePart(frame.data, mem.mime),)

    async def answer(self, episode: Episode, ctx: EpisodeContext, x: Exploration) -> AnswerStep:
        """A free-form answer from the memory's K frames (the question alone if it is empty)."""
        t1 = time.perf_counter()
        mem = self.memory(x)
        chosen = mem.select()
        images = [ImagePart(f.data, mem.mime) for f in chosen]
        c = await ctx.llm.acomplete(
            self.answer_messages(episode, ctx.prompts_dir, *images),
            offline_reply=f"{OFFLINE_TAG} answer",
        )
        text = c.text.strip()
        if text[:7].lower() == "answer:":
            text = text[7:].strip()
        if ctx.artifacts_dir is not None and chosen:
            ctx.artifacts_dir.mkdir(parents=True, exist_ok=True)
            ext = "jpg" if self.config.image_format == "jpeg" else "png"
            for i, f in enumerate(chosen):
                name = f"answer_{i:02d}_step_{f.step:03d}.{ext}"
                (ctx.artifacts_dir / artifact_name(name)).write_bytes(f.data)
        ref = episode.meta.get("reference_path_length")
        return AnswerStep(
            answer=text,
            prompt=ANSWER_PROMPT,
            params=c.params,
            seconds=time.perf_counter() - t1,
            trace={
                "protocol": self.name,
                "memory": {
                    "strategy": mem.strategy,
                    "k": mem.k,
                    "frames_seen": mem.seen,
                    "frames_sent": len(chosen),
                    "steps_sent": [f.step for f in chosen],
                    "sizes_sent": sorted({f"{f.size[0]}x{f.size[1]}" for f in chosen}),
                    "image_format": mem.image_format,
                    "image_bytes": sum(len(f.data) for f in chosen),
                },
                "answer_blind": not chosen,
                "reference_path_length": None if ref is None else float(ref),
                "path_len_xz": round(path_len_xz(x.steps), 5),
            },
        )

    # -------------------------------------------------------------- dry run / prompts
    def estimate_requests(
        self, episode: Episode, prompts_dir: str | None, steps: int
    ) -> list[RequestEstimate]:
        """Worst case: a stop check at every step of the budget, then the answer with K frames."""
        size = resized_size(*self.terms.frame_size, self.config.image_size)
        n = self.budget(0.0)
        stop = RequestEstimate("policy", self.stop_messages(episode, prompts_dir), [size])
        answer = RequestEstimate(
            "policy",
            self.answer_messages(episode, prompts_dir, blind=False),
            [size] * min(n, self.config.memory_frames),
        )
        return [stop] * (n if self.config.stop_check else 0) + [answer]

    def prompts(self, prompts_dir: str | None) -> dict[str, dict[str, object]]:
        names = (STOP_PROMPT, ANSWER_PROMPT) if self.config.stop_check else (ANSWER_PROMPT,)
        return {f"aeqa-{n}": aeqa_prompt(n, prompts_dir)[2].record() for n in names}
