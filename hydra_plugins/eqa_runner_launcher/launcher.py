"""Sweep launchers that wait for every job (``hydra/launcher=slurm|local``).

hydra-submitit-launcher's launchers return at the first failed job. These subclasses submit the
same job array, wait for all of it, and print which jobs failed, where their logs are and a
ready-to-paste command that reruns just those jobs into their own run dirs with
``run.resume=true``; the sweep then exits with status 1 (no Hydra traceback). Hydra finds them by
its plugin scan of ``hydra_plugins`` (whatever started the multirun: ``-m`` on the command line,
``hydra.mode=MULTIRUN`` in a config file or a preset). A requeued job (preemption, time limit)
runs the same pickled Hydra job again (the base class's ``checkpoint``); ``run.run`` then resumes
its run dir by itself.
"""

from __future__ import annotations

import logging
import os
import re
import shlex
import signal
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, JobStatus, filter_overrides
from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf
from hydra_plugins.hydra_submitit_launcher.submitit_launcher import BaseSubmititLauncher
from omegaconf import OmegaConf, open_dict

log = logging.getLogger(__name__)

# Hydra override values that need no quoting (anything else is wrapped in "...").
_PLAIN = re.compile(r"^[A-Za-z0-9_./@:+-]*$")
# hydra.* overrides that the rerun command sets itself.
_DROP = ("hydra.sweep.dir=", "hydra.sweep.subdir=", "hydra.mode=", "run.resume=")
# the launcher's own keys (not submitit parameters)
_OWN_KEYS = ("submitit_folder", "max_num_timeout", "progress_s")


class WaitForAllLauncher(BaseSubmititLauncher):
    """The plugin's submission (same executor parameters, one job array); all jobs awaited."""

    def _executor(self) -> Any:
        import submitit

        init = {"folder": self.params["submitit_folder"]}
        if "max_num_timeout" in self.params:
            init[f"{self._EXECUTOR}_max_num_timeout"] = self.params["max_num_timeout"]
        executor = submitit.AutoExecutor(cluster=self._EXECUTOR, **init)
        base_keys = set(OmegaConf.structured(BaseQueueConf).keys())
        executor.update_parameters(
            **{
                k if k in base_keys else f"{self._EXECUTOR}_{k}": v
                for k, v in self.params.items()
                if k not in _OWN_KEYS
            }
        )
        return executor

    def launch(
        self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
    ) -> Sequence[JobReturn]:
        assert self.config is not None and job_overrides
        sweep_dir = Path(str(self.config.hydra.sweep.dir)).absolute()
        sweep_dir.mkdir(parents=True, exist_ok=True)
        if "mode" in self.config.hydra.sweep:
            os.chmod(sweep_dir, mode=int(str(self.config.hydra.sweep.mode), 8))
        self._check_first_job(list(job_overrides[0]), initial_job_idx)
        executor = self._executor()
        log.info(f"Submitit '{self._EXECUTOR}' sweep output dir : {sweep_dir}")
        nums = [initial_job_idx + k for k in range(len(job_overrides))]
        for num, ov in zip(nums, job_overrides, strict=True):
            log.info(f"\t#{num} : {' '.join(filter_overrides(ov))}")
        state = Singleton.get_state()
        jobs = executor.map_array(
            self,
            [list(ov) for ov in job_overrides],
            ["hydra.sweep.dir"] * len(nums),
            nums,
            [f"job_id_for_{n}" for n in nums],
            [state] * len(nums),
        )
        progress_s = float(self.params.get("progress_s", 180.0))
        hint = "; squeue --me lists them" if self._EXECUTOR == "slurm" else ""
        try:
            with _sigterm_raises():
                wait_all(jobs, sweep_dir, progress_s, hint=hint,
                         emit=lambda ln: print(ln, flush=True))  # fmt: skip
        except _Terminated:
            self._stop_on_sigterm(jobs, nums, job_overrides, sweep_dir)
        results: list[JobReturn] = []
        failed: list[dict[str, Any]] = []
        for num, ov, job in zip(nums, job_overrides, jobs, strict=True):
            try:
                ret = job.results()[0]
            except Exception as exc:  # noqa: BLE001 - the job died (no result): reported below
                ret = JobReturn(overrides=list(ov), status=JobStatus.FAILED, _return_value=exc)
            results.append(ret)
            if ret.status != JobStatus.COMPLETED:
                failed.append({"num": num, "overrides": list(ov), "job": job, "error": ret})
        if failed:
            print(self._failure_report(failed, len(nums), sweep_dir), flush=True)
            # The report says it all; Hydra would re-raise the first job's error with a
            # traceback of its own sweeper. Exit 1 instead (no later batch would run either).
            raise SystemExit(1)
        return results

    def _stop_on_sigterm(
        self,
        jobs: Sequence[Any],
        nums: list[int],
        job_overrides: Sequence[Sequence[str]],
        sweep_dir: Path,
    ) -> None:
        """SIGTERM to the sweep driver (a scheduler, ``kill``): local jobs get it too (each
        keeps its records, writes its summary and stops), then one line and the rerun commands
        of every job that did not finish; SLURM jobs keep running on the cluster. Exit 143."""
        if self._EXECUTOR == "local":
            for job in jobs:
                process = getattr(job, "_process", None)
                if process is not None and process.poll() is None:
                    process.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not all(_done(j) for j in jobs):
                time.sleep(0.2)
        else:
            running = sum(1 for j in jobs if not _done(j))
            print(
                f"[eqa_runner] sweep driver interrupted (SIGTERM): its {running} unfinished "
                f"jobs keep running on the cluster (squeue --me); when they end: "
                f"python -m eqa_runner.report {sweep_dir}",
                file=sys.stderr,
                flush=True,
            )
            raise SystemExit(143)
        unfinished = []
        for num, ov, job in zip(nums, job_overrides, jobs, strict=True):
            try:
                ok = job.results()[0].status == JobStatus.COMPLETED
            except Exception:  # noqa: BLE001 - stopped or failed: rerun it
                ok = False
            if not ok:
                unfinished.append(
                    {
                        "num": num,
                        "overrides": list(ov),
                        "job": job,
                        "error": JobReturn(
                            overrides=list(ov),
                            status=JobStatus.FAILED,
                            _return_value="interrupted (SIGTERM)",
                        ),
                    }
                )
        head = (
            f"[eqa_runner] sweep interrupted (SIGTERM): {len(jobs) - len(unfinished)} of "
            f"{len(jobs)} jobs finished; the others were stopped with their records kept"
        )
        print(
            self._failure_report(unfinished, len(jobs), sweep_dir, head=head),
            file=sys.stderr,
            flush=True,
        )
        raise SystemExit(143)

    def _check_first_job(self, overrides: list[str], num: int) -> None:
        """Run the first job's start checks here, before anything is submitted: a sweep whose
        first job cannot start (no data, a bad value) is one line and exit 2, not a queue round
        trip. The other jobs are checked where they run (they may differ in anything)."""
        from eqa_runner.errors import UserError
        from eqa_runner.run.start import check_before_submit

        assert self.hydra_context is not None and self.config is not None
        cfg = self.hydra_context.config_loader.load_sweep_config(self.config, overrides)
        if "run" not in cfg or "task" not in cfg:  # another Hydra app using this launcher
            return
        with open_dict(cfg.hydra.job):
            cfg.hydra.job.num = num
        subdir = self._subdir(overrides, num)
        sweep_dir = Path(str(self.config.hydra.sweep.dir)).absolute()
        with open_dict(cfg.hydra.runtime):  # what Hydra sets when the job runs
            cfg.hydra.runtime.output_dir = str(sweep_dir / subdir if subdir else sweep_dir)
            cfg.hydra.runtime.cwd = os.getcwd()
        try:
            check_before_submit(cfg)
        except UserError as e:
            print(f"error: sweep job #{num} ({' '.join(filter_overrides(overrides))}) cannot "
                  f"start, so nothing was submitted: {e}", file=sys.stderr, flush=True)  # fmt: skip
            self._undo_sweep_dir(sweep_dir)
            raise SystemExit(e.exit_code) from None

    def _undo_sweep_dir(self, sweep_dir: Path) -> None:
        """A refused sweep leaves no trace: Hydra's ``multirun.yaml`` goes, and so does the dir
        when the sweep claimed it (a ``hydra.sweep.dir`` the user named stays)."""
        assert self.config is not None
        if not sweep_dir.is_dir() or {p.name for p in sweep_dir.iterdir()} - {"multirun.yaml"}:
            return
        (sweep_dir / "multirun.yaml").unlink(missing_ok=True)
        named = OmegaConf.to_container(self.config.hydra.overrides.hydra)
        if not any(str(o).startswith("hydra.sweep.dir=") for o in cast(list, named)):
            sweep_dir.rmdir()

    def _subdir(self, overrides: list[str], num: int) -> str | None:
        """The job's run-dir name inside the sweep dir (``hydra.sweep.subdir`` resolved)."""
        assert self.hydra_context is not None and self.config is not None
        try:
            cfg = self.hydra_context.config_loader.load_sweep_config(self.config, overrides)
            with open_dict(cfg.hydra.job):
                cfg.hydra.job.num = num
            return str(OmegaConf.select(cfg, "hydra.sweep.subdir"))
        except Exception:  # noqa: BLE001 - the report then names the sweep dir only
            return None

    def _failure_report(
        self, failed: list[dict[str, Any]], total: int, sweep_dir: Path, head: str = ""
    ) -> str:
        assert self.config is not None
        # hydra.overrides.hydra is a list of strings (omegaconf types any node's container)
        hydra_ov = [
            o
            for o in cast(list[str], OmegaConf.to_container(self.config.hydra.overrides.hydra))
            if not o.startswith(_DROP)
        ]
        lines = [
            head
            or f"[eqa_runner] {len(failed)} of {total} sweep jobs FAILED; the other jobs' results "
            f"are kept in {sweep_dir}",
        ]
        reruns = []
        for f in failed:
            job, num, ov = f["job"], f["num"], f["overrides"]
            subdir = self._subdir(ov, num)
            run_dir = sweep_dir / subdir if subdir else sweep_dir
            task_ov = [o for o in ov if not o.startswith(_DROP)]
            lines += [
                f"  job #{num} ({self._EXECUTOR} job {job.job_id}, state {_state(job)}): "
                f"{' '.join(filter_overrides(ov))}",
                f"    run dir: {run_dir}",
                f"    log:     {job.paths.stderr}",
                f"    error:   {_error_line(f['error'], job)}",
            ]
            sweep_pin = [_kv("hydra.sweep.dir", str(sweep_dir))]
            if subdir:
                sweep_pin.append(_kv("hydra.sweep.subdir", subdir))
            reruns.append(
                _command(["-m", *hydra_ov, *sweep_pin, *task_ov, "run.resume=true"])
                + "\n    or in this shell: "
                + _command([*task_ov, "run.resume=true", _kv("hydra.run.dir", str(run_dir))])
            )
        lines.append(
            "[eqa_runner] rerun just the failed jobs (resume: ok episodes are kept, "
            "errors retried), one command per job:"
        )
        lines += [f"  {r}" for r in reruns]
        return "\n".join(lines)


class _Terminated(Exception):
    """SIGTERM reached the sweep driver while it waited."""


class _sigterm_raises:
    """While inside: SIGTERM raises :class:`_Terminated` in the waiting (main) thread; the
    previous handler comes back after."""

    def __enter__(self) -> None:
        self._old = signal.getsignal(signal.SIGTERM)

        def handler(signum: int, frame: Any) -> None:
            raise _Terminated()

        try:
            signal.signal(signal.SIGTERM, handler)
        except ValueError:  # not the main thread: leave signals alone
            self._old = None

    def __exit__(self, *exc: object) -> None:
        if self._old is not None:
            signal.signal(signal.SIGTERM, self._old)


def wait_all(
    jobs: Sequence[Any],
    sweep_dir: Path,
    progress_s: float,
    *,
    emit: Callable[[str], None],
    hint: str = "",
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Wait until every job is done, printing one progress line every ``progress_s`` seconds
    (a SLURM queue can hold a sweep for hours; ``progress_s=0`` prints none)."""
    start = last = clock()
    poll = min(5.0, progress_s) if progress_s > 0 else 5.0
    while True:
        done = sum(1 for job in jobs if _done(job))
        if done == len(jobs):
            return
        now = clock()
        if progress_s > 0 and now - last >= progress_s:
            last = now
            emit(
                f"[eqa_runner] sweep {sweep_dir}: {done} of {len(jobs)} jobs finished, "
                f"{len(jobs) - done} queued or running; waited {_minutes(now - start)}{hint}"
            )
        sleep(poll)


def _done(job: Any) -> bool:
    try:
        return bool(job.done())
    except Exception:  # noqa: BLE001 - the state cannot be read: results() then reports it
        return True


def _minutes(seconds: float) -> str:
    m = int(seconds // 60)
    return f"{m // 60} h {m % 60} min" if m >= 60 else f"{m} min {int(seconds % 60)} s"


def _kv(key: str, value: str) -> str:
    if _PLAIN.match(value):
        return f"{key}={value}"
    return f'{key}="{value}"' if '"' not in value else f"{key}='{value}'"


def _command(args: list[str]) -> str:
    return "python -m eqa_runner " + " ".join(shlex.quote(a) for a in args)


def _state(job: Any) -> str:
    try:
        return str(job.state)
    except Exception:  # noqa: BLE001
        return "UNKNOWN"


def _error_line(ret: JobReturn, job: Any) -> str:
    """One line: the job's own ``error: ...`` line from its stderr, else the exception."""
    try:
        err = job.stderr() or ""
    except Exception:  # noqa: BLE001
        err = ""
    mine = [ln for ln in err.splitlines() if ln.startswith("error: ")]
    if mine:
        return mine[-1][len("error: ") :][:300]
    exc = ret._return_value
    text = f"{type(exc).__name__}: {exc}" if isinstance(exc, BaseException) else str(exc)
    return " ".join(text.split())[:300]


class SlurmSweepLauncher(WaitForAllLauncher):
    """``hydra/launcher=slurm``: one SLURM array task per sweep job."""

    _EXECUTOR = "slurm"


class LocalSweepLauncher(WaitForAllLauncher):
    """``hydra/launcher=local``: every sweep job in its own subprocess on this machine."""

    _EXECUTOR = "local"
