"""scipy.ndimage, scikit-image and scikit-learn, imported on first use.

They take seconds to import; building a mapping policy without running it (``run.dry_run``,
``--cfg job``) should not pay for them."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class LazyModule:
    """A module imported at the first attribute access."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attr)


ndimage = LazyModule("scipy.ndimage")
measure = LazyModule("skimage.measure")
sklearn_cluster = LazyModule("sklearn.cluster")
