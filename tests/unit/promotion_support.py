"""What the promotion unit tests share: an event and a fact proposal, no neighbours, and a
made-up card number and API key.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from memoryd.memory.model import Kind, Proposal
from memoryd.memory.promotion_policy import (
    Neighbors,
)

EVENT = Proposal(
    kind=Kind.EVENT,
    content="Had lunch with Ana at Cervejaria Ramiro",
    confidence=0.9,
    changes_behavior=False,
)
FACT = Proposal(
    kind=Kind.FACT,
    content="Lives in Lisbon",
    confidence=0.95,
    changes_behavior=False,
    subject="owner",
    predicate="lives in",
    object="Lisbon",
)
NONE = Neighbors()
CARD_TEXT = "Ana's card is 4111 1111 1111 1111"
FAKE_KEY = "sk-proj-Zq8fXk2LmN4pR7sT1vW3yB6dH9jK0aC5"  # made up


def event(**changes: Any) -> Proposal:
    """The base event with some fields changed."""
    return replace(EVENT, **changes)


def fact(**changes: Any) -> Proposal:
    """The base fact with some fields changed."""
    return replace(FACT, **changes)
