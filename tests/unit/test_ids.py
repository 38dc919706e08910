"""Memory ids (SPEC §2: time-ordered): 26 Crockford characters that sort by creation time."""

from __future__ import annotations

import itertools
import threading
from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from memoryd.ids import IdGenerator

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
AT = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

moments = st.datetimes(
    min_value=datetime(1970, 1, 1), max_value=datetime(9999, 12, 31), timezones=st.just(UTC)
)


def _millis_in(memory_id: str) -> int:
    value = 0
    for char in memory_id[:10]:
        value = value * 32 + CROCKFORD.index(char)
    return value


def test_ids_are_26_crockford_characters() -> None:
    memory_id = IdGenerator().new_id(AT)
    assert len(memory_id) == 26
    assert set(memory_id) <= set(CROCKFORD)


def test_ids_in_the_same_millisecond_still_increase_in_generation_order() -> None:
    generator = IdGenerator()
    ids = [generator.new_id(AT) for _ in range(2000)]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)


def test_ids_from_separate_generators_sort_by_time() -> None:
    later = IdGenerator().new_id(AT + timedelta(milliseconds=1))
    earlier = IdGenerator().new_id(AT)
    assert earlier < later


def test_ids_made_concurrently_are_unique() -> None:
    generator = IdGenerator()
    made: list[str] = []
    lock = threading.Lock()

    def work() -> None:
        ids = [generator.new_id(AT) for _ in range(500)]
        with lock:
            made.extend(ids)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(made)) == 8 * 500


@given(st.lists(moments, min_size=1, max_size=30))
def test_ids_strictly_increase_when_time_does_not_go_back(at: list[datetime]) -> None:
    generator = IdGenerator()
    ids = [generator.new_id(moment) for moment in sorted(at)]
    assert all(a < b for a, b in itertools.pairwise(ids))
    assert all(len(i) == 26 for i in ids)


@given(moments, moments)
def test_ids_sort_by_the_given_time(first: datetime, second: datetime) -> None:
    a, b = IdGenerator().new_id(first), IdGenerator().new_id(second)
    millis_a = (first - EPOCH) // timedelta(milliseconds=1)
    millis_b = (second - EPOCH) // timedelta(milliseconds=1)
    if millis_a < millis_b:
        assert a < b
    elif millis_a > millis_b:
        assert a > b


@given(
    st.datetimes(
        min_value=datetime(1970, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
    )
)
def test_id_carries_its_millisecond(at: datetime) -> None:
    """Ids made by different processes interleave by time. (Past 2100 the float timestamp can
    round to the neighbouring millisecond; order is still kept, so that is not tested.)"""
    assert _millis_in(IdGenerator().new_id(at)) == (at - EPOCH) // timedelta(milliseconds=1)
