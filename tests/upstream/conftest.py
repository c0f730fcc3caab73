"""The benchmarks' demo fixtures, shared by the upstream-format tests."""

from tests.aeqa.conftest import aeqa_demo  # noqa: F401
from tests.hmeqa.conftest import hmeqa_demo  # noqa: F401
