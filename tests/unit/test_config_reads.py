"""Components read ``self.config.x``: no constructor copies a schema field to an attribute of the
same name (``self.max_steps = c.max_steps``, ``self.seed = int(c.seed)``), so the typed config is
the one place a value lives (issue 32, item 4)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# a field copied as is or through float/int/bool (a derived value, a Path with a default, is not)
COPY = re.compile(
    r"self\.(\w+)\s*(?::[^=\n]*)?=\s*(?:(?:float|int|bool)\()?(?:c|cfg|self\.config)\.(\1)\)?\s*$"
)


def test_no_component_copies_a_config_field() -> None:
    files = [*ROOT.glob("eqa_runner/**/*.py"), *ROOT.glob("plugins/*/*/**/*.py")]
    copies = [
        f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
        for p in files
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if COPY.search(line)
    ]
    assert not copies, "read self.config.<field> instead:\n" + "\n".join(copies)


def test_the_pattern_sees_a_copy() -> None:
    assert COPY.search("        self.seed = int(c.seed)")
    assert COPY.search("        self.max_steps = c.max_steps")
    assert COPY.search("        self.source = self.config.source")
    assert not COPY.search("        self.region_reply = c.text")
    assert not COPY.search("        self.data_dir = Path(c.data_dir)")
