"""What a failed or postponed ingest leaves behind (SPEC §6).

A source that cannot be read (a mistyped path, a refused URL, an unsupported or damaged file)
is reported and leaves nothing: no document the owner would have to delete. A stored document
keeps its chunks and carries the error. Only a failure that a retry can fix (the server did not
answer) leaves a document, queued with a retry job (after 2, 10 and 30 minutes, then the
document fails and says why).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Protocol

from memoryd.ids import IdGenerator
from memoryd.jobs.model import Job, JobStatus, RetryPolicy
from memoryd.kb.model import Document, DocumentStatus, SourceType
from memoryd.kb.results import IngestResult
from memoryd.storage.protocols import Store

JOB_KIND = "kb_ingest"
# SPEC §6: transient failures retry after 2, 10 and 30 minutes, then the document fails.
KB_RETRY = RetryPolicy(steps_seconds=(120, 600, 1800), max_attempts=4, lease_seconds=900)


@dataclass(frozen=True)
class Filing:
    """Where a source is filed: its URI, collection and source type."""

    uri: str
    collection: str
    source_type: SourceType
    # The folder the file was found in (None: named on its own or a URL); see folder_rules.
    root: str | None = None


class RetrySettings(Protocol):
    """The owner's retry policy, read at each use (the owner may replace it)."""

    retry_policy: RetryPolicy


class IngestFailures:
    """The bookkeeping of failed sources and their retry jobs, each in one transaction."""

    def __init__(self, store: Store, ids: IdGenerator, settings: RetrySettings) -> None:
        self.store = store
        self._settings = settings
        self._ids = ids

    @property
    def retry_policy(self) -> RetryPolicy:
        """When a source that failed for a passing reason is tried again."""
        return self._settings.retry_policy

    def record(self, filing: Filing, reason: str, at: datetime, started: float) -> IngestResult:
        """A source that cannot be read. A new one leaves nothing stored (the reason is
        reported, and there is no document to delete); a stored one keeps its chunks (bad input
        never loses what was stored) and carries the error; one already waiting for a retry
        (or failed before) fails with this reason."""
        with self.store.transaction():
            existing = self.store.kb.document_by_uri(filing.uri)
            if existing is None:
                document = None
            elif existing.status is DocumentStatus.READY:
                document = replace(
                    existing, error=f"the last re-ingest failed: {reason}", updated_at=at
                )
            else:
                document = self._unread(filing, DocumentStatus.FAILED, at, existing, reason)
            if document is not None:
                self.store.kb.save_document(document)
        return IngestResult(filing.uri, "failed", document, reason, time.perf_counter() - started)

    def queue_retry(
        self, filing: Filing, reason: str, at: datetime, started: float
    ) -> IngestResult:
        """A source that failed for a passing reason: a retry job, and the document (new, or
        as stored) says when it is retried."""
        retry_at = self.retry_policy.next_attempt(1, at)
        assert retry_at is not None
        job = Job(
            id=self._ids.new_id(at),
            kind=JOB_KIND,
            payload={
                "source": filing.uri,
                "collection": filing.collection,
                "source_type": filing.source_type.value,
            },
            status=JobStatus.QUEUED,
            attempts=0,
            next_attempt_at=retry_at,
            created_at=at,
        )
        with self.store.transaction():
            existing = self.store.kb.document_by_uri(filing.uri)
            document = existing or self._unread(filing, DocumentStatus.QUEUED, at)
            document = replace(
                document, error=f"{reason}; retrying at {retry_at.isoformat()}", updated_at=at
            )
            self.store.kb.save_document(document)
            self.store.jobs.enqueue(job)
        return IngestResult(
            filing.uri,
            "queued",
            document,
            f"{reason}; retry at {retry_at.isoformat(timespec='minutes')}",
            time.perf_counter() - started,
        )

    def postpone(
        self, job: Job, reason: str, retry_at: datetime, at: datetime, started: float
    ) -> IngestResult:
        """A retry that failed for a passing reason again: the job waits until ``retry_at``
        and the document says so."""
        uri = str(job.payload["source"])
        with self.store.transaction():
            self.store.jobs.retry(job.id, reason, retry_at)
            existing = self.store.kb.document_by_uri(uri)
            if existing is not None:
                self.store.kb.save_document(
                    replace(
                        existing,
                        error=f"{reason}; retrying at {retry_at.isoformat()}",
                        updated_at=at,
                    )
                )
        return IngestResult(
            uri,
            "queued",
            self.store.kb.document_by_uri(uri),
            reason,
            time.perf_counter() - started,
        )

    def fail_job(self, job: Job, reason: str, at: datetime) -> None:
        """The retry job ends as failed with ``reason`` (its source kept for ``jobs retry``)."""
        with self.store.transaction():
            self.store.jobs.fail(job.id, reason, at, keep_payload=True)

    def settle_job(self, job: Job, result: IngestResult, at: datetime) -> None:
        """The retry job ends as the retry did: failed, or finished with its outcome."""
        with self.store.transaction():
            if result.outcome == "failed":
                self.store.jobs.fail(job.id, result.reason or "failed", at)
            else:
                self.store.jobs.finish(job.id, {"outcome": result.outcome}, at)

    def _unread(
        self,
        filing: Filing,
        status: DocumentStatus,
        at: datetime,
        existing: Document | None = None,
        error: str | None = None,
    ) -> Document:
        """A row for a source whose text is not stored: new, or keeping an earlier row's id,
        title and creation time."""
        return Document(
            id=existing.id if existing else self._ids.new_id(at),
            source_uri=filing.uri,
            collection=filing.collection,
            source_type=filing.source_type,
            title=existing.title if existing else title_of(filing.uri),
            status=status,
            created_at=existing.created_at if existing else at,
            updated_at=at,
            error=error,
        )


def title_of(uri: str) -> str:
    """A title for a source that has none yet: the last part of its path or URL."""
    name = uri.rstrip("/").rsplit("/", 1)[-1]
    return name or uri
