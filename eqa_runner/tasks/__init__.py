"""Benchmarks: each module loads its questions into :class:`eqa_runner.types.Episode` objects."""
