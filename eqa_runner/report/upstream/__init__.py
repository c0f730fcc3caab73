"""Exports and imports in the benchmarks' upstream result formats (``report --export/--import``)."""
