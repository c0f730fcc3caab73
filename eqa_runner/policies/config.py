"""Typed schemas of the ``policy`` config group: one per policy family, beside its code.

``conf/policy/<name>.yaml`` names its schema in its defaults list (``base_frames`` ...), its
``_target_``, and only what differs from the schema. Nothing heavy is imported here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from omegaconf import MISSING

from eqa_runner.mapping.config import FrontierPlannerConfig, VisualPromptConfig
from eqa_runner.schema import bounded, one_of

STRATEGIES = ("linspace", "stride", "first_last_middle", "middle")
IMAGE_FORMATS = ("png", "jpeg")
STOP_MATCHES = ("prefix", "contains")
UNREACHABLE_HOPS = ("skip", "inf")


@dataclass
class PolicyConfig:
    """Keys every policy has. ``name`` must match the option's file name."""

    _target_: str = MISSING
    name: str = MISSING


@dataclass
class ProposerConfig:
    """A waypoint proposer's node: the exploration policy builds one proposer per episode from
    it (``_partial_`` marks it a factory for Hydra's own tools)."""

    _target_: str = MISSING
    _partial_: bool = True


@dataclass
class RandomProposerConfig(ProposerConfig):
    """``re``: a random navigable point within ``radius_m``, random yaw."""

    _target_: str = "eqa_runner.policies.explore.RandomProposer"
    radius_m: float = bounded(3.0, gt=0)


@dataclass
class FrontierProposerConfig(ProposerConfig):
    """``fbe``: the frontier planner on a TSDF map of the depth frames."""

    _target_: str = "eqa_runner.policies.frontier.FrontierProposer"
    # Look-around: extra views rendered at each waypoint (habitat yaw offsets in degrees from
    # the forward view), fused into the map only; the stop check sees the forward view alone.
    # [] = upstream (one frame per step, the default); [120, 240] = three views 120 deg apart.
    # Each entry costs one simulator render per step.
    look_around_deg: list[float] = field(default_factory=list)
    save_maps: bool = True  # run.save_artifacts=true: top-down map PNG per step (episode end)
    map_scale: int = bounded(4, ge=1)  # PNG pixels per map cell
    planner: FrontierPlannerConfig = field(default_factory=FrontierPlannerConfig)


@dataclass
class StopModelEndpoint:
    """``policy.stop_llm``: where ``policy.stop_model`` is served and what it costs. Nothing is
    inherited from ``llm:`` (a second model gets its own endpoint, key variable and price, or
    none: the provider's default endpoint, litellm's price)."""

    api_base: str | None = None
    api_key_env: str | None = None
    input_usd_per_mtok: float | None = bounded(None, ge=0)
    output_usd_per_mtok: float | None = bounded(None, ge=0)


@dataclass
class ExplorePolicyConfig(PolicyConfig):
    """``policy=re|fbe``: the exploration loop with a pluggable waypoint proposer."""

    proposer: Any = MISSING
    stop_model: str | None = None  # model of the stop check; null = the policy's (llm.model)
    stop_llm: StopModelEndpoint = field(default_factory=StopModelEndpoint)  # its own endpoint
    max_steps: int | None = bounded(None, ge=1)  # cap on the budget int(sqrt(area) * step_ratio)
    step_ratio: float = bounded(3.0, gt=0)
    black_pixel_ratio: float = bounded(0.5, ge=0, le=1)  # frames this black skip the stop check
    fallback_radius_m: float = bounded(
        3.0, gt=0
    )  # NaN / unsnappable waypoint: random point this close
    # contains: "yes" anywhere in the reply, case-insensitive (upstream; cited in the READMEs)
    # | prefix: the reply starts with "yes" (a "not yes" reply does not stop)
    stop_match: str = one_of("contains", STOP_MATCHES)
    # skip: unreachable hops add nothing to path_len (upstream) | inf
    unreachable_hop: str = one_of("skip", UNREACHABLE_HOPS)
    estimate_steps: int = bounded(
        50, ge=1
    )  # dry run: stop checks per episode when max_steps is null
    # frame size (width, height) for dry-run estimates
    image_size: list[int] = bounded(default_factory=lambda: ["${sim.width}", "${sim.height}"], gt=0)
    # the task's rules for the loop (budget, per-step question, answer step): the ``protocol``
    # node its task config selects (a benchmark's conf/protocol/); null for tasks that do not
    # explore. The run builds it and hands the object to the policy as ``protocol=``
    protocol: Any = "${oc.select:protocol,null}"


@dataclass
class REPolicyConfig(ExplorePolicyConfig):
    """``policy=re``: random exploration."""

    name: str = "re"
    proposer: RandomProposerConfig = field(default_factory=RandomProposerConfig)


@dataclass
class FBEPolicyConfig(ExplorePolicyConfig):
    """``policy=fbe``: frontier-based exploration."""

    name: str = "fbe"
    proposer: FrontierProposerConfig = field(default_factory=FrontierProposerConfig)


# ---- VLM-guided exploration (policy=vlm_explore | vlm_waypoint; policies/vlm_explore.py,
# policies/vlm_waypoint.py). Self-contained: nothing above depends on it.
# protocol: the task protocol's per-step check decides | confidence: the proposer's stop
# confidence >= stop_threshold | either
STOP_RULES = ("protocol", "confidence", "either")


@dataclass
class GuidedPolicyConfig(ExplorePolicyConfig):
    """The exploration loop with a stop rule that reads a guided proposer's stop confidence."""

    stop_rule: str = one_of("confidence", STOP_RULES)
    stop_threshold: float = bounded(0.5, ge=0, le=1)  # P(Yes) at which the confidence stops
    # ask the task protocol's per-step question every step (its verdict is used by the
    # protocol / either rules; a protocol may record its per-step answer there). false: skip it
    # under stop_rule=confidence (one call less per step with a yes/no stop check)
    protocol_check: bool = True


@dataclass
class VLMExploreProposerConfig(FrontierProposerConfig):
    """``vlm_explore``: the frontier planner with explore-eqa's semantic weighting on."""

    _target_: str = "eqa_runner.policies.vlm_explore.VLMExploreProposer"
    planner: FrontierPlannerConfig = field(
        default_factory=lambda: FrontierPlannerConfig(semantic=True)
    )
    visual_prompt: VisualPromptConfig = field(default_factory=VisualPromptConfig)
    use_lsv: bool = True  # ask the direction question (else every point gets 1/n)
    use_gsv: bool = True  # ask the worth-exploring question (else the global value is 1)
    gsv_T: float = bounded(0.5, gt=0)  # global value = exp(P(Yes) / gsv_T) / gsv_F
    gsv_F: float = bounded(3.0, gt=0)
    ask_confidence: bool = True  # ask the stop-confidence question every step
    # top-k token log-probabilities asked for, where the model client and provider return them
    # (else, and with null, the letter / yes-no is parsed from the reply)
    top_logprobs: int | None = bounded(5, ge=1)
    save_prompt_images: bool = True  # run.save_artifacts=true: step_NNN_prompt.png per step


@dataclass
class VLMExplorePolicyConfig(GuidedPolicyConfig):
    """``policy=vlm_explore``: frontier exploration steered by the VLM's answers."""

    name: str = "vlm_explore"
    proposer: VLMExploreProposerConfig = field(default_factory=VLMExploreProposerConfig)


@dataclass
class FineEQAProposerConfig(VLMExploreProposerConfig):
    """``fine_eqa``: vlm_explore's semantic frontier planner plus Fine-EQA's region map and
    goal-oriented exploration (upstream ``fine_eqa.yaml`` / ``main.py`` values unless noted)."""

    _target_: str = "eqa_runner.policies.fine_eqa.FineEQAProposer"
    ask_confidence: bool = False  # upstream stops by the task's check (stop_rule=protocol)
    max_exp: int = bounded(3, ge=1)  # GOE rounds (hop + 3 turn-around steps) per region
    region_radius: float = bounded(1.0, gt=0)  # a region point paints this disc, metres
    exp_radius: float = bounded(0.5, ge=0)  # visited targets clear this disc, metres
    turn_deg: float = 30.0  # a turn-around step: 3 x habitat's turn_left of 10 degrees
    # upstream: exact comma-separated names | lenient: trimmed, case-insensitive
    region_parse: str = one_of("upstream", ("upstream", "lenient"))
    # top-k log-probabilities of the 20-way region question (A..T need 20)
    region_top_logprobs: int | None = bounded(20, ge=1)


@dataclass
class WaypointVLMProposerConfig(ProposerConfig):
    """``vlm_waypoint``: the VLM replies with the next pose as a JSON line."""

    _target_: str = "eqa_runner.policies.vlm_waypoint.WaypointVLMProposer"
    hop_hint_m: float = bounded(3.0, gt=0)  # "usually no more than this far" (prompt only)


@dataclass
class FineEQAPolicyConfig(GuidedPolicyConfig):
    """``policy=fine_eqa``: Fine-EQA (region question, region map, GOE/FBE)."""

    name: str = "fine_eqa"
    stop_rule: str = one_of("protocol", STOP_RULES)
    # the question's relevant regions (one text call per episode): null = the stop check's
    # model (policy.stop_model, else llm.model), as upstream's gpt-4o-mini for both
    region_model: str | None = None
    region_llm: StopModelEndpoint = field(default_factory=StopModelEndpoint)  # its own endpoint
    proposer: FineEQAProposerConfig = field(default_factory=FineEQAProposerConfig)


@dataclass
class VLMWaypointPolicyConfig(GuidedPolicyConfig):
    """``policy=vlm_waypoint``: the VLM chooses each free-pose waypoint."""

    name: str = "vlm_waypoint"
    stop_rule: str = one_of("protocol", STOP_RULES)
    proposer: WaypointVLMProposerConfig = field(default_factory=WaypointVLMProposerConfig)


@dataclass
class ProtocolConfig:
    """A task's exploration protocol (eqa_runner/policies/protocol.py), selected by the task."""

    _target_: str = MISSING


@dataclass
class ImportedPolicyConfig(PolicyConfig):
    """``policy=imported``: answers read from an upstream predictions/results file
    (``report --import``), normalised to ``predictions_file`` (one JSON line per episode)."""

    name: str = "imported"
    predictions_file: str = ""  # written by report --import (which sets this key)
    source: str = ""  # the upstream file and format it came from (recorded, not read)


SCHEMAS: dict[str, type] = {
    "base_re": REPolicyConfig,
    "base_fbe": FBEPolicyConfig,
    "base_vlm_explore": VLMExplorePolicyConfig,
    "base_vlm_waypoint": VLMWaypointPolicyConfig,
    "base_fine_eqa": FineEQAPolicyConfig,
    "base_imported": ImportedPolicyConfig,
}
