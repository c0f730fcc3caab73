"""The HM-EQA protocol per step (crafted replies, no server), its config, the dry run, and a
run that needs no judge credentials."""

from __future__ import annotations

import asyncio
import math
from types import SimpleNamespace

import pytest

from eqa_runner.benchmarks.hmeqa.protocol import HMEQAProtocol
from eqa_runner.errors import ConfigError
from eqa_runner.llm.usage import Completion
from eqa_runner.run.build import check_capabilities
from eqa_runner.run.loop import run
from eqa_runner.types import Episode

PAD = "(Do not choose this option)"
EP = Episode("3", "Is the lamp on?", "B", "state", scene="00001-DemoApt0",
             meta={"choices": [PAD, "Yes", "No", PAD]})  # fmt: skip


class FakeLLM:
    """Returns a fixed completion per prompt kind and records what it was asked."""

    model = "fake"

    def __init__(self, answer: Completion, conf: Completion) -> None:
        self.replies, self.calls = {"answer": answer, "conf": conf}, []

    async def acomplete(self, messages, *, offline_reply="", top_logprobs=None):
        text = messages[-1]["content"][-1]
        kind = "conf" if "Yes or No" in text else "answer"
        self.calls.append((kind, top_logprobs))
        return self.replies[kind]


def _lp(**probs):
    return [[(k, math.log(v)) for k, v in probs.items()]]


def _step(protocol, llm, step=0):
    x = SimpleNamespace(episode=EP, last_frame=b"png", stop_llm=llm, steps=[])
    ctx = SimpleNamespace(llm=llm, prompts_dir=None)
    rec = {"step": step}
    stop = asyncio.run(protocol.check_step(x, rec, ctx))
    return stop, rec


def test_logprob_softmax_over_the_four_letters_per_step():
    # the letters' probabilities renormalised over A-D; C is outside the top-k: 0, listed
    a = Completion("B", "fake", logprobs=_lp(B=0.5, A=0.1, D=0.1, Sure=0.3))
    c = Completion("Yes", "fake", logprobs=_lp(Yes=0.3, No=0.1))
    llm = FakeLLM(a, c)
    stop, rec = _step(HMEQAProtocol(top_logprobs=4), llm)
    assert not stop  # no stop rule by default (upstream runs the whole budget)
    assert rec["answer_probs"] == pytest.approx([1 / 7, 5 / 7, 0.0, 1 / 7])
    assert rec["answer_source"] == "logprobs" and rec["answer_missing"] == ["C"]
    assert rec["confidence"] == pytest.approx(0.75) and rec["confidence_source"] == "logprobs"
    assert sorted(llm.calls) == [("answer", 4), ("conf", 4)]


def test_parse_path_when_no_logprobs_and_unparsable_recorded():
    llm = FakeLLM(Completion("(C) No", "fake"), Completion("no", "fake"))
    _, rec = _step(HMEQAProtocol(), llm)
    assert rec["answer_probs"] == [0.0, 0.0, 1.0, 0.0] and rec["answer_source"] == "parsed"
    assert rec["confidence"] == 0.0 and rec["confidence_source"] == "parsed"
    llm = FakeLLM(Completion("I am not sure", "fake"), Completion("maybe", "fake"))
    _, rec = _step(HMEQAProtocol(top_logprobs=None), llm)
    assert rec["answer_probs"] is None and rec["answer_source"] == "unparsable"
    assert rec["confidence"] is None and rec["confidence_source"] == "unparsable"
    assert llm.calls == [("answer", None), ("conf", None)]  # top_logprobs null: never asked


def test_optional_confidence_threshold_stops():
    llm = FakeLLM(Completion("B", "fake"), Completion("Yes", "fake", logprobs=_lp(Yes=0.8, No=0.2)))
    assert _step(HMEQAProtocol(stop_confidence=0.75), llm)[0] is True
    assert _step(HMEQAProtocol(stop_confidence=0.85), llm)[0] is False
    with pytest.raises(
        ConfigError, match=r"^protocol.answer_rule=sum: must be one of weighted, max$"
    ):
        HMEQAProtocol(answer_rule="sum")


def test_answer_step_applies_the_selected_rule_without_a_model():
    steps = [
        {"step": 0, "black": True},  # a black frame: nothing asked
        {"step": 1, "answer_source": "logprobs", "answer_probs": [0.1, 0.7, 0.1, 0.1],
         "confidence": 0.3, "confidence_source": "logprobs"},
        {"step": 2, "answer_source": "logprobs", "answer_probs": [0.5, 0.1, 0.3, 0.1],
         "confidence": 0.6, "confidence_source": "logprobs"},
        {"step": 3, "answer_source": "parsed", "answer_probs": [0.0, 0.0, 0.0, 1.0],
         "confidence": 0.55, "confidence_source": "parsed"},
    ]  # fmt: skip
    x = SimpleNamespace(steps=steps)
    for rule, letter, step in (("max", "A", 2), ("weighted", "D", 3)):
        a = asyncio.run(HMEQAProtocol(answer_rule=rule).answer(EP, None, x))
        assert (a.answer, a.trace["answer_step"]) == (letter, step)
        assert a.trace["rule_answers"] == {"weighted": "D", "max": "A"}
        assert a.trace["answer_path"] == "mixed" and a.trace["steps_asked"] == 3
        assert a.trace["answer_sources"] == {"logprobs": 2, "parsed": 1}
    # only a black step: upstream's uniform answer with P(Yes) 0.01 -> the first letter
    black = SimpleNamespace(steps=steps[:1])
    up = asyncio.run(HMEQAProtocol().answer(EP, None, black))
    assert (
        up.answer == "A" and up.trace["answer_step"] == 0 and up.trace["black_steps"] == "uniform"
    )
    none = asyncio.run(HMEQAProtocol(black_steps="skip").answer(EP, None, black))
    assert none.answer is None and none.trace["answer_path"] == "none"


def test_task_config_selects_protocol_judge_and_camera(compose_cfg):
    cfg = compose_cfg(["task=hmeqa", "policy=fbe"])
    assert cfg.protocol._target_.endswith("HMEQAProtocol") and cfg.protocol.answer_rule == "max"
    assert cfg.judge.name == "hmeqa"
    check_capabilities(cfg)
    assert (cfg.sim.width, cfg.sim.height, cfg.sim.hfov_deg) == (640, 480, 120.0)
    # explore-eqa's pitched body: the camera 1.5 cos 30 deg up and 1.5 sin 30 deg = 0.75 m ahead
    assert cfg.sim.tilt_deg == -30.0 and cfg.sim.sensor_forward_m == 0.75
    assert cfg.sim.sensor_height_m == pytest.approx(1.5 * math.cos(math.radians(30.0)))
    assert compose_cfg(["task=hmeqa", "sim=habitat"]).sim.sensor_forward_m == 0.75  # both backends
    assert compose_cfg(["task=hmeqa", "sim.hfov_deg=90"]).sim.hfov_deg == 90.0  # overrides win
    assert compose_cfg(["task=express"]).sim.width == 512  # EXPRESS keeps its camera


def test_dry_run_two_calls_per_step(tmp_path, compose_cfg, hmeqa_demo, capsys):
    cfg = compose_cfg(
        ["task=hmeqa", "policy=re", f"task.data_dir={hmeqa_demo}", "run.dry_run=true",
         "policy.max_steps=7"]
    )  # fmt: skip
    out = run(cfg)
    assert out["dry_run"] and out["episodes"] == 10
    est = out["estimate"]
    assert est["policy"]["requests"] == 10 * 7 * 2 and est["policy"]["images"] == 10 * 7 * 2
    assert est["judge"]["requests"] == 0
    assert "10 episodes selected" in capsys.readouterr().out


def test_judge_without_a_model_needs_no_credentials(tmp_path, compose_cfg, monkeypatch):
    """A judge that calls no model: its model keys are ignored and no key is asked for."""
    from eqa_runner.run.build import llm_clients
    from eqa_runner.run.plan import RunPlan
    from eqa_runner.run.start import START, run_checks

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cfg = compose_cfg(["task=hmeqa", "policy=re", "judge.model=openai/gpt-4o-2024-08-06"])
    parts = run_checks(RunPlan(cfg), START, names=("typed config", "task", "policy", "judge")).parts
    _, judge_llm = llm_clients(cfg, parts.judge, {})
    assert judge_llm.offline and parts.judge.llm_overrides["model"] == "none"


class LossLLM:
    """A vLLM-like client: ``prompt_logprobs`` gives the open assistant option's log-probability
    (``llm.letter_scoring`` from its config)."""

    model = "fake"

    def __init__(self, mode: str, probs: dict[str, float]) -> None:
        self.cfg = SimpleNamespace(letter_scoring=mode)
        self.probs, self.calls = probs, []

    async def acomplete(self, messages, *, offline_reply="", top_logprobs=None,
                        prompt_logprobs=None):  # fmt: skip
        self.calls.append((messages[-1]["role"], top_logprobs, prompt_logprobs))
        if prompt_logprobs:
            opt = messages[-1]["content"]
            plp = [(opt, math.log(self.probs[opt]))] if opt in self.probs else [("x", -0.1)]
            return Completion("", "fake", prompt_logprobs=plp)
        text = messages[-1]["content"][-1]
        return Completion("Yes" if "Yes or No" in text else "B", "fake")


def test_letter_scoring_option_loss_and_parsed_score_both_questions():
    llm = LossLLM("option_loss", {"A": 0.1, "B": 0.6, "D": 0.1, "Yes": 0.3, "No": 0.1})
    _, rec = _step(HMEQAProtocol(), llm)
    assert rec["answer_source"] == "option_loss" and rec["answer_missing"] == ["C"]
    assert rec["answer_probs"] == pytest.approx([1 / 8, 6 / 8, 0.0, 1 / 8])
    assert rec["confidence"] == pytest.approx(0.75) and rec["confidence_source"] == "option_loss"
    assert len(llm.calls) == 6 and all(c[0] == "assistant" and c[2] for c in llm.calls)
    parsed = LossLLM("parsed", {})
    _, rec = _step(HMEQAProtocol(), parsed)
    assert rec["answer_source"] == "parsed" and rec["answer_probs"] == [0.0, 1.0, 0.0, 0.0]
    assert rec["confidence"] == 1.0 and all(c[1] is None for c in parsed.calls)
