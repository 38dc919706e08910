"""Background work's front door (``service.jobs``): the extraction triggers and their queue, chat
imports, the worker, the daily consolidation and the synced sources' loop.

Built from its parts, each handed in. The worker is woken through one method, :meth:`wake`,
by whatever gives it work (a trigger, an upload, a re-ingest, a retried job, a sync pass).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime, time, tzinfo

from memoryd.clock import Clock
from memoryd.consolidation.policy import ConsolidationPolicy
from memoryd.extraction.chat_import import ChatImporter
from memoryd.extraction.queue import ExtractionQueue
from memoryd.forward import Forward
from memoryd.jobs.model import Job
from memoryd.jobs.worker import BackgroundThread, Consolidator, DailyConsolidation, WorkerLoop
from memoryd.kb.sync.loop import SyncLoop
from memoryd.results import ConsolidationReport, WorkRound


class Jobs:
    """Queue work for the background, run it, and keep its threads."""

    def __init__(
        self,
        *,
        worker: WorkerLoop,
        chat_importer: ChatImporter,
        consolidator: Consolidator,
        sync_loop: SyncLoop,
        clock: Clock,
    ) -> None:
        self._worker = worker
        self._queue = worker.queue
        self._chat_importer = chat_importer
        self._consolidator = consolidator
        self.sync_loop = sync_loop
        self._clock = clock
        self._worker_thread = BackgroundThread("memoryd-worker")
        self._scheduler_thread = BackgroundThread("memoryd-scheduler")
        self._sync_thread = BackgroundThread("memoryd-sync")

    def wake(self, *, sync: bool = False) -> None:
        """Wake the worker now (new jobs, or chunks waiting for their vectors); with
        ``sync``, the synced sources' loop too (a source was added or asked to run)."""
        self._worker.wake.set()
        if sync:
            self.sync_loop.wake.set()

    # ----------------------------------------------------------- extraction queue
    observe_turn = Forward("_queue", ExtractionQueue.observe_turn)
    before_compaction = Forward("_queue", ExtractionQueue.before_compaction)
    mission_finished = Forward("_queue", ExtractionQueue.mission_finished)
    run_jobs = Forward("_queue", ExtractionQueue.run_jobs)
    job = Forward("_queue", ExtractionQueue.job)

    import_chats = Forward("_chat_importer", ChatImporter.import_chats)
    import_chat_bytes = Forward("_chat_importer", ChatImporter.import_chat_bytes)
    import_chat_stream = Forward("_chat_importer", ChatImporter.import_chat_stream)

    def retry_job(self, job_id: str, *, now: datetime | None = None) -> Job:
        """Queue a failed (or waiting) job again, due now (``memoryd jobs retry``)."""
        job = self._queue.retry(job_id, now)
        self.wake()
        return job

    # ------------------------------------------------------------------- worker

    def work(
        self,
        poll_seconds: float = 5.0,
        *,
        once: bool = False,
        stop: threading.Event | None = None,
        on_round: Callable[[WorkRound], None] | None = None,
        now: datetime | None = None,
    ) -> None:
        """Drain the extraction queue and the document retries in this thread: round after
        round until ``stop`` is set (or one round when ``once``), waiting ``poll_seconds``
        between rounds unless a trigger wakes it. ``on_round`` sees each round's reports and
        the queue counts. The one worker loop, also behind ``start_worker``."""
        self._worker.run(poll_seconds, once=once, stop=stop, on_round=on_round, now=now)

    def start_worker(
        self, poll_seconds: float = 5.0, *, on_round: Callable[[WorkRound], None] | None = None
    ) -> None:
        """Run queued jobs in a background thread until ``stop_worker``; woken at once by
        every new trigger. Idempotent."""
        self._worker_thread.start(
            lambda stop: self._worker.run(poll_seconds, stop=stop, on_round=on_round)
        )

    def stop_worker(self, timeout: float = 30.0) -> None:
        """Stop the background worker after its current job."""
        self._worker_thread.stop(timeout, wake=self._worker.wake)

    def start_sync(self) -> None:
        """Keep the synced sources current in a background thread (notifications, rescans)
        until ``stop_sync``; the worker embeds what it writes. Idempotent."""
        self._sync_thread.start(self.sync_loop.run)

    def stop_sync(self, timeout: float = 30.0) -> None:
        """Stop keeping synced sources current after the pass under way."""
        self._sync_thread.stop(timeout, wake=self.sync_loop.wake)

    # ------------------------------------------------------------ consolidation

    def consolidate(
        self,
        *,
        now: datetime | None = None,
        dry_run: bool = False,
        policy: ConsolidationPolicy | None = None,
    ) -> ConsolidationReport:
        """The daily job's stages (SPEC §5): merge near-duplicates, dedupe pending, archive
        episodic, decay semantic, decay inferences, reflect, demote pending. Each stage plans
        purely, then applies its steps audited with the stage's name; one failing stage is
        reported and the others still run. Runs under the store-wide lease
        (ConsolidationBusyError when another run holds it; ConsolidationLeaseLost when another
        run takes it midway). A dry run plans and changes nothing."""
        rules = policy or ConsolidationPolicy()
        return self._consolidator.now(now or self._clock(), rules, dry_run=dry_run)

    def last_consolidation(self) -> datetime | None:
        """When consolidation last completed (by its ``now``)."""
        return self._consolidator.last_run()

    def daily_consolidation(self, daily_at: time, zone: tzinfo) -> DailyConsolidation:
        """The daily schedule at ``daily_at`` local time; its ``tick(now)`` runs consolidation
        when due (the scheduler thread calls it; tests call it directly)."""
        return DailyConsolidation(self._consolidator, daily_at, zone)

    def start_scheduler(self, daily_at: time, zone: tzinfo, *, poll_seconds: float = 60.0) -> None:
        """Run consolidation daily at ``daily_at`` local time in a background thread; at start
        it catches up once if a day was missed. Idempotent; stopped by ``stop_scheduler``."""
        daily = self.daily_consolidation(daily_at, zone)
        self._scheduler_thread.start(lambda stop: daily.run(self._clock, poll_seconds, stop))

    def stop_scheduler(self, timeout: float = 60.0) -> None:
        """Stop the daily scheduler after its current run."""
        self._scheduler_thread.stop(timeout)

    def stop(self) -> None:
        """Stop every background thread after its current round."""
        self.stop_scheduler()
        self.stop_sync()
        self.stop_worker()
