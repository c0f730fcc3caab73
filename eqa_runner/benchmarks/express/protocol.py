"""EXPRESS-Bench's exploration protocol: budget ``int(sqrt(scene area) * step_ratio)``, a stop
check each step ("does this view suffice to answer?"), then an answer from the decision frame
after an early stop, or a blind answer when the budget ran out.
"""

from __future__ import annotations

import time

from eqa_runner.benchmarks.express.config import ExpressProtocolConfig
from eqa_runner.llm import OFFLINE_TAG, ImagePart, Message, RequestEstimate, system, user
from eqa_runner.policies.context import EpisodeContext
from eqa_runner.policies.exploration import AnswerStep, Exploration
from eqa_runner.policies.protocol import ExploreProtocol, save_judge_image
from eqa_runner.prompts import Prompt, load_prompt, shipped_dir, split_prompt
from eqa_runner.types import Episode

STOP_PROMPT, ANSWER_PROMPT, BLIND_PROMPT = "explore", "answer", "random_answer"
PROMPTS = shipped_dir(__file__)


def express_prompt(name: str, prompts_dir: str | None) -> tuple[str, str, Prompt]:
    """Load ``<name>.txt`` (shipped, or the original from ``prompts.dir``) split in two parts."""
    prompt = load_prompt(PROMPTS, name, prompts_dir)
    sys_text, user_text = split_prompt(prompt.text)
    return sys_text, user_text, prompt


def express_messages(
    name: str, prompts_dir: str | None, text: str, *images: ImagePart
) -> list[Message]:
    """An EXPRESS prompt file's system part and its user part followed by ``text``."""
    sys_text, user_text, _ = express_prompt(name, prompts_dir)
    out = [system(sys_text)] if sys_text else []
    out.append(user(f"{user_text}\n\n{text}", *images))
    return out


class ExpressProtocol(ExploreProtocol):
    """EXPRESS-Bench: stop check each step; answer from the decision frame or blind."""

    config_class = ExpressProtocolConfig
    config: ExpressProtocolConfig
    name = "express"

    def stop_messages(self, ep: Episode, prompts_dir: str | None, *img: ImagePart) -> list[Message]:
        return express_messages(STOP_PROMPT, prompts_dir, f"QUESTION: {ep.question}", *img)

    def answer_messages(
        self, ep: Episode, prompts_dir: str | None, *img: ImagePart
    ) -> list[Message]:
        name = ANSWER_PROMPT if img else BLIND_PROMPT
        return express_messages(name, prompts_dir, f"Q: {ep.question}\nA:", *img)

    def stop_images(self, x: Exploration) -> tuple[ImagePart, ...]:
        """The stop check asks about the current view."""
        return (ImagePart(x.last_frame),)

    async def answer(self, episode: Episode, ctx: EpisodeContext, x: Exploration) -> AnswerStep:
        """From the decision frame after an early stop, blind after an exhausted budget; the
        judge sees the last frame (saved under ``judge_images/``)."""
        t1 = time.perf_counter()
        images = (ImagePart(x.last_frame),) if x.stopped else ()
        with ctx.times.part("prompt"):
            msgs = self.answer_messages(episode, ctx.prompts_dir, *images)
        with ctx.times.span("model"):
            c = await ctx.llm.acomplete(msgs, offline_reply=f"{OFFLINE_TAG} answer")
        return AnswerStep(
            answer=c.text.replace("A:", "").strip(),
            prompt=ANSWER_PROMPT if x.stopped else BLIND_PROMPT,
            params=c.params,
            images_for_judge=[x.last_frame],
            judge_images=save_judge_image(ctx, episode, x.last_frame),
            seconds=time.perf_counter() - t1,
        )

    def estimate_requests(
        self, episode: Episode, prompts_dir: str | None, steps: int
    ) -> list[RequestEstimate]:
        size = [self.terms.frame_size]
        stop = RequestEstimate("policy", self.stop_messages(episode, prompts_dir), size)
        text = f"Q: {episode.question}\nA:"
        answer = RequestEstimate("policy", express_messages(ANSWER_PROMPT, prompts_dir, text), size)
        return [stop] * steps + [answer]

    def prompts(self, prompts_dir: str | None) -> dict[str, dict[str, object]]:
        return {
            n: express_prompt(n, prompts_dir)[2].record()
            for n in (STOP_PROMPT, ANSWER_PROMPT, BLIND_PROMPT)
        }
