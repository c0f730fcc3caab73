"""``python -m eqa_runner.demo``."""

from eqa_runner.demo.cli import main

main()
