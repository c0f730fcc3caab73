"""Typed schemas of the ``judge`` config group: one per judge, beside its code.

The model keys (``model``, ``temperature``, ...) override the policy's ``llm`` settings for the
judge's calls. Nothing heavy is imported here.
"""

from __future__ import annotations

from dataclasses import dataclass

from omegaconf import MISSING

from eqa_runner.schema import bounded, one_of

INF_POLICIES = ("exclude", "penalize")


@dataclass
class JudgeConfig:
    """Keys every judge has: its name and how to call its model."""

    _target_: str = MISSING
    name: str = MISSING
    model: str = MISSING  # a pinned, dated snapshot (see docs/judges.md); offline = stand-in
    temperature: float | None = bounded(0.2, ge=0)  # null: send none (provider default)
    max_tokens: int | None = bounded(32, ge=1)
    seed: int | None = 1234
    api_base: str | None = None
    api_key_env: str | None = None  # NAME of the environment variable holding the key
    api_key: str | None = None  # always refused: keys never go in configs (use api_key_env)
    # an explicit price (USD per million tokens) for a model litellm has no price for
    input_usd_per_mtok: float | None = bounded(None, ge=0)
    output_usd_per_mtok: float | None = bounded(None, ge=0)
    reask_unparsable: bool = True  # ask once more when the reply cannot be parsed


@dataclass
class LLMMatchJudgeConfig(JudgeConfig):
    """``judge=llm_match`` (OpenEQA): a judge LLM marks the prediction 1..5."""

    name: str = "llm_match"
    # as open-eqa's evaluate-predictions.py ("It is 2.5 m" -> "It is 2.")
    strip_after_last_period: bool = True


@dataclass
class EACJudgeConfig(JudgeConfig):
    """``judge=eac`` (EXPRESS-Bench): a judge VLM returns "sigma, delta"."""

    name: str = "eac"
    temperature: float | None = bounded(None, ge=0)  # upstream sends none; 0 = less variance
    max_tokens: int | None = bounded(64, ge=1)
    # exclude (paper) | penalize: infinite path/goal distances count as failures
    inf_policy: str = one_of("exclude", INF_POLICIES)
    # final-frame size (width, height), for dry-run estimates only
    image_size: list[int] = bounded(default_factory=lambda: ["${sim.width}", "${sim.height}"], gt=0)


# --- HM-EQA (eqa_runner/scoring/hmeqa.py) ---
@dataclass
class HMEQAJudgeConfig(JudgeConfig):
    """``judge=hmeqa``: exact match of the chosen letter; calls no model (the model keys are
    accepted, so ``judge.model=…`` overrides of a sweep do no harm, and ignored)."""

    name: str = "hmeqa"
    model: str = "none"


# --- A-EQA (eqa_runner/scoring/aeqa.py, docs/aeqa.md) -------------------------------------
AEQA_MISSING_RULES = ("blind_fallback", "zero", "exclude")
AEQA_MISSING_PATH = ("weight0", "exclude")
AEQA_PATH_LENGTHS = ("geodesic", "euclidean_xz")


@dataclass
class AEQAJudgeConfig(LLMMatchJudgeConfig):
    """``judge=aeqa``: LLM-Match and its path-efficiency-weighted form ``llm_match_spl``."""

    name: str = "aeqa"
    # a question without prediction (no answer, the policy failed, no record): blind_fallback =
    # the blind run's mark, p = inf, every blind question counted (3D-Mem-AEQA-Eval, the published
    # rows; without blind_run_dir: scored as zero and the row is marked not comparable) |
    # zero = scored 1 (0%, open-eqa's rule) | exclude = left out of the means and counted
    missing_prediction: str = one_of("blind_fallback", AEQA_MISSING_RULES)
    blind_run_dir: str | None = None  # blind_fallback: a blind run on the same questions
    # a judged question whose trace has no path length: weight0 = kept with weight 0 (upstream)
    # | exclude = left out of the llm_match_spl mean
    missing_path: str = one_of("weight0", AEQA_MISSING_PATH)
    # p of the weight: geodesic = the loop's hop lengths (path_len) | euclidean_xz = the hops'
    # top-down straight lengths (3D-Mem's measure, without its 0.1 m voxel quantisation)
    path_length: str = one_of("geodesic", AEQA_PATH_LENGTHS)


SCHEMAS = {
    "base_llm_match": LLMMatchJudgeConfig,
    "base_eac": EACJudgeConfig,
    "base_hmeqa": HMEQAJudgeConfig,
    "base_aeqa": AEQAJudgeConfig,
}
