"""A new owner's own questions, asked through ``memoryd recall`` (bench/README.md, "The
owner's own questions"): the note about the person asked for comes first, a relative's
question does not get the owner's own note first, and a general "how long should I …" gets
no memories."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from .conftest import Cli

NOW = "2026-12-04T10:00:00+00:00"
# The new owner's afternoon of walk15: notes kept with ``memoryd remember TEXT --now AT``.
NOTES = [
    ("2026-04-01T10:00", "We pay 950 euros rent for the flat in Arroios"),
    ("2026-05-20T10:00", "I'm vegetarian since 2019, though I eat fish occasionally"),
    ("2026-06-01T10:00", "I work as a data engineer at Farfetch"),
    ("2026-06-10T10:00", "I use a ThinkPad X1 Carbon for work and a MacBook at home"),
    ("2026-07-01T10:00", "My salary arrives on the 23rd of each month"),
    ("2026-07-03T10:00", "The car insurance with Fidelidade renews in March, 412 euros a year"),
    ("2026-07-10T10:00", "I prefer aisle seats on flights"),
    ("2026-07-12T10:00", "Our car is a 2017 grey Renault Clio"),
    ("2026-08-20T10:00", "My brother Joaquim lives in Toronto with his wife Priya"),
    ("2026-08-21T10:00", "Joaquim's kids are called Maya and Leo"),
    ("2026-09-01T10:00", "My partner Rita hates coriander"),
    ("2026-09-12T09:00", "I'm allergic to cats, I start sneezing within minutes"),
    ("2026-09-15T20:00", "My daughter Inês has ballet classes on Wednesdays at 5pm"),
    ("2026-10-02T09:00", "My GP is Dr. Helena Marques at the Alvalade health centre"),
    ("2026-10-05T09:00", "I take 50 mg of sertraline every morning"),
    ("2026-10-10T10:00", "Rita and I are planning a trip to the Azores in May"),
    (
        "2026-10-20T10:00",
        "Training for the Lisbon half marathon in March, running three times a week",
    ),
    ("2026-11-01T10:00", "My passport expires on 2027-02-10, renew it before then"),
    ("2026-11-05T10:00", "This month the book club is reading Blindness by Saramago"),
    ("2026-11-10T12:00", "The Snowflake migration at work must be finished by 18 December"),
    ("2026-11-10T21:00", "Flight to Toronto on 21/12 at 10:40 from Lisbon with TAP"),
    ("2026-11-15T10:00", "My knee hurts after long runs; the physio said to strengthen my quads"),
    ("2026-11-20T18:00", "Blood test results came back: cholesterol slightly high at 215"),
    ("2026-11-28T10:00", "Lunch with Carla from the old team on Friday"),
    ("2026-12-01T19:00", "My son Tomás has a football match this weekend"),
    ("2026-12-01T19:30", "Mum's birthday is on the 15th, she'll be 70"),
    ("2026-12-01T20:00", "Kids' school holidays start on the 18th"),
    ("2026-12-02T12:00", "Performance review with my manager Sofia next week"),
    ("2026-12-03T08:00", "Dentist appointment tomorrow at 3pm"),
    ("2026-12-03T09:00", "The plumber, Sr. Armando, comes on Tuesday to fix the kitchen leak"),
]


@pytest.fixture
def owner(cli: Cli, seeded: Callable[[], Any]) -> Cli:
    with seeded() as service:
        for when, text in NOTES:
            service.remember(text, now=datetime.fromisoformat(when).replace(tzinfo=UTC))
    return cli


def first(cli: Cli, message: str) -> str | None:
    """The content of the block's first memory (the best: the block puts it first)."""
    items = cli.json("recall", message, "--now", NOW)["items"]
    return items[0]["content"] if items else None


def test_the_owners_word_for_a_person_finds_the_note_in_other_words(owner: Cli) -> None:
    # "boss" is in no note: "manager" is, and that note comes first (before, the plumber did:
    # closer in MiniLM's sense of the words).
    assert first(owner, "What's my boss called?") == (
        "Performance review with my manager Sofia next week"
    )
    # --explain says what the searched word stands in for.
    explained = owner.ok("recall", "What's my boss called?", "--now", NOW, "--explain")
    assert "manager (1, for 'boss')" in explained
    # A word a note holds is searched as it is.
    assert first(owner, "Who fixes my sink?") == (
        "The plumber, Sr. Armando, comes on Tuesday to fix the kitchen leak"
    )


def test_a_relatives_question_does_not_get_the_owners_own_note_first(owner: Cli) -> None:
    # No note says when the brother flies; the owner's own flight is not the first answer.
    assert first(owner, "When is my brother's flight?") == (
        "My brother Joaquim lives in Toronto with his wife Priya"
    )
    # The owner's own flight still answers the owner's question.
    assert first(owner, "When is my flight?") == (
        "Flight to Toronto on 21/12 at 10:40 from Lisbon with TAP"
    )


def test_how_long_should_i_boil_an_egg_gets_no_memories(owner: Cli) -> None:
    assert first(owner, "How long should I boil an egg?") is None
    # A question about the owner's own life in the same shape still gets its note.
    assert first(owner, "How long should I keep training for my half marathon?") == (
        "Training for the Lisbon half marathon in March, running three times a week"
    )
