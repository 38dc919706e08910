"""Names as people write them, through ``memoryd recall`` (issue 28; bench/README.md, "Names
as people write them"): a question spelling a friend's name another way, or calling them by a
diminutive, recalls the notes about them; a different person's look-alike name does not."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from .conftest import Cli

NOW = "2026-12-04T10:00:00+00:00"
NOTES = [
    ("2026-11-20T10:00", "The owner's flat is on the third floor, no lift"),
    ("2026-11-22T10:00", "Renewed the car insurance with Fidelidade"),
    ("2026-11-25T10:00", "Book club is reading Blindness by Saramago this month"),
    ("2026-11-28T10:00", "Lunch with Muhhamed on Friday at the Thai place"),
    ("2026-11-29T10:00", "Nate lent me his ladder for the weekend"),
    ("2026-11-30T10:00", "Maria's birthday party is on Saturday at her sister's flat"),
    ("2026-11-30T11:00", "Maria said the boiler in her flat needs replacing"),
]


@pytest.fixture
def friends(cli: Cli, seeded: Callable[[], Any]) -> Cli:
    with seeded() as service:
        for when, text in NOTES:
            service.remember(text, now=datetime.fromisoformat(when).replace(tzinfo=UTC))
    return cli


def contents(cli: Cli, message: str) -> list[str]:
    return [item["content"] for item in cli.json("recall", message, "--now", NOW)["items"]]


def test_a_name_spelt_another_way_recalls_that_persons_note(friends: Cli) -> None:
    assert contents(friends, "When am I seeing Mohammed?")[:1] == [
        "Lunch with Muhhamed on Friday at the Thai place"
    ]
    # --explain shows the question as searched: the known spelling in the name's place.
    explained = friends.ok("recall", "When am I seeing Mohammed?", "--now", NOW, "--explain")
    assert "question searched: 'When am I seeing Muhhamed?'" in explained
    assert "names no memory mentions" not in explained


def test_a_diminutive_or_full_form_recalls_that_persons_note(friends: Cli) -> None:
    assert contents(friends, "Has Nathan got his ladder back?")[:1] == [
        "Nate lent me his ladder for the weekend"
    ]
    # Nathan is Nate: not someone no memory mentions (before, he was).
    explained = friends.ok("recall", "Has Nathan got his ladder back?", "--now", NOW, "--explain")
    assert "question searched: 'Has Nate got his ladder back?'" in explained
    assert "names no memory mentions" not in explained


def test_a_different_persons_look_alike_name_opens_nothing(friends: Cli) -> None:
    # Mario is not Maria: nobody the store knows, and nothing else in the question is strong
    # (before, Mario was taken for Maria and her notes came back).
    explained = friends.ok("recall", "What did Mario say?", "--now", NOW, "--explain")
    assert "names no memory mentions: Mario" in explained
    assert contents(friends, "What did Mario say?") == []
    # Asked about Maria herself, her note is first.
    assert contents(friends, "What did Maria say?")[:1] == [
        "Maria said the boiler in her flat needs replacing"
    ]
