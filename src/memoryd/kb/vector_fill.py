"""Chunk vectors filled in after the chunks are written (SPEC §6, issue 16).

An ingest writes a document's chunks (text and full-text rows) in one transaction without
waiting for the embedder; a chunk stored without a vector is *pending*: the keyword leg finds it,
the vector leg does not. The pending chunks themselves are the state, so nothing is lost in a
crash: each batch of vectors is its own transaction, a batch only fills chunks that are still
stored with the text it embedded and still have no vector (nothing doubled), and a persisted job
per document (:data:`EMBED_JOB_KIND`, claimed by the worker) finishes what a killed process left.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from memoryd.clock import Clock
from memoryd.errors import StoreFullError, StoreUnavailableError
from memoryd.ids import IdGenerator
from memoryd.jobs.cut_off import CutOffClaims
from memoryd.jobs.model import Job, JobStatus, RetryPolicy
from memoryd.kb.model import Chunk
from memoryd.kb.results import IngestResult
from memoryd.providers.embedder import Embedder, EmbeddingPace
from memoryd.storage.protocols import Store

if TYPE_CHECKING:
    from memoryd.providers.embedder import Vector

log = logging.getLogger("memoryd")

EMBED_JOB_KIND = "kb_embed"
# Why these steps: embedding fails only when the model cannot load or run (a full disk, memory);
# a minute later is soon enough to try again, and a killed run is re-claimed after the lease.
# A job paused for other work is claimed again, so attempts count pauses too: hence 48.
EMBED_RETRY = RetryPolicy(steps_seconds=(60, 300, 1800), max_attempts=48, lease_seconds=300)
# Chunks embedded and committed together: small enough that a crash loses little work and the
# "embedding n/m" count moves often, large enough to keep the embedder's batches full.
FILL_BATCH = 32
# Table-row labels embedded and committed together (a label is a few words, not a chunk).
ROW_FILL_BATCH = 128


@dataclass(frozen=True)
class FillProgress(EmbeddingPace):
    """Where one document's vectors stand, reported after every committed batch (with the
    fill's rate and time left)."""

    document_id: str
    done: int
    total: int
    last_page: int
    pages: int
    embedded: int
    seconds: float


def duration(seconds: float) -> str:
    """ "4.2 s", "42 s", "3:05" or "1:02:09": a short time for a progress line."""
    if seconds < 9.95:
        return f"{max(seconds, 0.0):.1f} s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def pace(progress: FillProgress) -> list[str]:
    """ "5.6 chunks/s", "40 s left" (or "done"): the rate and time left of a fill, once its
    first batch is in."""
    parts = []
    if progress.rate > 0:
        parts.append(f"{progress.rate:.1f} chunks/s")
    eta = progress.eta_seconds
    if eta is not None:
        parts.append(f"{duration(eta)} left" if progress.done < progress.total else "done")
    return parts


FillListener = Callable[[FillProgress], None]


class IngestWatcher(Protocol):
    """Who follows an ingest as it goes (the CLI's progress lines)."""

    def written(self, result: IngestResult) -> None:
        """The source's chunks are committed (or it was skipped or failed)."""
        ...

    def embedding(self, progress: FillProgress) -> None:
        """Another batch of the document's vectors is committed."""
        ...


def text_key(text: str) -> str:
    """The key a vector is kept under for reuse: a hash of the text that was embedded."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def reusable_vectors(store: Store, document_id: str) -> dict[str, Vector]:
    """A stored document's vectors by the hash of the text each embeds: a re-ingest keeps the
    vector of every chunk whose embedded text did not change."""
    by_position = store.kb.vectors_by_position(document_id)
    if not by_position:
        return {}
    return {
        text_key(chunk.embedded_text): by_position[chunk.position]
        for chunk in store.kb.chunks(document_id)
        if chunk.position in by_position
    }


def vectors_kept(chunks: Sequence[Chunk], kept: dict[str, Vector]) -> list[Vector | None]:
    """Each chunk's kept vector, or None where its embedded text is new (pending)."""
    return [kept.get(text_key(chunk.embedded_text)) for chunk in chunks]


@dataclass(frozen=True)
class FillReport:
    """What one embedding job did."""

    document_id: str
    embedded: int
    remaining: int


@dataclass(eq=False)
class VectorFiller:
    """Embeds a document's pending chunks batch by batch, each batch in one transaction."""

    store: Store
    embedder: Embedder
    ids: IdGenerator
    _: KW_ONLY
    clock: Clock
    batch: int = FILL_BATCH
    retry_policy: RetryPolicy = EMBED_RETRY
    _live: dict[str, FillProgress] = field(default_factory=dict, init=False, repr=False)
    _live_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _cut_off: CutOffClaims = field(
        default_factory=lambda: CutOffClaims("embedding"), init=False, repr=False
    )

    def live(self) -> dict[str, FillProgress]:
        """The fills running in this process now, by document id, as of their last batch
        (the documents page shows their rate and time left)."""
        with self._live_lock:
            return dict(self._live)

    def job_for(self, document_id: str, at: datetime) -> Job:
        """The persisted job that fills ``document_id``'s vectors; enqueue it in the same
        transaction as the chunks it fills."""
        return Job(
            id=self.ids.new_id(at),
            kind=EMBED_JOB_KIND,
            payload={"document_id": document_id},
            status=JobStatus.QUEUED,
            attempts=0,
            next_attempt_at=at,
            created_at=at,
        )

    def fill(
        self,
        document_id: str,
        progress: FillListener | None = None,
        pause: Callable[[], bool] | None = None,
    ) -> int:
        """Embed every pending chunk of the document (or stop after a batch once ``pause()``
        is true); how many vectors this call stored."""
        try:
            return self._fill(document_id, progress, pause)
        finally:
            with self._live_lock:
                self._live.pop(document_id, None)

    def _fill(
        self,
        document_id: str,
        progress: FillListener | None,
        pause: Callable[[], bool] | None,
    ) -> int:
        started = time.perf_counter()
        document = self.store.kb.get_document(document_id)
        total = document.chunk_count if document else 0
        pages = self._page_count(document_id, total)
        done = self.store.kb.vector_counts([document_id]).get(document_id, 0)
        embedded = 0
        while True:
            pending = self.store.kb.pending_chunks(document_id, self.batch)
            if not pending:
                break
            vectors = list(self.embedder.embed([c.embedded_text for c in pending]))
            with self.store.transaction():
                stored = self.store.kb.save_chunk_vectors(pending, vectors)
            if stored == 0:
                # The chunks changed under us (a re-ingest or a delete): its own job fills
                # the new ones.
                break
            embedded += stored
            done += stored
            last = pending[-1].page_range
            now = FillProgress(
                document_id,
                min(done, total),
                total,
                last[1] if last else 0,
                pages,
                embedded,
                time.perf_counter() - started,
            )
            with self._live_lock:
                self._live[document_id] = now
            if progress is not None:
                progress(now)
            if pause is not None and pause():
                return embedded
        self._fill_rows(document_id, pause)
        return embedded

    def _fill_rows(self, document_id: str, pause: Callable[[], bool] | None) -> int:
        """The label vectors of the document's table rows (:mod:`memoryd.kb.rows`), after its
        chunks' vectors, a batch per transaction; a label shared by rows is embedded once."""
        stored = 0
        while True:
            rows = self.store.kb.pending_rows(document_id, ROW_FILL_BATCH)
            if not rows:
                break
            labels = list(dict.fromkeys(row.label for row in rows))
            by_label = dict(zip(labels, self.embedder.embed(labels), strict=True))
            with self.store.transaction():
                saved = self.store.kb.save_row_vectors(rows, [by_label[r.label] for r in rows])
            if saved == 0:  # the rows changed under us: their document's own job fills them
                break
            stored += saved
            if pause is not None and pause():
                break
        return stored

    def fill_with_job(
        self, document_id: str, job_id: str | None, progress: FillListener | None = None
    ) -> int:
        """Fill the document's vectors in this process, and end its job (when the worker has
        not claimed it meanwhile; the worker then finds nothing left to do)."""
        claimed = None
        if job_id is not None:
            with self.store.transaction():
                claimed = self.store.jobs.claim_one(job_id, self.clock())
        embedded = self.fill(document_id, progress)
        if claimed is not None:
            with self.store.transaction():
                self.store.jobs.finish(claimed.id, {"embedded": embedded}, self.clock())
        return embedded

    def run_jobs(
        self,
        now: datetime | None,
        limit: int | None = None,
        pause: Callable[[], bool] | None = None,
    ) -> list[FillReport]:
        """Claim and run the due embedding jobs, at most ``limit`` (None: all due). Once
        ``pause()`` is true (other work waits: the worker's wake-up), the job being run goes
        back to the queue, due at once, after its current batch, and no other is claimed."""
        reports: list[FillReport] = []
        self._cut_off.release(self.store, now or self.clock())
        while limit is None or len(reports) < limit:
            at = now or self.clock()
            job: Job | None = None
            try:
                with self.store.transaction():
                    lease = self.retry_policy.lease_seconds
                    job = self.store.jobs.claim([EMBED_JOB_KIND], at, lease)
                if job is None:
                    break
                reports.append(self._run_job(job, at, pause))
            except StoreUnavailableError:
                self._cut_off.note(job, at)
                raise
            if pause is not None and pause():
                break
        return reports

    def _run_job(self, job: Job, at: datetime, pause: Callable[[], bool] | None) -> FillReport:
        document_id = str(job.payload["document_id"])
        try:
            embedded = self.fill(document_id, None, pause)
        except StoreUnavailableError:  # nothing can be recorded now: run_jobs puts it back
            raise
        except Exception as error:  # recorded on the job, which runs again or fails
            if not isinstance(error, StoreFullError):  # the worker reports a full disk
                log.exception("embedding the chunks of document %s failed", document_id)
            at = self.clock()
            retry_at = self.retry_policy.next_attempt(job.attempts + 1, at)
            with self.store.transaction():
                if retry_at is None:
                    self.store.jobs.fail(job.id, f"embedding failed: {error}", at)
                else:
                    self.store.jobs.retry(job.id, f"embedding failed: {error}", retry_at)
            return FillReport(document_id, 0, self._remaining(document_id))
        remaining = self._remaining(document_id)
        rows_left = bool(self.store.kb.pending_rows(document_id, 1))
        with self.store.transaction():
            if (remaining or rows_left) and pause is not None and pause():
                self.store.jobs.retry(job.id, "paused while other jobs run", at)
            else:
                self.store.jobs.finish(job.id, {"embedded": embedded}, self.clock())
        return FillReport(document_id, embedded, remaining)

    def _remaining(self, document_id: str) -> int:
        document = self.store.kb.get_document(document_id)
        if document is None:
            return 0
        done = self.store.kb.vector_counts([document_id]).get(document_id, 0)
        return max(document.chunk_count - done, 0)

    def _page_count(self, document_id: str, total: int) -> int:
        if total <= 0:
            return 0
        last = self.store.kb.chunks(document_id, total - 1, total - 1)
        pages = last[0].page_range if last else None
        return pages[1] if pages else 0
