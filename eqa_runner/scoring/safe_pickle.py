"""Reading upstream pickles as untrusted input: plain data only, within limits.

The upstream scripts pickle lists and dicts of numbers, strings, numpy arrays and scalars and
(one benchmark) ``np.quaternion`` rotations. :func:`load_pickle` looks up only those globals
(anything else is refused, never executed), reads a quaternion as a plain ``(w, x, y, z)``
tuple without importing numpy-quaternion, refuses object arrays, checks an array's size before
it is allocated, and walks the result with a budget, so a small file cannot allocate a huge
array or expand a shared-reference graph into an exponential tree. Every failure is one
:class:`~eqa_runner.errors.DataError` line naming the file.
"""

from __future__ import annotations

import io
import math
import pickle
from pathlib import Path
from typing import Any

import numpy as np

from eqa_runner.errors import DataError
from eqa_runner.safe_io import write_atomic

MAX_BYTES = 256 * 2**20  # a results file larger than this is not read
MAX_VALUES = 20_000_000  # values as a tree (a value reached twice counts twice)
MAX_DEPTH = 32  # container nesting
MAX_ARRAY_ELEMENTS = 4_000_000  # numpy elements in the whole file

_PLAIN = {
    ("builtins", "dict"),
    ("builtins", "list"),
    ("builtins", "tuple"),
    ("builtins", "set"),
    ("builtins", "frozenset"),
    ("builtins", "float"),
    ("builtins", "int"),
    ("builtins", "str"),
    ("builtins", "complex"),
    ("builtins", "bytes"),
    ("collections", "OrderedDict"),
    ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"),
}
_RECONSTRUCT = {
    ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"),
}


class _Limit(Exception):
    """A limit of this reader was passed (the message says which)."""


def _size(shape: Any) -> int:
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    if not all(isinstance(d, int) and d >= 0 for d in dims):
        raise pickle.UnpicklingError(f"array shape {shape!r} is not a tuple of sizes")
    return math.prod(dims)


class _DataUnpickler(pickle.Unpickler):
    def __init__(self, data: bytes) -> None:
        super().__init__(io.BytesIO(data))
        self.elements = 0

    def _spend(self, shape: Any) -> None:
        self.elements += _size(shape)
        if self.elements > MAX_ARRAY_ELEMENTS:
            raise _Limit(f"more than {MAX_ARRAY_ELEMENTS:,} array elements")

    def _ndarray(self, shape: Any, dtype: Any = float, *args: Any) -> np.ndarray:
        self._spend(shape)
        return np.ndarray(shape, _dtype(dtype), *args)

    def _reconstruct(self, cls: Any, shape: Any, dtype: Any) -> np.ndarray:
        if cls != self._ndarray:
            raise pickle.UnpicklingError("_reconstruct of a class other than numpy.ndarray")
        self._spend(shape)
        return np.ndarray(shape, dtype="b")

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _PLAIN:
            return super().find_class(module, name)
        if (module, name) in _RECONSTRUCT:
            return self._reconstruct
        if (module, name) == ("numpy", "ndarray"):
            return self._ndarray
        if (module, name) == ("numpy", "dtype"):
            return _dtype
        if (module, name) == ("quaternion", "quaternion"):
            return _quaternion
        raise pickle.UnpicklingError(f"{module}.{name} is not plain data")


def _dtype(spec: Any, *args: Any) -> np.dtype:
    dt = np.dtype(spec, *args) if not isinstance(spec, np.dtype) else spec
    if dt.hasobject:
        raise pickle.UnpicklingError("an object array is not plain data")
    return dt


def _quaternion(*wxyz: Any) -> tuple[float, ...]:
    """numpy-quaternion's ``np.quaternion(w, x, y, z)``, read as the tuple ``(w, x, y, z)``."""
    if len(wxyz) != 4 or not all(isinstance(v, (int, float)) for v in wxyz):
        raise pickle.UnpicklingError(f"quaternion{wxyz!r:.60} is not four numbers")
    return tuple(float(v) for v in wxyz)


_LEAVES = (str, int, float, bytes, complex, type(None), np.generic)


def _measure(v: Any, depth: int, memo: dict[int, tuple[int, int]]) -> tuple[int, int]:
    """(values as a tree, height) of ``v``; a shared value is measured once (memo by id) but
    counts once per reference, so an exponential tree of shared references is found in linear
    time, never walked."""
    if isinstance(v, np.ndarray):
        if v.dtype.hasobject:
            raise pickle.UnpicklingError("an object array is not plain data")
        if v.size > MAX_ARRAY_ELEMENTS:
            raise _Limit(f"an array of more than {MAX_ARRAY_ELEMENTS:,} elements")
        return 1, 0
    if not isinstance(v, (dict, list, tuple, set, frozenset)):
        return 1, 0
    if (hit := memo.get(id(v))) is None:
        if depth > MAX_DEPTH:
            raise _Limit(f"nested deeper than {MAX_DEPTH}")
        size, height = 1, 0
        items: Any = v
        if isinstance(v, dict):  # leaf keys count one each; a tuple key is measured
            items = [*v.values(), *(k for k in v if not isinstance(k, _LEAVES))]
            size += len(v) + len(v.values()) - len(items)
        for x in items:
            if isinstance(x, _LEAVES):
                size += 1
                continue
            n, h = _measure(x, depth + 1, memo)
            size, height = size + n, max(height, h + 1)
            if size > MAX_VALUES:
                raise _Limit(f"more than {MAX_VALUES:,} values (shared references count per use)")
        memo[id(v)] = hit = (size, height)
    if depth + hit[1] > MAX_DEPTH:
        raise _Limit(f"nested deeper than {MAX_DEPTH}")
    return hit


def load_pickle(path: Path) -> Any:
    """A pickle of plain data and numpy arrays (anything else is refused, not executed)."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise _Limit(f"{size:,} bytes (more than {MAX_BYTES:,})")
        obj = _DataUnpickler(path.read_bytes()).load()
        _measure(obj, 0, {})
        return obj
    except OSError as e:
        raise DataError(f"{path}: cannot be read ({e.strerror or e})") from None
    except _Limit as e:
        raise DataError(
            f"{path}: too large for a results pickle: {e}; split it or check where it came from"
        ) from None
    except RecursionError:
        raise DataError(f"{path}: not a results pickle of plain data (nested too deep)") from None
    except Exception as e:  # noqa: BLE001 - any failure of untrusted bytes is one line
        raise DataError(
            f"{path}: not a results pickle of plain data ({type(e).__name__}: {str(e)[:120]})"
        ) from None


def dump_pickle(obj: Any, path: Path) -> Path:
    """Write ``obj`` as upstream does (protocol 4) via a temp file and a rename."""

    path.parent.mkdir(parents=True, exist_ok=True)
    return write_atomic(path, pickle.dumps(obj, protocol=4))
