"""``python -m eqa_runner.data check vsibench``: the question file loads and every question's
scene video is there and decodes (``--no-decode``: is there)."""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

from eqa_runner.data.checks import CheckReport
from eqa_runner.errors import DataError

INSTRUCTIONS = """\
VSI-Bench's question files and videos are the Hugging Face dataset nyu-visionx/VSI-Bench
(apache-2.0; the videos come from ScanNet, ScanNet++ and ARKitScenes, whose own terms apply):

  huggingface-cli download nyu-visionx/VSI-Bench --repo-type dataset --local-dir {data_dir}
  cd {data_dir} && unzip arkitscenes.zip && unzip scannet.zip && unzip scannetpp.zip

so that a question's video is {videos}/<dataset>/<scene_name>.mp4. Then run
`python -m eqa_runner.data check vsibench --data-dir {data_dir}`.
"""


def check_vsibench(
    data_dir: Path, questions_file: Path | None = None, variant: str = "full", decode: bool = True
) -> CheckReport:
    """Every question's video is present (and, with ``decode``, has decodable frames)."""
    from eqa_runner.benchmarks.vsibench.task import VSIBenchTask
    from eqa_runner.benchmarks.vsibench.video import count_frames

    task = VSIBenchTask(
        data_dir=str(data_dir),
        variant=variant,
        questions_file=str(questions_file) if questions_file else None,
    )
    eps = task.load_episodes()
    missing = task.missing(eps)
    rep = CheckReport("vsibench", questions=len(eps), unit="videos")
    by_scene = defaultdict(list)
    for e in eps:
        by_scene[e.scene].append(e)
    rep.items = len(by_scene)
    for _scene, group in sorted(by_scene.items()):
        st = rep.stats.setdefault(
            group[0].meta["subset"], {"expected": 0, "present": 0, "questions": 0}
        )
        st["expected"] += 1
        st["questions"] += len(group)
        if group[0].episode_id in missing:
            rep.missing.append(f"{missing[group[0].episode_id]} ({len(group)} questions)")
            continue
        st["present"] += 1
        if decode:
            try:
                if count_frames(task.video(group[0])) == 0:
                    rep.broken.append(f"{task.video(group[0])}: no frames")
            except DataError as e:
                rep.broken.append(str(e))
    return rep


def add_check_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--questions-file", type=Path, default=None)
    p.add_argument("--variant", choices=("full", "debiased"), default="full")
    p.add_argument("--no-decode", action="store_true", help="presence only (no video decoded)")


def check(args: argparse.Namespace) -> int:
    """A DataError (a missing or unreadable file) is printed by the ``data`` command."""
    data_dir = Path(args.data_dir)
    rep = check_vsibench(data_dir, args.questions_file, args.variant, decode=not args.no_decode)
    print(rep.render())
    if rep.missing:
        print("\nTo stage the videos:\n" + INSTRUCTIONS.format(data_dir=data_dir, videos=data_dir))
    return 0 if rep.ok else 1
