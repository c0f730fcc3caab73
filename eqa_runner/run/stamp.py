"""Where a run's result came from: package versions, the git checkout, and the reproducibility
stamp ``summary.json`` carries (``report --compare`` reads it to warn about incomparable runs)."""

from __future__ import annotations

import functools
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

from eqa_runner import __version__

PACKAGES = (
    "hydra-core",
    "omegaconf",
    "litellm",
    "numpy",
    "pillow",
    "open3d",
    "scikit-image",
    "pandas",
    "submitit",
    "habitat-sim",
)
PACKAGE_DIRS = ("eqa_runner", "plugins")  # the code a run imports from a checkout


def versions() -> dict[str, str | None]:
    """Python's, eqa_runner's and the key packages' versions (read once per process: parsing
    their metadata is ~20 ms; :func:`eqa_runner.run.loop.run` reads them while it sets up)."""
    return dict(_versions())


@functools.lru_cache(maxsize=1)
def _versions() -> tuple[tuple[str, str | None], ...]:
    out: dict[str, str | None] = {"python": platform.python_version(), "eqa_runner": __version__}
    for pkg in PACKAGES:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return tuple(out.items())


def _git(src: Path, *args: str, timeout: float) -> str:
    """``git -C src args…``'s stdout; raises when git is missing or fails."""
    cmd = ["git", "-C", str(src), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True).stdout


@functools.lru_cache(maxsize=8)
def git_state(path: Path | None = None) -> dict[str, Any] | None:
    """``{"commit", "dirty"}`` of the checkout eqa_runner runs from; None when it is not run
    from a git checkout (an installed wheel) or git is missing. Never raises."""
    src = Path(path) if path else Path(__file__).resolve().parents[2]
    try:
        top = _git(src, "rev-parse", "--show-toplevel", "HEAD", timeout=10).splitlines()
        if len(top) != 2 or Path(top[0]).resolve() != src.resolve():
            return None  # e.g. site-packages inside some other repository
        # tracked changes anywhere, and untracked files under the package (a new module in
        # use: ignored files such as __pycache__ do not count)
        dirty = _git(src, "status", "--porcelain", "--untracked-files=no", timeout=30).strip()
        dirty = (
            dirty
            or _git(
                src, "ls-files", "--others", "--exclude-standard", "--", *PACKAGE_DIRS, timeout=30
            ).strip()
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": top[1], "dirty": bool(dirty)}


def reproducibility_stamp(
    *,
    config: dict[str, Any],
    task_info: dict[str, Any],
    prompts: dict[str, dict[str, object]],
    judge_model: str,
) -> dict[str, Any]:
    """What a reader needs to tell whether two summaries can be compared (``report --compare``
    warns when they differ beyond the compared keys): code version and commit, data and prompt
    hashes, the judge snapshot, every seed and the result-config fingerprint."""
    import os

    from eqa_runner.run.provenance import fingerprint, flatten
    from eqa_runner.trackers.naming import slurm_ids

    flat = flatten(config)
    return {
        "eqa_runner": __version__,
        "git": dict(g) if (g := git_state()) else None,
        "data_sha256": {k: v for k, v in sorted(task_info.items()) if k.endswith("_sha256") and v},
        "prompts_sha256": {n: p.get("sha256") for n, p in sorted(prompts.items())},
        "judge_model": judge_model,
        "seeds": {k: v for k, v in sorted(flat.items()) if k.rsplit(".", 1)[-1] == "seed"},
        "config_fingerprint": fingerprint(config),
        "slurm": slurm_ids(os.environ) or None,  # the job (and array task) that ran it
    }
