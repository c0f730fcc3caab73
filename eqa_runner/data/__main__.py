"""``python -m eqa_runner.data``."""

from eqa_runner.errors import require_installed

require_installed("python -m eqa_runner.data")

from eqa_runner.data.commands import main

raise SystemExit(main())
