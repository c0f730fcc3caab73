"""The habitat backend against a stand-in ``habitat_sim`` module (no real habitat-sim needed).

Kept only for what the real habitat-sim cannot show on these CPU machines, or what needs no
simulator: the GPU device id and scene-dataset config reaching ``SimulatorConfiguration``
(there is no GPU or multi-device EGL here), the clear error when habitat-sim is missing (it is
importable in the chroot), the light import of the backend module, and the scene-file lookup
layouts (pure path logic). Everything the real simulator can show (sensors, navmesh baking,
queries, threads, scene convention, lighting) is tested on it: ``test_contract.py``,
``test_habitat_real.py``, ``test_parity.py`` (marker ``habitat``).
"""

from __future__ import annotations

import math
import sys
import threading
import types
from pathlib import Path

import numpy as np
import pytest

from eqa_runner.sim import geometry as geo


class _Quat:
    """Stand-in for a numpy-quaternion: stores coeffs x, y, z, w."""

    def __init__(self, xyzw):
        self.xyzw = np.asarray(xyzw, dtype=np.float64)


def _fake_module(calls: list) -> dict[str, types.ModuleType]:
    hs = types.ModuleType("habitat_sim")
    agent_mod = types.ModuleType("habitat_sim.agent")
    utils = types.ModuleType("habitat_sim.utils")
    common = types.ModuleType("habitat_sim.utils.common")

    def record(name):
        calls.append((name, threading.get_ident()))

    class SimulatorConfiguration:
        scene_id = ""
        scene_dataset_config_file = "default"
        gpu_device_id = 0
        random_seed = 0
        enable_physics = False

    class SensorType:
        COLOR, DEPTH, SEMANTIC = "COLOR", "DEPTH", "SEMANTIC"

    class CameraSensorSpec:
        uuid = ""
        sensor_type = None
        resolution = [1, 1]
        hfov = 90.0
        position = [0.0, 0.0, 0.0]
        orientation = [0.0, 0.0, 0.0]

    class AgentConfiguration:
        height = 1.5
        radius = 0.1
        sensor_specifications: list = []

    class Configuration:
        def __init__(self, sim_cfg, agents):
            self.sim_cfg, self.agents = sim_cfg, agents

    class AgentState:
        def __init__(self):
            self.position = np.zeros(3)
            self.rotation = _Quat([0, 0, 0, 1])
            self.sensor_states = {}

    class Agent:
        def __init__(self, cfg):
            self.cfg, self.state = cfg, AgentState()

        def set_state(self, st):
            record("set_state")
            self.state = st

        def get_state(self):
            record("get_state")
            st = AgentState()
            st.position, st.rotation = self.state.position, self.state.rotation
            spec = self.cfg.agents[0].sensor_specifications[1]
            r = geo.quat_to_matrix(geo.quat_xyzw_to_wxyz(self.state.rotation.xyzw))
            sens = AgentState()
            sens.position = np.asarray(self.state.position) + r @ np.asarray(spec.position)
            sens.rotation = self.state.rotation
            st.sensor_states = {"depth_sensor": sens, "color_sensor": sens}
            return st

    class PathFinder:
        is_loaded = False

        def load_nav_mesh(self, path):
            record("load_nav_mesh")
            self.path, self.is_loaded = path, True
            return True

        def seed(self, s):
            self.last_seed = s

        def snap_point(self, p):
            return np.asarray(p, dtype=np.float32)

        def get_random_navigable_point_near(self, circle_center, radius, max_tries=100):
            record("random_near")
            rng = np.random.default_rng(self.last_seed)
            return np.asarray(circle_center) + [rng.uniform(-radius, radius) / 2, 0, 0]

        def find_path(self, path):
            path.geodesic_distance = float(
                np.linalg.norm(np.asarray(path.requested_end) - np.asarray(path.requested_start))
            )
            return True

        def get_bounds(self):
            return np.array([0.0, 0.0, 0.0]), np.array([4.0, 2.0, 5.0])

        def is_navigable(self, p):
            return True

    class Simulator:
        def __init__(self, cfg):
            record("Simulator")
            self.cfg, self.pathfinder, self.reconfigured = cfg, PathFinder(), 0

        def reconfigure(self, cfg):
            record("reconfigure")
            self.cfg, self.reconfigured = cfg, self.reconfigured + 1
            self.pathfinder = PathFinder()

        def initialize_agent(self, i):
            self.agent = Agent(self.cfg)
            return self.agent

        def get_sensor_observations(self):
            record("observe")
            h, w = self.cfg.agents[0].sensor_specifications[0].resolution
            return {
                "color_sensor": np.full((h, w, 4), 7, np.uint8),
                "depth_sensor": np.full((h, w), 2.0, np.float32),
            }

        def close(self):
            record("close")

    class ShortestPath:
        requested_start = None
        requested_end = None
        geodesic_distance = math.inf
        points: tuple = ()  # habitat-sim fills the path's points

    common.quat_from_coeffs = lambda c: _Quat(c)
    common.quat_to_coeffs = lambda q: q.xyzw
    for name, obj in dict(
        SimulatorConfiguration=SimulatorConfiguration,
        SensorType=SensorType,
        CameraSensorSpec=CameraSensorSpec,
        Configuration=Configuration,
        AgentState=AgentState,
        Simulator=Simulator,
        ShortestPath=ShortestPath,
    ).items():
        setattr(hs, name, obj)
    agent_mod.AgentConfiguration = AgentConfiguration
    hs.agent, hs.utils, utils.common = agent_mod, utils, common
    return {
        "habitat_sim": hs,
        "habitat_sim.agent": agent_mod,
        "habitat_sim.utils": utils,
        "habitat_sim.utils.common": common,
    }


@pytest.fixture
def fake(monkeypatch):
    calls: list = []
    for name, mod in _fake_module(calls).items():
        monkeypatch.setitem(sys.modules, name, mod)
    return calls


def _hm3d(tmp_path: Path, layout: str) -> Path:
    root = tmp_path / "hm3d"
    d = root / "val" / "00800-TEEsavR23oF" if layout == "split" else root / "00800-TEEsavR23oF"
    d.mkdir(parents=True)
    (d / "TEEsavR23oF.basis.glb").write_bytes(b"glb")
    (d / "TEEsavR23oF.basis.navmesh").write_bytes(b"nav")
    (root / "hm3d_annotated_basis.scene_dataset_config.json").write_text("{}")
    return root


@pytest.mark.parametrize("layout", ["split", "flat"])
@pytest.mark.parametrize(
    "sid", ["hm3d/val/00800-TEEsavR23oF", "val/00800-TEEsavR23oF", "00800-TEEsavR23oF"]
)
def test_scene_lookup_layouts(fake, tmp_path, layout, sid):
    from eqa_runner.sim.habitat import HabitatSimulator

    root = _hm3d(tmp_path, layout)
    spec = HabitatSimulator().resolve_scene(root, sid)
    assert spec.mesh_path.name == "TEEsavR23oF.basis.glb"
    assert spec.navmesh_path is not None and spec.navmesh_path.name.endswith(".basis.navmesh")
    assert spec.dataset_config is not None and spec.dataset_config.name.endswith(
        ".scene_dataset_config.json"
    )


def test_scene_lookup_missing_names_paths(fake, tmp_path):
    from eqa_runner.sim.habitat import HabitatSimulator

    with pytest.raises(FileNotFoundError) as err:
        HabitatSimulator().resolve_scene(tmp_path, "val/00899-Nope")
    assert "00899-Nope/Nope.basis.glb" in str(err.value)


def test_config_sensors_and_agent(fake, tmp_path):
    from eqa_runner.sim.habitat import HabitatSimulator

    sim = HabitatSimulator(
        width=320,
        height=240,
        hfov_deg=79.0,
        sensor_height_m=1.25,
        tilt_deg=-30.0,
        sensor_forward_m=0.75,
        agent_radius=0.17,
        gpu_device_id=3,
        seed=9,
    )
    spec = sim.resolve_scene(_hm3d(tmp_path, "split"), "00800-TEEsavR23oF")
    cfg = sim.make_config(spec)
    assert cfg.sim_cfg.scene_id.endswith("TEEsavR23oF.basis.glb")
    assert cfg.sim_cfg.scene_dataset_config_file.endswith(".scene_dataset_config.json")
    assert cfg.sim_cfg.gpu_device_id == 3 and cfg.sim_cfg.random_seed == 9
    (agent,) = cfg.agents
    assert agent.radius == pytest.approx(0.17)
    uuids = [s.uuid for s in agent.sensor_specifications]
    assert uuids == ["color_sensor", "depth_sensor"]
    assert [s.sensor_type for s in agent.sensor_specifications] == ["COLOR", "DEPTH"]
    for s in agent.sensor_specifications:
        assert list(s.resolution) == [240, 320]
        assert s.hfov == pytest.approx(79.0)
        assert list(s.position) == [0.0, 1.25, -0.75]  # 0.75 m ahead: habitat looks along -z
        assert s.orientation[0] == pytest.approx(math.radians(-30.0))


def test_reuse_threading_and_queries(fake, tmp_path):
    from eqa_runner.sim.habitat import HabitatSimulator

    root = _hm3d(tmp_path, "split")
    sim = HabitatSimulator(width=8, height=6)
    spec = sim.resolve_scene(root, "00800-TEEsavR23oF")
    sim.load_scene(spec)
    sim.load_scene(spec)  # same scene: no-op
    names = [c[0] for c in fake]
    assert names.count("Simulator") == 1 and names.count("reconfigure") == 0
    q = geo.yaw_to_quat(0.8)
    sim.set_agent_pose([1.0, 0.1, 2.0], q)
    pos, rot = sim.agent_pose()
    np.testing.assert_allclose(pos, [1.0, 0.1, 2.0], atol=1e-6)
    np.testing.assert_allclose(rot, q, atol=1e-9)
    obs = sim.observe()
    assert obs.rgb.shape == (6, 8, 3) and obs.depth.shape == (6, 8)
    np.testing.assert_allclose(obs.cam_to_world[:3, 3], [1.0, 1.6, 2.0], atol=1e-6)
    assert sim.geodesic_distance([0, 0, 0], [3, 0, 4]) == pytest.approx(5.0)
    p1 = sim.random_navigable_point_near([1, 0, 1], 1.0, np.random.default_rng(5))
    p2 = sim.random_navigable_point_near([1, 0, 1], 1.0, np.random.default_rng(5))
    np.testing.assert_allclose(p1, p2)
    assert sim.scene_area() == pytest.approx(20.0)
    # another scene: reconfigure, not a second simulator
    other = root / "val" / "00801-Other"
    other.mkdir(parents=True)
    (other / "Other.basis.glb").write_bytes(b"glb")
    (other / "Other.basis.navmesh").write_bytes(b"nav")
    sim.load_scene(sim.resolve_scene(root, "val/00801-Other"))
    names = [c[0] for c in fake]
    assert names.count("Simulator") == 1 and names.count("reconfigure") == 1
    threads = {t for _, t in fake}
    assert len(threads) == 1 and threading.get_ident() not in threads
    sim.close()


def test_missing_habitat_is_one_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "habitat_sim", None)
    from eqa_runner.sim.habitat import HabitatSimulator, SceneSpec

    sim = HabitatSimulator()  # cheap: nothing imported yet
    with pytest.raises(ImportError, match="conda install habitat-sim=0.3 withbullet headless"):
        sim.load_scene(SceneSpec("x", Path("x.basis.glb")))
    sim.close()


@pytest.mark.slow
def test_base_import_is_light():
    import subprocess

    code = (
        "import sys, eqa_runner.sim.base, eqa_runner.sim.geometry, eqa_runner.sim.mesh, "
        "eqa_runner.sim.habitat; assert 'open3d' not in sys.modules; "
        "assert 'habitat_sim' not in sys.modules"
    )
    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-c", code], check=True, cwd=root)
