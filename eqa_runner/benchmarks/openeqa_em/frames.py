"""Frame baselines: single frame and multi-frame VLM on an episode's recorded frames."""

from __future__ import annotations

import asyncio
from typing import Any

from eqa_runner import capabilities as cap
from eqa_runner.benchmarks.openeqa_em.config import FramesPolicyConfig
from eqa_runner.images import image_size, load_frame, mime_of, resized_size
from eqa_runner.llm import OFFLINE_TAG, ImagePart, RequestEstimate, user
from eqa_runner.policies.base import Policy
from eqa_runner.policies.config import IMAGE_FORMATS, STRATEGIES
from eqa_runner.policies.context import EpisodeContext
from eqa_runner.policies.frame_memory import select_indices
from eqa_runner.prompts import load_prompt, shipped_dir
from eqa_runner.types import Episode, Prediction

PROMPTS = shipped_dir(__file__)  # the prompt files shipped in this package

PROMPT = "gpt4v"
SPLIT = "User Query:"


class FramesPolicy(Policy):
    """Shows K frames of the episode to a VLM with the question."""

    needs = frozenset({cap.QUESTION, cap.FRAMES})

    def __init__(
        self,
        name: str = FramesPolicyConfig.name,
        num_frames: int = FramesPolicyConfig.num_frames,
        strategy: str = FramesPolicyConfig.strategy,
        image_size: int | None = FramesPolicyConfig.image_size,
        image_format: str = FramesPolicyConfig.image_format,
    ) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(
                f"policy.strategy={strategy!r}: expected one of {', '.join(STRATEGIES)}"
            )
        if num_frames < 1:
            raise ValueError(f"policy.num_frames={num_frames}: must be >= 1")
        if image_format not in IMAGE_FORMATS:
            raise ValueError(f"policy.image_format={image_format!r}: expected png or jpeg")
        self.name = name
        self.num_frames = num_frames
        self.strategy = strategy
        self.image_size = image_size
        self.image_format = image_format

    def _texts(self, episode: Episode, prompts_dir: str | None) -> tuple[str, str]:
        prompt = load_prompt(PROMPTS, PROMPT, prompts_dir)
        if SPLIT not in prompt.text:
            raise ValueError(f"{prompt.path}: the multi-frame prompt must contain '{SPLIT}'")
        prefix, suffix = prompt.text.split(SPLIT, 1)
        return prefix.strip(), SPLIT + suffix.format(question=episode.question)

    async def predict(self, episode: Episode, ctx: EpisodeContext) -> Prediction:
        paths = ctx.task.frames(episode)
        idx = select_indices(len(paths), self.num_frames, self.strategy)
        chosen = [paths[i] for i in idx]
        blobs = await asyncio.gather(
            *(ctx.run_cpu(load_frame, p, self.image_size, self.image_format) for p in chosen)
        )
        mime = mime_of(self.image_format)
        prefix, suffix = self._texts(episode, ctx.prompts_dir)
        images = [ImagePart(b, mime) for b in blobs]
        c = await ctx.llm.acomplete(
            [user(prefix, *images, suffix)], offline_reply=f"{OFFLINE_TAG} answer"
        )
        trace: dict[str, Any] = {
            "num_frames_available": len(paths),
            "frames_requested": self.num_frames,
            "frame_indices": idx,
            "frames": [str(p.relative_to(ctx.task.episodes_dir)) for p in chosen],
            "image_bytes": sum(len(b) for b in blobs),
            "params": c.params,
        }
        if len(paths) < self.num_frames:
            trace["warning"] = (
                f"episode has {len(paths)} frames < policy.num_frames="
                f"{self.num_frames}; all frames were used once"
            )
        if ctx.artifacts_dir is not None:
            ctx.artifacts_dir.mkdir(parents=True, exist_ok=True)
            ext = "jpg" if self.image_format == "jpeg" else "png"
            for i, b in zip(idx, blobs, strict=True):
                (ctx.artifacts_dir / f"frame_{i:05d}.{ext}").write_bytes(b)
        return Prediction(answer=c.text.strip(), trace=trace)

    def estimate_requests(
        self, episode: Episode, task: Any, prompts_dir: str | None
    ) -> list[RequestEstimate]:
        paths = task.frames(episode)
        idx = select_indices(len(paths), self.num_frames, self.strategy)
        w, h = image_size(paths[idx[0]])  # frames of one episode share a size
        size = resized_size(w, h, self.image_size)
        prefix, suffix = self._texts(episode, prompts_dir)
        return [RequestEstimate("policy", [user(prefix, suffix)], [size] * len(idx))]

    def prompts(self, prompts_dir: str | None) -> dict[str, dict[str, object]]:
        return {PROMPT: load_prompt(PROMPTS, PROMPT, prompts_dir).record()}
