"""Whether a message is about its writer (recall/address_policy.py): the first person of a
personal question, not the "I" of a how-to or the "me" of a request."""

from __future__ import annotations

import pytest

from memoryd.recall.address_policy import about_owner


@pytest.mark.parametrize(
    "message",
    [
        "What's my pulse usually?",
        "When is our anniversary?",
        "Who still has to pay me back?",
        "Where should we go for dinner on Friday?",
        "When did I stop with cigarettes?",
        "Am I an early bird?",
        "What computer do I use?",
        "Is dad still alive?",
        "How do I take my coffee?",
        "How do I like to jot things down?",
        "I\u2019m out of ideas for the weekend, what did I plan?",
    ],
)
def test_a_question_about_the_writers_own_life_reads_as_personal(message: str) -> None:
    assert about_owner(message) == 1.0


@pytest.mark.parametrize(
    "message",
    [
        "How do I convert Celsius to Fahrenheit?",
        "How can I undo the last git commit?",
        "What's the capital of Australia?",
        "Give me a regular expression that matches an email address.",
        "Tell me a fun fact about octopuses.",
        "Explain recursion to a ten-year-old.",
        "Mention Imogen's favourite colour.",
        "",
    ],
)
def test_a_how_to_a_fact_or_a_request_is_not_personal(message: str) -> None:
    assert about_owner(message) == 0.0


def test_a_permission_or_advice_asked_of_the_assistant_is_half_personal() -> None:
    # "Can I have a milkshake?" may be about the owner's diet, "Can I freeze pasta?" is not:
    # the words alone cannot tell, so the score weighs the memory's evidence more.
    assert about_owner("Can I have a milkshake?") == 0.5
    assert about_owner("How long should I boil an egg?") == 0.5
    assert about_owner("Should I order the vindaloo? My stomach is delicate.") == 1.0


@pytest.mark.parametrize(
    "message",
    [
        "How long should I boil an egg?",
        "How often should I water a cactus?",
        "How much should I tip a taxi driver?",
    ],
)
def test_how_long_should_i_asks_for_anyones_measure_with_the_switch(message: str) -> None:
    # Off (as the start shipped it), a modal "I" is half personal; on, the "I" of advice on a
    # measure is anyone's, as "how should I …" is.
    assert about_owner(message) == 0.5
    assert about_owner(message, how_much_modal=True) == 0.0


@pytest.mark.parametrize(
    "message",
    [
        "How much can I spend on food shopping?",  # what the owner may do: still half
        "Should I call the bank today?",
    ],
)
def test_other_modal_questions_stay_half_personal_with_the_switch(message: str) -> None:
    assert about_owner(message, how_much_modal=True) == 0.5


def test_a_possessive_still_makes_a_how_long_question_personal() -> None:
    assert about_owner("How long should I take my antibiotics?", how_much_modal=True) == 1.0
