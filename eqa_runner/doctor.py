"""``python -m eqa_runner.doctor [--sim mesh|habitat]``: preflight checks.

Prints versions, simulator / EGL status, which provider API keys are set (names only, never
values) and which data directories were found. Exit code 1 when the selected simulator cannot
run.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import sys
from importlib import metadata
from pathlib import Path

PACKAGES = [
    "hydra-core",
    "omegaconf",
    "litellm",
    "numpy",
    "numba",
    "open3d",
    "scikit-image",
    "pandas",
    "submitit",
    "pillow",
]
KEY_NAMES = [
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "AZURE_API_KEY",
    "MISTRAL_API_KEY",
    "TOGETHERAI_API_KEY",
    "GROQ_API_KEY",
    "DEEPSEEK_API_KEY",
    "OPENROUTER_API_KEY",
    "XAI_API_KEY",
    "HUGGINGFACE_API_KEY",
    "AWS_ACCESS_KEY_ID",
]
_ENV_DEFAULT = re.compile(r"^\$\{oc\.env:(\w+),([^}]*)\}$")


def data_dir_defaults() -> dict[str, tuple[str | None, str]]:
    """Each benchmark's ``task.data_dir`` default: (environment variable, fallback path)."""
    from dataclasses import fields

    from eqa_runner.registry import benchmarks

    out: dict[str, tuple[str | None, str]] = {}
    for bench in benchmarks():
        for schema in bench.schemas.get("task", {}).values():
            default = next((f.default for f in fields(schema) if f.name == "data_dir"), None)
            if isinstance(default, str):
                m = _ENV_DEFAULT.match(default)
                out[bench.cli_name] = (m.group(1), m.group(2)) if m else (None, default)
    return out


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def check_open3d() -> tuple[bool, str]:
    try:
        import open3d as o3d

        scene = o3d.t.geometry.RaycastingScene()
        del scene
        return True, f"open3d {o3d.__version__} import + RaycastingScene OK"
    except Exception as exc:  # noqa: BLE001 - report anything
        hint = " (Debian/Ubuntu: apt-get install libusb-1.0-0)" if "libusb" in str(exc) else ""
        return False, f"open3d unusable: {type(exc).__name__}: {exc}{hint}"


def check_mesh_sim() -> tuple[bool, str]:
    """Render one frame of a tiny procedural scene with the mesh backend."""
    ok, msg = check_open3d()
    if not ok:
        return ok, msg
    try:
        import numpy as np

        from eqa_runner.demo.apartment import generate_apartment
        from eqa_runner.sim import geometry as geo
        from eqa_runner.sim.mesh import MeshSimulator

        apt = generate_apartment(0, n_rooms=4)
        sim = MeshSimulator(width=64, height=64)
        sim.load_arrays(apt.mesh_data())
        p = sim.random_navigable_point(np.random.default_rng(0))
        sim.set_agent_pose(p, geo.yaw_to_quat(0.0))
        obs = sim.observe()
        sim.close()
        return True, f"mesh simulator OK ({msg}; rendered {obs.rgb.shape[1]}x{obs.rgb.shape[0]})"
    except Exception as exc:  # noqa: BLE001
        return False, f"mesh simulator failed: {type(exc).__name__}: {exc}"


def check_jit() -> tuple[bool, str]:
    """Load (or compile) the numba kernels (fbe fusion, mesh shading) and report their cache."""
    try:
        from eqa_runner.mapping.fuse_kernel import fuse_box
        from eqa_runner.mapping.tsdf import warm_up

        ms = warm_up()
        stats = fuse_box.stats
        how = "loaded from cache" if sum(stats.cache_hits.values()) else "compiled"
        assert stats.cache_path is not None  # numba gives one with cache=True
        where = Path(stats.cache_path)
        writable = os.access(where if where.exists() else where.parent, os.W_OK)
        note = "" if writable else " NOT writable: set NUMBA_CACHE_DIR to a writable dir"
        return True, f"numba kernels OK ({how} in {ms:.0f} ms; cache {where}{note})"
    except Exception as exc:  # noqa: BLE001 - report anything
        return False, f"numba kernels unusable: {type(exc).__name__}: {exc}"


def check_habitat(gpu_device_id: int) -> tuple[bool, list[str]]:
    """habitat-sim version, EGL devices, and one RGB-D render of a demo apartment (in the
    HM3D scene convention the demo datasets use) with this ``gpu_device_id``."""
    import tempfile

    from eqa_runner.sim.habitat import INSTALL_HINT, cuda_visible_devices, egl_devices

    lines = [
        f"EGL render nodes: {', '.join(egl_devices()) or 'none under /dev/dri (software EGL)'}",
        f"CUDA_VISIBLE_DEVICES={cuda_visible_devices()!r}; gpu_device_id={gpu_device_id}",
    ]
    try:
        import habitat_sim  # noqa: F401
    except ImportError as exc:
        lines.insert(0, f"habitat-sim not importable ({exc}); install: {INSTALL_HINT}")
        return False, lines
    from eqa_runner.demo.apartment import generate_apartment
    from eqa_runner.sim.habitat import habitat_info

    try:
        with tempfile.TemporaryDirectory() as tmp:
            glb, _ = generate_apartment(0).write(Path(tmp), "DoctorApt")
            info = habitat_info(glb, gpu_device_id=gpu_device_id)
    except Exception as exc:  # noqa: BLE001
        lines.insert(0, "habitat-sim importable")
        lines.append(f"could not render with habitat-sim: {type(exc).__name__}: {exc}")
        return False, lines
    cuda = "CUDA build" if info["cuda_enabled"] else "no CUDA"
    lines.insert(0, f"habitat-sim {info['version']} ({cuda}); renderer: {info['renderer']}")
    ok = bool(info["render_ok"])
    verdict = "OK" if ok else "FAILED (all black or no depth)"
    lines.append(f"one 64x64 RGB-D render of a demo apartment: {verdict}, {info['render_ms']} ms")
    return ok, lines


def check_plugins() -> tuple[list[str], bool]:
    """One line per installed plugin entry point (name, package, OK or why not), and the
    shadowing check every command runs at start."""
    from eqa_runner import registry
    from eqa_runner.errors import UserError

    lines: list[str] = []
    ok = True
    for group in (registry.ENTRY_POINT_GROUP, registry.PLUGIN_ENTRY_POINT_GROUP):
        for ep in registry.installed_entry_points(group):
            dist = getattr(getattr(ep, "dist", None), "name", None) or "?"
            try:
                ep.load()
                status = "OK"
            except Exception as e:  # noqa: BLE001 - any import error of a third-party package
                status, ok = f"BROKEN: {type(e).__name__}: {e}", False
            lines.append(f"{ep.name} = {ep.value} ({group}, from {dist}): {status}")
    if ok:
        conflicts: list[str] = []
        try:
            from eqa_runner.run.configstore import schemas

            every = schemas()
            conflicts = registry.plugin_conflicts(every) if registry.third_party() else []
        except UserError as e:
            conflicts = [str(e)]
        lines += conflicts
        ok = not conflicts
    return lines or ["none installed"], ok


def data_dirs(root: Path) -> list[str]:
    out = []
    for name, (env, default) in data_dir_defaults().items():
        val = os.environ.get(env) if env else None
        path = Path(val) if val else root / default
        src = f"${env}" if val else "default"
        out.append(f"{name}: {path} ({src}) {'found' if path.is_dir() else 'MISSING'}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eqa_runner.doctor", description=__doc__)
    ap.add_argument(
        "--sim",
        choices=["mesh", "habitat"],
        default="mesh",
        help="simulator configuration to check (exit 1 if it cannot run)",
    )
    ap.add_argument(
        "--gpu-device-id", type=int, default=int(os.environ.get("EQA_GPU_DEVICE_ID", "0"))
    )
    ap.add_argument("--root", type=Path, default=Path.cwd(), help="where data/ is looked up")
    args = ap.parse_args(argv)

    print(f"python {platform.python_version()} ({sys.executable})")
    for dist in PACKAGES:
        print(f"  {dist:14s} {_version(dist) or 'NOT INSTALLED'}")
    o3d_ok, o3d_msg = check_open3d()
    print(f"open3d: {o3d_msg}")
    hab_ok, hab_lines = check_habitat(args.gpu_device_id) if args.sim == "habitat" else (None, [])
    if args.sim != "habitat":
        ver = _version("habitat-sim")
        print(f"habitat-sim: {ver or 'not installed'} (not selected; check with --sim habitat)")
    for line in hab_lines:
        print(f"habitat: {line}")
    keys = [k for k in KEY_NAMES if os.environ.get(k)]
    print(f"API keys set: {', '.join(keys) if keys else 'none'}")
    for line in data_dirs(args.root):
        print(f"data: {line}")
    plugin_lines, plugins_ok = check_plugins()
    for line in plugin_lines:
        print(f"plugins: {line}")
    jit_ok, jit_msg = check_jit()
    print(f"jit: {jit_msg}")
    if args.sim == "mesh":
        ok, msg = check_mesh_sim()
        print(f"sim=mesh: {msg}")
        ok = ok and jit_ok  # the mesh renderer's shading runs compiled
    else:
        ok = bool(hab_ok)
    print(f"selected sim={args.sim}: {'OK' if ok else 'CANNOT RUN'}")
    if not plugins_ok:
        print("plugins: BROKEN (every command refuses to start until it is fixed)")
    return 0 if ok and plugins_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
