"""A sweep waiting on a queue says how far it is, every ``hydra.launcher.progress_s``."""

from __future__ import annotations

from pathlib import Path

from hydra_plugins.eqa_runner_launcher.launcher import _OWN_KEYS, wait_all


class FakeJob:
    def __init__(self, done_at: float, clock: list[float]) -> None:
        self.done_at, self.clock = done_at, clock

    def done(self) -> bool:
        return self.clock[0] >= self.done_at


def _wait(done_at: list[float], progress_s: float) -> tuple[list[str], float]:
    now = [0.0]
    jobs = [FakeJob(t, now) for t in done_at]
    lines: list[str] = []

    def sleep(s: float) -> None:
        now[0] += s

    wait_all(jobs, Path("outputs/sweeps/x"), progress_s, emit=lines.append,
             clock=lambda: now[0], sleep=sleep)  # fmt: skip
    return lines, now[0]


def test_a_line_every_progress_interval_until_all_jobs_are_done():
    lines, waited = _wait([100.0, 400.0, 1000.0], progress_s=180.0)
    assert 1000.0 <= waited < 1010.0
    assert len(lines) == 5  # at 180, 360, 540, 720, 900 s
    assert lines[0].startswith("[eqa_runner] sweep outputs/sweeps/x: 1 of 3 jobs finished, 2 ")
    assert "waited 3 min 0 s" in lines[0]
    assert "2 of 3 jobs finished, 1 queued or running; waited 9 min 0 s" in lines[2]


def test_no_line_for_a_quick_sweep_or_with_progress_off():
    assert _wait([10.0, 20.0], progress_s=180.0)[0] == []
    lines, waited = _wait([10_000.0], progress_s=0)
    assert lines == [] and waited >= 10_000.0


def test_progress_s_is_the_launchers_key_not_a_submitit_parameter():
    assert "progress_s" in _OWN_KEYS
