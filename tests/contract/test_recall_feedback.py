"""Pseudo-relevance feedback (RecallPolicy.feedback_depth; off as shipped, bench/README.md,
"Pseudo-relevance feedback"): once the block has opened, a second query made from the message
and its first ranked memories (a vector moved toward theirs, or the text leg's words with
theirs) reads more memories, whose ranks join as the feedback leg. It never opens a block, and
it admits only what is close enough to the message itself. Once per storage backend.
"""

from __future__ import annotations

from dataclasses import replace

from memoryd.recall.policy import RecallPolicy
from memoryd.service import MemoryService

from .recall_support import item_ids, recall_under, remember

GARDEN = (
    "The owner grows tomatoes on the balcony",
    "The owner's tomatoes got blight in July and had to be pulled",
    "The owner waters the balcony tomatoes every morning before work",
    "The owner bought a copper fungicide spray for the tomato blight",
    "The owner's basil sits beside the tomatoes and keeps the aphids away",
    "The owner's daughter Lucia was born on 3 June 2015",
    "The owner's partner Ines is vegetarian",
    "The owner's brother Tiago works as a firefighter in Braga",
    "The owner works as a backend engineer at Nordlys, a logistics startup",
    "The owner's salary arrives on the 23rd of each month",
    "The owner's dog Pimenta is a greyhound",
    "The owner's mother lives in Coimbra and calls every Sunday",
)
VECTOR = RecallPolicy(feedback_depth=20, feedback_top=2, feedback_beta=1.0)
WORDS = replace(VECTOR, feedback_terms=5)


def _store(service: MemoryService) -> None:
    for content in GARDEN:
        remember(service, content)


def test_the_feedback_leg_joins_an_open_block(service: MemoryService) -> None:
    _store(service)

    for policy in (VECTOR, WORDS):
        result = recall_under(service, policy, "What went wrong with my tomato plants?")

        assert result.legs["feedback"] == "ok"
        contents = [item.memory.content for item in result.packed.items]
        assert "The owner's tomatoes got blight in July and had to be pulled" in contents
        # Its ranks show beside the other legs' (recall --explain).
        assert any("feedback" in item.ranks for item in result.packed.items)


def test_feedback_never_opens_a_silent_block(service: MemoryService) -> None:
    _store(service)

    for policy in (VECTOR, WORDS):
        result = recall_under(service, policy, "What is the capital of Mongolia?")

        assert result.packed.items == ()
        assert result.silence is not None
        assert "feedback" not in result.legs  # it did not even run


def test_what_feedback_finds_is_bounded_by_the_message_itself(service: MemoryService) -> None:
    _store(service)
    message = "What went wrong with my tomato plants?"

    shipped = recall_under(service, RecallPolicy(), message)
    unbounded = recall_under(service, replace(VECTOR, feedback_min_cosine=-1.0), message)
    bounded = recall_under(service, replace(VECTOR, feedback_min_cosine=1.01), message)

    # Nothing is close enough to the message to pass a bound over 1: the feedback leg's
    # finds are judged, none admitted, and the block is the one recall packs without it.
    assert bounded.legs["feedback"] == "ok"
    assert item_ids(bounded) == item_ids(shipped)
    assert all("feedback" not in item.gates for item in bounded.packed.items)
    # Without a bound it admits what it found.
    assert any("feedback" in item.gates for item in unbounded.packed.items)
