"""Dataset staging helpers for ``python -m eqa_runner.data`` (sources, safe extraction)."""
