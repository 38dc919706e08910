"""The claims a store outage cut off: noted only while the job ran, each put back once, in its
own transaction, and forgotten once put back."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import pytest

from memoryd.jobs.cut_off import CutOffClaims
from memoryd.jobs.model import Job, JobStatus
from memoryd.storage.protocols import Store

T0 = datetime(2026, 3, 1, 9, tzinfo=UTC)


def job(job_id: str, status: JobStatus) -> Job:
    return Job(job_id, "observe", {}, status, 1, T0, T0)


class FakeStore:
    """Records each transaction and the releases made inside it; ``moved_on`` jobs ended
    before the store came back, so their release answers False."""

    def __init__(self, moved_on: frozenset[str] = frozenset()) -> None:
        self.jobs = self
        self.moved_on = moved_on
        self.transactions: list[list[tuple[str, datetime, datetime]]] = []

    @contextmanager
    def transaction(self) -> Iterator[None]:
        self.transactions.append([])
        yield

    def release(self, job_id: str, claimed_at: datetime, now: datetime) -> bool:
        self.transactions[-1].append((job_id, claimed_at, now))
        return job_id not in self.moved_on


def as_store(fake: FakeStore) -> Store:
    return cast(Store, cast(Any, fake))


def test_only_a_running_job_is_noted_and_each_goes_back_once_in_its_own_transaction() -> None:
    claims = CutOffClaims("extraction")
    claims.note(None, T0)
    claims.note(job("queued", JobStatus.QUEUED), T0)
    claims.note(job("a", JobStatus.RUNNING), T0)
    claims.note(job("b", JobStatus.RUNNING), T0 + timedelta(seconds=1))
    fake = FakeStore()
    back = T0 + timedelta(minutes=1)

    claims.release(as_store(fake), back)
    claims.release(as_store(fake), back + timedelta(minutes=1))

    assert fake.transactions == [[("a", T0, back)], [("b", T0 + timedelta(seconds=1), back)]]


def test_a_release_is_logged_only_when_the_job_was_still_held(
    caplog: pytest.LogCaptureFixture,
) -> None:
    claims = CutOffClaims("embedding")
    claims.note(job("held", JobStatus.RUNNING), T0)
    claims.note(job("ended", JobStatus.RUNNING), T0)

    with caplog.at_level(logging.WARNING, logger="memoryd"):
        claims.release(
            as_store(FakeStore(moved_on=frozenset({"ended"}))), T0 + timedelta(minutes=1)
        )

    assert [record.getMessage() for record in caplog.records] == [
        "embedding job held: queued again after the store cut its run"
    ]
