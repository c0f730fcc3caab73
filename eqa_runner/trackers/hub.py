"""The run's trackers behind one bounded queue and one background thread.

The run only ever enqueues (never waits): a full queue drops the event and counts it. The
thread hands each event to every tracker still working; a tracker that raises is disabled
with one warning, and each event it then misses is counted. :meth:`TrackerHub.close` waits at
most ``flush_timeout_s`` for the queue to drain, then prints one line per tracker that did not
log everything (how many events, and why).
"""

from __future__ import annotations

import logging
import queue
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eqa_runner.trackers.base import RunInfo, Tracker
from eqa_runner.trackers.redact import redact_text

log = logging.getLogger(__name__)
_STOP = ("__stop__", ())
MAX_ERROR = 240  # characters of a tracker's error kept for the warning and the closing line


@dataclass
class _State:
    tracker: Tracker
    sent: int = 0
    missed: int = 0
    error: str | None = None  # why it stopped logging (the first failure)


@dataclass
class HubReport:
    """What was not logged, per tracker (for the run's closing line)."""

    lines: list[str] = field(default_factory=list)
    dropped: int = 0


TEXT_SUFFIXES = (".json", ".jsonl", ".html", ".yaml", ".yml", ".csv", ".txt", ".log", ".md")


def _screened(path: Path, tmp: Path) -> Path:
    """``path``, or a redacted copy of it in ``tmp`` when its text holds a known secret."""
    if path.suffix.lower() not in TEXT_SUFFIXES or not path.is_file():
        return path
    text = path.read_text(encoding="utf-8", errors="replace")
    clean = redact_text(text)
    if clean == text:
        return path
    out = tmp / path.name
    out.write_text(clean, encoding="utf-8")
    return out


class TrackerHub:
    """Fan events out to ``trackers`` on one daemon thread; see the module docstring."""

    def __init__(
        self, trackers: Sequence[Tracker], *, queue_size: int = 1000, flush_timeout_s: float = 30.0
    ) -> None:
        self.states = [_State(t) for t in trackers]
        self.flush_timeout_s = float(flush_timeout_s)
        self._q: queue.Queue[tuple[str, tuple[Any, ...]]] = queue.Queue(maxsize=queue_size)
        self._events = 0
        self._dropped = 0
        self._warned_full = False
        self._thread = threading.Thread(target=self._work, name="eqa-trackers", daemon=True)
        self._thread.start()

    @property
    def names(self) -> list[str]:
        return [s.tracker.name for s in self.states]

    # ----------------------------------------------------------------- the run's side
    def _put(self, method: str, *args: Any) -> None:
        self._events += 1
        try:
            self._q.put_nowait((method, args))
        except queue.Full:
            self._dropped += 1
            if not self._warned_full:
                self._warned_full = True
                log.warning(
                    "trackers are behind (queue full): events are being dropped; the run goes on"
                )

    def start(self, info: RunInfo) -> None:
        self._put("start", info)

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        self._put("log_metrics", dict(metrics), int(step))

    def log_table(self, name: str, rows: Sequence[Mapping[str, Any]]) -> None:
        self._put("log_table", name, [dict(r) for r in rows])

    def log_summary(self, headline: Mapping[str, float], status: str) -> None:
        self._put("log_summary", dict(headline), str(status))

    def log_artifact(self, path: Path) -> None:
        """A run file; a text file passes the secret screen first (a redacted copy is sent)."""
        self._put("log_artifact", Path(path))

    def close(self, status: str = "FINISHED") -> HubReport:
        """Finish every tracker (waiting at most ``flush_timeout_s``); what was not logged."""
        deadline = time.monotonic() + self.flush_timeout_s
        self._events += 1
        for item in (("finish", (status,)), _STOP):  # these two wait for room (bounded)
            try:
                self._q.put(item, timeout=max(0.0, deadline - time.monotonic()))
            except queue.Full:
                self._dropped += item is not _STOP
        self._thread.join(max(0.0, deadline - time.monotonic()))
        left = self._q.qsize() if self._thread.is_alive() else 0
        rep = HubReport(dropped=self._dropped)
        for s in self.states:
            missed = s.missed + self._dropped + left
            if self._thread.is_alive() and s.error is None:
                s.error = f"still busy after {self.flush_timeout_s:g} s (slow or unreachable)"
            if missed or s.error:
                why = f" ({s.error})" if s.error else ""
                rep.lines.append(
                    f"logger {s.tracker.name}: {missed} of {self._events} events not logged{why}"
                )
        for line in rep.lines:
            print(f"[eqa_runner] {line}", file=sys.stderr, flush=True)
        return rep

    def abort(self, status: str = "KILLED", timeout_s: float = 5.0) -> None:
        """The process is being stopped: every tracker closes its run at once (its
        :meth:`~eqa_runner.trackers.base.Tracker.abort`), waiting at most ``timeout_s``."""

        def run() -> None:
            for s in self.states:
                try:
                    s.tracker.abort(status)
                except Exception as e:  # noqa: BLE001 - best effort while stopping
                    log.debug("logger %s: abort: %s", s.tracker.name, e)

        t = threading.Thread(target=run, name="eqa-trackers-abort", daemon=True)
        t.start()
        t.join(timeout_s)

    # ----------------------------------------------------------------- the thread's side
    def _work(self) -> None:
        with tempfile.TemporaryDirectory(prefix="eqa-trackers-") as tmp:
            while True:
                method, args = self._q.get()
                if (method, args) == _STOP:
                    return
                if method == "log_artifact":
                    args = (_screened(args[0], Path(tmp)),)
                for s in self.states:
                    self._deliver(s, method, args)

    def _deliver(self, s: _State, method: str, args: tuple[Any, ...]) -> None:
        if s.error is not None:
            s.missed += 1
            if method == "finish":  # every run a tracker opened is closed, even after a fault
                try:
                    s.tracker.finish(*args)
                except Exception as e:  # noqa: BLE001 - best effort: it already failed once
                    log.debug("logger %s: finish after a failure: %s", s.tracker.name, e)
            return
        t0 = time.perf_counter()
        try:
            getattr(s.tracker, method)(*args)
            s.sent += 1
        except Exception as e:  # noqa: BLE001 - a tracker never fails the run
            s.missed += 1
            first = str(e).splitlines()[0] if str(e) else ""
            s.error = redact_text(f"{type(e).__name__}: {first}")[:MAX_ERROR]
            log.warning(
                "logger %s failed (%s); the run goes on without it", s.tracker.name, s.error
            )
        finally:
            log.debug("logger %s %s %.3fs", s.tracker.name, method, time.perf_counter() - t0)
