"""The relevance's ``definite`` feature (recall/address_policy.py): a bare "the …" of the
writer's world, not a fact of the world."""

from __future__ import annotations

import pytest

from memoryd.recall.address_policy import definite_reference


@pytest.mark.parametrize(
    "message",
    [
        "Where's the hammer?",
        "Which school is the boy at?",
        "Who in the family makes wine?",
        "When does the landlord get his money?",
    ],
)
def test_a_bare_definite_reference_counts(message: str) -> None:
    assert definite_reference(message)


@pytest.mark.parametrize(
    "message",
    [
        "What is the capital of Mongolia?",
        "What is the largest desert in the world?",
        "Who was the first emperor of Rome?",
        "When did the Berlin Wall fall?",
        "What is the square root of 144?",
        "How can I undo the last git commit?",
        "What is a good name for a cat?",
    ],
)
def test_a_fact_of_the_world_does_not(message: str) -> None:
    # One complement, rank or capital makes the whole message general.
    assert not definite_reference(message)
