"""Resident memory of a process and of its children, sampled over time (Linux ``/proc``).

``ru_maxrss`` gives one process's peak, and ``RUSAGE_CHILDREN`` only the largest child that
has been waited for; neither says whether the server and its conversion child were both high
at the same moment. :class:`RssSampler` reads ``VmRSS`` of this process and of every
descendant every ``every`` seconds on a thread, and keeps the peaks (this process alone, the
children together, the two added at one instant), each child's own high-water mark
(``VmHWM``), and a short timeline labelled with what the bench said it was doing.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

PROC = Path("/proc")


def status_kb(pid: int | str, field: str) -> int:
    """A ``/proc/PID/status`` field in kB (0 once the process is gone)."""
    try:
        for line in (PROC / str(pid) / "status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return 0
    return 0


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (children of its threads too)."""
    found: list[int] = []
    pending = [pid]
    while pending:
        current = pending.pop()
        for children in (PROC / str(current) / "task").glob("*/children"):
            try:
                pids = [int(p) for p in children.read_text().split()]
            except (OSError, ValueError):
                continue
            found += pids
            pending += pids
    return found


class RssSampler:
    """Samples this process's and its descendants' resident memory until stopped."""

    def __init__(self, every: float = 0.1) -> None:
        self.every = every
        self.pid = os.getpid()
        self.started = time.perf_counter()
        self.phase = "start"
        self.main_peak_kb = 0
        self.children_peak_kb = 0
        self.total_peak_kb = 0
        self.total_peak_at = (0.0, "start", 0, 0)
        self.child_hwm_kb: dict[int, int] = {}
        self.timeline: list[tuple[float, str, int, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def mark(self, phase: str) -> None:
        """Label the samples that follow (what the bench is doing now)."""
        self.phase = phase

    def sample(self) -> None:
        """One reading of every process."""
        main = status_kb(self.pid, "VmRSS")
        children = 0
        for child in descendants(self.pid):
            children += status_kb(child, "VmRSS")
            hwm = status_kb(child, "VmHWM")
            self.child_hwm_kb[child] = max(self.child_hwm_kb.get(child, 0), hwm)
        at = time.perf_counter() - self.started
        self.main_peak_kb = max(self.main_peak_kb, main, status_kb(self.pid, "VmHWM"))
        self.children_peak_kb = max(self.children_peak_kb, children)
        if main + children > self.total_peak_kb:
            self.total_peak_kb = main + children
            self.total_peak_at = (at, self.phase, main, children)
        if not self.timeline or at - self.timeline[-1][0] >= 5.0:
            self.timeline.append((at, self.phase, main, children))

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.sample()

    def summary(self) -> dict[str, Any]:
        """The peaks in MB, where the combined one happened, and the timeline (every 5 s)."""
        at, phase, main, children = self.total_peak_at
        return {
            "main_peak_mb": self.main_peak_kb / 1024,
            "children_peak_mb": self.children_peak_kb / 1024,
            "child_hwm_mb": max(self.child_hwm_kb.values(), default=0) / 1024,
            "total_peak_mb": self.total_peak_kb / 1024,
            "total_peak_at": {
                "s": round(at, 1),
                "phase": phase,
                "main_mb": round(main / 1024),
                "children_mb": round(children / 1024),
            },
            "timeline": [
                (round(t, 1), p, round(m / 1024), round(c / 1024)) for t, p, m, c in self.timeline
            ],
        }
