"""Prompt files: the project's own (shipped here, or in a benchmark's package) or the benchmark's
originals (``prompts.dir``)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

PACKAGE_DIR = Path(__file__).parent


@dataclass(frozen=True)
class Prompt:
    """A prompt template and where it came from."""

    name: str
    text: str
    path: Path
    sha256: str
    original: bool  # True when loaded from a benchmark's original prompt directory

    def format(self, **fields: object) -> str:
        return self.text.format(**fields)

    def record(self) -> dict[str, object]:
        return {"path": str(self.path), "sha256": self.sha256, "benchmark_original": self.original}


def load_prompt(shipped: str | Path, name: str, prompts_dir: str | Path | None = None) -> Prompt:
    """Load ``<name>.txt`` from ``prompts_dir`` if given (originals), else the shipped copy:
    ``shipped`` is the directory holding it (a benchmark package's ``prompts/``) or the name of
    a directory here (``vlm``).

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
        original = True
    else:
        path = where / f"{name}.txt"
        original = False
    text = path.read_text(encoding="utf-8").strip()
    return Prompt(name, text, path, hashlib.sha256(text.encode()).hexdigest(), original)


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
