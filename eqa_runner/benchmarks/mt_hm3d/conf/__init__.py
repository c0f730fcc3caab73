"""This benchmark's Hydra config groups, laid out like ``eqa_runner/conf`` (a package, so Hydra
finds it as ``pkg://eqa_runner.benchmarks.mt_hm3d.conf``: ``BENCHMARK.conf_dir``)."""
