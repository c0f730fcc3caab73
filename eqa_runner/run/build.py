"""Building a run's components from the config: task, policy, judge, simulator, model clients."""

# build() is given the abstract base classes (Task, Policy, Judge, Simulator) to check what
# Hydra instantiated; mypy rejects abstract classes for a type[T] parameter (python/mypy#4717).
# mypy: disable-error-code="type-abstract"

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, TypeVar, cast

from omegaconf import DictConfig, OmegaConf

from eqa_runner.capabilities import check_fit
from eqa_runner.configured import Configured
from eqa_runner.errors import ConfigError
from eqa_runner.llm import DiskCache, LLMClient
from eqa_runner.run.config import RunConfig, typed
from eqa_runner.scoring.base import Judge
from eqa_runner.sim.base import Simulator

T = TypeVar("T")


def build(node: DictConfig, base: type[T], what: str) -> T:
    """The component a config node names, checked against the small base class.

    A :class:`~eqa_runner.configured.Configured` class receives its typed schema object: the
    composed node becomes the schema's dataclass (checked by the one checker) and the class is
    called as ``Cls(config)``, plus one keyword argument per key its ``components`` names (the
    object another component's node there builds, e.g. an exploration policy's ``protocol``;
    None for a null node); any other ``_target_`` goes through ``hydra.utils.instantiate``.
    A user error the component's constructor raised (a missing blind run, a bad choice) is
    re-raised as itself, not in Hydra's ``InstantiationException`` (a traceback): the CLI
    prints it in one line."""
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate

    from eqa_runner.errors import UserError

    cls = _target_class(node)
    try:
        if cls is not None and issubclass(cls, Configured):
            parts = {k: _part(node.get(k), b, k) for k, b in cls.components.items()}
            obj: Any = cls(node, **parts)
        else:
            obj = instantiate(node, _convert_="all")
    except InstantiationException as e:
        if isinstance(e.__cause__, UserError):
            raise e.__cause__ from None
        raise
    if not isinstance(obj, base):
        raise ConfigError(
            f"{what}._target_={node.get('_target_')} built a "
            f"{type(obj).__name__}, not a {base.__name__}"
        )
    return obj


def _part(node: Any, base: type, what: str) -> Any:
    """The component a sub-node builds (None for a null one)."""
    return None if node is None else build(node, base, what)


def _target_class(node: Any) -> type | None:
    """The class a config node's ``_target_`` names (None when the target is not a class, e.g.
    a factory function, or cannot be imported: Hydra reports that when building)."""
    from hydra.utils import get_class

    target = node.get("_target_") if node is not None else None
    if not target:
        return None
    try:
        return get_class(str(target))
    except Exception:  # noqa: BLE001 - not a class: Hydra reports it when building
        return None


def _declared(node: Any, attrs: tuple[str, ...]) -> tuple[frozenset[str], ...] | None:
    """The capability attributes of the class a config node's ``_target_`` names (None when
    it names no class: nothing declared, nothing checked)."""
    cls = _target_class(node)
    if cls is None:
        return None
    return tuple(frozenset(getattr(cls, a)) for a in attrs)


def check_capabilities(cfg: DictConfig) -> None:
    """Fail at start (before the run dir exists) when the task does not provide what the
    policy needs, or neither provides what the judge reads (:mod:`eqa_runner.capabilities`)."""
    task = _declared(cfg.get("task"), ("provides",))
    policy = _declared(cfg.get("policy"), ("needs", "provides"))
    if task is None or policy is None:
        return
    judge = _declared(cfg.get("judge"), ("reads",))
    check_fit(
        (str(cfg.task.get("name")), task[0]),
        (str(cfg.policy.get("name")), policy[0], policy[1]),
        (str(cfg.judge.get("name")), judge[0]) if judge is not None else None,
        policies_for=policy_options_for,
    )


def policy_options_for(provides: frozenset[str]) -> list[str]:
    """The ``policy`` options (eqa_runner's and installed plugins') whose class needs only
    what a task ``provides``: the fix a refused policy=… line offers."""
    import yaml

    from eqa_runner.registry import option_files

    fits = set()
    for option in option_files("policy"):
        try:
            node = yaml.safe_load(option.read_text(encoding="utf-8"))
            cls = _target_class(node if isinstance(node, dict) else None)
        except (OSError, yaml.YAMLError):
            continue
        if cls is not None and frozenset(getattr(cls, "needs", ())) <= provides:
            fits.add(option.stem)
    return sorted(fits)


_PINNED = re.compile(r"(\d{4}-?\d{2}-?\d{2}|-\d{3}$|@|:\d|-v\d|-\d{4}$)")


def check_pinned_judge(cfg: DictConfig) -> None:
    """A judge model from a hosted provider must be a dated snapshot (an alias moves, and the
    scores with it); self-hosted judges (``judge.api_base``), ``offline`` and judges that call
    no model (``none``: an exact-match judge) are exempt."""
    if not _judge_needs_model(cfg):
        return
    if cfg.judge.get("model") is None:
        raise ConfigError(
            "judge.model is not set: name the judge's model, e.g. "
            "judge.model=openai/gpt-4o-2024-08-06, or judge.model=offline (docs/judges.md)"
        )
    model = str(cfg.judge.get("model"))
    if (
        not model.strip()  # blank: the judge's schema refuses it, naming the key
        or model in ("offline", "none")
        or cfg.judge.get("api_base")
        or cfg.llm.get("api_base")
        and (model == str(cfg.llm.get("model")))
    ):
        return
    if not _PINNED.search(model.rsplit("/", 1)[-1]):
        raise ConfigError(
            f"judge.model={model}: a bare alias (its scores change when the provider moves it); "
            "pin a dated snapshot, e.g. judge.model=openai/gpt-4o-2024-08-06 (docs/judges.md)"
        )


def _judge_needs_model(cfg: DictConfig) -> bool:
    """Whether the configured judge class calls a model (``needs_model``; a judge that scores
    by rule, e.g. exact match, needs no ``judge.model`` at all)."""
    from hydra.utils import get_class

    target = cfg.judge.get("_target_")
    try:
        cls = get_class(str(target)) if target else None
    except Exception:  # noqa: BLE001 - an unknown _target_ is refused when the judge is built
        return True
    return bool(getattr(cls, "needs_model", True))


def build_sim(cfg: DictConfig) -> Simulator:
    """The run's simulator from ``cfg.sim`` (built inside the job; the run closes it);
    ``sim.instances=N`` > 1 builds N of them as one :class:`SimulatorPool`."""
    node = cfg.sim
    if "instances" not in node:  # a simulator whose schema has no sim.instances: one
        return build(node, Simulator, "sim")
    kept = cast(dict[str, Any], OmegaConf.to_container(node, resolve=True))
    n = int(kept.pop("instances"))
    node = OmegaConf.create(kept)
    sims = [build(node, Simulator, "sim") for _ in range(n)]
    if n == 1:
        return sims[0]
    from eqa_runner.sim.pool import SimulatorPool

    return SimulatorPool(sims)


def resolve_output_dir(output_dir: str | None) -> Path:
    """``run.output_dir``, else the run dir Hydra made."""
    if output_dir:
        return Path(output_dir)
    from hydra.core.hydra_config import HydraConfig

    if HydraConfig.initialized():
        return Path(HydraConfig.get().runtime.output_dir)
    raise ConfigError("run.output_dir is not set and no Hydra run dir is available")


def llm_clients(
    cfg: DictConfig,
    judge: Judge,
    salt: dict[str, str],
    *,
    check: bool = True,
    roles: tuple[str, ...] = ("llm", "judge"),
) -> tuple[LLMClient, LLMClient]:
    """The policy's and the judge's model clients, checked for credentials before any episode
    (``check``)."""
    run = typed(cfg.run, RunConfig)
    cache = DiskCache(run.cache_dir) if run.cache else None
    # a DictConfig's container is a dict (omegaconf types the result of any node)
    base = cast(dict[str, Any], OmegaConf.to_container(cfg.llm, resolve=True))
    workers = run.workers  # the ceiling of calls in flight per endpoint
    policy_llm = LLMClient(base, role="policy", cache=cache, cache_salt=salt, ceiling=workers)
    if judge.needs_model:
        inherited = dict(base)
        if judge.llm_overrides.get("model") not in (None, base.get("model")):
            # another model: the policy model's explicit price is not the judge's
            inherited.pop("input_usd_per_mtok", None)
            inherited.pop("output_usd_per_mtok", None)
        prices = ("input_usd_per_mtok", "output_usd_per_mtok")
        own = {k: v for k, v in judge.llm_overrides.items() if v is not None or k not in prices}
        judge_cfg = {**inherited, **own}
    else:  # a judge without a model (exact match): a stand-in client it never calls
        judge_cfg = {**base, "model": "offline", "api_base": None, "api_key_env": None}
    judge_llm = LLMClient(judge_cfg, role="judge", cache=cache, cache_salt=salt, ceiling=workers)
    for client, key in ((policy_llm, "llm"), (judge_llm, "judge")):
        if not check:
            break
        if key not in roles:
            continue  # e.g. rejudge never calls the policy's model
        problem = client.unknown_model()
        if problem:
            raise ConfigError(f"{key}.model={client.model}: {problem}")
        missing = client.missing_credentials()
        if missing:
            raise ConfigError(
                f"{key}.model={client.model}: environment variable(s) "
                f"{', '.join(missing)} not set; export it, or point "
                f"{key}.api_key_env at the variable that holds the key."
            )
    return policy_llm, judge_llm
