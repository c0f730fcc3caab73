"""``python -m eqa_runner.report``.

A one-shot process: the cyclic garbage collector stays off to the end (``main`` pauses it
while it works; turned back on, its first pass would walk every object still alive just before
the process exits, ≈0.3 s of a sweep report: docs/benchmarks.md, issue 27)."""

from eqa_runner.errors import require_installed

require_installed("python -m eqa_runner.report")

import gc

gc.disable()

from eqa_runner.report.cli import main  # noqa: E402

raise SystemExit(main())
