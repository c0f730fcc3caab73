"""What every simulator-based task shares: scene lookup through the selected backend and the
data check that every selected scene can be found."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from eqa_runner.sim.base import parse_scene_id


def scene_key(scene: str) -> str:
    """``NNNNN-hash`` of a scene id (so ``hm3d/val/00800-X`` and ``00800-X`` compare equal)."""
    try:
        return parse_scene_id(scene)[1]
    except ValueError:
        return str(scene)


def simulator_stub(simulator: str) -> Any:
    """A default-configured instance of the backend class ``simulator`` (for scene lookup only)."""
    from hydra.utils import get_class

    return get_class(simulator)()


def backend_name(sim: Any) -> str:
    """``habitat`` / ``mesh`` (the ``sim=`` choice) of a backend instance."""
    name = type(sim).__name__.lower()
    return "habitat" if "habitat" in name else "mesh" if "mesh" in name else name


def missing_scenes(
    scenes: Iterable[str],
    scenes_dir: Path,
    sim: Any,
    fetch_hint: str,
    expected: Callable[[str], Path] | None = None,
) -> dict[str, str]:
    """``scene -> problem`` for each scene the backend ``sim`` cannot find under
    ``scenes_dir`` (stat calls only, once per scene). ``expected(scene)`` is the path the
    message names first (the benchmark's own layout), else the backend's first candidate."""
    problems: dict[str, str] = {}
    for scene in sorted(set(scenes)):
        try:
            sim.resolve_scene(scenes_dir, scene)
        except FileNotFoundError as e:
            tried = [ln.strip() for ln in str(e).splitlines()[1:] if ln.strip()]
            first = str(expected(scene)) if expected else tried[0] if tried else str(scenes_dir)
            more = f" (or {len(tried) - 1} other locations)" if len(tried) > 1 else ""
            problems[scene] = (
                f"scene {scene}: no scene file for sim={backend_name(sim)} at {first}{more}; "
                f"{fetch_hint}, or set task.scenes_dir"
            )
        except ValueError as e:
            problems[scene] = f"scene {scene}: {e}"
    return problems


def missing_by_episode(episodes: Sequence[Any], by_scene: dict[str, str]) -> dict[str, str]:
    """``episode_id -> problem`` of the episodes whose scene has one."""
    return {e.episode_id: by_scene[e.scene] for e in episodes if e.scene in by_scene}


def scene_inputs(scenes: Iterable[str], scenes_dir: Path, sim: Any) -> dict[str, Path]:
    """``{scene: mesh file, "<scene> navmesh": navmesh file}`` of each scene the backend
    ``sim`` finds under ``scenes_dir`` (a ``Task.inputs``; stat calls only)."""
    out: dict[str, Path] = {}
    for scene in sorted(set(scenes)):
        try:
            spec = sim.resolve_scene(scenes_dir, scene)
        except (FileNotFoundError, ValueError):
            continue  # the data check names it
        out[scene] = Path(spec.mesh_path)
        if spec.navmesh_path is not None and Path(spec.navmesh_path).is_file():
            out[f"{scene} navmesh"] = Path(spec.navmesh_path)
    return out


def scene_problems(scenes: Iterable[str], scenes_dir: Path, sim: Any, fetch_hint: str) -> list[str]:
    """One line per scene the backend ``sim`` cannot find under ``scenes_dir``."""
    return list(missing_scenes(scenes, scenes_dir, sim, fetch_hint).values())
