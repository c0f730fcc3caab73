"""``vlm_waypoint``: the VLM chooses each waypoint as a free pose (the project's action contract).

Each step the model sees the current frame, the question, the step and the budget, and its own
pose in the normal frame (x, y metres, z up; angle = habitat yaw, 0 faces +y, counter-clockwise
positive). The **last line** of its reply is one JSON object::

    {"position_normal": [x, y], "angle": yaw_radians}

the same ``Waypoint`` every proposer returns: the loop lifts it to the start floor, snaps it to
the navmesh (a point off the navmesh falls back to a random navigable point within
``policy.fallback_radius_m``, as for every proposer) and adds the hop's geodesic length to the
path. Hops of at most ``hop_hint_m`` (3 m) are a convention of the prompt, not enforced.

Parsing (:func:`parse_waypoint`) is tolerant of form, strict about content: the object may sit in
a code fence, be pretty-printed over the final lines, follow text on the last line, use single
quotes, integers, extra keys, or an angle outside (-pi, pi] (normalised); it must have
``position_normal`` as two finite numbers and a finite numeric ``angle``. Anything else is
**unparsable**: the episode ends as a designed stop (:class:`DesignedStop`, trace
``stop_reason: unparsable_waypoint`` with the reason) and the task answers through its
budget-exhausted branch. Never an error.
"""

from __future__ import annotations

import ast
import json
import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from eqa_runner.configured import Configured
from eqa_runner.llm import OFFLINE_TAG, ImagePart, Message, RequestEstimate
from eqa_runner.policies.config import WaypointVLMProposerConfig
from eqa_runner.policies.context import EpisodeContext
from eqa_runner.policies.proposer import (
    AgentState,
    DesignedStop,
    GuidedProposer,
    StepView,
    Waypoint,
)
from eqa_runner.policies.vlm_questions import PROMPTS, ask, vlm_messages, vlm_prompt
from eqa_runner.types import Episode

WAYPOINT = "waypoint"
UNPARSABLE = "unparsable_waypoint"
MAX_COORD_M = 1e6  # a waypoint farther than this is no place in any scene (and overflows grids)
MAX_OBJECT_CHARS = 10_000  # a final JSON object longer than this is not a waypoint
_FENCE = re.compile(r"^\s*```[\w-]*\s*$")


@dataclass(frozen=True)
class ParsedWaypoint:
    """A parsed reply: the pose, or None and why not."""

    position_normal: tuple[float, float] | None
    angle: float | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def _fail(why: str) -> ParsedWaypoint:
    return ParsedWaypoint(None, None, why)


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def wrap_angle(a: float) -> float:
    """The angle in (-pi, pi]."""
    w = math.remainder(a, 2 * math.pi)
    return math.pi if w == -math.pi else w


def _final_object(text: str) -> str | None:
    """The JSON-like object that ends the reply (after dropping closing code fences), or None.

    The object must end the last non-empty line; it starts at the last ``{`` whose braces balance
    to that end (so a pretty-printed object spanning the final lines counts)."""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    while lines and _FENCE.match(lines[-1]):
        lines.pop()
    if not lines:
        return None
    tail = "\n".join(lines).rstrip().rstrip(".;,")
    if not tail.endswith("}"):
        return None
    depth = 0
    for i in range(len(tail) - 1, -1, -1):
        ch = tail[i]
        if ch == "}":
            depth += 1
        elif ch == "{":
            depth -= 1
            if depth == 0:
                return tail[i:]
    return None


def _load(obj: str) -> Any:
    try:
        return json.loads(obj)
    except (json.JSONDecodeError, RecursionError):
        pass
    try:  # single quotes, Python literals
        return ast.literal_eval(obj)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def parse_waypoint(text: str) -> ParsedWaypoint:
    """The pose on the reply's last line (see module docstring), or the reason it has none."""
    if not text or not text.strip():
        return _fail("empty reply")
    obj = _final_object(text)
    if obj is None:
        return _fail("no JSON object on the last line")
    if len(obj) > MAX_OBJECT_CHARS:
        return _fail(f"the final JSON object is {len(obj)} characters long, not a waypoint")
    data = _load(obj)
    if not isinstance(data, dict):
        return _fail(f"not a JSON object: {obj[:80]}")
    if "position_normal" not in data:
        return _fail("missing key position_normal")
    if "angle" not in data:
        return _fail("missing key angle")
    pos = data["position_normal"]
    if not isinstance(pos, (list, tuple)) or len(pos) != 2:
        return _fail("position_normal must be a list of two numbers [x, y]")
    xy = [_number(v) for v in pos]
    if xy[0] is None or xy[1] is None:
        return _fail("position_normal must hold two finite numbers")
    if max(abs(xy[0]), abs(xy[1])) > MAX_COORD_M:
        return _fail(f"position_normal {pos} is more than {MAX_COORD_M:g} m from the origin")
    angle = _number(data["angle"])
    if angle is None:
        return _fail("angle must be a finite number (radians)")
    return ParsedWaypoint((xy[0], xy[1]), wrap_angle(angle))


class WaypointVLMProposer(Configured, GuidedProposer):
    """Asks the policy's model for the next pose every step (see module docstring)."""

    name = "vlm_waypoint"
    needs_sim = False

    config_class = WaypointVLMProposerConfig
    config: WaypointVLMProposerConfig

    def __init__(self, config: WaypointVLMProposerConfig | None = None, **overrides: Any) -> None:
        super().__init__(config, **overrides)
        self.parsed = self.unparsable = 0

    def reset(self, episode: Episode, sim: Any, rng: np.random.Generator) -> None:
        self.parsed = self.unparsable = 0

    def propose(self, agent_state: AgentState) -> Waypoint:
        """Not used by the loop (``propose_async`` always answers); NaN asks for the fallback."""
        return Waypoint((math.nan, math.nan), math.nan, "fallback", {})

    def messages(
        self, episode: Episode, state: AgentState, budget: int, *img: ImagePart
    ) -> list[Message]:
        p = state.position_normal
        return vlm_messages(
            WAYPOINT,
            img,
            question=episode.question,
            step=state.step + 1,
            budget=budget,
            x=float(p[0]) + 0.0,
            y=float(p[1]) + 0.0,
            angle=round(float(state.yaw), 2) + 0.0,
            hop_m=self.config.hop_hint_m,
        )

    def offline_reply(self, state: AgentState) -> str:
        """The offline stand-in: 1 m straight ahead, same heading."""
        p, yaw = state.position_normal, state.yaw
        x, y = float(p[0]) - math.sin(yaw), float(p[1]) + math.cos(yaw)
        line = json.dumps({"position_normal": [round(x, 3), round(y, 3)], "angle": round(yaw, 4)})
        return f"{OFFLINE_TAG} straight ahead\n{line}"

    async def propose_async(
        self, view: StepView, ctx: EpisodeContext
    ) -> Waypoint | DesignedStop | None:
        state = view.state
        msgs = self.messages(view.episode, state, view.budget, ImagePart(view.frame))
        with self.times.span("model"):
            c = await ask(ctx.llm, msgs, self.offline_reply(state), None)
        parsed = parse_waypoint(c.text)
        vlm = view.record.setdefault("vlm", {})
        vlm["waypoint_reply"] = c.text[-400:]
        if not parsed.ok or parsed.position_normal is None or parsed.angle is None:
            self.unparsable += 1
            vlm["parse_error"] = parsed.error
            return DesignedStop(UNPARSABLE, str(parsed.error))
        self.parsed += 1
        x, y = parsed.position_normal
        here = state.position_normal
        asked = math.hypot(x - float(here[0]), y - float(here[1]))
        vlm["waypoint"] = {
            "position_normal": [round(x, 4), round(y, 4)],
            "angle": round(parsed.angle, 5),
            "asked_hop_m": round(asked, 3),
        }
        return Waypoint((x, y), parsed.angle, "vlm", {"asked_hop_m": round(asked, 3)})

    def finish(self) -> dict[str, Any]:
        return {"vlm": {"waypoints_parsed": self.parsed, "waypoints_unparsable": self.unparsable}}

    def step_requests(self, episode: Episode, size: tuple[int, int]) -> list[RequestEstimate]:
        state = AgentState(0, np.zeros(3), np.array([1.0, 0, 0, 0]), 0.0)
        return [RequestEstimate("policy", self.messages(episode, state, 1), [size])]

    def prompt_records(self) -> dict[str, dict[str, object]]:
        return {f"{PROMPTS}/{WAYPOINT}": vlm_prompt(WAYPOINT)[2].record()}
