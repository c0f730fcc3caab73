"""``python -m eqa_runner.demo <dir>``: write the offline demo datasets.

``<dir>/openeqa/`` (OpenEQA-format questions + walkthrough frames rendered from a procedural
apartment), ``<dir>/express/`` (EXPRESS-format questions + the apartment meshes) and
``<dir>/hmeqa/`` (HM-EQA-format multiple-choice questions + start poses + meshes),
``<dir>/aeqa/`` (A-EQA question, pose and path-length files + the apartment meshes). Each is a
valid ``task.data_dir`` for its task. Deterministic per ``--seed``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path


def write_demo(
    out: Path,
    seed: int = 0,
    *,
    openeqa: bool = True,
    express: bool = True,
    hmeqa: bool = True,
    aeqa: bool = True,
) -> dict[str, Path]:
    """Write the demo datasets under ``out``; returns their data dirs."""
    from eqa_runner.demo.datasets import write_express_demo, write_openeqa_demo

    out = Path(out)
    dirs: dict[str, Path] = {}
    if openeqa:
        write_openeqa_demo(out / "openeqa", seed=seed)
        dirs["openeqa"] = out / "openeqa"
    if express:
        write_express_demo(out / "express", seed=seed)
        dirs["express"] = out / "express"
    if hmeqa:  # HM-EQA (demo/hmeqa.py)
        from eqa_runner.demo.hmeqa import write_hmeqa_demo

        write_hmeqa_demo(out / "hmeqa", seed=seed)
        dirs["hmeqa"] = out / "hmeqa"
    if aeqa:  # A-EQA (eqa_runner/demo/aeqa.py)
        from eqa_runner.demo.aeqa import write_aeqa_demo

        write_aeqa_demo(out / "aeqa", seed=seed)
        dirs["aeqa"] = out / "aeqa"
    return dirs


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m eqa_runner.demo", description=__doc__)
    ap.add_argument("out", type=Path, help="directory to write the demo datasets into")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", choices=["openeqa", "express", "hmeqa", "aeqa"], default=None)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    dirs = write_demo(
        args.out,
        args.seed,
        openeqa=args.only in (None, "openeqa"),
        express=args.only in (None, "express"),
        hmeqa=args.only in (None, "hmeqa"),
        aeqa=args.only in (None, "aeqa"),
    )
    for name, d in dirs.items():
        print(f"{name}: task.data_dir={d}")
    print(f"demo written in {time.perf_counter() - t0:.1f}s")


if __name__ == "__main__":
    main()
