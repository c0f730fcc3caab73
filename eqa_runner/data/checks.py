"""What every benchmark's data check shares: the report, frame decoding, HM3D scene files,
raw-file downloads and the HM3D staging steps (each benchmark's check is in its package)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eqa_runner.data.sources import download_url

GLB_SUFFIXES = (".basis.glb", ".glb")
NAVMESH_SUFFIXES = (".basis.navmesh", ".navmesh")
DEMO_MESH_SUFFIXES = (".ply",)


# ----------------------------------------------------------------------------- check


@dataclass
class CheckReport:
    """Result of a data check: problems (empty = fine) and per-subset statistics."""

    benchmark: str
    questions: int = 0
    items: int = 0  # episodes or scenes referenced by the questions (``unit``)
    missing: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)
    stats: dict[str, dict[str, Any]] = field(default_factory=dict)
    unit: str = "scenes"  # what ``items`` counts

    @property
    def ok(self) -> bool:
        return not self.missing and not self.broken

    def problems(self) -> list[str]:
        return [f"missing: {m}" for m in self.missing] + [f"broken: {b}" for b in self.broken]

    def render(self) -> str:
        unit = self.unit
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


def frame_header_status(path: Path) -> tuple[int, int] | str:
    """(width, height) from the image header alone (``data check --no-decode``), else why not."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            return im.size
    except (OSError, UnidentifiedImageError, ValueError) as e:
        return f"unreadable header ({type(e).__name__})"


def find_scene(scenes_dir: Path, scene: str, suffixes: tuple[str, ...]) -> Path | None:
    from eqa_runner.sim.base import find_scene_file

    try:
        return find_scene_file(scenes_dir, scene, suffixes)
    except FileNotFoundError:
        return None


SIMULATORS = {
    "mesh": "eqa_runner.sim.mesh.MeshSimulator",
    "habitat": "eqa_runner.sim.habitat.HabitatSimulator",
}


def add_sim_arg(p: Any) -> None:
    """``--sim mesh|habitat``: the backend whose scene files count (as the run's ``sim=``)."""
    p.add_argument(
        "--sim",
        choices=sorted(SIMULATORS),
        default="mesh",
        help="the backend whose scene files count (as the run's sim=)",
    )


def check_scene_files(
    scenes_dir: Path,
    eps: list,
    benchmark: str,
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
            problem = next(
                (presence[e.episode_id] for e in by_scene[scene] if e.episode_id in presence), None
            )
        kind, lines = scene_status(scenes_dir, scene, presence is not None, problem)
        if kind == "present":
            st["present"] += 1
        else:
            getattr(rep, kind).extend(f"{x} ({len(by_scene[scene])} questions)" for x in lines)
    return rep


def scene_status(
    scenes_dir: Path, scene: str, checked: bool, problem: str | None
) -> tuple[str, list[str]]:
    """("present" | "missing" | "broken", lines) of one scene. ``checked``: ``problem`` is the
    backend's presence verdict (None = found); else presence is judged from the files here."""
    if problem is not None:  # the staging steps follow the list: drop the run's hint
        return "missing", [problem.split("; ", 1)[0]]
    ply = find_scene(scenes_dir, scene, DEMO_MESH_SUFFIXES)
    glb = find_scene(scenes_dir, scene, GLB_SUFFIXES)
    nav = find_scene(scenes_dir, scene, NAVMESH_SUFFIXES)
    demo = find_scene(scenes_dir, scene, (".scene.json",))  # demo apartment: navmesh baked
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
