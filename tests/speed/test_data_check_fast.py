"""``data check openeqa --no-decode`` reads frame headers only: same sizes, no pixel decoding."""

from __future__ import annotations

from eqa_runner.benchmarks.openeqa_em.data import check_openeqa
from tests.helpers.datasets import make_openeqa_dataset


def test_header_check_matches_full_check_and_skips_pixels(tmp_path):
    data = make_openeqa_dataset(tmp_path / "d", n_questions=6, n_episodes=2, frames=3)
    full, quick = check_openeqa(data), check_openeqa(data, decode=False)
    assert full.ok and quick.ok and full.stats == quick.stats
    frame = next((data / "episodes").rglob("00001-rgb.png"))
    raw = frame.read_bytes()
    frame.write_bytes(raw[: len(raw) // 2])  # header intact, pixel data truncated
    assert not check_openeqa(data).ok  # decoding finds it
    assert check_openeqa(data, decode=False).ok  # the header alone does not
    frame.write_bytes(b"not a png")
    rep = check_openeqa(data, decode=False)
    assert not rep.ok and "unreadable header" in rep.broken[0]
