"""Background work: the worker that drains the extraction queue and document retries, the
daily consolidation schedule, and the store-wide consolidation lease.

Each loop exposes ``tick(now)``, one round of its work, so tests drive it without threads or
sleeping; the threads only call ``tick`` and wait.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from datetime import datetime, time, tzinfo

from memoryd.clock import Clock, from_db, to_db, utc_now
from memoryd.consolidation.policy import ConsolidationPolicy
from memoryd.consolidation.run import ConsolidationLeaseLost, ConsolidationRun
from memoryd.consolidation.schedule_policy import is_due
from memoryd.errors import ConsolidationBusyError, StoreFullError, StoreUnavailableError
from memoryd.extraction.queue import ExtractionQueue
from memoryd.jobs.lease import StoreLease
from memoryd.kb.service import KnowledgeBase
from memoryd.results import ConsolidationReport, WorkRound
from memoryd.storage.full_disk import FullDiskNotice
from memoryd.storage.protocols import Store

log = logging.getLogger("memoryd")
CONSOLIDATION_LOCK = "consolidation"
# Renewed before every stage and every write; a run that died on another machine frees the
# store after this.
CONSOLIDATION_LEASE_SECONDS = 900
# The longest the worker waits between rounds while the store is not answering (a trigger
# queued meanwhile still wakes it at once).
UNREACHABLE_BACKOFF_CAP = 30.0


class ConsolidationLease(StoreLease):
    """The store-wide lease that keeps two consolidation runs from overlapping."""

    def __init__(
        self,
        store: Store,
        *,
        clock: Clock = utc_now,
        seconds: int = CONSOLIDATION_LEASE_SECONDS,
        holder: str | None = None,
    ) -> None:
        super().__init__(store, CONSOLIDATION_LOCK, seconds, clock=clock, holder=holder)

    def renew(self) -> None:
        """Extend the lease this run holds, or raise :class:`ConsolidationLeaseLost` when
        another instance took it meanwhile."""
        current = self.renewed()
        if current is not None:
            raise ConsolidationLeaseLost(
                f"consolidation stopped: its lease lapsed and another run ({current}) holds "
                "it now; nothing more was written, and the next scheduled run finishes the work"
            )


class Consolidator:
    """Consolidation runs under the lease, stamped and counted when they complete."""

    def __init__(self, *, store: Store, run: ConsolidationRun, lease: ConsolidationLease) -> None:
        self.store = store
        self.run = run
        self.lease = lease

    def last_run(self) -> datetime | None:
        """When consolidation last completed (by its ``now``)."""
        return from_db(self.store.get_meta("last_consolidation_at") or None)

    def now(
        self, at: datetime, rules: ConsolidationPolicy, *, dry_run: bool
    ) -> ConsolidationReport:
        """One run asked for now: a dry run plans without the lease and changes nothing; a
        real one runs under it (ConsolidationBusyError when another run holds it)."""
        if dry_run:
            return self.run.run(at, rules, dry_run=True)
        report = self.run_under_lease(at, rules, lambda: True)
        assert report is not None  # always due
        return report

    def run_under_lease(
        self, at: datetime, rules: ConsolidationPolicy, still_due: Callable[[], bool]
    ) -> ConsolidationReport | None:
        """Run under the store-wide lease, if ``still_due()`` holds once the lease is ours
        (another process may have finished today's run a moment ago)."""
        if not self.lease.take():
            raise ConsolidationBusyError(
                "another consolidation is running on this store; try again when it has finished"
            )
        try:
            if not still_due():
                return None
            report = self.run.run(at, rules, dry_run=False, renew=self.lease.renew)
            self.lease.renew()  # the stamp too is a write: only while the lease is ours
            with self.store.transaction():
                runs = int(self.store.get_meta("consolidation_runs") or "0")
                self.store.set_meta("last_consolidation_at", to_db(at) or "")
                self.store.set_meta("consolidation_runs", str(runs + 1))
            return report
        finally:
            self.lease.release()


class DailyConsolidation:
    """Runs consolidation once a day at ``daily_at`` (``zone`` time); one catch-up run when
    a day was missed."""

    def __init__(self, consolidator: Consolidator, daily_at: time, zone: tzinfo) -> None:
        self.consolidator = consolidator
        self.daily_at = daily_at
        self.zone = zone

    def due(self, now: datetime) -> bool:
        """Whether a run is due at ``now``."""
        return is_due(self.consolidator.last_run(), now, self.daily_at, self.zone)

    def tick(self, now: datetime) -> ConsolidationReport | None:
        """One look at the schedule: run if due (None when not due, or when another process
        ran it meanwhile). Failures are logged, never raised: the schedule outlives them."""
        try:
            if self.due(now):
                report = self.consolidator.run_under_lease(
                    now, ConsolidationPolicy(), functools.partial(self.due, now)
                )
                if report is not None:
                    log.info("daily consolidation: %s", report.stages)
                return report
        except ConsolidationBusyError as busy:
            log.info("daily consolidation: %s", busy)
        except StoreUnavailableError as gone:  # the next tick looks again
            log.warning("daily consolidation: %s", gone)
        except Exception:  # the scheduler must outlive one failed run
            log.exception("daily consolidation failed")
        return None

    def run(self, clock: Clock, poll_seconds: float, stop: threading.Event) -> None:
        """Tick at ``clock()`` every ``poll_seconds`` until ``stop`` is set."""
        while not stop.is_set():
            self.tick(clock())
            stop.wait(poll_seconds)


class WorkerLoop:
    """Drains the extraction queue, the document retries and the missing chunk vectors, round
    by round."""

    def __init__(self, *, queue: ExtractionQueue, kb: KnowledgeBase, store: Store) -> None:
        self.queue = queue
        self.kb = kb
        self.store = store
        self.wake = threading.Event()
        self._full_disk = FullDiskNotice(log, "memoryd worker: running jobs")

    def tick(self, now: datetime | None = None) -> WorkRound:
        """One round: every due extraction job, every due document retry, then the vectors
        of documents written without them."""
        reports = self.queue.run_jobs(now=now)
        retried = self.kb.run_retries(now=now)
        # A long document's vectors yield to a new trigger (the wake-up) between batches: the
        # job goes back to the queue and the next round, run at once, takes the trigger first.
        filled = self.kb.run_vector_jobs(now=now, pause=self.wake.is_set)
        for fill in filled:
            log.info(
                "memoryd worker: %d vectors embedded for document %s (%d still missing)",
                fill.embedded,
                fill.document_id,
                fill.remaining,
            )
        return WorkRound(tuple(reports), tuple(retried), self.store.jobs.counts(), tuple(filled))

    def run(
        self,
        poll_seconds: float,
        *,
        once: bool = False,
        stop: threading.Event | None = None,
        on_round: Callable[[WorkRound], None] | None = None,
        now: datetime | None = None,
    ) -> None:
        """Round after round until ``stop`` is set (or one round when ``once``), waiting
        ``poll_seconds`` between rounds unless a new trigger wakes the loop. A failed round
        is logged and the loop goes on; ``on_round`` sees every completed round."""
        stop = stop or threading.Event()
        unreachable = 0  # rounds in a row that found the store not answering
        while not stop.is_set():
            try:
                done = self.tick(now)
            except StoreFullError as error:  # said once per spell, not once a round
                if once:
                    raise
                self._full_disk.failed(error)
            except StoreUnavailableError as gone:
                if once:
                    raise
                unreachable += 1
                log.warning("memoryd worker: %s (round %d)", gone, unreachable)
            except Exception:  # the worker must outlive any one failure
                if once:
                    raise
                unreachable = 0
                log.exception("memoryd worker: running jobs failed")
            else:
                self._full_disk.succeeded()
                unreachable = 0
                if on_round is not None:
                    on_round(done)
            if once:
                return
            self.wake.wait(backoff_seconds(poll_seconds, unreachable))
            self.wake.clear()


def backoff_seconds(poll_seconds: float, failures: int) -> float:
    """How long the worker waits before its next round: ``poll_seconds``, doubled for each
    round in a row that found the store not answering, at most UNREACHABLE_BACKOFF_CAP."""
    if failures <= 0:
        return poll_seconds
    doubled = poll_seconds * float(1 << min(failures - 1, 16))
    return min(doubled, max(poll_seconds, UNREACHABLE_BACKOFF_CAP))


class BackgroundThread:
    """One daemon thread running a loop until stopped; starting twice is harmless."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.stop_event = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, target: Callable[[threading.Event], None]) -> None:
        """Run ``target(stop_event)`` in the thread, unless it is already running."""
        if self._thread is not None and self._thread.is_alive():
            return
        self.stop_event.clear()
        self._thread = threading.Thread(
            target=target, args=(self.stop_event,), name=self.name, daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float, wake: threading.Event | None = None) -> None:
        """Ask the loop to stop (waking it), and wait up to ``timeout`` for it."""
        self.stop_event.set()
        if wake is not None:
            wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
