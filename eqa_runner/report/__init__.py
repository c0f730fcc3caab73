"""Run reports: tables, ablation comparisons and the HTML page (``python -m eqa_runner.report``)."""
