"""Pictures for ``report.html`` as ``data:`` URIs: the per-category chart and frame thumbnails."""

from __future__ import annotations

import base64
import io
from pathlib import Path

from eqa_runner.report.runs import Run
from eqa_runner.report.tables import groups

THUMB_PX = 160


def data_uri(data: bytes, mime: str) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


class Thumbs:
    """JPEG thumbnails (longer side ``px``) as data URIs, cached by path."""

    def __init__(self, px: int = THUMB_PX) -> None:
        self.px = px
        self._cache: dict[Path, str | None] = {}

    def __call__(self, path: Path) -> str | None:
        path = Path(path)
        if path not in self._cache:
            self._cache[path] = self._make(path)
        return self._cache[path]

    def _make(self, path: Path) -> str | None:
        from PIL import Image

        try:
            with Image.open(path) as im:
                im = im.convert("RGB")
                im.thumbnail((self.px, self.px))
                buf = io.BytesIO()
                im.save(buf, "JPEG", quality=80)
        except Exception:
            return None
        return data_uri(buf.getvalue(), "image/jpeg")


def category_chart(runs: list[Run], metric: str) -> str | None:
    """Bars per category (one colour per run) with 95% interval error bars, as a data URI."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    per_run = [groups(r.summary, "category") for r in runs]
    cats = sorted({c for g in per_run for c in g})
    if not cats:
        return None
    width = 0.8 / max(1, len(runs))
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(cats) + 2), 3.6), dpi=100)
    x = np.arange(len(cats))
    for i, (r, by_cat) in enumerate(zip(runs, per_run, strict=False)):
        means, lo, hi = [], [], []
        for c in cats:
            m = (by_cat.get(c) or {}).get(metric) or {}
            mean = m.get("mean")
            ci = m.get("ci95") or [None, None]
            means.append(np.nan if mean is None else mean)
            lo.append(0 if mean is None or ci[0] is None else mean - ci[0])
            hi.append(0 if mean is None or ci[1] is None else ci[1] - mean)
        ax.bar(x + (i - (len(runs) - 1) / 2) * width, means, width, yerr=[lo, hi], capsize=3,
               label=(r.short or r.label)[:60])  # fmt: skip
    ax.set_xticks(x, [c.replace(" ", "\n") for c in cats], fontsize=8)
    ax.set_ylabel(f"{metric} (95% CI)")
    ax.set_ylim(0, 105 if metric != "d_T" else None)
    ax.grid(axis="y", alpha=0.3)
    if len(runs) > 1:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return data_uri(buf.getvalue(), "image/png")
