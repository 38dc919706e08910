"""The background loop that keeps synced sources current: a pass over a source when a
notification says it changed, when its rescan interval has passed, or when asked; between
passes it waits on an event, so an idle folder costs nothing but the watcher's blocked thread.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from memoryd.clock import Clock
from memoryd.errors import StoreUnavailableError
from memoryd.kb.sync.model import SourceKind, SyncSource
from memoryd.kb.sync.run import FolderSync, PassReport
from memoryd.kb.sync.watch import PathWatcher

log = logging.getLogger("memoryd")
# How often the loop looks for new or removed sources and for due rescans when nothing wakes
# it (a source added from another process is watched within this).
POLL_SECONDS = 5.0


class SyncLoop:
    """Runs passes over the synced sources that changed or are due; ``tick`` is one round
    (tests call it directly), ``run`` the thread's body."""

    def __init__(
        self,
        sync: FolderSync,
        clock: Clock,
        *,
        after_pass: Callable[[], None] = lambda: None,
        poll_seconds: float = POLL_SECONDS,
    ) -> None:
        self.sync = sync
        self.wake = threading.Event()
        self._clock = clock
        self._after_pass = after_pass
        self._poll = poll_seconds
        self._dirty: set[str] = set()
        self._dirty_lock = threading.Lock()
        self._sources: list[SyncSource] = []
        self._followed: set[str] = set()
        self._folders = PathWatcher(self._changed, recursive=True)
        self._parents = PathWatcher(self._changed, recursive=False)

    def mark(self, source_id: str) -> None:
        """Ask for a pass over a source at once."""
        with self._dirty_lock:
            self._dirty.add(source_id)
        self.wake.set()

    def _changed(self, paths: set[str]) -> None:
        for source in self._sources:
            if source.kind is SourceKind.URL:
                continue
            prefix = source.location.rstrip(os.sep) + os.sep
            if any(p == source.location or p.startswith(prefix) for p in paths):
                self.mark(source.id)

    def tick(self, now: datetime | None = None) -> list[PassReport]:
        """One round: follow the current sources, then a pass over each that changed or is
        due. A source whose pass fails is logged and tried again next round."""
        at = now or self._clock()
        self._sources = self.sync.sources()
        self._follow()
        with self._dirty_lock:
            dirty, self._dirty = self._dirty, set()
        due = {s.id for s in self.sync.due(at)}
        reports = []
        for source in self._sources:
            if source.id not in dirty and source.id not in due:
                continue
            report = self.sync.run_pass(source, now=now)
            if report.error:
                log.warning("memoryd sync: %s: %s", source.location, report.error)
            elif report.added or report.updated or report.removed or report.renamed:
                log.info("memoryd sync: %s: %s", source.location, report.summary)
            reports.append(report)
        if reports:
            self._after_pass()
        return reports

    def _follow(self) -> None:
        # A source watched for the first time gets a pass at once: what changed before its
        # watch began (since its last pass, here or in another process) is seen now.
        for source in self._sources:
            if source.id not in self._followed and source.kind is not SourceKind.URL:
                self.mark(source.id)
        self._followed = {s.id for s in self._sources}
        folders = [s.location for s in self._sources if s.kind is SourceKind.FOLDER]
        parents = {str(Path(s.location).parent) for s in self._sources if s.kind is SourceKind.FILE}
        self._folders.follow([f for f in folders if Path(f).is_dir()])
        self._parents.follow([p for p in parents if Path(p).is_dir()])

    def run(self, stop: threading.Event) -> None:
        """Round after round until ``stop`` is set, waking early on a notification."""
        try:
            while not stop.is_set():
                # Cleared before the round: a notification during it wakes the next at once.
                self.wake.clear()
                try:
                    self.tick()
                except StoreUnavailableError as gone:
                    log.warning("memoryd sync: %s", gone)
                except Exception:  # the loop must outlive any one failure
                    log.exception("memoryd sync: a pass failed")
                self.wake.wait(self._poll)
        finally:
            self._folders.stop()
            self._parents.stop()
