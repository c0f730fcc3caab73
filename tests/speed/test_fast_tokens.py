"""The litellm-free token count and price of gpt-4o-family requests equal litellm's."""

from __future__ import annotations

from pathlib import Path

import pytest

from eqa_runner.llm import load_litellm
from eqa_runner.llm.fast_tokens import fast_estimate, flat_price

ROOT = Path(__file__).resolve().parents[2]
MODELS = ["openai/gpt-4o-2024-08-06", "openai/gpt-4o-mini-2024-07-18", "gpt-4o", "gpt-4o-mini"]


def corpus() -> list[str]:
    """The project's prompt files, chunk-boundary lengths, long runs, unicode, special tokens."""
    texts = [p.read_text() for p in sorted((ROOT / "eqa_runner").rglob("prompts/**/*.txt"))]
    texts += ["", " ", "a" * 1023, "a" * 1024, "a" * 1025, "word " * 900, "." * 5000]
    texts += ["héllo wörld — 你好 🙂 " * 200, "<|endoftext|> and <|im_start|>", "x\n" * 3000]
    return texts


@pytest.mark.parametrize("model", MODELS)
def test_counts_and_prices_equal_litellm(model):
    litellm = load_litellm()
    texts = corpus()
    assert len(texts) > 20
    for i, text in enumerate(texts):
        msgs = [("system", texts[(i + 3) % len(texts)][:500]), ("user", text)]
        fast = fast_estimate(model, msgs, 255, 64, None)
        assert fast is not None, model
        wire = [{"role": r, "content": t} for r, t in msgs]
        want = int(litellm.token_counter(model=model, messages=wire)) + 255
        assert fast[0] == want, (model, i)
        cin, cout = litellm.cost_per_token(model=model, prompt_tokens=want, completion_tokens=64)
        assert fast[2] == pytest.approx(cin + cout, rel=1e-12)


def test_other_models_are_left_to_litellm(monkeypatch):
    others = ["anthropic/claude-3-7-sonnet-20250219", "openai/gpt-4.1-2025-04-14",
              "gemini/gemini-2.0-flash-001", "openai/bench-policy", "azure/gpt-4o"]  # fmt: skip
    for model in others:
        assert fast_estimate(model, [("user", "hi")], 0, 8, None) is None, model
    assert flat_price("openai/gpt-4o-2024-08-06") is not None
    monkeypatch.setenv("TIKTOKEN_ENCODE_CHUNK_SIZE_CHARS", "512")  # litellm tuned: ask litellm
    assert fast_estimate("openai/gpt-4o", [("user", "hi")], 0, 8, None) is None


def test_explicit_price_is_used():
    fast = fast_estimate("openai/gpt-4o", [("user", "hi")], 0, 10, (1.0, 2.0))
    assert fast is not None
    assert fast[2] == pytest.approx((fast[0] * 1.0 + 10 * 2.0) / 1e6)
