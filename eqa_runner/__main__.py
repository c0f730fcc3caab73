"""``python -m eqa_runner …overrides``: the Hydra app. The run itself lives in ``run/``."""

from __future__ import annotations

from eqa_runner.errors import require_installed

require_installed("python -m eqa_runner")

import difflib
import logging
import os
import sys
from dataclasses import fields, is_dataclass
from pathlib import Path

import hydra
from omegaconf import DictConfig

from eqa_runner.run.configstore import register_configs


def _register_or_exit() -> None:
    """Register the schemas of every benchmark and plugin; a broken or shadowing plugin is one
    ``error:`` line for every command, ``--help`` included (it was a traceback)."""
    from eqa_runner.errors import UserError

    try:
        register_configs()
    except UserError as e:
        print(f"error: {e}", file=sys.stderr, flush=True)
        sys.exit(e.exit_code)


_register_or_exit()
log = logging.getLogger("eqa_runner")


_EXIT_CODES: list[int] = []  # one per job this process ran (a sweep runs several)


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def app(cfg: DictConfig) -> object:
    """Run one composed configuration; the process exit code is collected in ``_EXIT_CODES``
    (README "Exit codes"); a user error is one line on stderr (exit code 2)."""
    from eqa_runner.errors import UserError
    from eqa_runner.run.loop import run
    from eqa_runner.run.rundir import defer_run_log, release_run_log

    defer_run_log()  # nothing reaches run.log before the run dir is checked and labelled
    try:
        result = run(cfg, report=tracker_report)
    except UserError as e:
        release_run_log(keep=False)
        print(f"error: {e}", file=sys.stderr, flush=True)
        _EXIT_CODES.append(e.exit_code)
        if _in_sweep_job():  # the job process fails (SLURM: state FAILED); the launcher
            sys.exit(e.exit_code)  # reports it with its error line and a rerun command
        return None
    finally:
        release_run_log(keep=True)  # no-op when already released
    _EXIT_CODES.append(int(result.get("exit_code", 0)))
    if result.get("exit_code", 0) >= 128:
        sys.exit(result["exit_code"])  # interrupted: a sweep stops here too
    return result


def tracker_report(run_dir: Path) -> Path | None:
    """``report.html`` of a finished run, for the experiment trackers (``logger=…``)."""
    from eqa_runner.report.html import write_reports
    from eqa_runner.report.runs import load_runs

    return write_reports(load_runs([run_dir]), compare=False)[0]


def _in_sweep_job() -> bool:
    """True inside a job of a ``-m`` sweep (its launcher reports a failed job's error)."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    return HydraConfig.initialized() and HydraConfig.get().mode == RunMode.MULTIRUN


def expand_num_shards(argv: list[str]) -> list[str]:
    """``run.num_shards=N`` → ``run.shard=0/N,…,N-1/N`` (a sweep: implies ``-m``)."""
    out, n = [], None
    for a in argv:
        if a.startswith("run.num_shards="):
            n = int(a.split("=", 1)[1])
        else:
            out.append(a)
    if not n:
        return argv
    out.append("run.shard=" + ",".join(f"{i}/{n}" for i in range(n)))
    if "-m" not in out and "--multirun" not in out:
        out.insert(0, "-m")
    return out


def main() -> None:
    from eqa_runner.cli_help import render_help, render_version, wants_fast_help, wants_version

    if wants_fast_help(sys.argv[1:]):  # no config is composed, so none is printed
        sys.stdout.write(render_help(sys.argv[1:]))
        return
    if wants_version(sys.argv[1:]):
        sys.stdout.write(render_version())
        return
    from eqa_runner.llm import secret_overrides
    from eqa_runner.redact import install
    from eqa_runner.run.configstore import screen_every_composition
    from eqa_runner.run.rundir import remove_unlabelled_fresh_dirs

    install()  # every secret of the environment is redacted from the console and the logs
    screen_every_composition()  # --cfg/--info/--help print only a screened config

    refusal = secret_overrides(sys.argv[1:])  # before Hydra composes, logs or writes anything
    if refusal:
        print(f"error: {refusal}", file=sys.stderr, flush=True)
        sys.exit(2)
    sys.argv[1:] = expand_num_shards(sys.argv[1:])
    full_error = os.environ.get("HYDRA_FULL_ERROR")
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra re-raises: a bad config becomes one line here
    code = 0
    try:
        app()
        code = max(_EXIT_CODES, default=0)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    except KeyboardInterrupt:  # a Ctrl-C before the run loop took over signals
        print(
            "\n[eqa_runner] interrupted before any episode ran; nothing to resume",
            file=sys.stderr,
            flush=True,
        )
        code = 130
    except Exception as e:
        line = config_error_line(e) or environment_error_line(e)
        if line is None or full_error == "1":
            raise
        print(f"error: {line}", file=sys.stderr, flush=True)
        code = 2
    finally:
        if full_error is None:
            os.environ.pop("HYDRA_FULL_ERROR", None)
        else:
            os.environ["HYDRA_FULL_ERROR"] = full_error
        remove_unlabelled_fresh_dirs()  # a refused start or a dry run leaves no run dir
    sys.exit(code)


def environment_error_line(exc: BaseException) -> str | None:
    """One line for a filesystem error that escaped (the path and the fix), else None."""
    if isinstance(exc, OSError) and getattr(exc, "filename", None):
        from eqa_runner.errors import os_error_line

        return os_error_line(exc.filename, exc, "fix the path or its permissions and retry")
    return None


def config_error_line(exc: BaseException) -> str | None:
    """One line naming the key for an error Hydra/OmegaConf raised while composing the config
    (a wrong type, an unknown key, a bad override; an unknown option is followed by the valid
    ones, one a line, as Hydra lists them); None for any other error."""
    from hydra.errors import ConfigCompositionException, OverrideParseException
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException

    from eqa_runner.run.configstore import schemas as all_schemas

    if not isinstance(exc, (ConfigCompositionException, OverrideParseException)):
        return None
    cause = exc.__cause__ or exc.__context__
    head = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    in_file = head.split(":", 1)[0] + ": " if head.startswith("In '") else ""
    if isinstance(cause, OmegaConfBaseException) and getattr(cause, "full_key", None):
        key = str(cause.full_key)
        what = (cause.msg or str(cause)).strip().splitlines()[0]
        if isinstance(cause, (ConfigKeyError, ConfigAttributeError)):  # not in the schema
            name = key.rsplit(".", 1)[-1]
            known = (
                [f.name for f in fields(cause.object_type)]
                if is_dataclass(cause.object_type)
                else []
            )
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {key[: -len(name)]}{close[0]}?" if close else ""
            return f"{in_file}{key}: unknown key{hint} (`--cfg job` lists the keys)"
        prefix = "Error merging override "
        where = head[len(prefix) :] if head.startswith(prefix) else key
        return f"{in_file}{where}: {what}"
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    if "Config search path:" in lines:  # an unknown option: keep "Available options ..."
        lines = lines[: lines.index("Config search path:")]
    if len(lines) > 2 and lines[1].startswith("Available options"):  # one option a line
        schemas = {name for nodes in all_schemas().values() for name in nodes}
        return "\n".join([lines[0], lines[1], *(f"\t{o}" for o in lines[2:] if o not in schemas)])
    if isinstance(exc, OverrideParseException):
        return (
            f"{lines[0]} (override syntax: https://hydra.cc/docs/advanced/override_grammar/basic)"
        )
    return "; ".join(lines) or head


if __name__ == "__main__":
    main()
