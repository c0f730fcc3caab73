"""Two costs Hydra 1.3 pays again at every ``compose``, paid once per test session instead.

The suite composes the config tree several hundred times (every option, preset and documented
command); a third of each compose went to work that gives the same result every time:

* **the ConfigStore copied**: each compose deep-copies the config repository
  (``CachingConfigRepository.__init__``), and with it the process's ConfigStore singleton and
  every registered schema. The copy is only read: ``ConfigStore.load`` already returns a copy of
  the node it hands out. Here the repository is copied with the store shared.
* **each YAML option parsed again**: Hydra's file and package config sources parse the file with
  ``OmegaConf.load``. Here a file's parse is kept by its text (a changed file is parsed anew) and
  each load gets its own deep copy, as a fresh parse would give.

What a compose returns is unchanged (tests/test_session_caches.py composes with and without).
Nothing is patched when Hydra's code is not the one these rules were written against.
"""

from __future__ import annotations

import copy
import hashlib
import inspect
import textwrap
from typing import IO, Any

from hydra._internal import config_repository
from hydra._internal.sources_registry import SourcesRegistry
from hydra.core.config_store import ConfigStore
from hydra.core.plugins import Plugins
from omegaconf import DictConfig, ListConfig, OmegaConf

_REPO_INIT = """
def __init__(self, delegate: IConfigRepository):
    # copy the underlying repository to avoid mutating it with initialize_sources()
    self.delegate = copy.deepcopy(delegate)
    self.cache: Dict[str, Optional[ConfigResult]] = {}
"""
_PARSED: dict[str, DictConfig | ListConfig] = {}  # sha256 of a config file's text -> its parse


def _copy_sharing_the_store(self: Any, delegate: Any) -> None:
    store = ConfigStore.instance()
    self.delegate = copy.deepcopy(delegate, {id(store): store})
    self.cache = {}


class _ParseOnce(OmegaConf):
    """``OmegaConf`` for Hydra's config sources: ``load`` parses each file text once."""

    @staticmethod
    def load(file_: IO[Any]) -> DictConfig | ListConfig:  # type: ignore[override]
        start = file_.tell()
        text = file_.read()
        raw = text.encode() if isinstance(text, str) else text
        key = hashlib.sha256(raw).hexdigest()
        if key not in _PARSED:
            file_.seek(start)
            _PARSED[key] = OmegaConf.load(file_)
        return copy.deepcopy(_PARSED[key])


def _same_code(fn: Any, expected: str) -> bool:
    try:
        return textwrap.dedent(inspect.getsource(fn)).strip() == expected.strip()
    except (OSError, TypeError):
        return False


_REPO = config_repository.CachingConfigRepository
_HYDRA_INIT = _REPO.__init__


def _source_globals() -> list[dict[str, Any]]:
    """The module globals the file and package sources parse YAML with. Hydra's first plugin
    scan imports its core plugin modules anew, so they are looked up after it, through the
    registered classes themselves."""
    Plugins.instance()
    reg = SourcesRegistry.instance()
    return [reg.resolve("file").load_config.__globals__,
            reg.resolve("pkg")._read_config.__globals__]  # type: ignore[attr-defined]  # fmt: skip


def install() -> bool:
    """Patch Hydra's compose path in this process (idempotent); False when Hydra's code differs
    from what the patches assume (nothing patched then)."""
    if _REPO.__init__ is _copy_sharing_the_store:
        return True
    sources = _source_globals()
    if not _same_code(_HYDRA_INIT, _REPO_INIT):
        return False
    if any(g["OmegaConf"] is not OmegaConf for g in sources):
        return False
    _REPO.__init__ = _copy_sharing_the_store  # type: ignore[method-assign]
    for g in sources:
        g["OmegaConf"] = _ParseOnce
    return True


def uninstall() -> None:
    """Hydra's own code again (a test compares the two)."""
    _REPO.__init__ = _HYDRA_INIT  # type: ignore[method-assign]
    for g in _source_globals():
        g["OmegaConf"] = OmegaConf
