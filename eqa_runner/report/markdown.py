"""Tables as GitHub Markdown (no ``tabulate`` needed)."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd


def is_nan(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def to_markdown(df: pd.DataFrame) -> str:
    """A GitHub Markdown table; numbers right-aligned."""
    cols = [str(c) for c in df.columns]

    def cell(v: Any) -> str:
        if is_nan(v):
            return "-"
        if isinstance(v, float):
            return f"{v:.2f}"
        return str(v).replace("|", "\\|").replace("\n", " ")

    rows = [[cell(v) for v in rec] for rec in df.itertuples(index=False)]
    numeric = [pd.api.types.is_numeric_dtype(df[c]) for c in df.columns]
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(cols)]

    def line(vals: list[str]) -> str:
        return (
            "| "
            + " | ".join(
                v.rjust(w) if num else v.ljust(w)
                for v, w, num in zip(vals, widths, numeric, strict=False)
            )
            + " |"
        )

    sep = (
        "|"
        + "|".join(
            ("-" * (w + 1) + ":") if num else ("-" * (w + 2))
            for w, num in zip(widths, numeric, strict=False)
        )
        + "|"
    )
    return "\n".join([line(cols), sep, *(line(r) for r in rows)])
