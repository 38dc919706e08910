"""A message's sentences for the vector leg (recall/sentences_policy.py) and how their
rankings join the message's own (recall/vector_legs.py)."""

from __future__ import annotations

import pytest

from memoryd.recall.sentences_policy import sentences
from memoryd.recall.vector_legs import joined
from memoryd.storage.protocols import VectorHit

GALLERY = (
    "I'm adding lazy loading to my image gallery that uses Bootstrap 5.3.0. "
    "How would you load the thumbnails before the full pictures?"
)


def test_a_preamble_and_its_ask_are_two_sentences() -> None:
    assert sentences(GALLERY, 3, 3) == (
        "I'm adding lazy loading to my image gallery that uses Bootstrap 5.3.0.",
        "How would you load the thumbnails before the full pictures?",
    )


@pytest.mark.parametrize(
    "message",
    [
        "Where do I work?",
        "Would Caroline likely have Dr. Seuss books on her bookshelf?",
        "Does Tim read books by C. S. Lewis?",
    ],
)
def test_one_sentence_has_none(message: str) -> None:
    assert sentences(message, 3, 3) == ()


def test_a_piece_of_few_content_words_joins_the_next() -> None:
    message = "Hi! Quick one. What did my sister buy for the new flat last week?"
    assert sentences(message, 3, 3) == ()
    found = sentences(f"Hello there. {GALLERY}", 3, 3)
    assert found[0].startswith("Hello there. I'm adding lazy loading")
    assert len(found) == 2


def test_a_short_last_piece_joins_the_one_before() -> None:
    found = sentences(f"{GALLERY} Any ideas?", 3, 3)
    assert found[-1] == "How would you load the thumbnails before the full pictures? Any ideas?"


def test_line_breaks_end_sentences() -> None:
    message = "My landlord raised the rent again\nwhat are my options under the lease contract"
    assert sentences(message, 3, 3) == (
        "My landlord raised the rent again",
        "what are my options under the lease contract",
    )


def test_the_count_is_capped_by_joining_the_lightest_neighbours() -> None:
    message = (
        "My daughter starts school in September. "
        "She loves drawing horses. "
        "We moved to Porto in spring. "
        "Which school supplies should we buy for her first term?"
    )
    found = sentences(message, 3, 3)
    assert len(found) == 3
    assert " ".join(found) == message
    assert found[1] == "She loves drawing horses. We moved to Porto in spring."
    assert sentences(message, 1, 3) == ()
    assert sentences(message, 0, 3) == ()


def _hits(*ids_and_cosines: tuple[str, float]) -> list[VectorHit]:
    return [VectorHit(memory_id, cosine) for memory_id, cosine in ids_and_cosines]


def test_a_sentences_best_match_joins_the_message_ranking() -> None:
    message = _hits(("a", 0.50), ("b", 0.45), ("c", 0.40))
    second = _hits(("d", 0.70), ("a", 0.30))
    # By the best cosine: the memory the second sentence matches closely comes first.
    assert joined([message, second], 0.0, 10) == ["d", "a", "b", "c"]
    # By reciprocal rank: a memory both rank is first, the sentence's own best next.
    assert joined([message, second], 1.0, 10) == ["a", "d", "b", "c"]
    assert joined([message, second], 1.0, 2) == ["a", "d"]


def test_alone_the_message_ranking_is_kept() -> None:
    message = _hits(("a", 0.50), ("b", 0.45), ("c", 0.40))
    assert joined([message], 0.0, 10) == ["a", "b", "c"]
    assert joined([message], 1.0, 10) == ["a", "b", "c"]
