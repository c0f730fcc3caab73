"""A judge that calls no model (``needs_model = False``) needs no ``judge.model`` key; a judge
that does gets a line naming the key when it is unset (it said "judge.model=None: a bare alias")."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from eqa_runner.errors import ConfigError
from eqa_runner.run.build import check_pinned_judge
from eqa_runner.scoring.base import Judge


class RuleJudge(Judge):
    needs_model = False

    async def score(self, episode, prediction, llm, prompts_dir=None):  # pragma: no cover
        raise NotImplementedError

    def aggregate(self, records, **kw):  # pragma: no cover
        return {}


class ModelJudge(RuleJudge):
    needs_model = True


def _cfg(target: str, **judge):
    return OmegaConf.create({"llm": {"model": "offline"}, "judge": {"_target_": target, **judge}})


def test_a_judge_that_calls_no_model_needs_no_model_key():
    check_pinned_judge(_cfg(f"{__name__}.RuleJudge"))
    check_pinned_judge(_cfg(f"{__name__}.RuleJudge", model=None))


def test_a_judge_that_calls_a_model_names_the_unset_key():
    with pytest.raises(ConfigError) as e:
        check_pinned_judge(_cfg(f"{__name__}.ModelJudge"))
    assert str(e.value).startswith("judge.model is not set: name the judge's model")
    with pytest.raises(ConfigError, match="a bare alias"):
        check_pinned_judge(_cfg(f"{__name__}.ModelJudge", model="openai/gpt-4o"))
    check_pinned_judge(_cfg(f"{__name__}.ModelJudge", model="openai/gpt-4o-2024-08-06"))
