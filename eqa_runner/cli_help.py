"""Fast ``--help``: Hydra's own help deep-copies its config repository once per group (~2 s);
this lists the same groups by reading ``conf/`` and prints in a fraction of that."""

from __future__ import annotations

from pathlib import Path

import yaml

from eqa_runner.registry import benchmarks, option_files

CONF = Path(__file__).resolve().parent / "conf"
GROUPS = ("task", "policy", "llm", "judge", "sim", "experiment", "hydra/launcher")


def wants_fast_help(argv: list[str]) -> bool:
    """Plain ``--help``/``-h`` (with overrides Hydra's full help is used: it composes them)."""
    return bool(argv) and argv[0] in ("--help", "-h") and len(argv) == 1


def render_help() -> str:
    cfg = yaml.safe_load((CONF / "config.yaml").read_text())
    help_cfg = cfg.get("hydra", {}).get("help", {})
    lines = [
        help_cfg.get("header", "eqa_runner").rstrip(),
        "",
        "== Configuration groups ==",
        "Compose your configuration from those groups (group=option)",
        "",
    ]
    for group in GROUPS:
        options = group_options(group)
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


def group_options(group: str) -> list[str]:
    """A group's options: eqa_runner's own and those of installed plugins' config dirs."""
    return sorted({p.stem for p in option_files(group)})


def benchmark_lines() -> list[str]:
    """One line per benchmark of the registry: its task option, judge, protocol and docs."""
    out = []
    for b in benchmarks():
        parts = [f"judge={b.judge}"] + ([f"protocol={b.protocol}"] if b.protocol else [])
        docs = f"; {b.docs}" if b.docs else ""
        out.append(f"task={b.name}: {b.title} ({', '.join(parts)}{docs})")
    return out
