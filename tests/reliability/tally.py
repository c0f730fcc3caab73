"""Counters the reliability tests add to; printed as one quotable line at the end of the session."""

from __future__ import annotations

TALLY: dict[str, int] = {
    "faults injected": 0,
    "crashes survived": 0,
    "bad inputs tried": 0,
    "episodes lost": 0,
    "keys leaked": 0,
    "runs mislabelled": 0,
}


def add(key: str, n: int = 1) -> None:
    TALLY[key] = TALLY.get(key, 0) + int(n)


def line() -> str:
    return "reliability: " + ", ".join(f"{k}={v}" for k, v in TALLY.items())
