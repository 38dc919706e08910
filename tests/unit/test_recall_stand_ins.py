"""The store's word for an everyday word no memory holds (recall/stand_in_policy.py), and a
relative asked about first (recall/kin_policy.py)."""

from __future__ import annotations

from memoryd.recall.kin_policy import asked_relatives, kin_names, mentions, relative_first
from memoryd.recall.stand_in_policy import (
    PEOPLE,
    STAND_INS,
    THINGS,
    stand_in_words,
    stand_ins_to_look_up,
    stood_in_for,
    table,
)


def test_a_word_no_memory_holds_gives_way_to_a_stand_in_the_store_holds() -> None:
    words = ("boss", "called")
    frequency = {"boss": 0, "called": 1}
    assert stand_ins_to_look_up(words, frequency) == ["manager", "supervisor"]
    assert stand_in_words(words, frequency, {"manager": 1, "supervisor": 0}) == (
        "manager",
        "called",
    )


def test_explain_names_the_asked_word_a_stand_in_was_searched_for() -> None:
    assert stood_in_for(("manager", "called"), ["boss", "called"]) == {"manager": "boss"}
    # A word the message holds itself stands in for nothing, even where it could.
    assert stood_in_for(("manager", "boss"), ["manager", "boss"]) == {}
    assert stood_in_for(("plumber",), ["fixes", "sink"]) == {"plumber": "sink"}


def test_a_held_word_is_never_replaced() -> None:
    frequency = {"boss": 2}
    assert stand_ins_to_look_up(["boss"], frequency) == []
    assert stand_in_words(["boss"], frequency, {"manager": 3}) is None


def test_nothing_changes_when_no_stand_in_is_held() -> None:
    assert stand_in_words(["drive"], {"drive": 0}, {"car": 0}) is None
    assert stand_in_words(["zebra"], {"zebra": 0}, {}) is None


def test_the_first_held_stand_in_wins_and_a_word_already_asked_is_not_repeated() -> None:
    frequency = {"partner": 0, "wife": 1}
    held = {"wife": 1, "husband": 1}
    # "wife" is already in the message: the next held stand-in takes the word's place.
    assert stand_in_words(["partner", "wife"], frequency, held) == ("husband", "wife")


def test_stand_ins_are_query_terms() -> None:
    for word, stand_ins in STAND_INS.items():
        assert word == word.lower() and word not in stand_ins
        assert all(s == s.lower() and " " not in s for s in stand_ins)


def test_the_relatives_a_message_asks_about() -> None:
    assert asked_relatives("When is my brother's flight?") == ("brother",)
    assert asked_relatives("What does our daughter eat, and my son?") == ("daughter", "son")
    assert asked_relatives("What does my brother-in-law do?") == ()
    assert asked_relatives("When is my sister-in-law's baby due?") == ()
    assert asked_relatives("Who is the brother of Ana?") == ()
    assert asked_relatives("What's my boss called?") == ()


def test_the_names_the_store_gives_a_relative() -> None:
    texts = [
        "My brother Joaquim lives in Toronto",
        "Our daughter Leila's teacher is Miss Carter",
        "my brother is tall",
    ]
    assert kin_names(["brother"], texts) == {"joaquim"}
    assert kin_names(["daughter"], texts) == {"leila"}
    # A wife the store calls a partner.
    assert kin_names(["wife"], ["My partner Rita hates coriander"]) == {"rita"}


def test_a_memory_mentions_a_relative_by_word_or_name() -> None:
    assert mentions("Joaquim's kids are Maya and Leo", ["brother"], {"joaquim"})
    assert mentions("My brothers are twins", ["brother"], ())
    assert not mentions("Flight to Toronto on 21/12", ["brother"], {"joaquim"})


def test_the_best_memory_about_the_relative_takes_first_place() -> None:
    texts = ["Flight to Toronto on 21/12", "I like aisle seats", "My brother Joaquim lives there"]
    assert relative_first(texts, ["brother"], (), depth=5) == 2
    assert relative_first(texts, ["brother"], (), depth=2) is None  # not among the first two
    assert relative_first(texts[2:] + texts[:2], ["brother"], (), depth=5) is None  # first
    assert relative_first(texts, [], (), depth=5) is None  # no relative asked about


def test_the_levels_of_the_table() -> None:
    assert table(0) == {}
    assert table(1) == PEOPLE and "boss" in table(1) and "drive" not in table(1)
    assert table(2) == {**PEOPLE, **THINGS} and "drive" in table(2)
    assert stand_in_words(["drive"], {"drive": 0}, {"car": 2}, table(1)) is None
    assert stand_in_words(["drive"], {"drive": 0}, {"car": 2}, table(2)) == ("car",)
