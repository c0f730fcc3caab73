"""A reply as a :class:`~eqa_runner.llm.usage.Completion`: text, tokens, price, log-probs."""

from __future__ import annotations

from typing import Any, Protocol

from eqa_runner.llm.config import LLMConfig
from eqa_runner.llm.logprobs import last_prompt_logprobs, validated_logprobs
from eqa_runner.llm.usage import Completion


class LLMClient(Protocol):
    """What a reply's accounting needs of its client (``eqa_runner.llm.client.LLMClient``)."""

    cfg: LLMConfig

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float | None: ...

    def explicit_price(self) -> tuple[float, float] | None: ...

    def sent_params(self, params: dict[str, Any]) -> dict[str, Any]: ...


def direct_completion(
    client: LLMClient,
    reply: dict[str, Any],
    params: dict[str, Any],
    retries: int,
    latency: float,
    payload: int,
) -> Completion:
    """The Completion of a direct HTTP reply (OpenAI JSON)."""
    choice = reply["choices"][0]
    message = choice.get("message") or {}
    usage = reply.get("usage") or {}
    prompt = int(usage.get("prompt_tokens") or 0)
    completion = int(usage.get("completion_tokens") or 0)
    logprobs, bad = validated_logprobs(choice) if params.get("logprobs") else (None, 0)
    plp, bad_p = last_prompt_logprobs(reply.get("prompt_logprobs"))
    return Completion(
        text=message.get("content") or "",
        model=client.cfg.model,
        finish_reason=choice.get("finish_reason"),
        prompt_tokens=prompt,
        completion_tokens=completion,
        cost_usd=client.cost(prompt, completion),
        retries=retries,
        latency_s=latency,
        payload_bytes=payload,
        params=client.sent_params(params),
        logprobs=logprobs,
        invalid_logprobs=bad + bad_p,
        prompt_logprobs=plp,
    )


def litellm_completion(
    client: LLMClient,
    resp: Any,
    params: dict[str, Any],
    retries: int,
    latency: float,
    payload: int,
) -> Completion:
    """The Completion of a litellm response (its own price unless the config sets one)."""
    choice = resp.choices[0]
    text = (choice.message.content or "") if choice.message else ""
    usage = getattr(resp, "usage", None)
    prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
    completion = int(getattr(usage, "completion_tokens", 0) or 0)
    # litellm prices every response already (None for models without a known price)
    hidden = getattr(resp, "_hidden_params", None) or {}
    raw_cost = hidden.get("response_cost")
    cost = float(raw_cost) if raw_cost is not None else None
    explicit = client.explicit_price()
    if explicit is not None:  # the config's price wins (llm.input_usd_per_mtok ...)
        cost = (explicit[0] * prompt + explicit[1] * completion) / 1e6
    logprobs, bad = validated_logprobs(choice) if params.get("logprobs") else (None, 0)
    plp, bad_p = last_prompt_logprobs(getattr(resp, "prompt_logprobs", None))
    return Completion(
        text=text,
        model=client.cfg.model,
        finish_reason=getattr(choice, "finish_reason", None),
        prompt_tokens=prompt,
        completion_tokens=completion,
        cost_usd=cost,
        retries=retries,
        latency_s=latency,
        payload_bytes=payload,
        params=client.sent_params(params),
        logprobs=logprobs,
        invalid_logprobs=bad + bad_p,
        prompt_logprobs=plp,
    )
