"""The one stop check on ExploreProtocol (eqa_runner/policies/protocol.py): a protocol names
its stop question and the images it shows; asking, recording and reading the reply are the
base class's, the same for A-EQA, EXPRESS and the MP3D-EQA plugin."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from eqa_runner.llm import ImagePart, Message, user
from eqa_runner.policies.protocol import ExploreProtocol, LoopTerms
from eqa_runner.timing import OFF
from eqa_runner.types import Episode

EP = Episode("e1", "Is the door open?", "yes", "state", [], "scene", {})


class Asks(ExploreProtocol):
    """Only the question and its images: the stop check comes from the base class."""

    def stop_messages(self, ep: Episode, prompts_dir: str | None, *img: ImagePart) -> list[Message]:
        return [user(*img, f"Enough to answer: {ep.question}?")]

    def stop_images(self, x: Any) -> tuple[ImagePart, ...] | None:
        return (ImagePart(x.last_frame),) if x.last_frame else None


class Reply:
    def __init__(self, text: str) -> None:
        self.text, self.seen = text, []

    async def acomplete(self, messages: list[Message], *, offline_reply: str = "") -> Any:
        self.seen.append(messages)
        return SimpleNamespace(text=self.text)


def _check(protocol: ExploreProtocol, reply: str, frame: bytes, match: str) -> tuple[bool, dict]:
    llm = Reply(reply)
    x = SimpleNamespace(episode=EP, last_frame=frame, stop_llm=llm)
    ctx = SimpleNamespace(prompts_dir=None, times=OFF)
    rec: dict[str, Any] = {"step": 0}
    bound = protocol.bind(LoopTerms(stop_match=match))  # the policy's stop_match, given once
    stop = asyncio.run(bound.check_step(x, rec, ctx))  # type: ignore[arg-type]
    return stop, rec


@pytest.mark.parametrize(
    ("reply", "match", "stop"),
    [("Yes, the door is visible.", "prefix", True), ("Not yes", "prefix", False),
     ("Not yes", "contains", True), ("no", "contains", False)],
)  # fmt: skip
def test_a_protocol_that_names_its_question_gets_the_stop_check(
    reply: str, match: str, stop: bool
) -> None:
    got, rec = _check(Asks(_target_="x"), reply, b"png", match)
    assert got is stop and rec["stop_reply"] == reply and rec["t_stop_s"] >= 0


def test_no_images_means_no_question_and_no_stop() -> None:
    got, rec = _check(Asks(_target_="x"), "yes", b"", "contains")
    assert got is False and "stop_reply" not in rec


def test_the_base_protocol_asks_nothing() -> None:
    got, rec = _check(ExploreProtocol(_target_="x"), "yes", b"png", "contains")
    assert got is False and rec == {"step": 0}


def test_the_benchmarks_write_no_stop_check_of_their_own() -> None:
    from eqa_runner.benchmarks.aeqa.protocol import AEQAProtocol
    from eqa_runner.benchmarks.express.protocol import ExpressProtocol

    for cls in (AEQAProtocol, ExpressProtocol):
        assert cls.check_step is ExploreProtocol.check_step, cls.__name__
    mp3d = pytest.importorskip("eqa_runner_mp3d_eqa.protocol")
    assert mp3d.MP3DEQAProtocol.check_step is ExploreProtocol.check_step


def test_the_step_budget_is_the_protocols_own_value() -> None:
    """``int(sqrt(area) * step_ratio)``, at least 1, capped by ``max_steps``: from the policy's
    typed config, handed to the protocol once when the policy is built."""
    from eqa_runner.policies.config import REPolicyConfig
    from eqa_runner.policies.explore import ExplorePolicy
    from eqa_runner.policies.protocol import StepBudget

    assert [StepBudget(3.0).steps(a) for a in (100.0, 0.0, -4.0)] == [30, 1, 1]
    assert StepBudget(3.0, 5).steps(100.0) == 5 and StepBudget(2.0, 50).steps(100.0) == 20
    protocol = Asks(_target_="x")
    pol = ExplorePolicy(
        REPolicyConfig(), protocol=protocol, step_ratio=2.0, max_steps=7, stop_match="prefix"
    )
    assert pol.protocol is protocol and protocol.budget(100.0) == pol.budget(100.0) == 7
    assert protocol.terms == LoopTerms(StepBudget(2.0, 7), "prefix", (512, 512))


def test_no_protocol_method_receives_the_policy() -> None:
    """The budget, the stop check, the answer and the estimate read the protocol's own terms."""
    import inspect

    from eqa_runner.benchmarks.aeqa.protocol import AEQAProtocol
    from eqa_runner.benchmarks.express.protocol import ExpressProtocol
    from eqa_runner.benchmarks.hmeqa.protocol import HMEQAProtocol
    from eqa_runner.benchmarks.mt_hm3d.protocol import MTHM3DProtocol

    classes: list[type] = [ExploreProtocol, AEQAProtocol, ExpressProtocol, HMEQAProtocol]
    classes.append(MTHM3DProtocol)
    classes.append(pytest.importorskip("eqa_runner_mp3d_eqa.protocol").MP3DEQAProtocol)
    for cls in classes:
        for name in ("budget", "check_step", "answer", "estimate_requests"):
            params = inspect.signature(getattr(cls, name)).parameters
            assert "policy" not in params, f"{cls.__name__}.{name}"
