"""Frames of a scene video: PyAV (FFmpeg) decodes, the sampling rule picks, PNGs are cached.

lmms-eval reads VSI-Bench's videos with decord and samples ``np.linspace(0, n-1, K,
dtype=int)`` (floor) of the ``n`` decoded frames, K = min(K, n). PyAV (FFmpeg's bindings, a
dependency of eqa_runner; decord has had no release since 2021) decodes the frames of an MP4
in order, so index i is the i-th frame either reads; the rule here is the same one. The K
chosen frames are written once as PNGs under the cache folder
(``<cache>/<video stem>/<rule>-<K>/frame_<index>.png``), each via a temp file and a rename, so
the frame policies read them as they read recorded frames; ``frames.txt`` there lists them
under the video's size and modification time (a replaced video is sampled again). A dry run of
a frame policy samples each present video once too (its estimate reads a frame's size): the
run then reuses the cache.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from eqa_runner.errors import DataError

SAMPLING = ("uniform", "uniform_round")  # floor(linspace) = lmms-eval | round(linspace)
INSTALL = "pip install av (PyAV, a dependency of eqa_runner)"


def _av():  # noqa: ANN202 - the optional module
    try:
        import av
    except ImportError:
        raise DataError(f"reading VSI-Bench videos needs PyAV: {INSTALL}") from None
    return av


def sample_indices(n_frames: int, k: int, rule: str = "uniform") -> list[int]:
    """The frame indices a rule picks: K = min(k, n) points of linspace(0, n-1) (floored as
    lmms-eval, or rounded)."""
    k = min(k, n_frames)
    if k <= 0:
        return []
    points = np.linspace(0, n_frames - 1, k)
    idx = np.round(points) if rule == "uniform_round" else np.floor(points)
    return [int(i) for i in idx]


def count_frames(path: Path) -> int:
    """The number of decodable video frames of ``path`` (decodes packets, no pixels kept)."""
    av = _av()
    try:
        with av.open(str(path)) as box:
            stream = box.streams.video[0]
            return sum(1 for _ in box.decode(stream))
    except (av.FFmpegError, IndexError, OSError) as e:
        raise DataError(f"{path}: not a readable video ({e}); re-extract it") from None


def decode_frames(path: Path, indices: Sequence[int]) -> dict[int, np.ndarray]:
    """The RGB arrays of the frames at ``indices`` (decoded in order, one pass)."""
    av = _av()
    wanted = set(indices)
    out: dict[int, np.ndarray] = {}
    try:
        with av.open(str(path)) as box:
            for i, frame in enumerate(box.decode(box.streams.video[0])):
                if i in wanted:
                    out[i] = frame.to_ndarray(format="rgb24")
                if len(out) == len(wanted):
                    break
    except (av.FFmpegError, IndexError, OSError) as e:
        raise DataError(f"{path}: not a readable video ({e}); re-extract it") from None
    return out


def cached_frames(video: Path, cache: Path, k: int, rule: str = "uniform") -> list[Path]:
    """The PNG paths of the K sampled frames of ``video``, decoded once into ``cache``."""
    from PIL import Image

    folder = Path(cache) / f"{rule}-{k}"
    done = folder / "frames.txt"
    st = Path(video).stat()
    stamp = f"# {st.st_size} {st.st_mtime_ns}"  # a replaced video is decoded again
    if done.is_file():
        head, *names = done.read_text().split("\n")
        if head == stamp:
            return [folder / n for n in names if n]
    n = count_frames(video)
    if n == 0:
        raise DataError(f"{video}: the video has no frames; re-extract it")
    idx = sample_indices(n, k, rule)
    arrays = decode_frames(video, idx)
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for i in idx:
        name = f"frame_{i:06d}.png"
        tmp = folder / f".{name}.tmp{os.getpid()}"
        Image.fromarray(arrays[i]).save(tmp, format="PNG")
        os.replace(tmp, folder / name)
        names.append(name)
    tmp = folder / f".frames.txt.tmp{os.getpid()}"
    tmp.write_text("\n".join([stamp, *names]) + "\n")
    os.replace(tmp, done)
    return [folder / name for name in names]


def write_video(path: Path, frames: Sequence[np.ndarray], fps: int = 10) -> Path:
    """Encode RGB frames (equal sizes, even sides) as an H.264 MP4 (the demo's walkthroughs)."""
    av = _av()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp{os.getpid()}.mp4")
    h, w = frames[0].shape[:2]
    with av.open(str(tmp), mode="w") as box:
        stream = box.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = w, h, "yuv420p"
        for rgb in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(rgb, format="rgb24")):
                box.mux(packet)
        for packet in stream.encode():
            box.mux(packet)
    os.replace(tmp, path)
    return path
