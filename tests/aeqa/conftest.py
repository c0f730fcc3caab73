"""The A-EQA tests: their demo (`aeqa_demo`, once per session) is in tests/conftest.py."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # `from tests.conftest import ...` without `python -m pytest`
    sys.path.insert(0, str(ROOT))
