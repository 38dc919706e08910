"""Memory ids (SPEC §2: time-ordered): 26 Crockford characters that sort by creation time."""

from __future__ import annotations

import itertools
import random
import threading
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.ids import IdGenerator, id_prefix, prefix_bounds

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


def test_a_seeded_source_makes_the_same_ids_again() -> None:
    # A benchmark builds its stores with a seeded source: the same ids on every run.
    def made(seed: str) -> list[str]:
        source = random.Random(seed)
        generator = IdGenerator(random_bytes=source.randbytes)
        return [generator.new_id(AT + timedelta(seconds=n)) for n in range(5)]

    assert made("beam-1") == made("beam-1")
    assert made("beam-1") != made("beam-2")
    assert IdGenerator().new_id(AT) != IdGenerator().new_id(AT)  # by default, fresh randomness


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


# ---------------------------------------------------------------------------------------------
# Shortened ids


@pytest.mark.parametrize(
    ("text", "prefix"),
    [("01hx", "01HX"), (" 01HX5 ", "01HX5"), ("01H", None), ("01-X", None), ("01HU", None),
     ("", None)],
)  # fmt: skip
def test_a_shortened_id_is_at_least_4_id_characters(text: str, prefix: str | None) -> None:
    assert id_prefix(text) == prefix


def test_prefix_bounds_step_past_the_last_character() -> None:
    assert prefix_bounds("01HX") == ("01HX", "01HY")
    assert prefix_bounds("01H9") == ("01H9", "01HA")
    assert prefix_bounds("01HZ") == ("01HZ", "01I")
    assert prefix_bounds("0ZZZ") == ("0ZZZ", "1")
    assert prefix_bounds("ZZZZ") == ("ZZZZ", None)


@given(
    st.text(CROCKFORD, min_size=26, max_size=26),
    st.lists(st.text(CROCKFORD, min_size=26, max_size=26), max_size=20),
    st.integers(min_value=4, max_value=26),
)
def test_exactly_the_ids_that_start_with_a_prefix_lie_within_its_bounds(
    memory_id: str, others: list[str], length: int
) -> None:
    prefix = memory_id[:length]
    low, high = prefix_bounds(prefix)
    for candidate in [memory_id, *others, prefix + "0" * (26 - length)]:
        within = low <= candidate and (high is None or candidate < high)
        assert within == candidate.startswith(prefix), (prefix, candidate, high)
