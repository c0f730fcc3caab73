"""Trajectory maps and replays: drawn from trace fields over the simulator's navigable map."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from PIL import Image

from eqa_runner.mapping.trajectory import (
    COLORS,
    HEADER_PX,
    SceneMaps,
    caption,
    draw_trajectory,
    drawn_length,
    render_trajectory,
    time_color,
    trace_points,
)
from eqa_runner.sim.base import NavigableMap


def _room() -> NavigableMap:
    """A 6 m x 4 m navigable room (0.1 m cells) with a 1 m pillar, floor at y = 0."""
    nav = np.zeros((80, 60), dtype=bool)
    nav[10:70, 10:50] = True
    nav[35:45, 25:35] = False
    return NavigableMap(nav, (-1.0, -1.0), 0.1, 0.0)


def _trace(goal=True) -> dict:
    steps = [
        {"step": 0, "position": [0.5, 0.0, 0.5], "stop_reply": "no"},
        {"step": 1, "position": [2.0, 0.0, 0.5]},
        {"step": 2, "position": [4.0, 0.0, 2.0], "info": {"vlm": {"direction_reply": "left"}}},
    ]
    t = {"steps": steps, "final_position": [4.5, 0.0, 2.5]}
    if goal:
        t.update(goal_position=[0.5, 0.0, 2.5], d_t=4.0)
    return t


def test_trace_points_reads_path_asked_steps_goal_and_d_t() -> None:
    tp = trace_points(_trace())
    assert tp is not None
    assert tp.path.shape == (4, 3)  # three steps, then the final position
    assert tp.asked == [0, 2]  # a *_reply at the top level or nested in the step's info
    assert tp.goal is not None and tp.goal.tolist() == [0.5, 0.0, 2.5]
    assert tp.d_t == 4.0
    no_goal = trace_points(_trace(goal=False))
    assert no_goal is not None and no_goal.goal is None and no_goal.d_t is None
    assert trace_points({"answer": "blind"}) is None  # no positions: no map


def _at(img: Image.Image, nav: NavigableMap, p, s: int) -> tuple[int, int, int]:
    # the crop starts MARGIN_M before the floor's first cell (cell 10): i0 = j0 = 5
    x = int(((p[0] - nav.origin_xz[0]) / nav.cell_m - 5) * s)
    y = int(((p[2] - nav.origin_xz[1]) / nav.cell_m - 5) * s) + HEADER_PX
    return img.getpixel((x, y))[:3]


def test_map_draws_floor_obstacles_start_goal_and_final() -> None:
    nav = _room()
    img = draw_trajectory(nav, _trace(), max_px=300)
    s = 300 // 70 + 1  # ceil(300 / 70 cells)
    assert img.width == 70 * s and img.height == 50 * s + HEADER_PX
    assert _at(img, nav, [5.0, 0, 0.0], s) == COLORS["floor"]  # untouched floor
    assert _at(img, nav, [3.0, 0, 2.0], s) == COLORS["obstacle"]  # the pillar
    assert _at(img, nav, [0.5, 0, 0.5], s) == COLORS["start"]
    assert _at(img, nav, [0.5, 0, 2.5], s) == COLORS["goal"]
    assert _at(img, nav, [4.5, 0, 2.5], s) == COLORS["final"]
    blank = draw_trajectory(nav, {"steps": []}, max_px=300)  # still the floor plan
    assert _at(blank, nav, [0.5, 0, 0.5], s) == COLORS["floor"]


def test_points_off_the_drawn_floor_are_left_out() -> None:
    nav = _room()
    t = _trace(goal=False)
    t["final_position"] = [4.5, 3.0, 2.5]  # ended upstairs: not drawn on this floor
    img = draw_trajectory(nav, t, max_px=300)
    s = 300 // 70 + 1
    assert _at(img, nav, [4.5, 0, 2.5], s) != COLORS["final"]


class _CountingSim:
    """Only the capability the cache calls."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def navigable_map(self, floor_y: float, cell_m: float) -> NavigableMap:
        self.calls.append(floor_y)
        return _room()


def test_scene_maps_builds_each_scene_floor_once() -> None:
    maps, sim = SceneMaps(), _CountingSim()
    a = maps.get(sim, "scene.glb", 0.02)  # type: ignore[arg-type]
    b = maps.get(sim, "scene.glb", 0.1)  # type: ignore[arg-type]  # same floor band
    c = maps.get(sim, "scene.glb", 3.0)  # type: ignore[arg-type]  # the next storey
    assert a is b and c is not a
    assert sim.calls == [0.02, 3.0] and maps.built == 2


def test_default_navigable_map_samples_is_navigable() -> None:
    from eqa_runner.sim.base import Simulator

    class Disc(Simulator):  # only what the default needs; the rest is never called
        def bounds(self):
            return np.array([-1.0, 0.0, -1.0]), np.array([1.0, 0.0, 1.0])

        def is_navigable(self, p) -> bool:
            return bool(p[0] ** 2 + p[2] ** 2 < 0.5)

        load_scene = set_agent_pose = agent_pose = observe = snap_point = None  # type: ignore
        random_navigable_point_near = geodesic_distance = resolve_scene = close = None  # type: ignore

    Disc.__abstractmethods__ = frozenset()
    m = Disc().navigable_map(0.0, 0.25)
    assert m.navigable.shape == (8, 8) and m.navigable[4, 4] and not m.navigable[0, 0]
    assert m.origin_xz == (-1.0, -1.0)


@pytest.mark.slow
def test_express_run_draws_a_map_per_episode_and_a_replay(tmp_path, compose_cfg, express_demo):
    from eqa_runner.records import read_records
    from eqa_runner.run.loop import run

    overrides = [
        "task=express", "policy=fbe", f"task.data_dir={express_demo}", "llm=offline",
        "judge.model=offline", "run.limit=2", "sim.width=64", "sim.height=64",
        "policy.max_steps=3", "run.save_artifacts=true", "run.workers=2",
    ]  # fmt: skip
    out = run(compose_cfg(overrides, out=tmp_path / "r"))
    assert out["counts"]["ok"] == 2
    recs = read_records(tmp_path / "r" / "episodes.jsonl")
    for r in recs:
        t = r["trace"]
        png = tmp_path / "r" / t["trajectory_map"]
        assert png.parent.name == "maps" and Image.open(png).format == "PNG"
        assert 0 <= r["timings"]["map_s"] <= r["timings"]["total_s"]
        webp = Image.open(tmp_path / "r" / t["replay"])
        assert webp.format == "WEBP" and webp.n_frames == len(t["steps"])
        tp = trace_points(t)  # the map draws the hops the agent walked: their length is path_len
        assert tp is not None and drawn_length(tp) == pytest.approx(t["path_len"], rel=0.05)
    from eqa_runner.report.html import write_reports
    from eqa_runner.report.runs import load_runs

    html = write_reports(load_runs([tmp_path / "r"]), compare=False)[0].read_text()
    assert html.count('class="map"') == 2 and html.count("data:image/webp") == 2
    assert 'class="st"' in html  # the step strip
    assert html.count('<div class="legend"><b>trajectory map:</b>') == 1  # one legend per style
    assert html.count('<div class="cap">3 steps of ') == 2  # the caption, as text


@pytest.mark.slow
def test_trajectory_maps_off(tmp_path, compose_cfg, express_demo):
    from eqa_runner.records import read_records
    from eqa_runner.run.loop import run

    overrides = [
        "task=express", "policy=re", f"task.data_dir={express_demo}", "llm=offline",
        "judge.model=offline", "run.limit=1", "sim.width=32", "sim.height=32",
        "policy.max_steps=2", "run.trajectory_maps=false",
    ]  # fmt: skip
    run(compose_cfg(overrides, out=tmp_path / "r"))
    (rec,) = read_records(tmp_path / "r" / "episodes.jsonl")
    assert "trajectory_map" not in rec["trace"] and not (tmp_path / "r" / "maps").exists()
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["counts"]["ok"] == 1


@pytest.mark.parametrize("floor_y", [0.0])
@pytest.mark.slow
def test_mesh_backend_map_is_its_floor_grid(floor_y, express_demo) -> None:
    from eqa_runner.sim.mesh import MeshSimulator

    scene = next(express_demo.rglob("*.ply"), None) or next(express_demo.rglob("*.glb"))
    sim = MeshSimulator(width=32, height=32)
    sim.load_scene(sim.resolve_scene(scene.parent, str(scene)))
    m = sim.navigable_map(sim.floor_height, 0.1)
    assert m.navigable.sum() * m.cell_m**2 == pytest.approx(sim.navigable_area())
    assert m.floor_y == pytest.approx(sim.floor_height)


def _detour() -> dict:
    """Two hops around the pillar (x 2.5..3.5, z 1.5..2.5): the first bends at two corners."""
    steps = [
        {"step": 0, "position": [2.0, 0.0, 2.0], "hop_m": 3.0, "angle": 0.0,
         "hop_via": [[2.0, 0.0, 1.2], [4.0, 0.0, 1.2]]},
        {"step": 1, "position": [4.0, 0.0, 2.0], "hop_m": None, "angle": math.pi / 2},
    ]  # fmt: skip
    return {"steps": steps, "final_position": [5.0, 0.0, 3.0], "steps_taken": 2,
            "num_steps": 25, "path_len": 3.2}  # fmt: skip


def test_hops_are_drawn_along_their_recorded_geodesics() -> None:
    nav, tp = _room(), trace_points(_detour())
    assert tp is not None and len(tp.legs) == 2 and tp.teleports == frozenset({1})
    assert tp.legs[0].shape == (4, 3)  # position, two corners, next position
    assert drawn_length(tp) == pytest.approx(0.8 + 2.0 + 0.8 + math.hypot(1.0, 1.0))
    img, px, s = render_trajectory(nav, _detour(), max_px=300)
    on_path = img.getpixel(tuple(int(v) for v in px(np.array([3.0, 0.0, 1.2]))))[:3]
    assert on_path not in (COLORS["floor"], COLORS["obstacle"])  # drawn around the pillar
    through = img.getpixel(tuple(int(v) for v in px(np.array([3.0, 0.0, 2.0]))))[:3]
    assert through == COLORS["obstacle"]  # not straight through it


def test_the_path_is_coloured_by_time() -> None:
    assert time_color(0.0) != time_color(1.0)
    assert time_color(-1) == time_color(0.0) and time_color(2) == time_color(1.0)
    early, late = sum(time_color(0.1)), sum(time_color(0.9))
    assert early > late  # light early, dark late


def test_the_agent_is_drawn_with_its_heading() -> None:
    nav = _room()
    trace = _detour()  # the last hop faces yaw pi/2: forward is -x
    img, px, s = render_trajectory(nav, trace, max_px=300)
    x, y = px(np.array([5.0, 0.0, 3.0]))
    ahead = img.getpixel((int(x - 2.2 * s), int(y)))[:3]
    behind = img.getpixel((int(x + 2.2 * s), int(y)))[:3]
    assert ahead == COLORS["final"] and behind != COLORS["final"]


def test_a_replay_frame_draws_the_path_only_up_to_its_step() -> None:
    nav = _room()
    first, px, _ = render_trajectory(nav, _detour(), max_px=300, upto=0)
    whole, _, _ = render_trajectory(nav, _detour(), max_px=300)
    corner = tuple(int(v) for v in px(np.array([3.0, 0.0, 1.2])))
    assert first.getpixel(corner)[:3] == COLORS["floor"]  # hop 0 not walked yet
    assert whole.getpixel(corner)[:3] != COLORS["floor"]
    assert first.size == whole.size  # the same window: a replay's frames line up


def test_the_caption_has_one_step_count() -> None:
    text = caption(_detour())
    assert text.startswith("2 steps of 25, ") and "walked 3.2 m" in text
    assert "hops" not in text


def test_the_page_has_one_legend_per_map_style() -> None:
    from eqa_runner.mapping import topdown, trajectory
    from eqa_runner.report.html import EpisodeRow, Section
    from eqa_runner.report.html import Image as PageImage
    from eqa_runner.report.legends import map_legends

    def row(**media) -> EpisodeRow:
        return EpisodeRow("e", "c", None, "q", "a", "p", "j", **media)

    traj = PageImage("data:", "trajectory map", "maps/e.png")
    only_traj = [Section("run", [row(map=traj), row(map=traj)])]
    (legend,) = map_legends(only_traj)
    fine_eqa_marks = [m for m in trajectory.LEGEND if "fine_eqa" in m[2]]
    assert legend["name"] == "trajectory map"
    assert len(legend["marks"]) == len(trajectory.LEGEND) - len(fine_eqa_marks) == 8
    goe = [Section("run", [row(map=traj, map_caption="3 steps, GOE 2 hops + 1 turns, FBE 0")])]
    assert len(map_legends(goe)[0]["marks"]) == len(trajectory.LEGEND)  # its marks when shown
    assert all(str(svg).startswith("<svg") for svg, _ in legend["marks"])
    both = [Section("run", [row(map=traj, topdown=[traj])])]
    names = [lg["name"] for lg in map_legends(both)]
    assert names == ["trajectory map", "top-down maps (frontier planner)"]
    assert len(map_legends(both)[1]["marks"]) == len(topdown.LEGEND)
    assert map_legends([Section("run", [row()])]) == []
