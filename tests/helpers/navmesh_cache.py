"""The walkable span field of each mesh built once per test session.

The EXPRESS, HM-EQA, MT-HM3D and A-EQA demos are written from the same procedural apartments and
house, and every demo fixture and run test loads its scenes again: the same Recast build (about
a second a scene) was done three or four times per session. Here the mesh simulator's
``build_spans`` is kept by its inputs (vertices, triangles, settings) and each caller gets its
own copy. ``eqa_runner.sim.recast.build_spans`` itself (tests/sim/test_recast.py) is untouched.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import numpy as np

from eqa_runner.sim import mesh, recast

_BUILT: dict[str, recast.SpanField] = {}


def _key(vertices: Any, triangles: Any, settings: recast.NavSettings) -> str:
    h = hashlib.sha256(repr(settings).encode())
    for a in (np.ascontiguousarray(vertices), np.ascontiguousarray(triangles)):
        h.update(f"{a.dtype}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def build_spans_once(vertices: Any, triangles: Any, settings: recast.NavSettings) -> Any:
    """``recast.build_spans``, computed once per distinct input."""
    key = _key(vertices, triangles, settings)
    if key not in _BUILT:
        _BUILT[key] = recast.build_spans(vertices, triangles, settings)
    return copy.deepcopy(_BUILT[key])


def install() -> None:
    mesh.build_spans = build_spans_once  # type: ignore[assignment]
