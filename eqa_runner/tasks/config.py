"""The keys every ``task`` schema has; each benchmark's schema extends it in its package
(``eqa_runner/benchmarks/<name>/config.py``). Nothing heavy is imported here.
"""

from __future__ import annotations

from dataclasses import dataclass

from omegaconf import MISSING


@dataclass
class TaskConfig:
    """Keys every benchmark has."""

    _target_: str = MISSING
    name: str = MISSING
    data_dir: str = MISSING
    questions_file: str | None = None  # default: a file in data_dir
    split: str = "all"
    check_data: bool = True  # at start, check that every selected episode's data is there
