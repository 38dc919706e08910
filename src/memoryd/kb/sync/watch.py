"""File-system notifications for synced sources, through ``watchfiles`` (the Rust ``notify``
crate: inotify on Linux, FSEvents on macOS, ReadDirectoryChangesW on Windows). A notification
only says which source to look at again; the pass that follows compares the folder with the
store, so a missed or doubled event costs a stat scan, never a wrong document."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection

log = logging.getLogger("memoryd")
# Why 200 ms: an editor's save is a burst of events (write, rename, chmod) within tens of
# milliseconds; 200 ms gathers it into one pass and keeps an edit searchable well within 5 s.
DEBOUNCE_MS = 200
# How often the Rust watcher looks for new events within a burst, and how often the thread
# checks whether it should stop while nothing happens: rarer wake-ups cost less when idle.
STEP_MS = 100
STOP_CHECK_MS = 3000


class PathWatcher:
    """Watches a set of paths in one thread and reports the changed paths of each burst;
    ``recursive`` decides whether sub-folders are watched too."""

    def __init__(self, on_change: Callable[[set[str]], None], *, recursive: bool) -> None:
        self._on_change = on_change
        self._recursive = recursive
        self._paths: frozenset[str] = frozenset()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def follow(self, paths: Collection[str]) -> None:
        """Watch exactly ``paths`` from now on (restarting the watch when they changed)."""
        wanted = frozenset(paths)
        alive = self._thread is not None and self._thread.is_alive()
        if wanted == self._paths and (alive or not wanted):
            return
        self.stop()
        self._paths = wanted
        if not wanted:
            return
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(sorted(wanted), self._stop), name="memoryd-watch",
            daemon=True,
        )  # fmt: skip
        self._thread.start()

    def stop(self) -> None:
        """Stop watching (within STOP_CHECK_MS)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        self._paths = frozenset()

    def _run(self, paths: list[str], stop: threading.Event) -> None:
        from watchfiles import watch

        try:
            for changes in watch(
                *paths,
                stop_event=stop,
                debounce=DEBOUNCE_MS,
                step=STEP_MS,
                recursive=self._recursive,
                raise_interrupt=False,
                rust_timeout=STOP_CHECK_MS,
                yield_on_timeout=False,
            ):
                self._on_change({path for _, path in changes})
        except Exception:  # a folder removed under the watch: the periodic rescan goes on
            log.warning("memoryd sync: watching %s stopped", ", ".join(paths), exc_info=True)
