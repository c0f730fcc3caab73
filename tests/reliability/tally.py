"""Counters the reliability tests add to; printed as one quotable line at the end of the session."""

from __future__ import annotations

TALLY: dict[str, int] = {
    "faults injected": 0,
    "crashes survived": 0,
    "bad inputs tried": 0,
    "episodes lost": 0,
    "keys leaked": 0,
    "runs mislabelled": 0,
    "paths confined": 0,
    "links refused": 0,
    "trackers left open": 0,  # MLflow runs still RUNNING when the real server's tests end
    "parser inputs timed": 0,
    "parser inputs over bound": 0,
}


def add(key: str, n: int = 1) -> None:
    TALLY[key] = TALLY.get(key, 0) + int(n)


def line() -> str:
    """``reliability: faults injected=N, …, parser time bound held=yes (N inputs)``."""
    counts = {k: v for k, v in TALLY.items() if not k.startswith("parser inputs")}
    parts = [f"{k}={v}" for k, v in counts.items()]
    timed, over = TALLY["parser inputs timed"], TALLY["parser inputs over bound"]
    if timed:
        held = "yes" if not over else f"no ({over} over)"
        parts.append(f"parser time bound held={held} ({timed} inputs)")
    return "reliability: " + ", ".join(parts)
