"""Dataset staging and checks (``python -m eqa_runner.data fetch|check``)."""
