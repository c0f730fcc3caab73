"""``python -m eqa_runner.demo``."""

from eqa_runner.errors import require_installed

require_installed("python -m eqa_runner.demo")

from eqa_runner.demo.cli import main

main()
