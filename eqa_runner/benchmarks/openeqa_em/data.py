"""``python -m eqa_runner.data fetch|check openeqa``: the question file and original prompts
(raw files of the upstream repository), the per-episode frame archives (a Hugging Face mirror
or a local directory with the same layout, extracted into
``<data_dir>/episodes/<subset>-v0/<episode_id>/``) and the check that every frame decodes."""

from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from eqa_runner.data.checks import (
    CheckReport,
    fetch_raw_files,
    frame_header_status,
    frame_status,
)
from eqa_runner.data.sources import (
    DEFAULT_PATTERN,
    FetchError,
    FrameSource,
    HFFrameSource,
    LocalFrameSource,
    extract_episode,
    is_complete,
)
from eqa_runner.safe_io import read_json

OPENEQA_BASE_URL = "https://raw.githubusercontent.com/facebookresearch/open-eqa/main/"
OPENEQA_QUESTIONS = "data/open-eqa-v0.json"
OPENEQA_PROMPTS = ("blind-llm", "gpt4v", "mmbench", "mmbench-extra")
OPENEQA_PROMPTS_PATH = "prompts/{name}.txt"
OPENEQA_HF_REPO = "AIGeeksGroup/OpenEQA"


def check_episode_frames(
    episode_dir: Path, decode: bool = True
) -> tuple[list[Path], list[str], Counter]:
    """(frames, broken reasons, size counter) of an OpenEQA episode folder (all frames decoded,
    or with ``decode=False`` their headers read)."""
    from concurrent.futures import ThreadPoolExecutor

    from eqa_runner.benchmarks.openeqa_em.task import list_frames

    frames = list_frames(Path(episode_dir))
    broken: list[str] = []
    sizes: Counter = Counter()
    with ThreadPoolExecutor(max_workers=4) as pool:  # PIL decodes with the GIL released
        results = list(pool.map(frame_status if decode else frame_header_status, frames))
    for f, res in zip(frames, results, strict=True):
        if isinstance(res, str):
            broken.append(f"{f}: {res}")
        else:
            sizes[f"{res[0]}x{res[1]}"] += 1
    return frames, broken, sizes


def check_openeqa(
    data_dir: Path,
    questions_file: Path | None = None,
    episodes_dir: Path | None = None,
    subset: str | None = None,
    decode: bool = True,
) -> CheckReport:
    """Every question's episode folder has RGB frames that decode (``decode=False``: with
    readable headers)."""
    from eqa_runner.benchmarks.openeqa_em.task import QUESTIONS_FILE, load_questions

    data_dir = Path(data_dir)
    qfile = Path(questions_file) if questions_file else data_dir / QUESTIONS_FILE
    episodes_dir = Path(episodes_dir) if episodes_dir else data_dir / "episodes"
    eps = load_questions(qfile, allow_unknown_categories=True)
    if subset:
        eps = [e for e in eps if e.meta["subset"] == subset]
    rep = CheckReport("openeqa", questions=len(eps), unit="episodes")
    by_hist: dict[str, list] = defaultdict(list)
    for e in eps:
        by_hist[e.scene].append(e)
    rep.items = len(by_hist)
    for hist in sorted(by_hist):
        sub = by_hist[hist][0].meta["subset"]
        st = rep.stats.setdefault(
            sub, {"expected": 0, "present": 0, "questions": 0, "frames": 0, "sizes": Counter()}
        )
        st["expected"] += 1
        st["questions"] += len(by_hist[hist])
        d = episodes_dir / hist
        frames, broken, sizes = check_episode_frames(d, decode)
        if not frames:
            why = "folder missing" if not d.exists() else "no RGB frames"
            rep.missing.append(f"{d} ({why}; {len(by_hist[hist])} questions)")
            continue
        st["present"] += 1
        st["frames"] += len(frames)
        st["sizes"].update(sizes)
        rep.broken.extend(broken)
    for st in rep.stats.values():
        st["sizes"] = dict(st["sizes"].most_common())
    return rep


def openeqa_raw_files(data_dir: Path) -> dict[str, Path]:
    files = {OPENEQA_QUESTIONS: data_dir / "open-eqa-v0.json"}
    for name in OPENEQA_PROMPTS:
        files[OPENEQA_PROMPTS_PATH.format(name=name)] = data_dir / "prompts" / f"{name}.txt"
    return files


def wanted_episodes(questions_file: Path, subset: str) -> list[str]:
    """Episode ids (folder names) of ``subset`` referenced by the OpenEQA question file."""
    data = read_json(questions_file)
    ids = set()
    for rec in data:
        hist = str(rec.get("episode_history", ""))
        head, _, eid = hist.partition("/")
        if head.lower().startswith(subset) and eid:
            ids.add(eid)
    return sorted(ids)


@dataclass
class FetchResult:
    extracted: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    not_in_source: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    expected: int = 0
    present: int = 0

    @property
    def ok(self) -> bool:
        return not self.not_in_source and not self.failed and self.present == self.expected


def fetch_openeqa_frames(
    source: FrameSource,
    data_dir: Path,
    subset: str,
    *,
    questions_file: Path | None = None,
    limit_episodes: int | None = None,
    download_dir: Path | None = None,
    keep_archives: bool = False,
    progress: bool = True,
) -> FetchResult:
    """Download + extract the frame archives of ``subset``; finished episodes are skipped."""
    from tqdm import tqdm

    data_dir = Path(data_dir)
    qfile = Path(questions_file) if questions_file else data_dir / "open-eqa-v0.json"
    wanted = wanted_episodes(qfile, subset)
    if limit_episodes is not None:
        wanted = wanted[: max(0, limit_episodes)]
    target_root = data_dir / "episodes" / f"{subset}-v0"
    dl_dir = Path(download_dir) if download_dir else data_dir / "_downloads"
    res = FetchResult(expected=len(wanted))
    todo = [e for e in wanted if not is_complete(target_root / e)]
    res.skipped = [e for e in wanted if e not in todo]
    available = source.archives(subset) if todo else {}
    for eid in tqdm(todo, desc=f"{subset} episodes", unit="ep", disable=not progress):
        name = available.get(eid)
        if name is None:
            res.not_in_source.append(eid)
            continue
        try:
            archive = source.download(name, dl_dir)
            extract_episode(archive, target_root / eid)
        except FetchError as e:
            res.failed.append(f"{eid}: {e}")
            continue
        if not keep_archives and not isinstance(source, LocalFrameSource):
            Path(archive).unlink(missing_ok=True)
        res.extracted.append(eid)
    res.present = sum(1 for e in wanted if is_complete(target_root / e))
    return res


def _frame_source(args: argparse.Namespace) -> FrameSource:
    if args.frames_dir:
        return LocalFrameSource(Path(args.frames_dir), args.archive_pattern)
    return HFFrameSource(args.hf_repo, args.archive_pattern, revision=args.hf_revision)


SUBSETS = ("hm3d", "scannet")


def add_fetch_args(f: argparse.ArgumentParser) -> None:
    f.add_argument("--subset", choices=SUBSETS, default=None, help="default: both")
    f.add_argument("--limit-episodes", type=int, default=None, help="first N episodes only")
    f.add_argument("--base-url", default=OPENEQA_BASE_URL, help="raw-file base URL of upstream")
    f.add_argument("--hf-repo", default=OPENEQA_HF_REPO, help="HF dataset with frame archives")
    f.add_argument("--hf-revision", default=None)
    f.add_argument(
        "--frames-dir",
        default=None,
        help="a local directory laid out like the HF repo, used instead of the hub",
    )
    f.add_argument(
        "--archive-pattern",
        default=DEFAULT_PATTERN,
        help="archive names in the source (fields {subset}, {episode})",
    )
    f.add_argument("--questions-only", action="store_true", help="question + prompt files only")
    f.add_argument("--keep-archives", action="store_true")
    f.add_argument("--force", action="store_true", help="re-download existing raw files")
    f.add_argument("--no-progress", action="store_true")


def fetch(args: argparse.Namespace) -> int:
    """Question and prompt files, then the frames of each subset (resumable)."""
    data_dir = Path(args.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    fetch_raw_files(args.base_url, openeqa_raw_files(data_dir), force=args.force)
    print(f"prompt files: use prompts.dir={data_dir / 'prompts'}")
    if args.questions_only:
        return 0
    source = _frame_source(args)
    ok = True
    for subset in [args.subset] if args.subset else list(SUBSETS):
        print(f"frames of {subset} from {source.describe()} (pattern {source.pattern!r})")
        res = fetch_openeqa_frames(
            source,
            data_dir,
            subset,
            limit_episodes=args.limit_episodes,
            keep_archives=args.keep_archives,
            progress=not args.no_progress,
        )
        print(
            f"{subset}: {res.present}/{res.expected} episodes present "
            f"({len(res.extracted)} extracted, {len(res.skipped)} already complete)"
        )
        for eid in res.not_in_source:
            expected = source.pattern.format(subset=subset, episode=eid)
            print(f"  not in source: {eid} (expected {expected})")
        for f in res.failed:
            print(f"  failed: {f}")
        ok = ok and res.ok
    if not ok:
        print("fetch incomplete: re-run the same command to resume", file=sys.stderr)
    return 0 if ok else 1


def add_check_args(c: argparse.ArgumentParser) -> None:
    c.add_argument("--questions-file", type=Path, default=None)
    c.add_argument("--episodes-dir", type=Path, default=None, help="default <data-dir>/episodes")
    c.add_argument("--subset", choices=SUBSETS, default=None)
    c.add_argument(
        "--no-decode", action="store_true", help="read frame headers only (fast; not the pixels)"
    )


def check(args: argparse.Namespace) -> int:
    """A DataError (a missing or unreadable file) is printed by the ``data`` command."""
    rep = check_openeqa(
        Path(args.data_dir),
        args.questions_file,
        args.episodes_dir,
        args.subset,
        decode=not args.no_decode,
    )
    print(rep.render())
    return 0 if rep.ok else 1
