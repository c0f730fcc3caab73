"""The benchmarks: one package each (schema, task, protocol, judge, data check, demo writer,
prompts), exposing a :class:`eqa_runner.registry.Benchmark` descriptor named ``BENCHMARK``.

Nothing outside a benchmark's package names it; ``data``, ``demo``, ``report``, ``--help``
and the config store enumerate :func:`eqa_runner.registry.benchmarks`.
"""
