"""The Hydra config root (a package, so Hydra finds it as ``pkg://eqa_runner.conf`` when
``eqa-runner`` is an installed console script)."""
