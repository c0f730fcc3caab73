"""``python -m eqa_runner.rejudge <run_dir> judge.model=…``: re-score a finished run.

Predictions are read from ``episodes.jsonl`` and never recomputed; the new judgements go to
``episodes.rejudged-<tag>.jsonl`` and ``summary.rejudged-<tag>.json`` beside the originals.
Re-running the same command resumes (episodes already re-judged ok are skipped).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

from omegaconf import DictConfig, OmegaConf

from eqa_runner.errors import ConfigError, ConfigSecretError
from eqa_runner.llm import track_usage
from eqa_runner.records import EPISODES_FILE, RecordWriter, iter_records
from eqa_runner.run.build import llm_clients
from eqa_runner.run.episode import error_info
from eqa_runner.run.plan import RunPlan
from eqa_runner.run.rejudge_cap import RejudgeAtCap, judge_all, rejudge_cap
from eqa_runner.run.sigterm import run_until_signalled, sigterm_interrupts
from eqa_runner.run.summary import SummaryInputs, models_of, write_summary
from eqa_runner.scoring.base import Judge
from eqa_runner.types import Episode, EpisodeRecord, Prediction, RejudgedRecord

# what a rejudge may change: the judge, and plumbing (never the predictions' config)
REJUDGE_KEYS = (
    "judge.",
    "run.workers",
    "run.cache",
    "run.cache_dir",
    "run.bootstrap_samples",
    "prompts.dir",
    "run.max_cost_usd",
    "run.allow_unpriced",
)


def recorded_config(run_dir: Path) -> DictConfig:
    """The config that produced ``run_dir``'s records: ``.hydra/config.yaml`` with the result
    keys of ``provenance.json`` (the fingerprinted config) laid over it."""
    from eqa_runner.run.provenance import read_provenance

    path = run_dir / ".hydra" / "config.yaml"
    if not path.is_file():
        raise ConfigError(f"{path}: not found; is {run_dir} an eqa_runner run directory?")
    cfg = OmegaConf.load(path)
    if not isinstance(cfg, DictConfig):
        raise ConfigError(f"{path}: not a mapping; is {run_dir} an eqa_runner run directory?")
    OmegaConf.set_struct(cfg, False)
    prov = read_provenance(run_dir)
    for key, value in ((prov or {}).get("config") or {}).items():
        OmegaConf.update(cfg, key, value, force_add=True)
    return cfg


def load_run_config(run_dir: Path, overrides: list[str]) -> DictConfig:
    """The run's recorded config with judge overrides (``judge.model=...``) applied."""
    from eqa_runner.llm.secrets import secret_overrides
    from eqa_runner.run.rejudge_overrides import check_run_values, parsed_overrides, unknown_key

    refusal = secret_overrides(overrides)  # first: every other refusal quotes the override
    if refusal:
        raise ConfigSecretError(refusal)
    cfg = recorded_config(run_dir)
    for o in overrides:
        key = o.split("=", 1)[0].lstrip("+~") if "=" in o else ""
        if not key:
            raise ConfigError(f"{o}: overrides must look like key=value, e.g. judge.model=...")
        if not key.startswith(REJUDGE_KEYS[0]) and key not in REJUDGE_KEYS[1:]:
            raise ConfigError(
                f"{o}: rejudge only changes the judge (judge.*) and plumbing "
                f"({', '.join(REJUDGE_KEYS[1:])}); predictions are never recomputed. "
                "Start a new run for another policy or model."
            )
        unknown = unknown_key(cfg, key, adds=o.startswith("+"))
        if unknown:
            raise ConfigError(unknown)
    parsed = parsed_overrides(overrides)
    check_run_values([(k, v) for k, v in parsed if k.startswith("run.")])
    for key, value in parsed:
        OmegaConf.update(cfg, key, value, merge=True, force_add=True)
    return cfg


def episode_from_record(rec: EpisodeRecord) -> Episode:
    return Episode(
        episode_id=rec["episode_id"],
        question=rec["question"],
        answer=rec["answer"],
        category=rec["category"],
        extra_answers=list(rec["extra_answers"]),
        scene=rec["scene"],
        meta={"subset": rec["subset"]},
    )


def prediction_from_record(rec: EpisodeRecord, run_dir: Path) -> Prediction:
    trace = rec["trace"]
    from eqa_runner.safe_io import confine

    inside = [confine(p, run_dir, what="judge image") for p in trace.get("judge_images", [])]
    images = [p.read_bytes() for p in inside if p is not None and p.is_file()]
    return Prediction(answer=rec["prediction"], images_for_judge=images, trace=trace)


def tag_for(model: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("._")[:80] or "judge"


def check_tag(tag: str) -> str:
    """A ``--tag`` names files inside the run dir: letters, digits, ``._-`` only."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}", tag) or ".." in tag:
        raise ConfigError(
            f"--tag {tag!r}: use letters, digits and ._- only (it names "
            "episodes.rejudged-<tag>.jsonl inside the run dir)"
        )
    return tag


def rejudge(run_dir: Path, overrides: list[str], *, tag: str | None = None) -> dict[str, Any]:
    """Re-score every ok episode of ``run_dir`` with the judge in the (overridden) config."""
    from eqa_runner.records import RunLock

    run_dir = Path(run_dir)
    plan = rejudge_plan(run_dir, overrides)
    tag = check_tag(tag) if tag else tag_for(plan.judge_model)
    check_writable_run_dir(run_dir, tag)
    with RunLock(run_dir):
        try:
            return _rejudge_locked(run_dir, plan, tag)
        except KeyboardInterrupt as e:
            raise RejudgeInterrupted(run_dir, tag, getattr(e, "signame", "SIGINT")) from None


def rejudge_plan(run_dir: Path, overrides: list[str]) -> RunPlan:
    """The run's recorded config with the overrides, through the run's own start checks that
    concern a judge (:data:`eqa_runner.run.start.REJUDGE`: the fit, the typed blocks, a pinned
    model, the judge, its inputs against the scored run's recorded data)."""
    from hydra.errors import InstantiationException

    from eqa_runner.run.start import REJUDGE, START, run_checks

    cfg = load_run_config(run_dir, overrides)
    plan = RunPlan(cfg, task_name=cfg.task.get("name"), task_info=_scored_data(run_dir))
    try:
        return run_checks(plan, START, names=REJUDGE)
    except (TypeError, ValueError, InstantiationException) as e:  # a judge the run's config
        why = e.__cause__ if isinstance(e, InstantiationException) and e.__cause__ else e
        msg = str(why).splitlines()[0].removeprefix("judge: ")  # cannot build any more
        raise ConfigError(msg if msg.startswith("judge.") else f"judge: {msg}") from None


class RejudgeInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM during a rejudge: what was judged is kept in
    ``episodes.rejudged-<tag>.jsonl``."""

    def __init__(self, run_dir: Path, tag: str, signame: str = "SIGINT") -> None:
        super().__init__(tag)
        self.run_dir, self.tag, self.signame = run_dir, tag, signame

    @property
    def exit_code(self) -> int:
        from eqa_runner.run.stop import EXIT_SIGINT, EXIT_SIGTERM

        return EXIT_SIGTERM if self.signame == "SIGTERM" else EXIT_SIGINT

    def line(self, overrides: list[str]) -> str:
        """How many episodes are re-judged, where they are, and the command that resumes."""
        import shlex

        out = self.run_dir / f"episodes.rejudged-{self.tag}.jsonl"
        src = final_index(self.run_dir / EPISODES_FILE)
        done = sum(1 for _, st in final_index(out).values() if st == "ok") if out.is_file() else 0
        cmd = [
            "python",
            "-m",
            "eqa_runner.rejudge",
            str(self.run_dir),
            *overrides,
            "--tag",
            self.tag,
        ]
        return (
            f"[eqa_runner] rejudge interrupted ({self.signame}): {done} of {len(src)} episodes "
            f"re-judged, kept in "
            f"{out.name}; resume with: {shlex.join(cmd)}"
        )


def check_writable_run_dir(run_dir: Path, tag: str) -> None:
    """Refuse (one line, nothing written) a run dir rejudge cannot write its files into."""
    import tempfile

    from eqa_runner.errors import RunDirError, os_error_line

    try:
        fd, probe = tempfile.mkstemp(prefix=".eqa_write_probe.", dir=run_dir)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise RunDirError(
            os_error_line(
                run_dir,
                e,
                f"rejudge writes episodes.rejudged-{tag}.jsonl beside the records: "
                f"copy the run (cp -r {run_dir} <writable dir>) and rejudge the copy",
            )
        ) from None


def _scored_data(run_dir: Path) -> dict[str, Any]:
    """The data hashes of the run's recorded provenance (empty without one)."""
    from eqa_runner.run.provenance import read_provenance

    prov = read_provenance(run_dir) or {}
    return dict((prov.get("inputs") or {}).get("data") or {})


def final_index(path: Path) -> dict[str, tuple[int, str]]:
    """``episode_id -> (ordinal, status)`` of each episode's final record (as
    :func:`final_records`, in the order episodes first appear), one record in memory at a time."""
    out: dict[str, tuple[int, str]] = {}
    for n, rec in enumerate(iter_records(path)):  # ids interned: the summary's records share them
        eid = sys.intern(str(rec["episode_id"]))
        prev = out.get(eid)
        if prev is None or rec["status"] == "ok" or prev[1] != "ok":
            out[eid] = (n, rec["status"])
    return out


def pending_records(
    path: Path, final: dict[str, tuple[int, str]], done: set[str]
) -> Iterator[EpisodeRecord]:
    """The final record of every episode not in ``done``, read lazily in file order."""
    for n, rec in enumerate(iter_records(path)):
        eid = str(rec["episode_id"])
        if final[eid][0] == n and eid not in done:
            yield rec


def _judge_fingerprint(run_dir: Path, cfg: DictConfig, prompts: dict[str, Any], tag: str) -> Any:
    """Check (or write, before the first record) the judge fingerprint of ``rejudged-<tag>``."""
    from eqa_runner.records import write_json_atomic
    from eqa_runner.run.provenance import check_same_judge, input_hashes, judge_record
    from eqa_runner.scoring.declare import declared

    files = declared(str(cfg.judge._target_)).input_files(cfg.judge)  # e.g. a blind run
    inputs = input_hashes({}, prompts, files)
    judge_cfg = OmegaConf.to_container(cfg.judge, resolve=True)
    rec = judge_record(cast(dict, judge_cfg), {k: v for k, v in inputs.items() if k != "data"})
    side = run_dir / f"provenance.rejudged-{tag}.json"
    out = run_dir / f"episodes.rejudged-{tag}.jsonl"
    if side.is_file():
        check_same_judge(side, rec, tag=tag)
    elif out.is_file() and out.stat().st_size > 0:
        from eqa_runner.errors import RunDirError

        raise RunDirError(
            f"{out}: rejudged records without a judge fingerprint ({side.name}), so nothing says "
            "which judge scored them; pass another --tag for this judge."
        )
    else:
        write_json_atomic(side, rec)
    return rec["judge_fingerprint"]


def _rejudge_locked(run_dir: Path, plan: RunPlan, tag: str) -> dict[str, Any]:
    """Re-judge the pending episodes, then write the summary (the indexes of the first step
    freed before the summary's records are read)."""
    assert plan.judge is not None, "built by the judge check"
    plan.prompts = plan.judge.prompts(plan.prompts_dir)
    judge_fp = _judge_fingerprint(run_dir, plan.cfg, plan.prompts, tag)
    ids, at_cap = _judge_pending(run_dir, plan, plan.judge, tag)
    summary = _write_rejudged_summary(run_dir, plan, plan.judge, tag, ids, judge_fp)
    if at_cap is not None:  # the summary of what was judged is written first
        raise at_cap
    return summary


def _judge_pending(
    run_dir: Path, plan: RunPlan, judge: Judge, tag: str
) -> tuple[list[str], RejudgeAtCap | None]:
    """Streams: the records are read twice, lazily (an index, then the pending ones), at most
    ``run.workers`` in memory. Returns the episode ids and the stop at the cost cap, if any."""
    src = final_index(run_dir / EPISODES_FILE)
    out_name = f"episodes.rejudged-{tag}.jsonl"
    done = {i for i, (_, status) in final_index(run_dir / out_name).items() if status == "ok"}
    salt = {n: str(p["sha256"]) for n, p in plan.prompts.items()}
    _, judge_llm = llm_clients(plan.cfg, judge, salt, roles=("judge",))
    workers = plan.run.workers

    async def one(rec: EpisodeRecord, w: RecordWriter) -> float:
        new: RejudgedRecord = {
            **rec,
            "rejudged_from": {"judge_raw": rec["judge_raw"], "metrics": rec["metrics"]},
        }
        if rec["status"] == "ok":
            with track_usage() as usage:
                try:
                    s = await judge.score(
                        episode_from_record(rec),
                        prediction_from_record(rec, run_dir),
                        judge_llm,
                        plan.prompts_dir,
                    )
                    new.update(
                        {
                            "judge_raw": s.raw,
                            "judge_ok": s.ok,
                            "metrics": dict(s.metrics),
                            "error": None,
                        }
                    )
                except Exception as exc:  # noqa: BLE001 - recorded
                    new.update(
                        {
                            "status": "error",
                            "judge_ok": False,
                            "metrics": {},
                            "error": error_info(exc, "judge"),
                        }
                    )
            new["usage"] = usage.as_dict()
        w.write(new)
        return float((new.get("usage") or {}).get("cost_usd") or 0.0)

    cap, at_cap = rejudge_cap(plan, judge_llm, run_dir / out_name), []

    async def main(w: RecordWriter) -> None:
        todo = pending_records(run_dir / EPISODES_FILE, src, done)
        if await judge_all(todo, lambda rec: one(rec, w), workers, cap, episode_from_record):
            at_cap.append(True)

    with RecordWriter(run_dir / out_name) as w:
        run_until_signalled(main(w))
    if at_cap and cap is not None:
        judged = sum(1 for _, st in final_index(run_dir / out_name).values() if st == "ok")
        return list(src), RejudgeAtCap(run_dir, tag, cap, judged, len(src))
    return list(src), None


def _write_rejudged_summary(
    run_dir: Path, plan: RunPlan, judge: Judge, tag: str, ids: list[str], judge_fp: Any
) -> dict[str, Any]:
    """``summary.rejudged-<tag>.json`` from the re-judged records of the episodes ``ids``."""
    cfg = plan.cfg
    inputs = SummaryInputs(
        config=plan.container,
        run=plan.run,
        models=models_of(cfg, judge),
        task_info={"name": plan.task_name, "rejudged": True},  # subsets: from the records
        policy_name=str(cfg.policy.get("name")),
        judge=judge,
        episode_ids=ids,
        out_dir=run_dir,
        prompts=plan.prompts,
    )
    return write_summary(
        inputs,
        jsonl_name=f"episodes.rejudged-{tag}.jsonl",
        summary_name=f"summary.rejudged-{tag}.json",
        extra={"rejudged_from": EPISODES_FILE, "judge_fingerprint": judge_fp},
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
    from eqa_runner.errors import UserError
    from eqa_runner.redact import install

    install()

    try:
        with sigterm_interrupts():
            out = rejudge(args.run_dir, args.overrides, tag=args.tag)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(e.exit_code)
    except (RejudgeInterrupted, RejudgeAtCap) as e:
        print(f"\n{e.line(args.overrides)}", file=sys.stderr, flush=True)
        sys.exit(e.exit_code)
    except KeyboardInterrupt as e:  # before the run dir was locked: nothing written
        name = getattr(e, "signame", "SIGINT")
        print(
            f"\n[eqa_runner] rejudge interrupted ({name}) before it started: nothing written",
            file=sys.stderr,
            flush=True,
        )
        sys.exit(RejudgeInterrupted(args.run_dir, "", name).exit_code)
    from eqa_runner.safe_io import refused_line

    if refused := refused_line():  # judge images named outside the run dir: never uploaded
        print(refused, file=sys.stderr, flush=True)
    c = out.get("counts") or {}
    sys.exit(1 if c.get("error") or c.get("missing") else 0)


if __name__ == "__main__":
    main()
