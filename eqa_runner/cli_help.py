"""Fast ``--help``: Hydra's own help deep-copies its config repository once per group (~2 s);
this lists the same groups by reading ``conf/`` and prints in a fraction of that."""

from __future__ import annotations

from pathlib import Path

import yaml

from eqa_runner.registry import benchmarks, option_files

CONF = Path(__file__).resolve().parent / "conf"
GROUPS = ("task", "policy", "llm", "judge", "sim", "logger", "experiment", "hydra/launcher")
HELP_FLAGS = ("--help", "-h")


def wants_fast_help(argv: list[str]) -> bool:
    """``--help``/``-h`` anywhere on the line, with or without ``--config-dir`` and overrides
    (Hydra's own help, ``--hydra-help``, lists its internal schema nodes and omits groups)."""
    return any(a in HELP_FLAGS for a in argv)


def wants_version(argv: list[str]) -> bool:
    """``--version`` (Hydra's own flag would print Hydra's version, not the project's)."""
    return "--version" in argv


def render_version() -> str:
    import sys
    from importlib import metadata

    from eqa_runner import __version__

    hydra = metadata.version("hydra-core")
    py = ".".join(map(str, sys.version_info[:3]))
    return f"eqa_runner {__version__} (hydra-core {hydra}, Python {py})\n"


def user_config_dirs(argv: list[str]) -> list[Path]:
    """The dirs given with ``--config-dir``/``-cd`` (``X`` or ``=X``), whose options join the
    listing as Hydra would add them to the search path."""
    out = []
    for i, a in enumerate(argv):
        if a in ("--config-dir", "-cd") and i + 1 < len(argv):
            out.append(Path(argv[i + 1]))
        elif a.startswith("--config-dir="):
            out.append(Path(a.split("=", 1)[1]))
    return out


def render_help(argv: list[str] | None = None) -> str:
    cfg = yaml.safe_load((CONF / "config.yaml").read_text())
    help_cfg = cfg.get("hydra", {}).get("help", {})
    lines = [
        help_cfg.get("header", "eqa_runner").rstrip(),
        "",
        "== Configuration groups ==",
        "Compose your configuration from those groups (group=option)",
        "",
    ]
    extra = user_config_dirs(argv or [])
    for group in GROUPS:
        options = group_options(group, extra)
        if options:
            lines.append(f"{group}: {', '.join(options)}")
    lines += ["", "== Benchmarks ==", *benchmark_lines()]
    lines += [
        "",
        "Key settings: run.limit, run.episodes, run.workers, run.shard=i/n, run.seed,",
        "  run.resume, run.dry_run, run.save_artifacts, llm.model, judge.model,",
        "  policy.num_frames, policy.image_size, task.data_dir, task.split",
        "The composed config: python -m eqa_runner --cfg job [overrides]",
        "",
        help_cfg.get("footer", "").rstrip(),
    ]
    return "\n".join(lines) + "\n"


def group_options(group: str, extra_dirs: list[Path] | None = None) -> list[str]:
    """A group's options: eqa_runner's own, those of installed plugins' config dirs and of the
    user's ``--config-dir`` dirs (``extra_dirs``)."""
    files = option_files(group) + [f for d in extra_dirs or [] for f in (d / group).glob("*.yaml")]
    return sorted({p.stem for p in files})


def benchmark_lines() -> list[str]:
    """One line per benchmark of the registry: its task option, judge, protocol and docs."""
    out = []
    for b in benchmarks():
        parts = [f"judge={b.judge}"] + ([f"protocol={b.protocol}"] if b.protocol else [])
        docs = f"; {b.docs}" if b.docs else ""
        out.append(f"task={b.name}: {b.title} ({', '.join(parts)}{docs})")
    return out
