"""Fixtures for the simulator tests: tiny box scenes written as glTF in the HM3D convention.

The ``sim`` fixture runs each contract test on every backend: ``mesh`` always, ``habitat`` (marker
``habitat``) where habitat-sim is importable. CI runs the habitat-marked tests inside the
habitat-cpu chroot on the real habitat-sim (``.ci/run``); elsewhere they are skipped, saying so.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # allow running without an editable install
    sys.path.insert(0, str(ROOT))

from eqa_runner.demo.mesh_builder import MeshBuilder  # noqa: E402
from eqa_runner.demo.mesh_files import write_glb  # noqa: E402

HABITAT_AVAILABLE = importlib.util.find_spec("habitat_sim") is not None
BACKENDS = [pytest.param("mesh"), pytest.param("habitat", marks=pytest.mark.habitat)]


def require_habitat() -> None:
    """Skip where habitat-sim is missing; fail instead under ``EQA_REQUIRE_HABITAT=1`` (CI's
    habitat-cpu run, where every habitat-marked test must run)."""
    if HABITAT_AVAILABLE:
        return
    if os.environ.get("EQA_REQUIRE_HABITAT") == "1":
        pytest.fail("EQA_REQUIRE_HABITAT=1 but habitat-sim is not importable")
    pytest.skip("habitat-sim is not importable here (CI runs these in the habitat-cpu chroot)")


def short_fbe_express(compose_cfg, out: Path, backend: str, *data: str) -> list:
    """Records of a short ``policy=fbe`` EXPRESS run (4 steps, 128 px, offline models) on
    ``backend`` with the data overrides ``data``, each asserted ok with a finite d_T."""
    import math

    from eqa_runner.records import read_records
    from eqa_runner.run.loop import run

    base = ["task=express", "policy=fbe", f"sim={backend}", "sim.width=128", "sim.height=128"]
    rest = ["llm=offline", "judge.model=offline", "policy.max_steps=4", "run.cache=false"]
    run(compose_cfg([*base, *data, *rest], out=out))
    recs = read_records(out / "episodes.jsonl")
    assert recs and all(r["status"] == "ok" for r in recs), [r["error"] for r in recs]
    for r in recs:
        assert r["metrics"]["d_t_valid"] and math.isfinite(r["metrics"]["d_t"]), r["metrics"]
    return recs


def build_rooms_mesh() -> MeshBuilder:
    """Room A: x,z in [0, 6] with walls (height 2.5); closed room B: x in [7, 10], z in [0, 6]."""
    mb = MeshBuilder()
    grey, red, blue = (0.6, 0.6, 0.6), (0.8, 0.2, 0.2), (0.2, 0.3, 0.8)
    for x0, x1 in ((0.0, 6.0), (7.0, 10.0)):
        mb.quad_y(x0, 0.0, x1, 6.0, 0.0, grey)
        mb.box((x0 - 0.1, 0.0, -0.1), (x1 + 0.1, 2.5, 0.0), red)  # z = 0 wall (inner face)
        mb.box((x0 - 0.1, 0.0, 6.0), (x1 + 0.1, 2.5, 6.1), red)
        mb.box((x0 - 0.1, 0.0, 0.0), (x0, 2.5, 6.0), blue)
        mb.box((x1, 0.0, 0.0), (x1 + 0.1, 2.5, 6.0), blue)
    return mb


@pytest.fixture(scope="session")
def scenes_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("scenes")
    v, f, c, _ = build_rooms_mesh().arrays()
    d = root / "val" / "00800-TestRooms"
    d.mkdir(parents=True)
    write_glb(d / "TestRooms.glb", v, f, c)
    return root


def _make(backend: str):
    if backend == "mesh":
        from eqa_runner.sim.mesh import MeshSimulator

        return MeshSimulator(width=128, height=128, cell_size=0.05, agent_radius=0.18)
    require_habitat()
    from eqa_runner.sim.habitat import HabitatSimulator

    return HabitatSimulator(width=128, height=128, agent_radius=0.18)


@pytest.fixture(scope="module", params=BACKENDS)
def sim(request, scenes_dir):
    s = _make(request.param)
    spec = s.resolve_scene(scenes_dir, "hm3d/val/00800-TestRooms")
    s.load_scene(spec, start_position=[3.0, 0.0, 3.0])
    yield s
    s.close()


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)
