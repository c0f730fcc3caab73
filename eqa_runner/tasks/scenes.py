"""What every simulator-based task shares: scene lookup through the selected backend and the
data check that every selected scene can be found."""

from __future__ import annotations

from collections.abc import Iterable
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


def scene_problems(scenes: Iterable[str], scenes_dir: Path, sim: Any, fetch_hint: str) -> list[str]:
    """One line per scene the backend ``sim`` cannot find under ``scenes_dir``."""
    problems = []
    for scene in sorted(set(scenes)):
        try:
            sim.resolve_scene(scenes_dir, scene)
        except FileNotFoundError as e:
            tried = [ln.strip() for ln in str(e).splitlines()[1:] if ln.strip()]
            first = tried[0] if tried else str(scenes_dir)
            more = f" (and {len(tried) - 1} other locations)" if len(tried) > 1 else ""
            problems.append(
                f"scene {scene}: no mesh at {first}{more}; stage the scenes with "
                f"`{fetch_hint}` or set task.scenes_dir"
            )
        except ValueError as e:
            problems.append(f"scene {scene}: {e}")
    return problems
