"""Offline demo datasets from procedural apartments (``python -m eqa_runner.demo <dir>``)."""
