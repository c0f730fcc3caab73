"""``python -m eqa_runner.rejudge <run_dir> judge.model=…``: re-score a finished run.

Predictions are read from ``episodes.jsonl`` and never recomputed; the new judgements go to
``episodes.rejudged-<tag>.jsonl`` and ``summary.rejudged-<tag>.json`` beside the originals.
Re-running the same command resumes (episodes already re-judged ok are skipped).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from eqa_runner.errors import ConfigError
from eqa_runner.llm import track_usage
from eqa_runner.records import EPISODES_FILE, RecordWriter, final_records, read_records
from eqa_runner.run.loop import build, llm_clients, write_summary
from eqa_runner.scoring.base import Judge
from eqa_runner.types import Episode, Prediction


def load_run_config(run_dir: Path, overrides: list[str]) -> DictConfig:
    """The run's composed config (``.hydra/config.yaml``) with dotlist overrides applied."""
    path = run_dir / ".hydra" / "config.yaml"
    if not path.is_file():
        raise ConfigError(f"{path}: not found; is {run_dir} an eqa_runner run directory?")
    cfg = OmegaConf.load(path)
    bad = [o for o in overrides if "=" not in o]
    if bad:
        raise ConfigError(f"overrides must look like key=value, got {bad}")
    OmegaConf.set_struct(cfg, False)
    cfg = OmegaConf.merge(cfg, OmegaConf.from_dotlist(overrides))
    return cfg


def episode_from_record(rec: dict[str, Any]) -> Episode:
    return Episode(
        episode_id=str(rec["episode_id"]),
        question=rec.get("question") or "",
        answer=rec.get("answer") or "",
        category=rec.get("category") or "",
        extra_answers=list(rec.get("extra_answers") or []),
        scene=rec.get("scene") or "",
        meta={"subset": rec.get("subset")},
    )


def prediction_from_record(rec: dict[str, Any], run_dir: Path) -> Prediction:
    trace = rec.get("trace") or {}
    images = [
        (run_dir / p).read_bytes() for p in trace.get("judge_images", []) if (run_dir / p).is_file()
    ]
    return Prediction(answer=rec.get("prediction"), images_for_judge=images, trace=trace)


def tag_for(model: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("_")[:80] or "judge"


def rejudge(run_dir: Path, overrides: list[str], *, tag: str | None = None) -> dict[str, Any]:
    """Re-score every ok episode of ``run_dir`` with the judge in the (overridden) config."""
    cfg = load_run_config(run_dir, overrides)
    judge = build(cfg.judge, Judge, "judge")
    tag = tag or tag_for(str(judge.llm_overrides.get("model")))
    src = final_records(read_records(run_dir / EPISODES_FILE))
    out_name = f"episodes.rejudged-{tag}.jsonl"
    done = {
        i for i, r in final_records(read_records(run_dir / out_name)).items() if r["status"] == "ok"
    }
    prompts = judge.prompts(cfg.prompts.get("dir"))
    _, judge_llm = llm_clients(cfg, judge, {n: str(p["sha256"]) for n, p in prompts.items()})
    workers = max(1, int(cfg.run.workers))

    async def one(rec: dict[str, Any], sem: asyncio.Semaphore, w: RecordWriter) -> None:
        new = {
            **rec,
            "rejudged_from": {"judge_raw": rec.get("judge_raw"), "metrics": rec.get("metrics")},
        }
        if rec["status"] == "ok":
            async with sem:
                with track_usage() as usage:
                    try:
                        s = await judge.score(
                            episode_from_record(rec),
                            prediction_from_record(rec, run_dir),
                            judge_llm,
                            cfg.prompts.get("dir"),
                        )
                        new.update(judge_raw=s.raw, judge_ok=s.ok, metrics=s.metrics, error=None)
                    except Exception as exc:  # noqa: BLE001 - recorded
                        new.update(
                            status="error",
                            judge_ok=False,
                            metrics={},
                            error={
                                "type": type(exc).__name__,
                                "message": str(exc)[:2000],
                                "stage": "judge",
                            },
                        )
            new["usage"] = usage.as_dict()
        w.write(new)

    async def main(w: RecordWriter) -> None:
        sem = asyncio.Semaphore(workers)
        await asyncio.gather(*(one(r, sem, w) for i, r in src.items() if i not in done))

    with RecordWriter(run_dir / out_name) as w:
        asyncio.run(main(w))
    episodes = [episode_from_record(r) for r in src.values()]
    return write_summary(
        cfg,
        {"name": cfg.task.get("name"), "rejudged": True},  # subsets come from the records
        str(cfg.policy.get("name")),
        judge,
        episodes,
        run_dir,
        prompts,  # type: ignore[arg-type]
        jsonl_name=out_name,
        summary_name=f"summary.rejudged-{tag}.json",
        extra={"rejudged_from": EPISODES_FILE},
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        prog="python -m eqa_runner.rejudge",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("overrides", nargs="*", help="e.g. judge.model=openai/gpt-4o-2024-08-06")
    ap.add_argument("--tag", default=None, help="output name tag (default: the judge model)")
    args = ap.parse_args(argv)
    try:
        rejudge(args.run_dir, args.overrides, tag=args.tag)
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
