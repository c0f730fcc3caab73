"""The run loop: select episodes → policy → judge → one JSONL line each → summary.json."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import threading
import time
import traceback
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from omegaconf import DictConfig, OmegaConf

from eqa_runner.errors import ConfigError, DataError, RunDirError
from eqa_runner.llm import DiskCache, LLMClient, estimate_call, track_usage
from eqa_runner.policies.base import Policy
from eqa_runner.policies.context import EpisodeContext
from eqa_runner.records import (
    EPISODES_FILE,
    SUMMARY_FILE,
    RecordWriter,
    RunLock,
    final_records,
    read_records,
    write_json_atomic,
)
from eqa_runner.run.summary import build_summary
from eqa_runner.scoring.base import Judge
from eqa_runner.tasks.base import Task
from eqa_runner.types import Episode

log = logging.getLogger(__name__)
T = TypeVar("T")


def build(node: DictConfig, base: type[T], what: str) -> T:
    """``hydra.utils.instantiate`` + a check against the small base class."""
    from hydra.utils import instantiate

    obj = instantiate(node, _convert_="all")
    if not isinstance(obj, base):
        raise ConfigError(
            f"{what}._target_={node.get('_target_')} built a "
            f"{type(obj).__name__}, not a {base.__name__}"
        )
    return obj


def check_choices(cfg: DictConfig) -> None:
    """Fail at start when the policy cannot run the task."""
    task, policy = cfg.task.get("name"), cfg.policy.get("name")
    valid = list(cfg.task.get("policies") or [])
    if valid and policy not in valid:
        raise ConfigError(
            f"policy={policy} cannot run task={task}; valid policies for {task}: {', '.join(valid)}"
        )


def _read_ids(spec: Any) -> list[str]:
    if spec is None:
        return []
    if isinstance(spec, (list, tuple)) or OmegaConf.is_list(spec):
        return [str(x) for x in spec]
    s = str(spec)
    path = Path(s)
    if path.suffix in (".json", ".txt") or path.is_file():
        if not path.is_file():
            raise DataError(f"run.episodes={s}: file not found.")
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            data = json.loads(text)
            if isinstance(data, dict):
                data = list(data)
            return [
                str(x if not isinstance(x, dict) else x.get("question_id", x.get("id")))
                for x in data
            ]
        return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    return [x.strip() for x in s.split(",") if x.strip()]


def parse_shard(shard: str | None) -> tuple[int, int] | None:
    if not shard:
        return None
    try:
        i, n = (int(x) for x in str(shard).split("/"))
    except ValueError:
        raise ConfigError(f"run.shard={shard!r}: expected i/n, e.g. run.shard=0/8") from None
    if n < 1 or not 0 <= i < n:
        raise ConfigError(f"run.shard={shard!r}: need 0 <= i < n")
    return i, n


def select_episodes(episodes: Sequence[Episode], run: DictConfig) -> list[Episode]:
    """Apply ``run.episodes`` (ids / file), ``run.limit`` and ``run.shard`` in that order."""
    eps = list(episodes)
    wanted = _read_ids(run.get("episodes"))
    if wanted:
        by_id = {e.episode_id: e for e in eps}
        unknown = [w for w in wanted if w not in by_id]
        if unknown:
            raise DataError(
                f"run.episodes: {len(unknown)} id(s) not in the selected question "
                f"set, e.g. {unknown[:3]}"
            )
        keep = set(wanted)
        eps = [e for e in eps if e.episode_id in keep]
    if run.get("limit") is not None:
        eps = eps[: int(run.limit)]
    shard = parse_shard(run.get("shard"))
    if shard:
        i, n = shard
        eps = eps[i::n]
    return eps


def episode_seed(run_seed: int, episode_id: str) -> int:
    return int(hashlib.sha256(f"{run_seed}:{episode_id}".encode()).hexdigest()[:8], 16)


def resolve_output_dir(cfg: DictConfig) -> Path:
    if cfg.run.get("output_dir"):
        return Path(cfg.run.output_dir)
    from hydra.core.hydra_config import HydraConfig

    if HydraConfig.initialized():
        return Path(HydraConfig.get().runtime.output_dir)
    raise ConfigError("run.output_dir is not set and no Hydra run dir is available")


def llm_clients(cfg: DictConfig, judge: Judge, salt: dict[str, str]) -> tuple[LLMClient, LLMClient]:
    """The policy's and the judge's model clients, checked for credentials before any episode."""
    cache = DiskCache(cfg.run.cache_dir) if cfg.run.cache else None
    base = OmegaConf.to_container(cfg.llm, resolve=True)
    policy_llm = LLMClient(base, role="policy", cache=cache, cache_salt=salt)
    judge_cfg = {**base, **{k: v for k, v in judge.llm_overrides.items()}}
    judge_llm = LLMClient(judge_cfg, role="judge", cache=cache, cache_salt=salt)
    for client, key in ((policy_llm, "llm"), (judge_llm, "judge")):
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


def _error(exc: BaseException, stage: str) -> dict[str, Any]:
    tb = traceback.extract_tb(exc.__traceback__)
    where = f"{tb[-1].filename.rsplit('/', 1)[-1]}:{tb[-1].lineno}" if tb else None
    msg = str(exc) or repr(exc)
    if isinstance(exc, asyncio.TimeoutError):
        msg = "episode exceeded run.episode_timeout_s"
    return {"type": type(exc).__name__, "message": msg[:2000], "stage": stage, "where": where}


@dataclass(frozen=True)
class EpisodeSettings:
    """The config values every episode reads, copied out of the DictConfig once per run."""

    seed: int
    save_artifacts: bool
    prompts_dir: str | None
    episode_timeout_s: float

    @classmethod
    def from_cfg(cls, cfg: DictConfig) -> EpisodeSettings:
        return cls(int(cfg.run.seed), bool(cfg.run.save_artifacts), cfg.prompts.dir,
                   float(cfg.run.episode_timeout_s))  # fmt: skip


async def run_episode(
    ep: Episode,
    *,
    task: Task,
    policy: Policy,
    judge: Judge,
    policy_llm: LLMClient,
    judge_llm: LLMClient,
    cfg: EpisodeSettings,
    executor: ThreadPoolExecutor,
    out_dir: Path,
    resources: dict[str, Any],
) -> dict[str, Any]:
    """Run one episode end to end; never raises (failures become an error record)."""
    rec: dict[str, Any] = {
        "episode_id": ep.episode_id,
        "status": "error",
        "question": ep.question,
        "answer": ep.answer,
        "category": ep.category,
        "subset": task.subset_of(ep),
        "extra_answers": list(ep.extra_answers),
        "scene": ep.scene,
        "prediction": None,
        "judge_raw": None,
        "judge_ok": False,
        "metrics": {},
        "trace": {},
        "error": None,
        "timings": {},
        "usage": {},
    }
    seed = episode_seed(cfg.seed, ep.episode_id)
    art = out_dir / "artifacts" / _safe_name(ep.episode_id) if cfg.save_artifacts else None
    ctx = EpisodeContext(
        llm=policy_llm,
        rng=np.random.default_rng(seed),
        seed=seed,
        executor=executor,
        task=task,
        prompts_dir=cfg.prompts_dir,
        artifacts_dir=art,
        run_dir=out_dir,
        resources=resources,
    )
    stage = "policy"
    t0 = time.perf_counter()
    with track_usage() as usage:
        try:

            async def _both() -> None:
                nonlocal stage
                pred = await policy.predict(ep, ctx)
                rec["prediction"], rec["trace"] = pred.answer, pred.trace
                rec["timings"]["policy_s"] = time.perf_counter() - t0
                stage = "judge"
                t1 = time.perf_counter()
                score = await judge.score(ep, pred, judge_llm, cfg.prompts_dir)
                rec["timings"]["judge_s"] = time.perf_counter() - t1
                rec.update(
                    judge_raw=score.raw, judge_ok=score.ok, metrics=score.metrics, status="ok"
                )

            await asyncio.wait_for(_both(), timeout=cfg.episode_timeout_s)
        except Exception as exc:  # noqa: BLE001 - recorded, the run goes on
            rec["status"] = "error"
            rec["error"] = _error(exc, stage)
            log.warning(
                "episode %s failed in %s: %s: %s",
                ep.episode_id,
                stage,
                type(exc).__name__,
                rec["error"]["message"][:300],
            )
    rec["timings"]["total_s"] = time.perf_counter() - t0
    rec["usage"] = usage.as_dict()
    return rec


def _safe_name(s: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in s)[:120]


def dry_run(
    cfg: DictConfig, task: Task, policy: Policy, judge: Judge, episodes: Sequence[Episode]
) -> dict[str, Any]:
    """Build every request, count tokens (images included) and estimate cost; call nothing."""
    models = {"policy": str(cfg.llm.model), "judge": str(judge.llm_overrides.get("model"))}
    max_tokens = {
        "policy": cfg.llm.get("max_tokens"),
        "judge": judge.llm_overrides.get("max_tokens"),
    }
    totals = {
        role: {
            "model": m,
            "requests": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "cost_usd": 0.0,
            "images": 0,
        }
        for role, m in models.items()
    }
    problems: list[str] = []
    for ep in episodes:
        try:
            reqs = policy.estimate_requests(ep, task, cfg.prompts.dir)
        except Exception as e:  # noqa: BLE001 - reported, the estimate goes on
            problems.append(f"{ep.episode_id}: {e}")
            reqs = []
        reqs += judge.estimate_requests(ep, cfg.prompts.dir)
        for r in reqs:
            t = totals[r.role]
            p, c, cost = estimate_call(t["model"], r.messages, r.image_sizes, max_tokens[r.role])
            t["requests"] += 1
            t["prompt_tokens"] += p
            t["completion_tokens"] += c
            t["images"] += len(r.image_sizes)
            t["cost_usd"] = None if cost is None or t["cost_usd"] is None else t["cost_usd"] + cost
    lines = [
        f"dry run: {len(episodes)} episodes selected (task={task.name}, "
        f"policy={policy.name}); no model was called"
    ]
    for ep in episodes[:5]:
        lines.append(f"  {ep.episode_id} [{ep.category}] {ep.question[:70]}")
    if len(episodes) > 5:
        lines.append(f"  … and {len(episodes) - 5} more")
    for role, t in totals.items():
        cost = (
            "unknown (no price for this model)"
            if t["cost_usd"] is None
            else f"${t['cost_usd']:.2f}"
        )
        lines.append(
            f"  {role:6s} {t['model']}: {t['requests']} requests, "
            f"{t['prompt_tokens']:,} prompt tokens ({t['images']} images), "
            f"≤{t['completion_tokens']:,} completion tokens, est. cost {cost}"
        )
    if problems:
        lines.append(f"  {len(problems)} episode(s) could not be estimated, e.g. {problems[0]}")
    print("\n".join(lines), flush=True)
    return {"dry_run": True, "episodes": len(episodes), "estimate": totals, "problems": problems}


def run(cfg: DictConfig) -> dict[str, Any]:
    """Run one configuration; returns the headline metrics (the sweep objective)."""
    check_choices(cfg)
    task = build(cfg.task, Task, "task")
    policy = build(cfg.policy, Policy, "policy")
    judge = build(cfg.judge, Judge, "judge")
    episodes = select_episodes(task.load_episodes(), cfg.run)
    if cfg.run.dry_run:
        return dry_run(cfg, task, policy, judge, episodes)
    if cfg.task.get("check_data", True):
        problems = task.check(episodes)
        if problems:
            shown = "\n  ".join(problems[:10])
            more = f"\n  … and {len(problems) - 10} more" if len(problems) > 10 else ""
            raise DataError(
                f"{len(problems)} data problem(s) for the selected episodes:\n  "
                f"{shown}{more}\nStage the data (`python -m eqa_runner.data check "
                f"...`) or pass task.check_data=false to record them as errors."
            )
    out_dir = resolve_output_dir(cfg)
    out_dir.mkdir(parents=True, exist_ok=True)
    if any(str(m) != "offline" for m in (cfg.llm.model, judge.llm_overrides.get("model"))):
        from eqa_runner.llm import load_litellm

        threading.Thread(target=load_litellm, daemon=True).start()  # overlap the slow import
    with RunLock(out_dir):
        return _run_locked(cfg, task, policy, judge, episodes, out_dir)


def _run_locked(
    cfg: DictConfig,
    task: Task,
    policy: Policy,
    judge: Judge,
    episodes: list[Episode],
    out_dir: Path,
) -> dict[str, Any]:
    jsonl = out_dir / EPISODES_FILE
    existing = read_records(jsonl)
    restarts = os.environ.get("SLURM_RESTART_COUNT", "0")
    if existing and not cfg.run.resume and restarts.isdigit() and int(restarts) >= 1:
        # SLURM requeued this job (preemption / time limit): same config, same run dir.
        log.warning(
            "requeued SLURM job (SLURM_RESTART_COUNT=%s): auto-resuming %s (%d records)",
            restarts,
            jsonl,
            len(existing),
        )
    elif existing and not cfg.run.resume:
        raise RunDirError(
            f"{jsonl} already holds {len(existing)} records; pass run.resume=true "
            "to continue this run, or choose a new hydra.run.dir."
        )
    done = {eid for eid, r in final_records(existing).items() if r["status"] == "ok"}
    todo = [e for e in episodes if e.episode_id not in done]
    prompts = {**policy.prompts(cfg.prompts.dir), **judge.prompts(cfg.prompts.dir)}
    salt = {name: str(p["sha256"]) for name, p in prompts.items()}
    policy_llm, judge_llm = llm_clients(cfg, judge, salt)
    log.info(
        "%d episodes selected, %d already ok, %d to run -> %s",
        len(episodes),
        len(episodes) - len(todo),
        len(todo),
        out_dir,
    )
    resources = make_resources(cfg, task, policy)
    workers = max(1, int(cfg.run.workers))
    progress = [
        v
        for r in final_records(existing).values()
        if r["status"] == "ok" and r.get("judge_ok")
        and (v := judge.progress_value(r["metrics"])) is not None
    ]  # fmt: skip
    with (
        RecordWriter(jsonl) as writer,
        ThreadPoolExecutor(max_workers=min(8, (os.cpu_count() or 2) * 2)) as pool,
    ):
        asyncio.run(
            _execute(
                todo,
                writer,
                cfg,
                task,
                policy,
                judge,
                policy_llm,
                judge_llm,
                pool,
                out_dir,
                resources,
                workers,
                len(episodes) - len(todo),
                len(episodes),
                (sum(progress), len(progress)),
            )
        )
        close = resources.get("close")
        if close:
            close()
    return write_summary(cfg, task.describe(), policy.name, judge, episodes, out_dir, prompts)


def make_resources(cfg: DictConfig, task: Task, policy: Policy) -> dict[str, Any]:
    """Shared per-run resources a policy asks for (e.g. a simulator); built inside the job."""
    hook = getattr(policy, "make_resources", None)
    return hook(cfg, task) if hook else {}


async def _execute(
    todo: list[Episode],
    writer: RecordWriter,
    cfg: DictConfig,
    task: Task,
    policy: Policy,
    judge: Judge,
    policy_llm: LLMClient,
    judge_llm: LLMClient,
    pool: ThreadPoolExecutor,
    out_dir: Path,
    resources: dict[str, Any],
    workers: int,
    already: int,
    total: int,
    progress: tuple[float, int],
) -> None:
    from tqdm import tqdm

    sem = asyncio.Semaphore(workers)
    settings = EpisodeSettings.from_cfg(cfg)
    counts = {"ok": already, "err": 0}
    running_sum, running_n = progress  # the progress-bar metric, kept incrementally
    bar = tqdm(
        total=total,
        initial=already,
        disable=not cfg.run.progress,
        dynamic_ncols=True,
        desc=f"{task.name}/{policy.name}",
        mininterval=0.5,
    )

    async def one(ep: Episode) -> None:
        async with sem:
            rec = await run_episode(
                ep,
                task=task,
                policy=policy,
                judge=judge,
                policy_llm=policy_llm,
                judge_llm=judge_llm,
                cfg=settings,
                executor=pool,
                out_dir=out_dir,
                resources=resources,
            )
        writer.write(rec)
        counts["ok" if rec["status"] == "ok" else "err"] += 1
        nonlocal running_sum, running_n
        if rec["status"] == "ok" and rec.get("judge_ok"):
            v = judge.progress_value(rec["metrics"])
            if v is not None:
                running_sum, running_n = running_sum + v, running_n + 1
        m = 100.0 * running_sum / running_n if running_n else None
        bar.set_postfix_str(
            f"ok={counts['ok']} err={counts['err']} "
            f"{judge.headline}={'-' if m is None else f'{m:.1f}'}",
            refresh=False,
        )
        bar.update(1)

    try:
        await asyncio.gather(*(one(e) for e in todo))
    finally:
        bar.close()


def write_summary(
    cfg: DictConfig,
    task_info: dict[str, Any],
    policy_name: str,
    judge: Judge,
    episodes: Sequence[Episode],
    out_dir: Path,
    prompts: dict[str, dict[str, object]],
    jsonl_name: str = EPISODES_FILE,
    summary_name: str = SUMMARY_FILE,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Aggregate the final record of each selected episode into ``summary.json``.

    ``task_info`` is the task's ``describe()``; ``policy_name`` the policy's ``name``.
    """
    final = final_records(read_records(out_dir / jsonl_name))
    ids = [e.episode_id for e in episodes]
    recs = [final[i] for i in ids if i in final]
    agg = judge.aggregate(
        recs, bootstrap_samples=int(cfg.run.bootstrap_samples), seed=int(cfg.run.seed)
    )
    models = {
        "policy": str(cfg.llm.model),
        "judge": str(judge.llm_overrides.get("model", cfg.llm.model)),
    }
    stop = cfg.policy.get("stop_model")
    if stop:
        models["stop"] = str(stop)
    summary = build_summary(
        config=OmegaConf.to_container(cfg, resolve=True),
        task_info=task_info,
        selected_ids=ids,
        final=final,
        aggregate=agg,
        models=models,
        prompts=prompts,
        extra={
            "policy": policy_name,
            "judge": judge.name,
            "shard": cfg.run.get("shard"),
            "run_dir": str(out_dir),
            **(extra or {}),
        },
    )
    write_json_atomic(out_dir / summary_name, summary)
    head = {k: v.get("mean") for k, v in summary.get("headline", {}).items()}
    c = summary["counts"]
    log.info(
        "done: %d ok, %d error, %d judge-unparsable; %s",
        c["ok"],
        c["error"],
        c["judge_unparsable"],
        head,
    )
    print(
        f"[eqa_runner] {c['ok']}/{c['selected']} ok, {c['error']} error, "
        f"{c['judge_unparsable']} unparsable; "
        + ", ".join(f"{k}={'-' if v is None else f'{v:.2f}'}" for k, v in head.items())
        + f"\n[eqa_runner] results: {out_dir}",
        flush=True,
    )
    return {"counts": c, **head}
