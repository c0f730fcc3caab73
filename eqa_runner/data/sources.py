"""Where staged data comes from: raw files over HTTPS and per-episode frame archives.

A :class:`FrameSource` lists the per-episode archives of a subset and downloads one to a local
path. Two implementations: :class:`HFFrameSource` (a Hugging Face dataset repository, read with
``huggingface_hub``) and :class:`LocalFrameSource` (a directory with the same layout: mirrors,
pre-downloaded copies, tests). Archive names follow a pattern with ``{subset}`` and
``{episode}`` fields, default ``{subset}-v0/{episode}.tar``.
"""

from __future__ import annotations

import os
import re
import shutil
import tarfile
import urllib.request
from abc import ABC, abstractmethod
from pathlib import Path, PurePosixPath

DEFAULT_PATTERN = "{subset}-v0/{episode}.tar"
COMPLETE_MARKER = ".complete"


class FetchError(RuntimeError):
    """A download or extraction failed; the message names the file and the cause."""


def pattern_regex(pattern: str, subset: str) -> re.Pattern[str]:
    """Regex matching archive names of ``subset``; group ``episode`` is the episode id."""
    parts = re.split(r"(\{subset\}|\{episode\})", pattern)
    out = []
    for p in parts:
        if p == "{subset}":
            out.append(re.escape(subset))
        elif p == "{episode}":
            out.append(r"(?P<episode>[^/]+?)")
        else:
            out.append(re.escape(p))
    if "(?P<episode>" not in "".join(out):
        raise ValueError(f"archive pattern {pattern!r} has no {{episode}} field")
    return re.compile("^" + "".join(out) + "$")


def match_archives(names: list[str], pattern: str, subset: str) -> dict[str, str]:
    """``{episode_id: archive name}`` for the names that match the pattern for ``subset``."""
    rx = pattern_regex(pattern, subset)
    out: dict[str, str] = {}
    for name in sorted(names):
        m = rx.match(name)
        if m:
            out.setdefault(m.group("episode"), name)
    return out


class FrameSource(ABC):
    """Per-episode frame archives of a benchmark subset."""

    pattern: str = DEFAULT_PATTERN

    @abstractmethod
    def list_files(self) -> list[str]:
        """All file names (posix, relative) the source holds."""

    @abstractmethod
    def download(self, name: str, dest_dir: Path) -> Path:
        """Make archive ``name`` available locally (under ``dest_dir``); returns its path."""

    def archives(self, subset: str) -> dict[str, str]:
        return match_archives(self.list_files(), self.pattern, subset)

    def describe(self) -> str:
        return type(self).__name__


class LocalFrameSource(FrameSource):
    """A local directory laid out like the hub repository (no copy: archives are read in place)."""

    def __init__(self, root: Path, pattern: str = DEFAULT_PATTERN) -> None:
        self.root = Path(root)
        self.pattern = pattern

    def list_files(self) -> list[str]:
        if not self.root.is_dir():
            raise FetchError(f"frame source {self.root}: not a directory")
        return [p.relative_to(self.root).as_posix() for p in self.root.rglob("*") if p.is_file()]

    def download(self, name: str, dest_dir: Path) -> Path:
        return self.root / name

    def describe(self) -> str:
        return f"local directory {self.root}"


class HFFrameSource(FrameSource):
    """A Hugging Face dataset repository of frame archives (``repo_id``: the benchmark's)."""

    def __init__(
        self,
        repo_id: str,
        pattern: str = DEFAULT_PATTERN,
        revision: str | None = None,
        repo_type: str = "dataset",
    ) -> None:
        self.repo_id = repo_id
        self.pattern = pattern
        self.revision = revision
        self.repo_type = repo_type

    def list_files(self) -> list[str]:
        from huggingface_hub import list_repo_files

        try:
            return list_repo_files(self.repo_id, repo_type=self.repo_type, revision=self.revision)
        except Exception as e:  # network, auth, missing repo
            raise FetchError(
                f"cannot list hf://{self.repo_type}s/{self.repo_id}: {type(e).__name__}: {e}"
            ) from e

    def download(self, name: str, dest_dir: Path) -> Path:
        from huggingface_hub import hf_hub_download

        try:
            return Path(
                hf_hub_download(
                    self.repo_id,
                    filename=name,
                    repo_type=self.repo_type,
                    revision=self.revision,
                    local_dir=str(dest_dir),
                )
            )
        except Exception as e:
            raise FetchError(f"download of {self.repo_id}/{name} failed: {e}") from e

    def describe(self) -> str:
        return f"hf://datasets/{self.repo_id}"


# ----------------------------------------------------------------------------- raw files


def download_url(url: str, dest: Path, *, timeout: float = 60.0) -> Path:
    """Fetch ``url`` to ``dest`` atomically (temp file + rename)."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.part")
    try:
        req = urllib.request.Request(url, headers={"User-Agent": "eqa_runner-data"})
        with urllib.request.urlopen(req, timeout=timeout) as resp, tmp.open("wb") as fh:
            shutil.copyfileobj(resp, fh)
    except Exception as e:
        tmp.unlink(missing_ok=True)
        raise FetchError(f"download of {url} failed: {e}") from e
    os.replace(tmp, dest)
    return dest


# ----------------------------------------------------------------------------- safe extraction


def _escapes(name: str) -> bool:
    p = PurePosixPath(name.replace("\\", "/"))
    return p.is_absolute() or ".." in p.parts or bool(re.match(r"^[A-Za-z]:", name))


def check_members(tar: tarfile.TarFile, where: str) -> list[tarfile.TarInfo]:
    """The archive's members, or FetchError if any could land outside the target folder."""
    members = tar.getmembers()
    for m in members:
        if _escapes(m.name):
            raise FetchError(f"{where}: member {m.name!r} escapes the target folder; refused")
        if m.issym() or m.islnk():
            target = m.linkname
            base = PurePosixPath(m.name).parent if m.issym() else PurePosixPath()
            joined = PurePosixPath(os.path.normpath((base / target).as_posix()))
            if PurePosixPath(target).is_absolute() or joined.parts[:1] == ("..",):
                raise FetchError(
                    f"{where}: link {m.name!r} -> {target!r} points outside the target folder; "
                    "refused"
                )
        if m.isdev() or m.isfifo():
            raise FetchError(f"{where}: member {m.name!r} is a device/fifo; refused")
    return members


def extract_episode(archive: Path, dest: Path) -> int:
    """Extract ``archive`` into ``dest`` without its single top folder; returns files written.

    Extraction goes to ``<dest>.partial`` first and is moved into place when complete, then a
    ``.complete`` marker is written, so an interrupted run never leaves a half folder that looks
    finished.
    """
    dest = Path(dest)
    partial = dest.with_name(f".{dest.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    try:
        with tarfile.open(archive, "r:*") as tar:
            members = check_members(tar, str(archive))
            tar.extractall(partial, members=members, filter="data")
        for p in partial.rglob("*"):  # second line of defence after the filter
            if p.is_symlink() and not p.resolve().is_relative_to(partial.resolve()):
                raise FetchError(f"{archive}: extracted link {p} points outside; refused")
        entries = [e for e in partial.iterdir() if not e.name.startswith("._")]
        root = entries[0] if len(entries) == 1 and entries[0].is_dir() else partial
        if dest.exists():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(root, dest)
    except tarfile.TarError as e:
        raise FetchError(f"{archive}: not a readable tar archive ({e})") from e
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    n = sum(1 for p in dest.rglob("*") if p.is_file())
    (dest / COMPLETE_MARKER).write_text(f"{Path(archive).name}\n{n} files\n", encoding="utf-8")
    return n


def is_complete(dest: Path) -> bool:
    return (Path(dest) / COMPLETE_MARKER).is_file()
