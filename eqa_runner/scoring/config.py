"""Typed schemas of the ``judge`` config group: one per judge, beside its code.

The model keys (``model``, ``temperature``, ...) override the policy's ``llm`` settings for the
judge's calls. Nothing heavy is imported here.
"""

from __future__ import annotations

from dataclasses import dataclass

from omegaconf import MISSING

from eqa_runner.llm.config import A_MODEL
from eqa_runner.schema import bounded, named, one_of

# judge.error_records: how the headline treats an error record (docs/reports.md, comparability)
ERROR_RECORDS = ("excluded", "missing")


@dataclass
class JudgeConfig:
    """Keys every judge has: its name and how to call its model."""

    _target_: str = MISSING
    name: str = MISSING
    model: str = named(
        MISSING, A_MODEL
    )  # a pinned, dated snapshot (see docs/judges.md); offline = stand-in
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
    # an error record in the headline: left out (excluded), or scored as the benchmark's own
    # scorer scores a question without a prediction (missing; Judge.missing_record); changes
    # the summary only, never a record
    error_records: str = one_of("excluded", ERROR_RECORDS)
