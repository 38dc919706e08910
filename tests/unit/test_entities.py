"""Entities (SPEC §4, the entity leg): names found in text, names and aliases found in messages."""

from __future__ import annotations

import pytest

from memoryd.memory.entity_policy import (
    EntityMatcher,
    extract_entities,
    normalize_name,
    same_name,
    sound_key,
)

# ---------------------------------------------------------------------------------------------
# extract_entities


def test_capitalised_names_are_found_in_order_of_first_mention() -> None:
    text = "Had dinner with Ana at Taberna Sal Grosso in Lisbon and Ana loved it"

    assert extract_entities(text) == ("Ana", "Taberna Sal Grosso", "Lisbon")


def test_acronyms_count_as_names() -> None:
    assert extract_entities("My cousin works at NASA now") == ("NASA",)


@pytest.mark.parametrize(
    "text",
    [
        "I think we should go. She said they would come. He agreed.",
        "Hello there! Thanks, that was great. Yes, okay.",
        "Hi. Hey. Sorry. Please. Maybe.",
        "Yesterday was fine. Today too. Monday is busy, and so is March.",
        "it was all lower case, nothing to see",
        "",
    ],
)
def test_pronouns_greetings_and_calendar_words_are_not_names(text: str) -> None:
    assert extract_entities(text) == ()


def test_a_greeting_before_a_name_is_not_part_of_it() -> None:
    assert extract_entities("Hello Maria, thanks Pedro!") == ("Maria", "Pedro")
    assert extract_entities("She met Bruno Costa today") == ("Bruno Costa",)


def test_names_in_a_comma_separated_list_stay_separate() -> None:
    """A list of people is several names, not one long one."""
    assert extract_entities("I met Ana, Bruno and Carla at the market") == (
        "Ana",
        "Bruno",
        "Carla",
    )


def test_sentence_boundaries_split_names() -> None:
    assert extract_entities("I saw Ana. Bruno was late.") == ("Ana", "Bruno")


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("From now on answer in metric units.", ()),
        ("From Now On, always reply briefly.", ()),
        ("Never send files as base64.", ()),
        ("Never Ever use Comic Sans.", ("Comic Sans",)),
        ("Always answer in metric units.", ()),
        ("Please keep answers short.", ()),
        ("Please Note: the meeting moved.", ()),
        ("Also, the invoices are due.", ()),
        ("Henceforth, no emojis.", ()),
        ("Whenever I ask for a recipe, list the ingredients first.", ()),
        ("Instead, summarise the thread.", ()),
        ("Reminder: the boiler service is due.", ()),
        ("Tell the team about it. Avoid jargon. Stop adding footnotes.", ()),
        ("Every morning, check the calendar.", ()),
        ("Important: do not share the address.", ()),
        ("Answer in French.", ("French",)),
        ("Ana lives in Lisbon.", ("Ana", "Lisbon")),
        ("Lisbon is sunny in May. Ana agrees.", ("Lisbon", "Ana")),
        ("Tell Ana the plan. Never call Bruno after nine.", ("Ana", "Bruno")),
        ("Please ask Marco Polo Travel for a quote.", ("Marco Polo Travel",)),
        ("Also Ana likes tea.", ("Ana",)),
        ("Mark lives in Porto.", ("Mark", "Porto")),
    ],
)
def test_sentence_openers_are_not_names_and_names_that_open_sentences_are(
    text: str, names: tuple[str, ...]
) -> None:
    assert extract_entities(text) == names


# ---------------------------------------------------------------------------------------------
# EntityMatcher

ANA, TABERNA, MOM = 1, 2, 3
MATCHER = EntityMatcher.build(
    [
        ("Ana", ANA),
        ("Ana Lima", ANA),
        ("Nana", ANA),
        ("Taberna Sal Grosso", TABERNA),
        ("Mom", MOM),
    ]
)


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("What does Ana like?", {ANA}),
        ("what does ana like?", {ANA}),
        ("WHAT DOES ANA LIKE", {ANA}),
        ("Is Nana coming?", {ANA}),
        ("dinner at taberna sal grosso?", {TABERNA}),
        ("Did Ana Lima call Mom?", {ANA, MOM}),
        ("I ate a banana", set()),
        ("Anastasia and Mommy", set()),
        ("the sal was grosso at the taberna", set()),
        ("", set()),
    ],
)
def test_names_and_aliases_match_case_insensitively_on_whole_words(
    message: str, expected: set[int]
) -> None:
    assert MATCHER.find(message) == expected


def test_a_possessive_still_mentions_the_name() -> None:
    """ "Ana's birthday" is about Ana: the entity leg must not miss her for an apostrophe."""
    assert MATCHER.find("When is Ana's birthday?") == {ANA}
    assert MATCHER.find("When is Ana’s birthday?") == {ANA}


def test_the_longest_known_name_wins_at_a_position() -> None:
    words = normalize_name("call ana lima today").split()

    [mention] = MATCHER.mentions(words)

    assert (mention.entity_id, words[mention.start : mention.end]) == (ANA, ["ana", "lima"])


def test_five_thousand_names_are_matched() -> None:
    pairs = [(f"Person{index} Surname{index % 97}", index) for index in range(5000)]
    pairs += [(f"Alias{index}", index) for index in range(0, 5000, 7)]
    matcher = EntityMatcher.build(pairs)

    found = matcher.find("Lunch with person4321 surname53 and ALIAS700, not Person4321 alone")

    assert found == {4321, 700}
    assert matcher.find("nobody known here, just surname3 and person12") == set()


# ---------------------------------------------------------------------------------------------
# Names as people write them


@pytest.mark.parametrize(
    ("asked", "stored"),
    [
        ("Muhammad", "Muhhamed"),
        ("Mohammed", "Muhhamed"),
        ("Faheem", "Fahim"),
        ("Aqib", "Akib"),
        ("Eliza", "Elise"),
        ("Nikolas", "Nicolas"),
        ("Caroline", "Carolyn"),
        ("José", "Jose"),
    ],
)
def test_a_name_spelt_another_way_is_that_name(asked: str, stored: str) -> None:
    matcher = EntityMatcher.build([(stored, 7), ("Melanie", 8)])

    assert same_name(asked, stored)
    assert matcher.spelt_like(asked) == 7
    assert matcher.spelt_like(f"{asked}'s") == 7


@pytest.mark.parametrize(
    ("asked", "stored"),
    [
        ("Caroline", "Melanie"),
        ("Nikolas", "Nicole"),
        ("Ali", "Al"),  # too short to tell: only as written
        ("Ana", "Ann"),
        ("Martin", "Marta"),
        ("Fahim", "Farah"),
    ],
)
def test_different_names_stay_different(asked: str, stored: str) -> None:
    matcher = EntityMatcher.build([(stored, 7)])

    assert not same_name(asked, stored)
    assert matcher.spelt_like(asked) is None


def test_the_exact_name_wins_over_a_close_one() -> None:
    matcher = EntityMatcher.build([("Elise", 1), ("Eliza", 2)])

    assert matcher.spelt_like("Eliza") == 2
    assert matcher.spelt_like("Elize") in (1, 2)


def test_sound_keys_of_spellings_agree() -> None:
    assert sound_key("Muhammad") == sound_key("Mohammed") == sound_key("Muhhamed") == "md"
    assert sound_key("Nicolas") == sound_key("Nikolas")
    assert sound_key("Aqib") == sound_key("Akib")
