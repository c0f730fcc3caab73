"""The upstream-format tests use the benchmarks' demos of tests/conftest.py."""
