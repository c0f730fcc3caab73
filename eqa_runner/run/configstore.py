"""Registers the typed config schemas in Hydra's ConfigStore (cheap: dataclasses only), and
the Hydra callback that checks value ranges and choices before a run directory is made."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from eqa_runner.errors import ConfigError, UserError
from eqa_runner.llm.config import LLMConfig
from eqa_runner.policies.config import SCHEMAS as POLICY_SCHEMAS
from eqa_runner.registry import schema_nodes, third_party
from eqa_runner.run.config import RunConfig
from eqa_runner.run.screen import screen_config
from eqa_runner.sim.config import SCHEMAS as SIM_SCHEMAS

# group -> {schema node name -> dataclass}; a YAML option names its node in its defaults list.
# Each benchmark adds its own (task, protocol, judge …) through the registry: schemas().
SCHEMAS: dict[str, Mapping[str, type]] = {
    "run": {"schema": RunConfig},
    "llm": {"base_llm": LLMConfig},
    "policy": POLICY_SCHEMAS,
    "sim": SIM_SCHEMAS,
}


def schemas() -> dict[str, dict[str, type]]:
    """Every group's schema nodes: the shared ones, every benchmark's and every plugin's."""
    out = {group: dict(nodes) for group, nodes in SCHEMAS.items()}
    owner = {(g, n): "eqa_runner" for g, nodes in SCHEMAS.items() for n in nodes}
    outside = third_party()  # an installed package's plugin or benchmark
    for ext, group, nodes in schema_nodes():
        for name, node in nodes.items():
            first = owner.setdefault((group, name), ext.name)
            if ext.name in outside and first != ext.name and out[group][name] is not node:
                raise ConfigError(
                    f"{outside[ext.name]} {ext.name}: its schema node {group}/{name} "
                    f"shadows {first}'s; rename it in the plugin (a plugin adds schemas, it "
                    "never replaces one)"
                )
        out.setdefault(group, {}).update(nodes)
    return out


def slug(text: str, max_len: int = 120) -> str:
    """A path-safe, bounded name for sweep sub-directories (``${eqa_slug:...}``), without
    tracker settings (:func:`eqa_runner.trackers.naming.without_plumbing`)."""
    from eqa_runner.trackers.naming import without_plumbing

    s = re.sub(r"[^A-Za-z0-9=,._+-]+", "_", without_plumbing(str(text))).strip("_")
    return s[:max_len] or "default"


def register_configs() -> None:
    """Store every group's schema (``run: schema``, ``llm/base_llm``, ``policy/base_fbe`` ...)
    and register ``eqa_slug``; once per process (a report loads one config per run)."""
    if not OmegaConf.has_resolver("eqa_slug"):
        OmegaConf.register_new_resolver("eqa_slug", slug)
    cs = ConfigStore.instance()
    every = schemas()
    from eqa_runner.registry import plugin_conflicts

    conflicts = plugin_conflicts(every) if third_party() else []
    if conflicts:
        raise ConfigError(conflicts[0])
    if all(_stored(cs, group, name) for group, nodes in every.items() for name in nodes):
        return
    for group, nodes in every.items():
        for name, node in nodes.items():
            cs.store(group=group, name=name, node=node)


def _stored(cs: ConfigStore, group: str, name: str) -> bool:
    node: Any = cs.repo
    for part in group.split("/"):
        node = node.get(part) if isinstance(node, dict) else None
    return isinstance(node, dict) and f"{name}.yaml" in node


class CheckConfig(Callback):
    """Refusals before Hydra makes (or writes into) the run directory.

    For a run: secrets in any composed value, ranges and choices
    (:func:`eqa_runner.schema.check_config`), and whether the run dir can be used; the default
    run dir (``outputs/runs/<time>_<task>_<policy>``) is claimed atomically, so two runs started
    in the same second get two directories. For a sweep: the same for its base config and a
    unique sweep dir, printed with the ``report`` command for it. Each job's own values are
    checked again when the job starts.

    Hydra turns a callback's exceptions into warnings, so a refusal is reported here, as every
    command reports a user error: ``error: <message>`` on stderr, exit status 2.
    """

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        _check_or_exit(config)
        _exit_on_error(lambda: _claim_run_dir(config))

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        # The sweep's base config does not hold the swept choices (``policy=re,fbe`` leaves the
        # default policy in it), so the task/policy/judge fit is checked per job, at its start.
        _exit_on_error(lambda: _check(config, fit=not _sweeps_a_component(config)))
        _exit_on_error(lambda: _claim_sweep_dir(config))

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        d = OmegaConf.select(config, "hydra.sweep.dir")
        print(
            f"[eqa_runner] sweep dir: {d}\n[eqa_runner] report: python -m eqa_runner.report {d}",
            flush=True,
        )


def _check_or_exit(config: DictConfig) -> None:
    _exit_on_error(lambda: _check(config))


_COMPONENT_GROUPS = ("task", "policy", "judge", "experiment", "protocol")


def _sweeps_a_component(config: DictConfig) -> bool:
    """Whether the sweep's overrides choose the task, policy, judge or a preset per job."""
    try:
        overrides = [str(o) for o in config.hydra.overrides.task]
    except Exception:  # noqa: BLE001 - composed without Hydra's node
        return False
    for o in overrides:
        key, _, value = o.lstrip("+~").partition("=")
        if key in _COMPONENT_GROUPS and ("," in value or "(" in value):
            return True
    return False


def screen_every_composition() -> None:
    """Run :func:`screen_config` on every config Hydra composes in this process, so
    ``--cfg job|hydra|all``, ``--info`` and ``--help`` (which print without calling any
    callback) refuse a credential as a run does: one ``error:`` line, exit 2, nothing printed."""
    from hydra._internal.hydra import Hydra

    compose = Hydra.compose_config
    if getattr(compose, "screened", False):
        return

    def screened(self: Hydra, *args: Any, **kwargs: Any) -> DictConfig:
        cfg = compose(self, *args, **kwargs)
        _exit_on_error(lambda: screen_config(cfg))
        return cfg

    screened.screened = True  # type: ignore[attr-defined]
    Hydra.compose_config = screened  # type: ignore[method-assign]


def _check(config: DictConfig, *, fit: bool = True) -> None:
    """The start checks that need only the composed config (eqa_runner.run.start.START)."""
    from eqa_runner.run.start import check_composed

    check_composed(config, fit=fit)


def _exit_on_error(fn: Any) -> None:
    try:
        fn()
    except UserError as e:
        print(f"error: {e}", file=sys.stderr, flush=True)
        sys.exit(e.exit_code)


def _user_set(config: DictConfig, key: str) -> bool:
    return any(str(o).split("=", 1)[0].lstrip("+~") == key for o in config.hydra.overrides.hydra)


def _claim_run_dir(config: DictConfig) -> None:
    """Check the run dir; claim a unique default one and fix ``hydra.run.dir`` to it."""
    from pathlib import Path

    from eqa_runner.run.rundir import check_writable_dir, note_fresh_dir

    run_dir = Path(str(config.hydra.run.dir))
    if OmegaConf.select(config, "run.output_dir"):
        return  # the run writes elsewhere (run.output_dir); Hydra's dir only holds run.log
    if _user_set(config, "hydra.run.dir"):
        check_writable_dir(run_dir, key="hydra.run.dir")
        if not run_dir.exists():
            note_fresh_dir(run_dir)
        return
    check_writable_dir(run_dir, key="hydra.run.dir")
    claimed = claim_unique_dir(run_dir)
    note_fresh_dir(claimed)
    with read_write(config.hydra.run), open_dict(config.hydra.run):
        config.hydra.run.dir = str(claimed)


def _claim_sweep_dir(config: DictConfig) -> None:
    from pathlib import Path

    from eqa_runner.run.rundir import check_writable_dir

    sweep_dir = Path(str(config.hydra.sweep.dir))
    check_writable_dir(sweep_dir, key="hydra.sweep.dir")
    if not _user_set(config, "hydra.sweep.dir"):
        sweep_dir = claim_unique_dir(sweep_dir)
        with read_write(config.hydra.sweep), open_dict(config.hydra.sweep):
            config.hydra.sweep.dir = str(sweep_dir)
    print(f"[eqa_runner] sweep dir: {sweep_dir}", flush=True)


def claim_unique_dir(path: Path) -> Path:
    """Create ``path`` (or ``path-2``, ``path-3``, … when taken) atomically and return it."""
    from pathlib import Path as _P

    path = _P(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for i in range(1, 10_000):
        cand = path if i == 1 else path.with_name(f"{path.name}-{i}")
        try:
            cand.mkdir()
            return cand
        except FileExistsError:
            continue
    raise UserError(f"{path}: could not claim a fresh run directory; set hydra.run.dir")
