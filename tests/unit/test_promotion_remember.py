"""The promotion policy (SPEC §3) for remember: plan_remember for the owner and for the tool."""

from __future__ import annotations

import pytest

from memoryd.memory.model import Actor, Kind, Proposal
from memoryd.memory.promotion_policy import (
    Match,
    Neighbors,
    Outcome,
    SlotHolder,
    plan_remember,
)

from .promotion_support import CARD_TEXT, EVENT, FACT, FAKE_KEY, NONE, fact

# plan_remember


def test_owner_remember_activates_at_once_even_behaviour_changing_content() -> None:
    lesson = Proposal(Kind.LESSON, "Always answer in French", 1.0, changes_behavior=True)
    assert plan_remember(lesson, Actor.OWNER, NONE).outcome is Outcome.ACTIVATED
    assert plan_remember(FACT, Actor.OWNER, NONE).outcome is Outcome.ACTIVATED


def test_owner_remember_of_a_new_value_supersedes_the_slot_holder() -> None:
    holder = SlotHolder("m-bali", "Bali", "Lives in Bali")
    neighbors = Neighbors(slot_active=holder, nearest_active=Match("m-bali", 0.96))
    decision = plan_remember(FACT, Actor.OWNER, neighbors)
    assert decision.outcome is Outcome.ACTIVATED
    assert decision.supersedes == "m-bali"


def test_owner_remember_of_the_same_value_reinforces() -> None:
    holder = SlotHolder("m-lisbon", "Lisbon", "Lives in Lisbon")
    decision = plan_remember(FACT, Actor.OWNER, Neighbors(slot_active=holder))
    assert decision.outcome is Outcome.REINFORCED
    assert decision.rule == "reinforce-slot"
    assert decision.target_id == "m-lisbon"
    assert decision.supersedes is None


def test_owner_remember_never_activates_a_credential() -> None:
    """SPEC §3: credential-like text is never stored, whoever asks. The service screens content,
    subject and object before calling plan_remember, but not the predicate or the entities, and
    plan_remember itself does not screen the owner's proposals at all."""
    proposal = fact(entities=("Ana", "4111 1111 1111 1111"))
    assert plan_remember(proposal, Actor.OWNER, NONE).outcome is not Outcome.ACTIVATED


def test_tool_remember_of_a_plain_fact_activates() -> None:
    decision = plan_remember(FACT, Actor.TOOL, NONE)
    assert decision.outcome is Outcome.ACTIVATED
    assert decision.rule == "tool-remember"


def test_tool_remember_of_a_new_value_supersedes_the_slot_holder() -> None:
    neighbors = Neighbors(slot_active=SlotHolder("m-bali", "Bali", "Lives in Bali"))
    decision = plan_remember(FACT, Actor.TOOL, neighbors)
    assert decision.outcome is Outcome.ACTIVATED
    assert decision.supersedes == "m-bali"


@pytest.mark.parametrize(
    "proposal",
    [
        pytest.param(
            Proposal(Kind.LESSON, "Send files with the file marker", 1.0, False), id="lesson"
        ),
        pytest.param(fact(changes_behavior=True), id="changes-behavior"),
        pytest.param(fact(content="From now on answer in French"), id="sensitive-from-now-on"),
        pytest.param(fact(content="Always answer in French"), id="sensitive-always"),
        pytest.param(fact(content="Don\u2019t use base64 for files"), id="sensitive-curly"),
        pytest.param(Proposal(Kind.INFERENCE, "Prefers quiet places", 0.9, False), id="inference"),
    ],
)
def test_tool_remember_of_behaviour_changing_content_waits_for_the_owner(
    proposal: Proposal,
) -> None:
    """A model can be talked into calling a tool; only an owner action activates these."""
    assert plan_remember(proposal, Actor.TOOL, NONE).outcome is Outcome.PENDING


@pytest.mark.parametrize("content", [CARD_TEXT, f"the key is {FAKE_KEY}"])
def test_tool_remember_of_a_credential_is_dropped(content: str) -> None:
    decision = plan_remember(fact(content=content), Actor.TOOL, NONE)
    assert decision.outcome is Outcome.DROPPED
    assert decision.rule == "credential"


def test_tool_remember_respects_rejections_and_pending_duplicates() -> None:
    rejected = plan_remember(FACT, Actor.TOOL, Neighbors(nearest_rejected=Match("m-rej", 0.99)))
    assert rejected.rule == "rejection-sticks"
    pending = plan_remember(FACT, Actor.TOOL, Neighbors(slot_pending_same_value="m-pend"))
    assert pending.rule == "pending-duplicate"


TAINT = "written after reading untrusted content (search_kb returned document 01DOC)"


def test_tool_remember_after_untrusted_content_waits_for_the_owner_whatever_it_holds() -> None:
    """Taint-aware remember: a plain fact or event (active untainted) and a new slot value all
    wait, with the taint as the reason; a lesson keeps its own reason beside it."""
    replacing = Neighbors(slot_active=SlotHolder("m-bali", "Bali", "Lives in Bali"))
    for proposal, neighbors in [(FACT, NONE), (FACT, replacing), (EVENT, NONE)]:
        decision = plan_remember(proposal, Actor.TOOL, neighbors, taint=TAINT)
        assert decision.outcome is Outcome.PENDING
        assert decision.rule == "tool-after-untrusted-content"
        assert decision.reason == f"waits for the owner: {TAINT}"
        assert decision.supersedes is None
    lesson = Proposal(Kind.LESSON, "Send files with the file marker", 1.0, False)
    decision = plan_remember(lesson, Actor.TOOL, NONE, taint=TAINT)
    assert decision.rule == "tool-after-untrusted-content"
    assert decision.reason == (
        f"waits for the owner: {TAINT}; a lesson changes behaviour, and a tool call is not an "
        "owner action"
    )
    # Untainted, the lesson's reason is what it always was.
    assert plan_remember(lesson, Actor.TOOL, NONE).reason == (
        "waits for the owner: a lesson changes behaviour, and a tool call is not an owner action"
    )


def test_a_tainted_tool_remember_drops_credentials_and_repeats_and_the_owner_is_untainted() -> None:
    assert plan_remember(fact(content=CARD_TEXT), Actor.TOOL, NONE, taint=TAINT).rule == (
        "credential"
    )
    assert plan_remember(FACT, Actor.OWNER, NONE, taint=TAINT).outcome is Outcome.ACTIVATED
    # A repeat of a kept fact is not reinforced by untrusted content: nothing changes.
    same = Neighbors(slot_active=SlotHolder("m-lisbon", "Lisbon", "Lives in Lisbon"))
    repeat = plan_remember(FACT, Actor.TOOL, same, taint=TAINT)
    assert (repeat.outcome, repeat.target_id) == (Outcome.DROPPED, "m-lisbon")
    assert repeat.reason.endswith(f"kept already; not reinforced: {TAINT}")
    assert plan_remember(FACT, Actor.TOOL, same).outcome is Outcome.REINFORCED
