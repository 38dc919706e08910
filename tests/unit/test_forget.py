"""What forget takes: an entity's names as whole words, and requests refused before any work."""

from __future__ import annotations

import pytest

from memoryd.errors import InvalidInputError
from memoryd.memory.forget_policy import ForgetRequest, NameMatcher, entity_names, holds_terms


def test_an_entity_is_named_by_its_names_and_aliases_as_whole_words_only() -> None:
    names = entity_names("ana", [("Ana", 1), ("Annie", 1), ("Ana Souza", 1), ("Bruno", 2)])
    matcher = NameMatcher.build(names)

    assert set(matcher.names) == {"ana", "annie", "ana souza"}
    for text in ("Ana's birthday", "met ANA today", "Annie swims", "lunch with ana."):
        assert matcher.named_in(text), text
    for text in ("Banana bread", "Anastasia plays chess", "Bruno cooks", "an analysis"):
        assert not matcher.named_in(text), text
    assert matcher.tagged(["Porto", "ANNIE"]) and not matcher.tagged(["Anastasia"])
    # A name the owner gives is matched even when it is also a common word.
    assert NameMatcher.build(entity_names("May", [])).named_in("dinner with May")


def test_every_query_word_must_be_a_whole_word() -> None:
    assert holds_terms("Moved my Dentist appointment", ["dentist", "appointment"])
    assert not holds_terms("dentistry appointment", ["dentist", "appointment"])


@pytest.mark.parametrize(
    ("entity", "query", "problem"),
    [
        (None, None, "exactly one"),
        ("Ana", "dentist", "exactly one"),
        ("   ", None, "entity to forget is empty"),
        ("...", None, "no letters or digits"),
        (None, "the and of", "only common words"),
        ("A" * 201, None, "at most 200"),
    ],
)
def test_a_bad_request_is_refused_with_what_to_fix(
    entity: str | None, query: str | None, problem: str
) -> None:
    with pytest.raises(InvalidInputError, match=problem):
        ForgetRequest.checked(entity, query)
