"""The clock jumps while memoryd serves — back by a day, ahead by a year, then corrected —
through the service's own clock (``now``): consolidation runs at most once a day and once per
jump (no storm of catch-up runs, never stuck a year ahead), a retry scheduled before the
clock went back still runs within its delay, ages never go negative and ids keep their order."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

from memoryd.jobs.model import Job, JobStatus
from memoryd.memory.model import Kind
from memoryd.service import MemoryService

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
DAY, YEAR = timedelta(days=1), timedelta(days=365)


def test_consolidation_runs_once_a_day_whichever_way_the_clock_jumps(
    service: MemoryService,
) -> None:
    daily = service.daily_consolidation(time(3, 0), UTC)
    runs: list[datetime] = []

    def tick(at: datetime) -> None:
        if daily.tick(at) is not None:
            runs.append(at)

    for at in (NOW, NOW - DAY, NOW - DAY + timedelta(hours=16), NOW + timedelta(hours=6)):
        tick(at)  # back a day and on through it: today's run is done, none again
    assert runs == [NOW]
    for minutes in range(0, 12 * 60, 30):  # a year ahead, polled till midnight: one run
        tick(NOW + YEAR + timedelta(minutes=minutes))
    assert runs == [NOW, NOW + YEAR]
    back = NOW + DAY  # corrected: one run now, then one a day at 03:00, not a year from now
    for hours in range(0, 48, 2):
        tick(back + timedelta(hours=hours))
    nightly = [back + timedelta(hours=16), back + timedelta(hours=40)]  # first tick past 03:00
    assert runs == [NOW, NOW + YEAR, back, *nightly]
    assert service.last_consolidation() == nightly[-1]


def test_a_retry_set_before_the_clock_went_back_runs_within_its_delay(
    service: MemoryService,
) -> None:
    store = service.store

    def queued(job_id: str, due: datetime) -> Job:
        return Job(id=job_id, kind="extract", payload={"n": 1}, status=JobStatus.QUEUED,
                   attempts=1, next_attempt_at=due, created_at=due)  # fmt: skip

    with store.transaction():
        store.jobs.enqueue(queued("job_before_jump", NOW + timedelta(seconds=30)))
        store.jobs.enqueue(queued("job_after_jump", NOW - DAY + timedelta(minutes=30)))
    back = NOW - DAY + timedelta(seconds=5)  # the clock went back a day just after the failure
    with store.transaction():
        claimed = store.jobs.claim(["extract"], back, lease_seconds=600)
    assert claimed is not None and claimed.id == "job_before_jump"
    with store.transaction():
        store.jobs.finish(claimed.id, {}, back)
    with store.transaction():
        # A retry set by the corrected clock keeps its delay: not due yet.
        assert store.jobs.claim(["extract"], back + timedelta(minutes=10), 600) is None
    with store.transaction():
        later = store.jobs.claim(["extract"], back + timedelta(minutes=31), 600)
    assert later is not None and later.id == "job_after_jump"


def test_ages_stay_non_negative_and_ids_ordered_when_the_clock_goes_back(
    service: MemoryService,
) -> None:
    first = service.remember("Owner moved to Lisbon", kind=Kind.FACT, now=NOW)
    earlier = service.remember("Owner adopted a cat named Miso", kind=Kind.FACT, now=NOW - DAY)
    ahead = service.remember("Owner started learning the cello", kind=Kind.FACT, now=NOW + YEAR)
    ids = [r.memory.id for r in (first, earlier, ahead) if r.memory is not None]
    assert len(set(ids)) == 3 and ids == sorted(ids), "ids lost creation order in the process"
    found = service.recall("Where does the owner live? A cat? The cello?", now=NOW - DAY)
    assert found.packed.items, "recall packed nothing"
    for item in found.packed.items:  # two of them were made "after" this recall's clock
        assert item.age_days >= 0 and 0 < item.recency <= 1, item
