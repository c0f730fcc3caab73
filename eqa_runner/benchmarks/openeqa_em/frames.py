"""Frame baselines: single frame and multi-frame VLM on an episode's recorded frames."""

from __future__ import annotations

import asyncio
from typing import Any

from eqa_runner import capabilities as cap
from eqa_runner.benchmarks.openeqa_em.config import FramesPolicyConfig
from eqa_runner.configured import Configured
from eqa_runner.images import image_size, load_frame, mime_of, resized_size
from eqa_runner.llm import OFFLINE_TAG, ImagePart, RequestEstimate, user
from eqa_runner.policies.base import Policy
from eqa_runner.policies.context import EpisodeContext
from eqa_runner.policies.frame_memory import select_indices
from eqa_runner.prompts import load_prompt, shipped_dir
from eqa_runner.types import Episode, Prediction

PROMPTS = shipped_dir(__file__)  # the prompt files shipped in this package

PROMPT = "gpt4v"
SPLIT = "User Query:"


class FramesPolicy(Configured, Policy):
    """Shows K frames of the episode to a VLM with the question."""

    config_class = FramesPolicyConfig
    config: FramesPolicyConfig
    needs = frozenset({cap.QUESTION, cap.FRAMES})

    def _texts(self, episode: Episode, prompts_dir: str | None) -> tuple[str, str]:
        prompt = load_prompt(PROMPTS, PROMPT, prompts_dir)
        if SPLIT not in prompt.text:
            raise ValueError(f"{prompt.path}: the multi-frame prompt must contain '{SPLIT}'")
        prefix, suffix = prompt.text.split(SPLIT, 1)
        return prefix.strip(), SPLIT + suffix.format(question=episode.question)

    async def predict(self, episode: Episode, ctx: EpisodeContext) -> Prediction:
        paths = ctx.task.frames(episode)
        idx = select_indices(len(paths), self.config.num_frames, self.config.strategy)
        chosen = [paths[i] for i in idx]
        blobs = await asyncio.gather(
            *(
                ctx.run_cpu(load_frame, p, self.config.image_size, self.config.image_format)
                for p in chosen
            )
        )
        mime = mime_of(self.config.image_format)
        prefix, suffix = self._texts(episode, ctx.prompts_dir)
        images = [ImagePart(b, mime) for b in blobs]
        c = await ctx.llm.acomplete(
            [user(prefix, *images, suffix)], offline_reply=f"{OFFLINE_TAG} answer"
        )
        trace: dict[str, Any] = {
            "num_frames_available": len(paths),
            "frames_requested": self.config.num_frames,
            "frame_indices": idx,
            "frames": [str(p.relative_to(ctx.task.episodes_dir)) for p in chosen],
            "image_bytes": sum(len(b) for b in blobs),
            "params": c.params,
        }
        if len(paths) < self.config.num_frames:
            trace["warning"] = (
                f"episode has {len(paths)} frames < policy.num_frames="
                f"{self.config.num_frames}; all frames were used once"
            )
        if ctx.artifacts_dir is not None:
            ctx.artifacts_dir.mkdir(parents=True, exist_ok=True)
            ext = "jpg" if self.config.image_format == "jpeg" else "png"
            for i, b in zip(idx, blobs, strict=True):
                (ctx.artifacts_dir / f"frame_{i:05d}.{ext}").write_bytes(b)
        return Prediction(answer=c.text.strip(), trace=trace)

    def estimate_requests(
        self, episode: Episode, task: Any, prompts_dir: str | None
    ) -> list[RequestEstimate]:
        paths = task.frames(episode)
        idx = select_indices(len(paths), self.config.num_frames, self.config.strategy)
        w, h = image_size(paths[idx[0]])  # frames of one episode share a size
        size = resized_size(w, h, self.config.image_size)
        prefix, suffix = self._texts(episode, prompts_dir)
        return [RequestEstimate("policy", [user(prefix, suffix)], [size] * len(idx))]

    def prompts(self, prompts_dir: str | None) -> dict[str, dict[str, object]]:
        return {PROMPT: load_prompt(PROMPTS, PROMPT, prompts_dir).record()}
