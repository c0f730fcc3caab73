"""A summary's slim records packed flat: one tuple of values per record, the keys shared.

A slim record (:func:`eqa_runner.run.summary.slim_record`) as plain dicts is five small
dicts per record (the record, ``metrics``, ``usage``, ``error``, ``trace``) and a fresh float
object per number: about 1.5 KB. Packed, it is one tuple of its values and a 56-byte handle;
the keys live once in a :class:`Shape` shared by every record of the same shape, and floats
that recur (0.5, 1.0, 3.0 ...) are one object each. A :class:`Packed` reads like the dict it
came from (a read-only :class:`~collections.abc.Mapping`: ``r["metrics"]["c"]``, ``.get``,
``in``, ``==``), so the judges' ``aggregate`` runs on it unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

# a part spec: the keys whose dict values are packed too, each with its own spec
Parts = Mapping[str, Any]
_FLOAT_CACHE_MAX = 512  # the first distinct floats seen (low-cardinality values come early)


class Shape:
    """The keys of one packed (sub)record: ``slots[key] = (offset, sub-shape or None)``."""

    __slots__ = ("keys", "slots", "width")

    def __init__(self, signature: tuple[tuple[str, Any], ...]) -> None:
        self.keys = tuple(k for k, _ in signature)
        self.width: int = 0
        self.slots: dict[str, tuple[int, Shape | None]] = {}
        at = 0
        for key, sub_sig in signature:
            sub = None if sub_sig is None else _shape(sub_sig)
            self.slots[key] = (at, sub)
            at += 1 if sub is None else sub.width
        self.width = at


class Packed(Mapping[str, Any]):
    """A read-only mapping over ``vals[at : at + shape.width]``; a packed part comes back
    as a :class:`Packed` over the same tuple."""

    __slots__ = ("_at", "_shape", "_vals")

    def __init__(self, shape: Shape, vals: tuple[Any, ...], at: int = 0) -> None:
        self._shape, self._vals, self._at = shape, vals, at

    def __getitem__(self, key: str) -> Any:
        at, sub = self._shape.slots[key]
        if sub is None:
            return self._vals[self._at + at]
        return Packed(sub, self._vals, self._at + at)

    def get(self, key: str, default: Any = None) -> Any:
        hit = self._shape.slots.get(key)
        if hit is None:
            return default
        at, sub = hit
        return self._vals[self._at + at] if sub is None else Packed(sub, self._vals, self._at + at)

    def __contains__(self, key: object) -> bool:
        return key in self._shape.slots

    def __iter__(self) -> Iterator[str]:
        return iter(self._shape.keys)

    def __len__(self) -> int:
        return len(self._shape.keys)

    def __repr__(self) -> str:
        return f"Packed({unpack(self)!r})"


_SHAPES: dict[tuple[tuple[str, Any], ...], Shape] = {}
_FLOATS: dict[float, float] = {}


def _shape(signature: tuple[tuple[str, Any], ...]) -> Shape:
    shape = _SHAPES.get(signature)
    if shape is None:
        shape = _SHAPES[signature] = Shape(signature)
    return shape


def _shared(v: Any) -> Any:
    """One object for a float seen before (not 0.0 / -0.0 / nan: their sign or identity)."""
    if type(v) is not float or v == 0.0 or math.isnan(v):
        return v
    hit = _FLOATS.get(v)
    if hit is not None:
        return hit
    if len(_FLOATS) < _FLOAT_CACHE_MAX:
        _FLOATS[v] = v
    return v


def _flatten(d: Mapping[str, Any], parts: Parts, vals: list[Any]) -> tuple[tuple[str, Any], ...]:
    sig: list[tuple[str, Any]] = []
    for key, v in d.items():
        sub = parts.get(key)
        if sub is not None and isinstance(v, dict):
            sig.append((key, _flatten(v, sub, vals)))
        else:
            sig.append((key, None))
            vals.append(_shared(v))
    return tuple(sig)


def pack(d: Mapping[str, Any], parts: Parts) -> Packed:
    """``d`` packed; the dict values under ``parts``' keys (recursively) packed with it, any
    other value kept as it is (a list, a dict inside ``trace``, ``None``)."""
    vals: list[Any] = []
    sig = _flatten(d, parts, vals)
    return Packed(_shape(sig), tuple(vals))


def unpack(p: Mapping[str, Any]) -> dict[str, Any]:
    """The plain dicts again (for a repr, a test or ``json.dumps``)."""
    return {k: unpack(v) if isinstance(v, Packed) else v for k, v in p.items()}
