"""``python -m eqa_runner.report``."""

from eqa_runner.report.cli import main

raise SystemExit(main())
