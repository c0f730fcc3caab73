"""``python -m eqa_runner.report``."""

from eqa_runner.report.tables import main

raise SystemExit(main())
