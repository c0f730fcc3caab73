"""Issue 33, item 5: the scene files and frame folders the selected episodes read join the
run's fingerprint. A resume accepted a replaced scene mesh or other episode frames; now it is
refused naming the scene, each file is hashed once per (path, size, mtime) across processes
(``content_hashes.json`` in ``run.cache_dir``), and a run dir from before is not refused for
lacking the section."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from eqa_runner.errors import RunDirError
from eqa_runner.records import write_json_atomic
from eqa_runner.run import content_hashes
from eqa_runner.run.rundir import label_run_dir
from eqa_runner.run.start import prepare
from tests.reliability import tally

EXPRESS = ["task=express", "policy=re", "llm=offline", "judge.model=offline", "run.limit=12"]
OPENEQA = ["llm=offline", "judge.model=offline"]


def _start(compose_cfg, over: list[str], out: Path, *, label: bool = False):
    """The start checks of a run into ``out`` (with ``label``: then labelled, as a run is)."""
    cfg = compose_cfg(over, out=out)
    plan = prepare(cfg)
    if label:
        out.mkdir(parents=True, exist_ok=True)
        label_run_dir(out, cfg, plan.container, plan.inputs)
    return plan


@pytest.fixture
def express(express_demo, tmp_path) -> Path:
    data = tmp_path / "express"
    shutil.copytree(express_demo, data)
    return data


def _refused(compose_cfg, over, out, what: str) -> str:
    tally.add("bad inputs tried")
    with pytest.raises(RunDirError) as e:
        _start(compose_cfg, [*over, "run.resume=true"], out)
    tally.add("runs mislabelled", int(what not in str(e.value)))
    return str(e.value)


def test_a_replaced_scene_mesh_is_refused_on_resume(compose_cfg, express, tmp_path):
    over, out = [*EXPRESS, f"task.data_dir={express}"], tmp_path / "run"
    plan = _start(compose_cfg, over, out, label=True)
    scenes = json.loads((out / "provenance.json").read_text())["inputs"]["scenes"]
    read = plan.parts.task.inputs(plan.episodes)
    assert set(scenes) == set(read) and len(scenes) >= 2
    _start(compose_cfg, [*over, "run.resume=true"], out)  # unchanged data: accepted
    scene = sorted(s for s in read if not s.endswith("navmesh"))[0]
    mesh = read[scene]
    mesh.write_bytes(mesh.read_bytes() + b"\0")  # another mesh under the same name
    msg = _refused(compose_cfg, over, out, f"scenes {scene} content hash")
    assert f"scenes {scene} content hash: {scenes[scene][:12]}" in msg


def test_a_larger_selection_on_resume_is_accepted_and_its_new_scenes_recorded(
    compose_cfg, express, tmp_path
):
    over, out = [*EXPRESS, f"task.data_dir={express}"], tmp_path / "run"
    one = _start(compose_cfg, [*over, "run.limit=1"], out, label=True)
    more = _start(compose_cfg, [*over, "run.resume=true"], out, label=True)
    added = set(more.inputs["scenes"]) - set(one.inputs["scenes"])
    assert added
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["inputs"]["scenes"] == more.inputs["scenes"]
    _start(compose_cfg, [*over, "run.resume=true", "run.limit=1"], out)  # fewer: accepted
    scene = sorted(s for s in added if not s.endswith("navmesh"))[0]
    mesh = more.parts.task.inputs(more.episodes)[scene]
    mesh.write_bytes(b"another mesh")  # a scene the resume added is now part of the record
    _refused(compose_cfg, over, out, f"scenes {scene} content hash")


def test_other_frames_are_refused_on_resume(compose_cfg, openeqa_data, tmp_path):
    over, out = [*OPENEQA, f"task.data_dir={openeqa_data}"], tmp_path / "run"
    plan = _start(compose_cfg, over, out, label=True)
    read = plan.parts.task.inputs(plan.episodes)
    folder = sorted(read)[0]
    frame = sorted(p for p in read[folder].rglob("*") if p.is_file())[0]
    frame.write_bytes(b"another frame")
    _refused(compose_cfg, over, out, f"scenes {folder} content hash")


def test_a_run_dir_from_before_the_section_is_not_refused(compose_cfg, openeqa_data, tmp_path):
    over, out = [*OPENEQA, f"task.data_dir={openeqa_data}"], tmp_path / "run"
    _start(compose_cfg, over, out, label=True)
    prov = json.loads((out / "provenance.json").read_text())
    del prov["inputs"]["scenes"]
    write_json_atomic(out / "provenance.json", prov)
    _start(compose_cfg, [*over, "run.resume=true"], out)


def test_a_second_start_reads_no_scene_bytes(compose_cfg, express, tmp_path, monkeypatch):
    over, out = [*EXPRESS, f"task.data_dir={express}"], tmp_path / "run"
    read: list[Path] = []
    real = content_hashes.read_bytes_hash
    monkeypatch.setattr(content_hashes, "read_bytes_hash",
                        lambda p: (read.append(p), real(p))[1])  # fmt: skip
    first = _start(compose_cfg, over, out, label=True).inputs["scenes"]
    assert read  # cold: every scene file hashed
    assert (tmp_path / "cache" / content_hashes.CACHE_FILE).is_file()
    read.clear()
    assert _start(compose_cfg, [*over, "run.resume=true"], out).inputs["scenes"] == first
    assert read == []  # warm: from the cache file (a new HashCache, as another process)


def test_the_cache_rehashes_a_file_whose_size_or_mtime_changed(tmp_path):
    f, cache_dir = tmp_path / "scene.glb", tmp_path / "cache"
    f.write_bytes(b"x" * 1000)
    first = content_hashes.content_hashes({"s": f}, cache_dir)["s"]
    f.write_bytes(b"y" * 1000)  # same size, new mtime
    assert content_hashes.content_hashes({"s": f}, cache_dir)["s"] != first
    (cache_dir / content_hashes.CACHE_FILE).write_text("{not json")  # a broken cache: ignored
    assert content_hashes.content_hashes({"s": f}, cache_dir)["s"] != first


@pytest.mark.parametrize(
    "path",
    ["eqa_runner.benchmarks.express.task.ExpressTask", "eqa_runner.benchmarks.aeqa.task.AEQATask",
     "eqa_runner.benchmarks.hmeqa.task.HMEQATask", "eqa_runner.benchmarks.mt_hm3d.task.MTHM3DTask",
     "eqa_runner.benchmarks.openeqa_em.task.OpenEQATask",
     "eqa_runner.benchmarks.vsibench.task.VSIBenchTask", "eqa_runner_mp3d_eqa.task.MP3DEQATask"],
)  # fmt: skip
def test_every_benchmark_whose_episodes_read_scenes_or_frames_names_them(path):
    from hydra.utils import get_class

    from eqa_runner.tasks.base import Task

    assert get_class(path).inputs is not Task.inputs


def test_scene_inputs_are_what_the_backend_resolves(tmp_path):
    from eqa_runner.sim.base import SceneSpec
    from eqa_runner.tasks.scenes import scene_inputs

    mesh, nav = tmp_path / "a.glb", tmp_path / "a.navmesh"
    mesh.write_bytes(b"m")
    nav.write_bytes(b"n")

    class Sim:
        def resolve_scene(self, scenes_dir, scene):
            if scene != "a":
                raise FileNotFoundError(scene)
            return SceneSpec(scene, mesh, nav)

    got = scene_inputs(["a", "a", "missing"], tmp_path, Sim())
    assert got == {"a": mesh, "a navmesh": nav}  # a missing scene: the data check names it


def test_an_unreadable_scene_file_is_left_out_not_a_crash(tmp_path, monkeypatch):
    ok, bad = tmp_path / "ok.glb", tmp_path / "bad.glb"
    ok.write_bytes(b"ok")
    bad.write_bytes(b"bad")
    real = content_hashes.read_bytes_hash

    def read(p):
        if p.name == "bad.glb":
            raise PermissionError(13, "Permission denied", str(p))
        return real(p)

    monkeypatch.setattr(content_hashes, "read_bytes_hash", read)
    got = content_hashes.content_hashes({"ok": ok, "bad": bad}, tmp_path / "cache")
    assert set(got) == {"ok"}
