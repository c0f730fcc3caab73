"""Small modules and functions (STYLE.md, issue 22): no module over 450 lines, no function over
60, in the core package, its Hydra plugins and the plugins in plugins/ (measured with ``ast``:
a function from its first decorator to its last line).

Two lists, each entry with its reason:

* ``EXCEPTIONS`` — generated or table-like code, allowed to stay long;
* ``KNOWN_OFFENDERS`` — code other branches are editing or splitting right now (each names the
  branch), with its size when listed; the test warns when one grows and when an entry can go.

Anything else over a limit fails the test, naming the file, the function and its length.
"""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

from tests.conftest import ROOT

MAX_MODULE, MAX_FUNCTION = 450, 60
SOURCES = [ROOT / "eqa_runner", ROOT / "hydra_plugins", *sorted((ROOT / "plugins").glob("*/*/"))]

EXCEPTIONS: dict[str, str] = {
    # "path[:function]": "why it is generated or table-like"
}
KNOWN_OFFENDERS: dict[str, tuple[int, str]] = {
    # path[:function] -> (its size when listed, whose branch)
}


def measure() -> dict[str, int]:
    """``path`` -> lines of every module, ``path:function`` -> lines of every function."""
    sizes: dict[str, int] = {}
    for base in SOURCES:
        for py in sorted(base.rglob("*.py")):
            if "tests" in py.relative_to(base).parts:
                continue
            rel = py.relative_to(ROOT).as_posix()
            text = py.read_text(encoding="utf-8")
            sizes[rel] = len(text.splitlines())
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    start = min([d.lineno for d in node.decorator_list] + [node.lineno])
                    key = f"{rel}:{node.name}"
                    sizes[key] = max(sizes.get(key, 0), (node.end_lineno or start) - start + 1)
    return sizes


def over(sizes: dict[str, int]) -> dict[str, int]:
    return {k: n for k, n in sizes.items() if n > (MAX_FUNCTION if ":" in k else MAX_MODULE)}


def test_no_module_or_function_over_the_limits() -> None:
    found = over(measure())
    new = {k: n for k, n in found.items() if k not in EXCEPTIONS and k not in KNOWN_OFFENDERS}
    assert not new, (
        f"over {MAX_MODULE} lines per module / {MAX_FUNCTION} per function: "
        + ", ".join(f"{k} ({n})" for k, n in sorted(new.items()))
    )
    for k, n in found.items():
        if k in KNOWN_OFFENDERS and n > KNOWN_OFFENDERS[k][0]:
            listed = KNOWN_OFFENDERS[k][0]
            warnings.warn(f"{k} grew to {n} lines (listed at {listed})", stacklevel=1)


def test_the_lists_stay_honest() -> None:
    """An exception must still be needed; a known offender that is now within the limits is
    reported, so its entry is dropped when its branch lands."""
    found = over(measure())
    stale = sorted(k for k in EXCEPTIONS if k not in found)
    assert not stale, f"EXCEPTIONS no longer needed (remove them): {stale}"
    for k, (_, why) in KNOWN_OFFENDERS.items():
        assert why, k
        if k not in found:
            warnings.warn(
                f"{k} is within the limits now: drop it from KNOWN_OFFENDERS", stacklevel=1
            )


def test_the_measure_sees_long_code(tmp_path: Path) -> None:
    """The measure itself: a 61-line function and a 451-line module are over."""
    body = "\n".join(f"    x{i} = {i}" for i in range(59))
    sizes = {"m.py": 451, "m.py:f": len(f"def f():\n{body}\n    return 0".splitlines())}
    assert over(sizes) == {"m.py": 451, "m.py:f": 61}
