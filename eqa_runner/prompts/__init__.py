"""Prompt files: the project's own (shipped here, or in a benchmark's package) or the benchmark's
originals (``prompts.dir``)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

PACKAGE_DIR = Path(__file__).parent


def known_originals() -> dict[str, str]:
    """SHA-256 (of the stripped UTF-8 text) of the benchmarks' original prompt files, as
    ``python -m eqa_runner.data fetch`` downloads them, from each registered benchmark's
    ``original_prompts``: a file in ``prompts.dir`` is labelled "benchmark original" only when
    its content is one of these, else "user-supplied"."""
    from eqa_runner.registry import benchmarks

    return {sha: src for b in benchmarks() for sha, src in b.original_prompts.items()}


@dataclass(frozen=True)
class Prompt:
    """A prompt template and where it came from."""

    name: str
    text: str
    path: Path
    sha256: str
    original: bool  # True when its content hash is a known benchmark original

    def format(self, **fields: object) -> str:
        return self.text.format(**fields)

    def record(self) -> dict[str, object]:
        return {
            "path": str(self.path),
            "sha256": self.sha256,
            "benchmark_original": self.original,
            "source": self.source,
        }

    @property
    def source(self) -> str:
        """Where the text comes from: a known original, the project's own, or the user's."""
        if self.original:
            return known_originals()[self.sha256]
        ours = PACKAGE_DIR.parent in self.path.resolve().parents  # eqa_runner's own files
        return "eqa_runner" if ours else "user-supplied"


def load_prompt(shipped: str | Path, name: str, prompts_dir: str | Path | None = None) -> Prompt:
    """Load ``<name>.txt`` from ``prompts_dir`` if given, else the shipped copy: ``shipped`` is
    the directory holding it (a benchmark package's ``prompts/``) or the name of a directory
    here (``vlm``). It counts as the benchmark's original only when its content hash is in
    :func:`known_originals`.

    Read once per process (prompt files do not change during a run).
    """
    return _load_prompt(str(shipped), name, str(prompts_dir) if prompts_dir else None)


def shipped_dir(package_file: str) -> Path:
    """The ``prompts/`` directory beside a module (``shipped_dir(__file__)``)."""
    return Path(package_file).parent / "prompts"


@lru_cache(maxsize=256)
def _load_prompt(shipped: str, name: str, prompts_dir: str | None) -> Prompt:
    where = Path(shipped) if Path(shipped).is_absolute() else PACKAGE_DIR / shipped
    if prompts_dir:
        path = Path(prompts_dir) / f"{name}.txt"
        if not path.is_file():
            raise FileNotFoundError(
                f"prompts.dir={prompts_dir}: no {name}.txt there. Fetch the originals with "
                "`python -m eqa_runner.data fetch <benchmark>` or unset prompts.dir."
            )
    else:
        path = where / f"{name}.txt"
    text = path.read_text(encoding="utf-8").strip()
    sha = hashlib.sha256(text.encode()).hexdigest()
    return Prompt(name, text, path, sha, sha in known_originals())


def split_prompt(text: str) -> tuple[str, str]:
    """(system, user) parts of a prompt file (``[system]:`` / ``[user]:`` sections).

    A file without the section markers is all user text.
    """
    low = text.lower()
    s_at, u_at = low.find("[system]:"), low.find("[user]:")
    if u_at < 0:
        return "", text.strip()
    system = text[s_at + len("[system]:") : u_at] if 0 <= s_at < u_at else ""
    return system.strip(), text[u_at + len("[user]:") :].strip()
