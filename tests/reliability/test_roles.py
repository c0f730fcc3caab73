"""Issue 25, item 6 (defect 12): a second model (``policy.stop_model``) gets its own endpoint,
key variable and price, or none: nothing is inherited from ``llm:``; the cost cap prices every
role."""

from __future__ import annotations

import pytest

from eqa_runner.errors import ConfigError
from eqa_runner.llm.config import LLMConfig
from eqa_runner.policies.config import REPolicyConfig, StopModelEndpoint
from eqa_runner.policies.explore import ExplorePolicy
from eqa_runner.run.loop import run
from tests.conftest import server_overrides
from tests.reliability import tally


def _overrides(demo, srv, *extra):
    return [
        "task=express", "policy=re", f"task.data_dir={demo}", *server_overrides(srv),
        "policy.max_steps=2", "run.limit=1", "sim.width=64", "sim.height=64", *extra,
    ]  # fmt: skip


def test_the_stop_model_inherits_no_endpoint_key_or_price():
    base = LLMConfig(
        model="openai/local-model", api_base="http://127.0.0.1:9/v1", api_key_env="LOCAL_KEY",
        input_usd_per_mtok=0.5, output_usd_per_mtok=1.5,
    )  # fmt: skip
    policy = ExplorePolicy.__new__(ExplorePolicy)  # extra_models reads only the typed config
    policy.config = REPolicyConfig(stop_model="openai/gpt-4o-mini-2024-07-18")
    stop = policy.extra_models(base)["stop"]
    assert (stop.api_base, stop.api_key_env) == (None, None)
    assert (stop.input_usd_per_mtok, stop.output_usd_per_mtok) == (None, None)
    policy.config.stop_llm = StopModelEndpoint(
        api_base="http://h/v1", api_key_env="STOP_KEY", input_usd_per_mtok=1
    )
    stop = policy.extra_models(base)["stop"]
    assert (stop.api_base, stop.api_key_env, stop.input_usd_per_mtok) == (
        "http://h/v1",
        "STOP_KEY",
        1,
    )
    policy.config.stop_model = base.model
    assert policy.extra_models(base) == {}  # the policy's own model: the policy's client


def test_a_vendor_stop_model_is_not_sent_to_the_local_server(
    compose_cfg, llm_server, express_demo, monkeypatch
):
    tally.add("bad inputs tried")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cfg = compose_cfg(_overrides(express_demo, llm_server, "policy.stop_model=openai/gpt-4o-mini"))
    with pytest.raises(ConfigError, match=r"policy.stop_model.*OPENAI_API_KEY.*stop_llm"):
        run(cfg)
    assert llm_server.stats()["by_model"] == {}, "no call was made under a borrowed endpoint"


@pytest.mark.slow
def test_the_cost_cap_prices_the_stop_model(tmp_path, compose_cfg, llm_server, express_demo):
    tally.add("bad inputs tried")
    priced = ["llm.input_usd_per_mtok=1", "llm.output_usd_per_mtok=1", "run.max_cost_usd=5",
              "judge.input_usd_per_mtok=1", "judge.output_usd_per_mtok=1"]  # fmt: skip
    stop = ["policy.stop_model=openai/test-stop", f"policy.stop_llm.api_base={llm_server.url}"]
    cfg = compose_cfg(_overrides(express_demo, llm_server, *priced, *stop), out=tmp_path / "r")
    with pytest.raises(ConfigError, match=r"policy.stop_model=openai/test-stop has no known price"):
        run(cfg)
    cfg = compose_cfg(
        _overrides(express_demo, llm_server, *priced, *stop, "policy.stop_llm.input_usd_per_mtok=2",
                   "policy.stop_llm.output_usd_per_mtok=2"),
        out=tmp_path / "r2",
    )  # fmt: skip
    out = run(cfg)
    assert out["counts"]["ok"] == 1
    assert llm_server.stats()["by_model"].get("test-stop", 0) >= 1
