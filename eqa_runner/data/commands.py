"""``python -m eqa_runner.data fetch|check openeqa|express|hmeqa``: stage and verify datasets.

``fetch openeqa`` downloads the question file and the benchmark's original prompt files from the
upstream repository (raw files over HTTPS) and the per-episode frame archives from a Hugging Face
mirror (or a local directory with the same layout), extracting each into
``<data_dir>/episodes/<subset>-v0/<episode_id>/``. ``fetch express`` downloads the question file
and prompt files and prints how to obtain the HM3D scenes (licensed; not downloadable here).
``check`` verifies that every question's frames / scene is present and readable (exit code 1 if
not). The check functions are importable: :func:`check_openeqa`, :func:`check_express`,
:func:`check_hmeqa`. ``fetch hmeqa`` downloads explore-eqa's two CSV files and prints how to
stage the (licensed) HM3D train scenes.
See docs/data.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eqa_runner.data.sources import (
    DEFAULT_PATTERN,
    FetchError,
    FrameSource,
    HFFrameSource,
    LocalFrameSource,
    download_url,
    extract_episode,
    is_complete,
)

OPENEQA_BASE_URL = "https://raw.githubusercontent.com/facebookresearch/open-eqa/main/"
OPENEQA_QUESTIONS = "data/open-eqa-v0.json"
OPENEQA_PROMPTS = ("blind-llm", "gpt4v", "mmbench", "mmbench-extra")
OPENEQA_PROMPTS_PATH = "prompts/{name}.txt"
OPENEQA_HF_REPO = "AIGeeksGroup/OpenEQA"

EXPRESS_BASE_URL = "https://raw.githubusercontent.com/HCPLab-SYSU/EXPRESS-Bench/main/"
EXPRESS_QUESTIONS = "data/express-bench.json"
EXPRESS_PROMPTS = ("answer", "evaluation", "explore", "random_answer")
EXPRESS_PROMPTS_PATH = "prompt/{name}.txt"

GLB_SUFFIXES = (".basis.glb", ".glb")
NAVMESH_SUFFIXES = (".basis.navmesh", ".navmesh")
DEMO_MESH_SUFFIXES = (".ply",)


# ----------------------------------------------------------------------------- check


@dataclass
class CheckReport:
    """Result of a data check: problems (empty = fine) and per-subset statistics."""

    benchmark: str
    questions: int = 0
    items: int = 0  # episodes (OpenEQA) or scenes (EXPRESS) referenced by the questions
    missing: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)
    stats: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.missing and not self.broken

    def problems(self) -> list[str]:
        return [f"missing: {m}" for m in self.missing] + [f"broken: {b}" for b in self.broken]

    def render(self) -> str:
        unit = "episodes" if self.benchmark == "openeqa" else "scenes"
        lines = [f"{self.benchmark}: {self.questions} questions over {self.items} {unit}"]
        for sub, st in sorted(self.stats.items()):
            sizes = ", ".join(f"{s} x{n}" for s, n in st.get("sizes", {}).items())
            extra = f"; {st['frames']} frames; sizes {sizes or '-'}" if "frames" in st else ""
            lines.append(
                f"  {sub}: {st['present']}/{st['expected']} {unit} present, "
                f"{st['questions']} questions{extra}"
            )
        for p in self.problems():
            lines.append(f"  {p}")
        lines.append(
            "OK" if self.ok else f"FAILED: {len(self.missing)} missing, {len(self.broken)} broken"
        )
        return "\n".join(lines)


def frame_status(path: Path) -> tuple[int, int] | str:
    """(width, height) when the whole frame decodes as a run would decode it, else the reason."""
    from eqa_runner.images import FrameError, decode_frame

    try:
        return decode_frame(path).size
    except FrameError as e:
        why = str(e).split(": ", 1)[-1]
        return why.replace("cannot decode image", "undecodable", 1)


def check_episode_frames(episode_dir: Path) -> tuple[list[Path], list[str], Counter]:
    """(frames, broken reasons, size counter) of an OpenEQA episode folder (all frames decoded)."""
    from concurrent.futures import ThreadPoolExecutor

    from eqa_runner.tasks.openeqa_em import list_frames

    frames = list_frames(Path(episode_dir))
    broken: list[str] = []
    sizes: Counter = Counter()
    with ThreadPoolExecutor(max_workers=4) as pool:  # PIL decodes with the GIL released
        results = list(pool.map(frame_status, frames))
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
) -> CheckReport:
    """Every question's episode folder has RGB frames with readable headers."""
    from eqa_runner.tasks.openeqa_em import QUESTIONS_FILE, load_questions

    data_dir = Path(data_dir)
    qfile = Path(questions_file) if questions_file else data_dir / QUESTIONS_FILE
    episodes_dir = Path(episodes_dir) if episodes_dir else data_dir / "episodes"
    eps = load_questions(qfile, allow_unknown_categories=True)
    if subset:
        eps = [e for e in eps if e.meta["subset"] == subset]
    rep = CheckReport("openeqa", questions=len(eps))
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
        frames, broken, sizes = check_episode_frames(d)
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


SIMULATORS = {"mesh": "eqa_runner.sim.mesh.MeshSimulator",
              "habitat": "eqa_runner.sim.habitat.HabitatSimulator"}  # fmt: skip


def _find(scenes_dir: Path, scene: str, suffixes: tuple[str, ...]) -> Path | None:
    from eqa_runner.sim.base import find_scene_file

    try:
        return find_scene_file(scenes_dir, scene, suffixes)
    except FileNotFoundError:
        return None


def check_express(
    data_dir: Path,
    questions_file: Path | None = None,
    scenes_dir: Path | None = None,
    poses: bool = False,
    sim: str = "mesh",
) -> CheckReport:
    """Every question's scene is found by the ``sim`` backend (the task's presence check, the
    one a run and a dry run make) and has a ``.navmesh`` (or is a demo ``.glb``/``.ply`` with its
    ``.scene.json``: the navmesh is baked at load), non-empty."""
    from eqa_runner.tasks.express import QUESTIONS_FILE, ExpressTask, load_questions

    data_dir = Path(data_dir)
    qfile = Path(questions_file) if questions_file else data_dir / QUESTIONS_FILE
    scenes_dir = Path(scenes_dir) if scenes_dir else data_dir / "scenes"
    eps = load_questions(qfile)
    task = ExpressTask(str(data_dir), questions_file=str(qfile), scenes_dir=str(scenes_dir),
                       simulator=SIMULATORS[sim])  # fmt: skip
    rep = check_express_scenes(scenes_dir, eps, "express", lambda e: e.meta.get("split", "all"),
                               presence=task.missing(eps))  # fmt: skip
    if poses and not rep.missing and not rep.broken:
        rep.broken += off_floor_poses(scenes_dir, eps)
    return rep


def off_floor_poses(scenes_dir: Path, eps: list) -> list[str]:
    """Starts and goals farther than ``OFF_FLOOR_M`` from the navigable floor, with the
    distance (each scene loaded once in the mesh backend, as a run would place the agent)."""
    from eqa_runner.policies.explore import OFF_FLOOR_M, floor_distance
    from eqa_runner.sim.mesh import MeshSimulator

    sim = MeshSimulator(width=8, height=8)
    out: list[str] = []
    for scene in sorted({e.scene for e in eps}):
        sim.load_scene(sim.resolve_scene(scenes_dir, scene))
        for e in (e for e in eps if e.scene == scene):
            for what in ("start_position", "goal_position"):
                p = e.meta.get(what)
                if p is None:
                    continue
                d, exact = floor_distance(sim, p)
                if d > OFF_FLOOR_M or not exact:
                    far = f"{d:.2f} m" if exact else f"at least {d:.2f} m"
                    out.append(f"episode {e.episode_id}: {what} {p} is {far} off the floor")
    sim.close()
    return out


# ----------------------------------------------------------------------------- HM-EQA

# explore-eqa pinned at the commit that fixed its question loading (docs/hmeqa.md)
HMEQA_BASE_URL = (
    "https://raw.githubusercontent.com/Stanford-ILIAD/explore-eqa/"
    "18381da3370c5f7729594f10ebc49b5644bbb88c/"
)
HMEQA_FILES = ("data/questions.csv", "data/scene_init_poses.csv")
HMEQA_INSTRUCTIONS = """\
HM-EQA's scenes are HM3D v0.2 train scenes, licensed by Matterport: they cannot be downloaded
here. Accept the terms at https://matterport.com/habitat-matterport-3d-research-dataset, then
download the train split (glb + habitat navmeshes, hm3d-train-glb-v0.2.tar and
hm3d-train-habitat-v0.2.tar), e.g. with habitat-sim's downloader:

  python -m habitat_sim.utils.datasets_download --username <id> --password <secret> \\
      --uids hm3d_train_v0.2 --data-path <download dir>

({n_scenes} scenes are referenced by the question file.) Put each scene at

  {scenes}/<NNNNN-id>/<id>.basis.glb
  {scenes}/<NNNNN-id>/<id>.basis.navmesh

e.g. {scenes}/00004-VqCaAuuoeWk/VqCaAuuoeWk.basis.glb (a symlink works: ln -s
<download dir>/hm3d/train {scenes}). Then run
`python -m eqa_runner.data check hmeqa --data-dir {data_dir}`.
"""


def hmeqa_raw_files(data_dir: Path) -> dict[str, Path]:
    return {rel: data_dir / rel.rsplit("/", 1)[-1] for rel in HMEQA_FILES}


def hmeqa_instructions(data_dir: Path) -> str:
    n_scenes = "?"
    try:
        from eqa_runner.tasks.hmeqa import HMEQATask

        n_scenes = str(len({e.scene for e in HMEQATask(str(data_dir)).load_episodes()}))
    except Exception:
        pass
    return HMEQA_INSTRUCTIONS.format(
        scenes=Path(data_dir) / "scenes", data_dir=data_dir, n_scenes=n_scenes
    )


def check_hmeqa(
    data_dir: Path,
    questions_file: Path | None = None,
    scenes_dir: Path | None = None,
    poses_file: Path | None = None,
    sim: str = "mesh",
) -> tuple[CheckReport, list[str]]:
    """Both CSV files load (every question's scene floor has a start pose) and every scene is
    found by the ``sim`` backend (the task's presence check, as a run and a dry run make it) with
    its ``.basis.navmesh`` (or is a demo ``.glb`` with its ``.scene.json``).
    Returns the report and notes (category counts, padding, answers on a padding option)."""
    from eqa_runner.tasks.hmeqa import HMEQATask

    data_dir = Path(data_dir)
    task = HMEQATask(
        str(data_dir),
        questions_file=str(questions_file) if questions_file else None,
        poses_file=str(poses_file) if poses_file else None,
        scenes_dir=str(scenes_dir) if scenes_dir else None,
        simulator=SIMULATORS[sim],
    )
    eps = task.load_episodes()
    rep = check_express_scenes(task.scenes_dir, eps, "hmeqa", lambda e: "all",
                               presence=task.missing(eps))  # fmt: skip
    cats = Counter(e.category for e in eps)
    padded = Counter(len(e.meta["padding"]) for e in eps)
    on_pad = [e for e in eps if e.meta.get("answer_is_padding")]
    notes = [
        f"{len({e.meta['scene_floor'] for e in eps})} scene floors; categories: "
        + ", ".join(f"{c} {n}" for c, n in sorted(cats.items())),
        "padding options per question: "
        + ", ".join(f"{k}: {n}" for k, n in sorted(padded.items())),
    ]
    for e in on_pad:  # upstream's one such row is kept (docs/hmeqa.md)
        notes.append(
            f"note: question {e.episode_id} ({e.scene} floor {e.meta['floor']}) has its answer "
            "on a padding option; kept as in upstream"
        )
    return rep, notes


# --- A-EQA check (eqa_runner/tasks/aeqa.py) ----------------------------------------------


def check_aeqa(
    data_dir: Path,
    questions_file: Path | None = None,
    scenes_dir: Path | None = None,
    sim: str = "mesh",
) -> CheckReport:
    """Every A-EQA question has a start pose, a reference path length and its scene (a ``.glb``
    + ``.navmesh``, or a demo ``.glb`` with its ``.scene.json``): each problem listed."""
    from eqa_runner.tasks.aeqa import AEQATask, load_aeqa, load_path_lengths

    task = AEQATask(str(data_dir), str(questions_file) if questions_file else None,
                    scenes_dir=str(scenes_dir) if scenes_dir else None,
                    simulator=SIMULATORS[sim])  # fmt: skip
    lengths: dict[str, float] = {}
    rep = CheckReport("aeqa")
    if task.path_lengths_file.is_file():
        lengths = load_path_lengths(task.path_lengths_file)
    else:
        rep.missing.append(f"{task.path_lengths_file} (reference path lengths; every question)")
    no_pose: list[str] = []
    eps = load_aeqa(task.questions_file, task.openeqa_file, task.poses_file, lengths, no_pose)
    rep.questions = len(eps) + len(no_pose)
    rep.missing += [f"question {q}: no start pose in {task.poses_file}" for q in no_pose]
    if lengths:
        rep.missing += [
            f"question {e.episode_id}: no reference path length in {task.path_lengths_file}"
            for e in eps
            if e.meta["reference_path_length"] is None
        ]
    express = check_express_scenes(task.scenes_dir, eps, presence=task.missing(eps))
    rep.items, rep.stats = express.items, express.stats
    rep.missing += express.missing
    rep.broken += express.broken
    return rep


def check_express_scenes(
    scenes_dir: Path,
    eps: list,
    benchmark: str = "aeqa",
    subset: Callable[[Any], str] = lambda e: "hm3d",
    presence: dict[str, str] | None = None,
) -> CheckReport:
    """Every episode's HM3D scene is present (``presence``: the task's ``missing``, episode id ->
    problem, so a run, a dry run and this check agree) and has a ``.glb`` + ``.navmesh`` (or a
    demo ``.glb``/``.ply`` with its ``.scene.json``: the navmesh is baked at load), non-empty;
    counted per ``subset``. A present scene without navmesh, or with an empty file, is broken."""
    rep = CheckReport(benchmark, questions=len(eps))
    by_scene: dict[str, list] = defaultdict(list)
    for e in eps:
        by_scene[e.scene].append(e)
    rep.items = len(by_scene)
    for scene in sorted(by_scene):
        st = rep.stats.setdefault(
            subset(by_scene[scene][0]), {"expected": 0, "present": 0, "questions": 0}
        )
        st["expected"] += 1
        st["questions"] += len(by_scene[scene])
        problem = None
        if presence is not None:
            problem = next((presence[e.episode_id] for e in by_scene[scene]
                            if e.episode_id in presence), None)  # fmt: skip
        kind, line = scene_status(scenes_dir, scene, presence is not None, problem)
        if kind == "present":
            st["present"] += 1
        else:
            getattr(rep, kind).extend(f"{x} ({len(by_scene[scene])} questions)" for x in line)
    return rep


def scene_status(
    scenes_dir: Path, scene: str, checked: bool, problem: str | None
) -> tuple[str, list[str]]:
    """("present" | "missing" | "broken", lines) of one scene. ``checked``: ``problem`` is the
    backend's presence verdict (None = found); else presence is judged from the files here."""
    if problem is not None:  # the staging steps follow the list: drop the run's hint
        return "missing", [problem.split("; ", 1)[0]]
    ply = _find(scenes_dir, scene, DEMO_MESH_SUFFIXES)
    glb = _find(scenes_dir, scene, GLB_SUFFIXES)
    nav = _find(scenes_dir, scene, NAVMESH_SUFFIXES)
    demo = _find(scenes_dir, scene, (".scene.json",))  # demo apartment: navmesh baked at load
    files = [ply] if ply and not glb else [glb] if glb and demo and not nav else [glb, nav]
    if not all(files):
        if glb and not nav:
            what = f"scene {scene}: no navmesh (.basis.navmesh) beside {glb}"
            return ("broken" if checked else "missing"), [what]
        if not checked:
            return "missing", [f"scene {scene}: no mesh (.basis.glb) under {scenes_dir}"]
        return "present", []  # found by the backend under another name (.gltf, .obj ...)
    empty = [f"{p}: empty file" for p in files if p is not None and p.stat().st_size == 0]
    return ("broken", empty) if empty else ("present", [])


def aeqa_instructions(args: argparse.Namespace, n_scenes: int) -> str:
    """The HM3D staging steps with A-EQA's scenes dir (every A-EQA scene is a val scene)."""
    scenes = Path(args.scenes_dir) if args.scenes_dir else Path(args.data_dir) / "scenes"
    return HM3D_INSTRUCTIONS.format(
        scenes=scenes, data_dir=args.data_dir, benchmark="aeqa", uids="hm3d_val_v0.2",
        archives="val split only (hm3d-val-glb-v0.2.tar and the navmeshes, "
        "hm3d-val-habitat-v0.2.tar; A-EQA needs no train scene)",
        counts=f"{n_scenes} val scenes are",
    )  # fmt: skip


# ----------------------------------------------------------------------------- fetch


def fetch_raw_files(
    base_url: str, files: dict[str, Path], *, force: bool = False, log=print
) -> list[Path]:
    """Download ``{relative url: destination}``; existing destinations are kept unless forced."""
    base = base_url if base_url.endswith("/") else base_url + "/"
    out = []
    for rel, dest in files.items():
        if dest.is_file() and dest.stat().st_size > 0 and not force:
            log(f"[skip] {dest} exists")
        else:
            download_url(base + rel, dest)
            log(f"[ok]   {base + rel} -> {dest}")
        out.append(dest)
    return out


def openeqa_raw_files(data_dir: Path) -> dict[str, Path]:
    files = {OPENEQA_QUESTIONS: data_dir / "open-eqa-v0.json"}
    for name in OPENEQA_PROMPTS:
        files[OPENEQA_PROMPTS_PATH.format(name=name)] = data_dir / "prompts" / f"{name}.txt"
    return files


def express_raw_files(data_dir: Path) -> dict[str, Path]:
    files = {EXPRESS_QUESTIONS: data_dir / "express-bench.json"}
    for name in EXPRESS_PROMPTS:
        files[EXPRESS_PROMPTS_PATH.format(name=name)] = data_dir / "prompts" / f"{name}.txt"
    return files


def wanted_episodes(questions_file: Path, subset: str) -> list[str]:
    """Episode ids (folder names) of ``subset`` referenced by the OpenEQA question file."""
    data = json.loads(Path(questions_file).read_text(encoding="utf-8-sig"))
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


HM3D_INSTRUCTIONS = """\
HM3D scenes cannot be downloaded by eqa_runner (Matterport licence: request access first at
https://matterport.com/habitat-matterport-3d-research-dataset and
https://aihabitat.org/datasets/hm3d/). With your API token:

  python -m habitat_sim.utils.datasets_download --username <api-token-id> \\
      --password <api-token-secret> --uids {uids} \\
      --data-path <download dir>

You need the v0.2 {archives} ({counts} referenced by the question file).
Put each scene at

  {scenes}/<split>/<NNNNN-id>/<id>.basis.glb
  {scenes}/<split>/<NNNNN-id>/<id>.basis.navmesh

e.g. {scenes}/val/00800-TEEsavR23oF/TEEsavR23oF.basis.glb (a symlink to the habitat data dir
works too: ln -s <download dir>/hm3d/val {scenes}/val). Then run
`python -m eqa_runner.data check {benchmark} --data-dir {data_dir}`.
"""


def express_instructions(data_dir: Path) -> str:
    qfile = Path(data_dir) / "express-bench.json"
    n_val = n_train = "?"
    try:
        from eqa_runner.tasks.express import load_questions

        eps = load_questions(qfile)
        scenes = {(e.scene, e.meta["split"]) for e in eps}
        n_val = str(sum(1 for _, s in scenes if s == "val"))
        n_train = str(sum(1 for _, s in scenes if s == "train"))
    except Exception:
        pass
    return HM3D_INSTRUCTIONS.format(
        scenes=Path(data_dir) / "scenes", data_dir=data_dir, benchmark="express",
        uids="hm3d_val_v0.2 hm3d_train_v0.2",
        archives='"<split>-glb" (hm3d-<split>-glb-v0.2.tar) and "<split>-habitat" (navmeshes, '
        "hm3d-<split>-habitat-v0.2.tar) archives of the val and train splits",
        counts=f"{n_val} val and {n_train} train scenes are",
    )  # fmt: skip


# ----------------------------------------------------------------------------- CLI


def _frame_source(args: argparse.Namespace) -> FrameSource:
    if args.frames_dir:
        return LocalFrameSource(Path(args.frames_dir), args.archive_pattern)
    return HFFrameSource(args.hf_repo, args.archive_pattern, revision=args.hf_revision)


def cmd_fetch(args: argparse.Namespace) -> int:
    data_dir = Path(args.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    if args.benchmark == "hmeqa":  # question + pose files; the scenes are licensed
        fetch_raw_files(
            args.base_url or HMEQA_BASE_URL, hmeqa_raw_files(data_dir), force=args.force
        )
        print(hmeqa_instructions(data_dir))
        return 0
    if args.benchmark == "express":
        fetch_raw_files(
            args.base_url or EXPRESS_BASE_URL, express_raw_files(data_dir), force=args.force
        )
        print(f"prompt files: use prompts.dir={data_dir / 'prompts'}")
        print(express_instructions(data_dir))
        return 0
    fetch_raw_files(
        args.base_url or OPENEQA_BASE_URL, openeqa_raw_files(data_dir), force=args.force
    )
    print(f"prompt files: use prompts.dir={data_dir / 'prompts'}")
    if args.questions_only:
        return 0
    source = _frame_source(args)
    subsets = [args.subset] if args.subset else ["hm3d", "scannet"]
    ok = True
    for subset in subsets:
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


def cmd_check(args: argparse.Namespace) -> int:
    from eqa_runner.errors import DataError

    if args.benchmark == "hmeqa":
        try:
            rep, notes = check_hmeqa(Path(args.data_dir), args.questions_file, args.scenes_dir,
                                     sim=args.sim)  # fmt: skip
        except DataError as e:
            print(f"FAILED: {e}")
            return 1
        print("\n".join([rep.render(), *notes]))
        if not rep.ok and rep.missing:
            print(f"\nTo stage the scenes:\n{hmeqa_instructions(Path(args.data_dir))}")
        return 0 if rep.ok else 1
    try:
        if args.benchmark == "openeqa":
            rep = check_openeqa(
                Path(args.data_dir), args.questions_file, args.episodes_dir, args.subset
            )
        elif args.benchmark == "aeqa":
            rep = check_aeqa(Path(args.data_dir), args.questions_file, args.scenes_dir,
                             sim=args.sim)  # fmt: skip
        else:
            rep = check_express(Path(args.data_dir), args.questions_file, args.scenes_dir,
                                poses=args.poses, sim=args.sim)  # fmt: skip
    except DataError as e:
        print(f"FAILED: {e}")
        return 1
    print(rep.render())
    if not rep.ok and args.benchmark == "express" and rep.missing:
        print(f"\nTo stage the scenes:\n{express_instructions(Path(args.data_dir))}")
    if not rep.ok and args.benchmark == "aeqa" and any(m.startswith("scene ") for m in rep.missing):
        steps = aeqa_instructions(args, rep.items)
        print(f"\nTo stage the scenes (HM3D v0.2 val; see docs/aeqa.md):\n{steps}")
    return 0 if rep.ok else 1


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m eqa_runner.data",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = ap.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fetch", help="download a benchmark's questions, prompts and frames")
    f.add_argument("benchmark", choices=["openeqa", "express", "hmeqa"])
    f.add_argument("--data-dir", default=None, help="default data/openeqa or data/express")
    f.add_argument("--subset", choices=["hm3d", "scannet"], default=None, help="default: both")
    f.add_argument("--limit-episodes", type=int, default=None, help="first N episodes only")
    f.add_argument("--base-url", default=None, help="raw-file base URL of the upstream repo")
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
    c = sub.add_parser("check", help="verify that every question's frames / scene is present")
    c.add_argument("benchmark", choices=["openeqa", "express", "hmeqa", "aeqa"])
    c.add_argument("--data-dir", default=None)
    c.add_argument("--questions-file", type=Path, default=None)
    c.add_argument("--episodes-dir", type=Path, default=None, help="OpenEQA: default data/episodes")
    c.add_argument(
        "--scenes-dir", type=Path, default=None, help="EXPRESS, HM-EQA, A-EQA: <data-dir>/scenes"
    )
    c.add_argument("--subset", choices=["hm3d", "scannet"], default=None)
    c.add_argument(
        "--sim",
        choices=sorted(SIMULATORS),
        default="mesh",
        help="EXPRESS, HM-EQA, A-EQA: the backend whose scene files count (as the run's sim=)",
    )
    c.add_argument(
        "--poses",
        action="store_true",
        help="EXPRESS: also load every scene and list starts/goals off the navigable floor",
    )
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.data_dir is None:
        args.data_dir = f"data/{args.benchmark}"
    try:
        return cmd_fetch(args) if args.command == "fetch" else cmd_check(args)
    except FetchError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
