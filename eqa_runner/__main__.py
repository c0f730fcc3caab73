"""``python -m eqa_runner …overrides``: the Hydra app. Everything else lives in run.py."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

from eqa_runner.run.configstore import register_configs

register_configs()
log = logging.getLogger("eqa_runner")


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def app(cfg: DictConfig) -> object:
    """Run one composed configuration; user errors become one line on stderr, exit code 2."""
    from eqa_runner.errors import ConfigSecretError, UserError
    from eqa_runner.run.loop import run

    try:
        return run(cfg)
    except UserError as e:
        if isinstance(e, ConfigSecretError):  # a key from a config file: blank Hydra's copies
            from hydra.core.hydra_config import HydraConfig

            from eqa_runner.llm import redact_saved_configs

            hc = HydraConfig.get()
            if hc.output_subdir:
                redact_saved_configs(Path(hc.runtime.output_dir) / hc.output_subdir)
        log.error("%s", e)
        print(f"error: {e}", file=sys.stderr, flush=True)
        sys.exit(e.exit_code)


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
    from eqa_runner.cli_help import render_help, wants_fast_help

    if wants_fast_help(sys.argv[1:]):
        sys.stdout.write(render_help())
        return
    from eqa_runner.llm import secret_overrides

    refusal = secret_overrides(sys.argv[1:])  # before Hydra writes overrides into .hydra/
    if refusal:
        print(f"error: {refusal}", file=sys.stderr, flush=True)
        sys.exit(2)
    sys.argv[1:] = expand_num_shards(sys.argv[1:])
    app()


if __name__ == "__main__":
    main()
