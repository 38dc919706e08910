"""The text coverage of a match on numbers and units alone (recall/gate_policy.py), pure."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memoryd.recall.evidence_policy import QueryFacts
from memoryd.recall.gate_policy import is_quantity, read_query
from memoryd.recall.policy import RecallPolicy

ARITHMETIC = QueryFacts(
    words=("17", "times", "23", "balcony"),
    word_frequency={"17": 1, "23": 2, "balcony": 1},
    memory_count=300,
)


def test_numbers_and_units_are_quantities_and_other_words_are_not() -> None:
    assert all(is_quantity(w) for w in ("17", "2023", "3rd", "week", "seconds", "times", "many"))
    assert not any(is_quantity(w) for w in ("balcony", "plants", "monday", "blue"))


def test_a_match_on_numbers_alone_covers_nothing_as_shipped() -> None:
    reading = read_query(ARITHMETIC, RecallPolicy())

    assert reading.coverage(frozenset({"17", "23"})) == 0.0
    assert reading.coverage(frozenset({"23", "times"})) == 0.0


def test_main_s_reading_counts_the_numbers_weight() -> None:
    reading = read_query(ARITHMETIC, RecallPolicy(quantities_cover=True))

    assert reading.coverage(frozenset({"17", "23"})) > 0.4


@given(st.sets(st.sampled_from(ARITHMETIC.words), min_size=1))
def test_a_subject_word_in_the_match_counts_every_matched_word(words: set[str]) -> None:
    shipped = read_query(ARITHMETIC, RecallPolicy())
    main = read_query(ARITHMETIC, RecallPolicy(quantities_cover=True))
    matched = frozenset(words | {"balcony"})

    assert shipped.coverage(matched) == main.coverage(matched) > 0.0
