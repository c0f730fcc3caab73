"""``python -m eqa_runner …overrides``: the Hydra app. Everything else lives in run.py."""

from __future__ import annotations

import logging
import sys

import hydra
from omegaconf import DictConfig

from eqa_runner.schema import register_configs

register_configs()
log = logging.getLogger("eqa_runner")


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def app(cfg: DictConfig) -> object:
    """Run one composed configuration; user errors become one line on stderr, exit code 2."""
    from eqa_runner.llm import ConfigSecretError
    from eqa_runner.records import RunDirError
    from eqa_runner.run import ConfigError, run
    from eqa_runner.tasks.base import DataError

    try:
        return run(cfg)
    except (ConfigError, DataError, RunDirError, ConfigSecretError) as e:
        log.error("%s", e)
        print(f"error: {e}", file=sys.stderr, flush=True)
        sys.exit(2)


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
    sys.argv[1:] = expand_num_shards(sys.argv[1:])
    app()


if __name__ == "__main__":
    main()
