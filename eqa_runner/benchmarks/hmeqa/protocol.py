"""HM-EQA's exploration protocol (explore-eqa, "Explore until Confident"): at every step the
model answers the multiple-choice question and says whether the view suffices; the final answer
is one of upstream's two rules over those per-step answers
(:mod:`eqa_runner.benchmarks.hmeqa.choice_rules`).

Per non-black step, two calls on the current frame (run concurrently):

* the answer question (the question, the options as ``A. …`` lines, "reply with the letter"):
  the answer distribution p_t over the four letters is the softmax of their token
  log-probabilities where the endpoint returns them (``top_logprobs``), else the parsed letter as
  a one-hot distribution; an unparsable reply has none (the step is left out of the rules and
  counted);
* the confidence question ("can you answer from this view? Yes or No"): r_t = P(Yes), the
  softmax over the Yes/No tokens' log-probabilities, else 1 for a parsed Yes and 0 for a No.

``llm.letter_scoring=option_loss | parsed`` scores both questions that way instead
(``eqa_runner/llm/letters.py``: one vLLM ``prompt_logprobs`` request per option, or the parsed
reply); the source is then ``option_loss`` / ``parsed``.

Which path each reply took is recorded per step (``answer_source``, ``confidence_source``) and
per episode (``answer_path``: logprobs | parsed | mixed | none). Upstream runs the whole budget
(no stop rule in the released code): ``stop_confidence: null`` does the same; a number stops
at the first step with r_t >= it (our option, not upstream's). The answer step calls no model.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from eqa_runner.benchmarks.hmeqa.choice_rules import RULES, apply_rule
from eqa_runner.benchmarks.hmeqa.config import HMEQAProtocolConfig as Schema
from eqa_runner.llm import OFFLINE_TAG, ImagePart, Message, RequestEstimate, user
from eqa_runner.llm.choice import option_letters, pick
from eqa_runner.llm.letters import mode_of, score_options
from eqa_runner.llm.replies import tidy_reply
from eqa_runner.policies.context import EpisodeContext
from eqa_runner.policies.exploration import AnswerStep, Exploration
from eqa_runner.policies.protocol import ExploreProtocol
from eqa_runner.prompts import load_prompt, shipped_dir
from eqa_runner.types import Episode

PROMPTS = shipped_dir(__file__)  # the prompt files shipped in this package

ANSWER_PROMPT, CONFIDENCE_PROMPT = "answer", "confidence"
OFFLINE_CONFIDENT_AFTER = 2  # offline stand-in: "No" for steps 0 and 1, then "Yes"
_YES_NO = {"yes": 1.0, "no": 0.0}


def format_options(choices: Sequence[str]) -> str:
    """The options as upstream shows them: one ``A. <option>`` line each (padding included)."""
    return "\n".join(
        f"{k}. {c}" for k, c in zip(option_letters(len(choices)), choices, strict=True)
    )


def _yes_no_token(token: str) -> str | None:
    t = re.sub(r"[^a-z]", "", token.lower())
    return t if t in _YES_NO else None


def confidence_from_logprobs(
    positions: Sequence[Sequence[tuple[str, float]]] | None,
) -> float | None:
    """P(Yes) renormalised over Yes/No at the first token position that offers either (a label
    outside the returned top-k gets 0); None when no position does."""
    for alts in positions or ():
        best: dict[str, float] = {}
        for tok, lp in alts:
            label = _yes_no_token(tok)
            if label is not None and math.isfinite(lp) and lp > best.get(label, -math.inf):
                best[label] = lp
        if best:
            top = max(best.values())
            e = {k: math.exp(v - top) for k, v in best.items()}
            return e.get("yes", 0.0) / sum(e.values())
    return None


def parse_yes_no(reply: str) -> float | None:
    """1.0 for a reply that says Yes, 0.0 for No, None when it says neither or both."""
    words = re.findall(r"[a-z]+", tidy_reply(reply).lower())
    if words and words[0] in _YES_NO:
        return _YES_NO[words[0]]
    said = {w for w in words if w in _YES_NO}
    return _YES_NO[said.pop()] if len(said) == 1 else None


def confidence(
    reply: str, positions: Sequence[Sequence[tuple[str, float]]] | None
) -> tuple[float | None, str]:
    """(r_t, source): log-probabilities where returned, else the parsed Yes/No."""
    r = confidence_from_logprobs(positions)
    if r is not None:
        return r, "logprobs"
    r = parse_yes_no(reply)
    return r, "parsed" if r is not None else "unparsable"


def answer_path(sources: Sequence[str]) -> str:
    """One episode's answer path from its steps' answer sources."""
    used = {s for s in sources if s != "unparsable"}
    if not used:
        return "none"
    return used.pop() if len(used) == 1 else "mixed"


class HMEQAProtocol(ExploreProtocol):
    """HM-EQA: an answer distribution and a confidence per step; the final answer by a rule."""

    name = "hmeqa"

    config_class = Schema
    config: Schema

    # ---------------------------------------------------------------- prompts
    def answer_messages(
        self, ep: Episode, prompts_dir: str | None, *img: ImagePart
    ) -> list[Message]:
        p = load_prompt(PROMPTS, ANSWER_PROMPT, prompts_dir)
        text = p.format(question=ep.question, options=format_options(ep.meta["choices"]))
        return [user(*img, text)]

    def confidence_messages(
        self, ep: Episode, prompts_dir: str | None, *img: ImagePart
    ) -> list[Message]:
        p = load_prompt(PROMPTS, CONFIDENCE_PROMPT, prompts_dir)
        return [user(*img, p.format(question=ep.question))]

    # ---------------------------------------------------------------- one step
    async def check_step(self, x: Exploration, rec: dict[str, Any], ctx: EpisodeContext) -> bool:
        """Ask both questions on the current frame; True (stop) only with ``stop_confidence``
        set and reached."""
        t1 = time.perf_counter()
        ep, img = x.episode, ImagePart(x.last_frame)
        choices = list(ep.meta["choices"])
        word = "Yes" if rec["step"] >= OFFLINE_CONFIDENT_AFTER else "No"
        if mode_of(ctx.llm) != "top_logprobs":  # llm.letter_scoring: option_loss | parsed
            r = await self._scored_step(x, rec, ctx, img, word)
            rec["t_questions_s"] = round(time.perf_counter() - t1, 4)
            stop = self.config.stop_confidence
            return stop is not None and r is not None and r >= stop
        a, c = await asyncio.gather(
            ctx.llm.acomplete(
                self.answer_messages(ep, ctx.prompts_dir, img),
                offline_reply=f"A {OFFLINE_TAG}",
                top_logprobs=self.config.top_logprobs,
            ),
            x.stop_llm.acomplete(
                self.confidence_messages(ep, ctx.prompts_dir, img),
                offline_reply=f"{word} {OFFLINE_TAG}",
                top_logprobs=self.config.top_logprobs,
            ),
        )
        choice = pick(a.text, a.logprobs, choices)
        letters = option_letters(len(choices))
        if choice.source == "logprobs":
            probs: list[float] | None = [round(choice.probs.get(k, 0.0), 6) for k in letters]
        elif choice.letter is not None:
            probs = [1.0 if k == choice.letter else 0.0 for k in letters]
        else:
            probs = None
        r, r_source = confidence(c.text, c.logprobs)
        rec.update(
            answer_reply=a.text[:200],
            answer_source=choice.source,
            answer_probs=probs,
            confidence=None if r is None else round(r, 6),
            confidence_source=r_source,
            confidence_reply=c.text[:200],
            t_questions_s=round(time.perf_counter() - t1, 4),
        )
        if choice.missing:
            rec["answer_missing"] = list(choice.missing)
        if not any("params" in s for s in x.steps):  # the parameters sent, once per episode
            rec["params"] = a.params
        return (
            self.config.stop_confidence is not None
            and r is not None
            and r >= self.config.stop_confidence
        )

    async def _scored_step(
        self, x: Exploration, rec: dict[str, Any], ctx: EpisodeContext, img: ImagePart, word: str
    ) -> float | None:
        """Both questions scored by ``llm.letter_scoring`` (llm/letters.py): the answer over the
        option letters, the confidence over Yes/No; r_t (P(Yes)) returned."""
        ep = x.episode
        choices = list(ep.meta["choices"])
        letters = option_letters(len(choices))

        def answer_index(text: str) -> int | None:
            k = pick(text, None, choices).letter
            return None if k is None else letters.index(k)

        def yes_index(text: str) -> int | None:
            r = parse_yes_no(text)
            return None if r is None else (0 if r == 1.0 else 1)

        a, c = await asyncio.gather(
            score_options(
                ctx.llm,
                self.answer_messages(ep, ctx.prompts_dir, img),
                list(letters),
                parse=answer_index,
                top=_no_top,
                offline_reply=f"A {OFFLINE_TAG}",
                top_logprobs=None,
            ),
            score_options(
                x.stop_llm,
                self.confidence_messages(ep, ctx.prompts_dir, img),
                ["Yes", "No"],
                parse=yes_index,
                top=_no_top,
                offline_reply=f"{word} {OFFLINE_TAG}",
                top_logprobs=None,
            ),
        )
        r = None if c.probs is None else c.probs[0]
        rec.update(
            answer_reply=a.text[:200],
            answer_source=a.source,
            answer_probs=None if a.probs is None else [round(p, 6) for p in a.probs],
            confidence=None if r is None else round(r, 6),
            confidence_source=c.source,
            confidence_reply=c.text[:200],
        )
        if a.missing:
            rec["answer_missing"] = list(a.missing)
        return r

    # ---------------------------------------------------------------- the answer
    async def answer(self, episode: Episode, ctx: EpisodeContext, x: Exploration) -> AnswerStep:
        """The selected rule over the recorded steps (no model call; black steps as
        ``black_steps`` says); None when no step has an answer (counted, never scored as a
        choice)."""
        t1 = time.perf_counter()
        letters = option_letters(len(episode.meta["choices"]))
        asked = [s for s in x.steps if "answer_source" in s]
        results = {
            rule: apply_rule(
                rule,
                x.steps,
                n_options=len(letters),
                black=self.config.black_steps,
                tie_break=self.config.tie_break,
            )
            for rule in RULES
        }
        chosen = results[self.config.answer_rule]
        letter = None if chosen.index is None else letters[chosen.index]
        return AnswerStep(
            answer=letter,
            prompt=ANSWER_PROMPT,
            params=next((s.get("params", {}) for s in asked if "params" in s), {}),
            seconds=time.perf_counter() - t1,
            trace={
                "answer_rule": self.config.answer_rule,
                "answer_step": chosen.step,
                "rule_answers": {
                    k: None if v.index is None else letters[v.index] for k, v in results.items()
                },
                "answer_path": answer_path([s["answer_source"] for s in asked]),
                "answer_sources": dict(Counter(s["answer_source"] for s in asked)),
                "confidence_sources": dict(Counter(s["confidence_source"] for s in asked)),
                "unparsable_steps": sum(1 for s in asked if s["answer_source"] == "unparsable"),
                "steps_asked": len(asked),
                "black_steps": self.config.black_steps,
                "tie_break": self.config.tie_break,
                "stop_confidence": self.config.stop_confidence,
                "choices": list(episode.meta["choices"]),
            },
        )

    # ---------------------------------------------------------------- dry run / prompts
    def estimate_requests(
        self, episode: Episode, prompts_dir: str | None, steps: int
    ) -> list[RequestEstimate]:
        """Two requests per step (answer, confidence), each with one frame; no answer call."""
        size = [self.terms.frame_size]
        a = RequestEstimate("policy", self.answer_messages(episode, prompts_dir), size)
        c = RequestEstimate("policy", self.confidence_messages(episode, prompts_dir), size)
        return [a, c] * steps

    def prompts(self, prompts_dir: str | None) -> dict[str, dict[str, object]]:
        return {
            f"hmeqa/{n}": load_prompt(PROMPTS, n, prompts_dir).record()
            for n in (ANSWER_PROMPT, CONFIDENCE_PROMPT)
        }


def _no_top(c: Any) -> tuple[list[float] | None, tuple[str, ...]]:
    return None, ()  # the top_logprobs mode keeps check_step's own path
