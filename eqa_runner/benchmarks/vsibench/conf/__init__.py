"""This benchmark's Hydra config groups, laid out like ``eqa_runner/conf`` (a package, so Hydra
finds it as ``pkg://eqa_runner.benchmarks.vsibench.conf``: ``BENCHMARK.conf_dir``)."""
