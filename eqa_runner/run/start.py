"""The start of a run: every check that can refuse it, in one ordered list.

:func:`prepare` runs :data:`START` in order on the composed config and returns the
:class:`~eqa_runner.run.plan.RunPlan` each check filled in; nothing is written before the last
one passed, so a refused start leaves an existing run dir as it was (docs/reliability.md). A
dry run (``run.dry_run=true``) stops after the checks marked for it. Then
:func:`eqa_runner.run.loop.execute` makes the run dir, takes its lock and runs :data:`LOCKED`
before labelling the dir. ``rejudge`` builds its plan from the same checks (:data:`REJUDGE`).

Each check runs once per process, except where its ``again`` says why it must repeat.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from omegaconf import DictConfig, OmegaConf

from eqa_runner.errors import DataError, RunDirError, UserError
from eqa_runner.llm.config import LLMConfig
from eqa_runner.records import EPISODES_FILE, read_records
from eqa_runner.run.build import (
    build,
    check_capabilities,
    check_pinned_judge,
    llm_clients,
    resolve_output_dir,
)
from eqa_runner.run.config import RunConfig, typed
from eqa_runner.run.plan import RunPlan
from eqa_runner.run.provenance import check_same_config, input_hashes
from eqa_runner.run.rundir import (
    check_cache_dir,
    check_prompts_dir,
    check_writable_dir,
    config_container,
)
from eqa_runner.run.screen import screen_config
from eqa_runner.run.selection import select_episodes
from eqa_runner.run.tracking import build_trackers
from eqa_runner.schema import check_config

log = logging.getLogger(__name__)

# run(cfg) is also called where no Hydra callback checked the composed config first: a sweep
# job (the callback saw only the sweep's base config), a test, a library caller
COMPOSED_AGAIN = "the callback checked a single run's config before Hydra made its dir; run(cfg) "
COMPOSED_AGAIN += "checks its own (a sweep job's values, an in-process call)"
LOCK_RACE = "under the run's lock: another process may have started in the dir since"


@dataclass(frozen=True)
class Check:
    """One step of the start: ``step(plan)`` refuses (a ``UserError``) or fills ``plan``."""

    name: str
    step: Callable[[RunPlan], None]
    dry_run: bool = True  # also for run.dry_run=true
    composed: bool = False  # needs only the composed config (Hydra's callback runs it too)
    again: str = ""  # why it runs a second time, if it does


def _secrets(plan: RunPlan) -> None:
    """No composed value holds a credential, as written or as resolved (env values; a sweep's
    base config may hold interpolations only its jobs resolve)."""
    screen_config(plan.cfg)


def _added_keys(plan: RunPlan) -> None:
    unknown = unknown_added_key(plan.cfg)
    if unknown:
        raise UserError(unknown)


def unknown_added_key(config: DictConfig) -> str | None:
    """The refusal for a ``+a.b=v`` override adding a key that ``a``'s typed schema does not
    have (``+llm.temprature=0``): nothing would read it. Free-form maps (``extra_params``,
    ``hydra.job.env_set``) take any key."""
    import dataclasses
    import difflib

    try:
        overrides = [str(o) for o in config.hydra.overrides.task]
    except Exception:  # noqa: BLE001 - composed without Hydra's node: nothing typed on a CLI
        return None
    for o in overrides:
        if not o.startswith("+") or o.startswith("++") or "=" not in o:
            continue
        key = o[1:].split("=", 1)[0]
        if "." not in key or key.startswith("hydra."):
            continue
        parent_key, name = key.rsplit(".", 1)
        parent = OmegaConf.select(config, parent_key, default=None)
        typ = OmegaConf.get_type(parent) if isinstance(parent, DictConfig) else None
        if typ is None or not dataclasses.is_dataclass(typ):
            continue
        known = sorted(f.name for f in dataclasses.fields(typ))
        if name in known:
            continue
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"; did you mean {parent_key}.{close[0]}?" if close else ""
        return (
            f"+{key}: {parent_key} has no key {name}{hint} (`+` adds a key its schema does not "
            "have, and nothing would read it; `--cfg job` lists the keys)"
        )
    return None


def _typed(plan: RunPlan) -> None:
    """The typed blocks (``OmegaConf.to_object``: the schemas' defaults filled in) and the
    config as plain data (what provenance and the summary record)."""
    cfg = plan.cfg
    plan.run = typed(cfg.run, RunConfig)
    plan.llm = typed(cfg.llm, LLMConfig)
    prompts = OmegaConf.select(cfg, "prompts.dir", default=None)  # no schema: a path or null
    plan.prompts_dir = None if prompts is None else str(prompts)
    plan.container = config_container(cfg)


def _task(plan: RunPlan) -> None:
    from eqa_runner.tasks.base import Task

    plan.task = task = build(plan.cfg.task, Task, "task")  # type: ignore[type-abstract]
    plan.task_name = task.name


def _policy(plan: RunPlan) -> None:
    from eqa_runner.policies.base import Policy

    plan.policy = build(plan.cfg.policy, Policy, "policy")  # type: ignore[type-abstract]


def _judge(plan: RunPlan) -> None:
    from eqa_runner.scoring.base import Judge

    plan.judge = build(plan.cfg.judge, Judge, "judge")  # type: ignore[type-abstract]


def _trackers(plan: RunPlan) -> None:
    plan.trackers = build_trackers(plan.cfg)  # nothing connects yet


def _selection(plan: RunPlan) -> None:
    """The episodes the run attempts; then the task's description (its data hashes, and what
    loading the episodes noted, e.g. duplicate ids dropped), read once for the whole run."""
    task = plan.parts.task
    plan.episodes = select_episodes(task.load_episodes(), plan.run, task.config)
    plan.task_info = task.describe()


def _judge_inputs(plan: RunPlan) -> None:
    assert plan.judge is not None
    plan.judge.check_inputs(plan.task_name, plan.task_info)  # e.g. a blind run it reads


def _data(plan: RunPlan) -> None:
    """The selected episodes' scenes / frames are there (``task.check_data=false``: recorded
    as error records instead)."""
    task = plan.parts.task
    if not task.config.check_data:
        return
    problems = task.check(plan.episodes)
    if problems:
        shown = "\n  ".join(problems[:10])
        more = f"\n  … and {len(problems) - 10} more" if len(problems) > 10 else ""
        raise DataError(
            f"{len(problems)} data problem(s) for the selected episodes:\n  "
            f"{shown}{more}\nStage the data (`python -m eqa_runner.data check "
            f"...`) or pass task.check_data=false to record them as errors."
        )


def _run_dir(plan: RunPlan) -> None:
    plan.out_dir = resolve_output_dir(plan.run.output_dir)
    check_writable_dir(plan.out_dir, key=plan.dir_key)


def _prompt_files(plan: RunPlan) -> None:
    """The prompt files the policy and the judge use (with their SHA-256), and the content
    hashes of what produces the records: the data, the prompts, the judge's own inputs (a
    blind run's records)."""
    parts = plan.parts
    plan.prompts = {
        **parts.policy.prompts(plan.prompts_dir),
        **parts.judge.prompts(plan.prompts_dir),
    }
    judge_files = parts.judge.declaration().input_files(plan.cfg.judge)
    files = {  # the files the policy and the judge name (policy.*_file, judge.*_file)
        k: OmegaConf.to_container(plan.cfg[k], resolve=True) for k in ("policy", "judge")
    }
    plan.inputs = input_hashes(plan.task_info, plan.prompts, judge_files, config=files)


def _episode_inputs(plan: RunPlan) -> None:
    """The content hashes of the scene files and frame folders the selected episodes read
    (``Task.inputs``), cached by (path, size, mtime) in ``run.cache_dir``."""
    from eqa_runner.run.content_hashes import content_hashes

    read = plan.parts.task.inputs(plan.episodes)
    if read:
        plan.inputs["scenes"] = content_hashes(read, plan.run.cache_dir)


def _same_config(plan: RunPlan) -> None:
    """A dir with a provenance from another config or other inputs is refused."""
    jsonl = plan.out_dir / EPISODES_FILE
    plan.has_records = jsonl.is_file() and jsonl.stat().st_size > 0
    check_same_config(
        plan.out_dir,
        plan.container,
        plan.inputs,
        has_records=plan.has_records,
        adopt=plan.run.adopt,
    )


def _existing_records(plan: RunPlan) -> None:
    """Records already in the run dir are refused unless resuming (or SLURM requeued)."""
    jsonl = plan.out_dir / EPISODES_FILE
    existing = read_records(jsonl)
    restarts = os.environ.get("SLURM_RESTART_COUNT", "0")
    resume = plan.run.resume
    if existing and not resume and restarts.isdigit() and int(restarts) >= 1:
        # SLURM requeued this job (preemption / time limit): same config, same run dir.
        log.warning(
            "requeued SLURM job (SLURM_RESTART_COUNT=%s): auto-resuming %s (%d records)",
            restarts,
            jsonl,
            len(existing),
        )
    elif resume and not existing:
        log.warning(
            "run.resume=true, but %s holds no records yet: starting a fresh run there "
            "(check hydra.run.dir if you meant to continue another run)",
            jsonl.parent,
        )
    elif existing and not resume:
        raise RunDirError(
            f"{jsonl} already holds {len(existing)} records; pass run.resume=true "
            "to continue this run, or choose a new hydra.run.dir."
        )


def _credentials(plan: RunPlan) -> None:
    """The policy's and the judge's model clients: a known model, its key in the environment."""
    salt = {name: str(p["sha256"]) for name, p in plan.prompts.items()}
    plan.clients = llm_clients(plan.cfg, plan.parts.judge, salt)


def _prices(plan: RunPlan) -> None:
    """With ``run.max_cost_usd``: every model called has a price; the cap is set up."""
    if plan.run.max_cost_usd is None:
        return
    from eqa_runner.run.cost_cap import CostCap

    assert plan.clients is not None
    plan.cap = CostCap.from_plan(plan, plan.clients)


START: tuple[Check, ...] = (
    Check("secrets", _secrets, composed=True, again=COMPOSED_AGAIN),
    Check("added keys", _added_keys, composed=True, again=COMPOSED_AGAIN),
    Check("values", lambda p: check_config(p.cfg), composed=True, again=COMPOSED_AGAIN),
    Check("fit", lambda p: check_capabilities(p.cfg), composed=True, again=COMPOSED_AGAIN),
    Check("typed config", _typed),
    Check("pinned judge", lambda p: check_pinned_judge(p.cfg)),
    Check("task", _task),
    Check("policy", _policy),
    Check("judge", _judge),
    Check("trackers", _trackers, dry_run=False),
    Check("selection", _selection),
    Check("prompts dir", lambda p: check_prompts_dir(p.prompts_dir)),
    Check("judge inputs", _judge_inputs),
    Check("data", _data, dry_run=False),
    Check("run dir", _run_dir, dry_run=False),
    Check("cache dir", lambda p: check_cache_dir(p.run), dry_run=False),
    Check("prompt files", _prompt_files, dry_run=False),
    Check("episode inputs", _episode_inputs, dry_run=False),
    Check("same config", _same_config, dry_run=False),
    Check("existing records", _existing_records, dry_run=False),
)
# after the run dir is made and locked (a second process is refused at once, before the slow
# model lookups); then the dir is labelled
LOCKED: tuple[Check, ...] = (
    Check("same config", _same_config, again=LOCK_RACE),
    Check("credentials", _credentials),
    Check("prices", _prices),
)
# rejudge: the run's recorded config with judge overrides (eqa_runner.rejudge); the task's
# name and data hashes come from the recorded provenance
REJUDGE = ("fit", "typed config", "pinned judge", "judge", "judge inputs")


# a sweep's launcher runs these on its first job before it submits anything: every check that
# needs no run dir and connects nowhere, so a sweep whose first job cannot start (no data, a bad
# value) is refused before the queue, not found out hours later (hydra_plugins launcher)
BEFORE_SUBMIT = (
    "secrets",
    "added keys",
    "values",
    "fit",
    "typed config",
    "pinned judge",
    "task",
    "policy",
    "judge",
    "selection",
    "prompts dir",
    "judge inputs",
    "data",
)


def check_before_submit(cfg: DictConfig) -> None:
    """The start checks of :data:`BEFORE_SUBMIT` on one sweep job's composed config."""
    run_checks(RunPlan(cfg), START, names=BEFORE_SUBMIT)


def run_checks(plan: RunPlan, checks: Sequence[Check], *, names: Sequence[str] = ()) -> RunPlan:
    """Run ``checks`` in order (only those ``names`` lists, when given; a dry run skips the
    checks not marked for it)."""
    for check in checks:
        if names and check.name not in names:
            continue
        if plan.run.dry_run and not check.dry_run:
            continue
        check.step(plan)
    return plan


def prepare(cfg: DictConfig) -> RunPlan:
    """The checked plan of one run (:data:`START`); refuses with a ``UserError``."""
    return run_checks(RunPlan(cfg), START)


def check_composed(cfg: DictConfig, *, fit: bool = True) -> None:
    """The checks that need only the composed config (Hydra's callback, before it makes the run
    dir; ``fit=False``: a sweep's base config, whose jobs choose the components)."""
    names = [c.name for c in START if c.composed and (fit or c.name != "fit")]
    run_checks(RunPlan(cfg), START, names=names)
