"""Names as people write them (recall/names_policy.py, memory/name_forms_policy.py): a close
spelling or a diminutive of a known name is read as it; a look-alike different name is not."""

from __future__ import annotations

import pytest

from memoryd.memory.entity_policy import EntityMatcher, other_ending, same_name
from memoryd.memory.name_forms_policy import other_forms
from memoryd.recall.names_policy import known_form, read_as_known, read_name, unknown_names


def matcher(*names: str) -> EntityMatcher:
    return EntityMatcher.build([(name, number) for number, name in enumerate(names, start=1)])


# ---------------------------------------------------------------------------------------------
# The diminutives table


def test_a_diminutive_and_its_full_name_are_each_others_forms() -> None:
    assert {"nathan", "nathaniel"} <= other_forms("Nate")
    assert "nate" in other_forms("nathan")
    assert other_forms("Deborah") == {"deb", "debbie", "debby"}
    assert other_forms("Zebedee") == frozenset()


@pytest.mark.parametrize(
    ("asked", "stored"),
    [
        ("Nathan", "Nate"),
        ("Debbie", "Deborah"),
        ("Deb", "Deborah"),
        ("Jim", "James"),
        ("Bobby", "Rob"),  # both Robert's
        ("Steven", "Stephen"),  # two full names of one short form, about one length
        ("Eliza", "Elise"),
    ],
)
def test_a_form_of_a_known_name_is_that_name(asked: str, stored: str) -> None:
    assert known_form(asked.casefold(), matcher(stored, "Caroline")) == stored.casefold()


@pytest.mark.parametrize(
    ("asked", "stored"),
    [
        ("Josephine", "Joseph"),  # they share "Jo", but she is not Joseph
        ("Alexandra", "Alexander"),
        ("Samuel", "Samantha"),
    ],
)
def test_full_names_sharing_a_short_form_are_not_taken_for_each_other(
    asked: str, stored: str
) -> None:
    assert known_form(asked.casefold(), matcher(stored)) is None


def test_a_short_form_of_several_known_names_is_none_of_them() -> None:
    assert known_form("sam", matcher("Samuel", "Samantha")) is None


# ---------------------------------------------------------------------------------------------
# Look-alikes


@pytest.mark.parametrize(
    ("a", "b"), [("Maria", "Mario"), ("Roberta", "Robert"), ("Carla", "Carl"), ("Gina", "Gino")]
)
def test_a_final_a_against_o_or_a_consonant_is_another_persons_name(a: str, b: str) -> None:
    assert other_ending(a, b) and other_ending(b, a)
    assert same_name(a, b) or a[:3] != b[:3]  # the start's rule took most of them
    assert not same_name(a, b, refined=True)


@pytest.mark.parametrize(("a", "b"), [("Eliza", "Elise"), ("Sarah", "Sara"), ("Anna", "Annie")])
def test_endings_of_one_sound_or_of_two_womens_names_tell_nothing(a: str, b: str) -> None:
    assert not other_ending(a, b)


@pytest.mark.parametrize(("asked", "stored"), [("Timm", "Tim"), ("Ana", "Anna"), ("Jonn", "Jon")])
def test_a_doubled_letter_is_one_even_in_a_short_name(asked: str, stored: str) -> None:
    assert not same_name(asked, stored)
    assert same_name(asked, stored, refined=True)


@pytest.mark.parametrize(
    ("asked", "stored"),
    [("Stephanie", "Stephen"), ("Michelle", "Michael"), ("Danielle", "Daniel"), ("Mario", "Maria")],
)
def test_a_known_given_name_is_not_a_misspelling_of_another(asked: str, stored: str) -> None:
    known = matcher(stored)

    assert known.spelt_like(asked) == 1  # the start's rule took them for the stored name
    assert read_name(asked, known, 2, True) is None


# ---------------------------------------------------------------------------------------------
# The message read with the known spelling


def test_the_message_is_read_with_the_known_spelling() -> None:
    known = matcher("Muhhamed", "Nate")

    assert read_as_known("When am I seeing Mohammed's sister?", known, 1, True) == (
        "When am I seeing Muhhamed's sister?",
        (("Mohammed", "muhhamed"),),
    )
    assert read_as_known("Did Nathan call?", known, 1, True)[1] == ()  # level 1: spellings
    assert read_as_known("Did Nathan call?", known, 2, True)[0] == "Did Nate call?"
    assert read_as_known("Did Nathan call?", known, 0, True) == ("Did Nathan call?", ())


def test_a_diminutive_opening_a_sentence_is_left_as_a_word() -> None:
    known = matcher("Patrick")

    assert read_as_known("Pat the dough flat, then fold it", known, 2, True) == (
        "Pat the dough flat, then fold it",
        (),
    )
    assert read_as_known("What did Pat say?", known, 2, True)[0] == "What did Patrick say?"


def test_an_unknown_look_alike_stays_unknown_and_a_form_of_a_known_name_does_not() -> None:
    known = matcher("Maria", "Samuel", "Samantha")
    frequency = {"mario": 0, "sam": 0, "maria": 3}

    assert unknown_names("Is Mario coming?", known, frequency) == ()  # the start's rule
    assert unknown_names("Is Mario coming?", known, frequency, 2, True) == ("Mario",)
    # "Sam" is Samuel's or Samantha's: a name the store knows, though which is not known.
    assert unknown_names("Is Sam coming?", known, frequency, 2, True) == ()
    assert unknown_names("Is Sam coming?", known, frequency, 1, True) == ("Sam",)


def test_an_acronym_or_a_contraction_is_no_spelling_of_a_name() -> None:
    # Stores keep sentence-opening contractions and short words as names ("It'll", "Cs").
    known = matcher("It'll", "Cs", "Maria")

    assert known.spelt_like("Italy") == 1  # the start's rule took Italy for "It'll"
    assert read_name("Italy", known, 2, True) is None
    assert read_name("CSS", known, 2, True) is None
    assert read_name("Marria", known, 2, True) == "maria"
