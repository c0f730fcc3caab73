"""Run reports (``python -m eqa_runner.report``): tables, ablation comparisons, the HTML page.

Modules, lower first (each imports only those above it): ``keys`` (config keys: flattened,
ignored, differing), ``markdown`` (table formatting), ``runs`` (run dirs loaded, records, shards
merged), ``tables`` (run table, ``--by``), ``compare`` (``--compare``), ``html`` (``report.html``
from the Jinja2 templates in ``templates/``), ``cli`` (``main``).
"""
