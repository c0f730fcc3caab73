"""Capabilities: what a task provides, what a policy needs (and adds to the record), what a
judge reads. The run checks the fit before anything is written (:func:`check_fit`).

A component declares them as class attributes: ``Task.provides``, ``Policy.needs`` /
``Policy.provides``, ``Judge.reads``. A new component uses these names, or its own string
(then described in the error by the string alone).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from eqa_runner.errors import ConfigError

QUESTION = "question"
FRAMES = "frames"
SIMULATOR = "simulator"
PROTOCOL = "protocol"
OPEN_ANSWER = "open_answer"
CHOICES = "choices"
GOAL = "goal"
REFERENCE_PATH = "reference_path"
TRAJECTORY = "trajectory"
FINAL_FRAME = "final_frame"
LOGPROBS = "logprobs"

DESCRIPTIONS = {
    QUESTION: "a question",
    FRAMES: "an episode's recorded frames",
    SIMULATOR: "a simulator (a scene and a start pose)",
    PROTOCOL: "an exploration protocol",
    OPEN_ANSWER: "a free-form reference answer",
    CHOICES: "answer options",
    GOAL: "a goal pose",
    REFERENCE_PATH: "reference path lengths",
    TRAJECTORY: "the agent's trajectory (steps, path length)",
    FINAL_FRAME: "the frame the answer was given from",
    LOGPROBS: "token log-probabilities",
}


def describe(names: Iterable[str]) -> str:
    """``a simulator (a scene and a start pose), …`` in a stable order."""
    return ", ".join(DESCRIPTIONS.get(n, n) for n in sorted(names)) or "nothing"


def listed(names: Iterable[str]) -> str:
    """The names, sorted, comma separated; ``nothing`` when empty."""
    return ", ".join(sorted(names)) or "nothing"


def check_fit(
    task: tuple[str, frozenset[str]],
    policy: tuple[str, frozenset[str], frozenset[str]],
    judge: tuple[str, frozenset[str]] | None = None,
    policies_for: Callable[[frozenset[str]], list[str]] | None = None,
) -> None:
    """Refuse, in one line naming the missing capability, a policy the task cannot feed or a
    judge whose inputs neither the task nor the policy provides.

    ``task`` is (name, provides), ``policy`` (name, needs, provides), ``judge`` (name, reads);
    ``policies_for(provides)``, if given, names the policy options the task can feed (the fix).
    """
    t_name, t_gives = task
    p_name, p_needs, p_gives = policy
    missing = p_needs - t_gives
    if missing:
        options = policies_for(t_gives) if policies_for is not None else []
        fix = f"; pick a policy it can feed: {', '.join(options)}" if options else ""
        raise ConfigError(
            f"policy={p_name} needs {describe(missing)}; task={t_name} provides "
            f"{listed(t_gives)}{fix} (docs/architecture.md: capabilities)"
        )
    if judge is None:
        return
    j_name, j_reads = judge
    missing = j_reads - t_gives - p_gives
    if missing:
        raise ConfigError(
            f"judge={j_name} reads {describe(missing)}; task={t_name} provides "
            f"{listed(t_gives)}, policy={p_name} adds {listed(p_gives)} "
            "(docs/architecture.md: capabilities)"
        )
