"""Claims a store outage cut off mid-run, put back in the queue once the store answers.

When the store fails while a job is claimed or running (``StoreUnavailableError``), the
claim's commit or the run's result never came back: the job would wait, running, until its
lease ran out. The runner notes the claim and, at its next round, releases it: the job is
queued again, due at once, its attempt not counted (unless the cut commit landed and the job
ended), so a database restart neither strands a job nor runs it twice.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from memoryd.jobs.model import Job, JobStatus
from memoryd.storage.protocols import Store

log = logging.getLogger("memoryd")


@dataclass(eq=False)
class CutOffClaims:
    """One runner's claims the store cut off (job id → when claimed)."""

    # What the log line calls a job of this runner ("extraction", "embedding").
    what: str
    _claims: dict[str, datetime] = field(default_factory=dict, init=False, repr=False)

    def note(self, job: Job | None, claimed_at: datetime) -> None:
        """Remember ``job`` when the store failed while it ran under the claim made at
        ``claimed_at`` (a job that was never claimed is left alone)."""
        if job is not None and job.status is JobStatus.RUNNING:
            self._claims[job.id] = claimed_at

    def release(self, store: Store, now: datetime) -> None:
        """Put the noted claims back in the queue, each in its own transaction."""
        for job_id, claimed_at in list(self._claims.items()):
            with store.transaction():
                released = store.jobs.release(job_id, claimed_at, now)
            del self._claims[job_id]
            if released:
                log.warning(
                    "%s job %s: queued again after the store cut its run", self.what, job_id
                )
