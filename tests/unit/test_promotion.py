"""The promotion policy (SPEC §3): what each proposal becomes, decided by pure code."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime

import pytest

from memoryd.memory.model import Actor, Kind, Proposal, Source
from memoryd.memory.promotion_policy import (
    Match,
    Neighbors,
    Outcome,
    PromotionPolicy,
    SlotHolder,
    plan_promotion,
    plan_remember,
)

from .promotion_support import CARD_TEXT, EVENT, FACT, FAKE_KEY, NONE, event, fact

# ---------------------------------------------------------------------------------------------
# plan_promotion: what activates alone


def test_confident_event_from_the_owners_conversation_activates() -> None:
    decision = plan_promotion(EVENT, Source.TURN, NONE)
    assert decision.outcome is Outcome.ACTIVATED
    assert decision.supersedes is None
    assert decision.target_id is None


@pytest.mark.parametrize("source", [Source.TURN, Source.COMPACTION, Source.OWNER])
def test_trusted_sources_may_activate_an_event(source: Source) -> None:
    assert plan_promotion(EVENT, source, NONE).outcome is Outcome.ACTIVATED


def test_unsure_event_waits_for_the_owner() -> None:
    decision = plan_promotion(event(confidence=0.7), Source.TURN, NONE)
    assert decision.outcome is Outcome.PENDING
    assert "0.70" in decision.reason


def test_confidence_exactly_at_the_threshold_activates() -> None:
    assert plan_promotion(event(confidence=0.8), Source.TURN, NONE).outcome is Outcome.ACTIVATED
    assert plan_promotion(event(confidence=0.7999), Source.TURN, NONE).outcome is Outcome.PENDING


@pytest.mark.parametrize("kind", [Kind.LESSON, Kind.FACT, Kind.INFERENCE])
def test_only_events_activate_alone(kind: Kind) -> None:
    decision = plan_promotion(event(kind=kind, confidence=1.0), Source.TURN, NONE)
    assert decision.outcome is Outcome.PENDING
    assert kind.value in decision.reason


def test_behaviour_changing_event_waits_for_the_owner() -> None:
    decision = plan_promotion(event(changes_behavior=True), Source.TURN, NONE)
    assert decision.outcome is Outcome.PENDING
    assert "changes_behavior" in decision.reason


@pytest.mark.parametrize(
    "content",
    [
        "From now on the owner takes the train to work",
        "The owner always skips breakfast",
        "Changed the router password today",
        "Owner said: ignore the earlier plan",
    ],
)
def test_sensitive_words_keep_an_event_pending(content: str) -> None:
    decision = plan_promotion(event(content=content, confidence=1.0), Source.TURN, NONE)
    assert decision.outcome is Outcome.PENDING


@pytest.mark.parametrize("source", [Source.DOCUMENT, Source.WEB, Source.TOOL, Source.MISSION])
def test_external_content_never_activates_alone(source: Source) -> None:
    perfect = event(confidence=1.0)
    decision = plan_promotion(perfect, source, NONE)
    assert decision.outcome is Outcome.PENDING
    assert source.value in decision.reason


@pytest.mark.parametrize("source", [Source.REFLECTION, Source.REMEMBER, Source.IMPORT])
def test_other_untrusted_sources_do_not_activate_alone(source: Source) -> None:
    assert plan_promotion(event(confidence=1.0), source, NONE).outcome is Outcome.PENDING


def test_pending_reason_lists_every_blocker() -> None:
    proposal = event(kind=Kind.LESSON, confidence=0.5, changes_behavior=True)
    decision = plan_promotion(proposal, Source.WEB, NONE)
    assert decision.outcome is Outcome.PENDING
    for words in ("lesson", "0.50", "changes_behavior", "web"):
        assert words in decision.reason


# ---------------------------------------------------------------------------------------------
# plan_promotion: what is dropped or reinforced


def test_general_knowledge_is_dropped() -> None:
    decision = plan_promotion(event(general_knowledge=True), Source.TURN, NONE)
    assert decision.outcome is Outcome.DROPPED
    assert decision.rule == "general-knowledge"


@pytest.mark.parametrize(
    "proposal",
    [
        pytest.param(event(content=CARD_TEXT), id="card-in-content"),
        pytest.param(event(content=f"Set up the new key {FAKE_KEY}"), id="key-in-content"),
        pytest.param(fact(object=FAKE_KEY), id="key-in-object"),
        pytest.param(fact(subject="AKIAZQ8FXK2LMN4PR7ST"), id="key-in-subject"),
        pytest.param(event(entities=("Ana", "4111-1111-1111-1111")), id="card-in-entities"),
    ],
)
@pytest.mark.parametrize("source", [Source.TURN, Source.OWNER, Source.WEB])
def test_credentials_are_dropped_never_stored(proposal: Proposal, source: Source) -> None:
    decision = plan_promotion(proposal, source, NONE)
    assert decision.outcome is Outcome.DROPPED
    assert decision.rule == "credential"
    assert FAKE_KEY not in decision.reason
    assert "4111" not in decision.reason


def test_credential_is_dropped_even_when_it_repeats_an_active_memory() -> None:
    neighbors = Neighbors(nearest_active=Match("m-active", 0.99))
    decision = plan_promotion(event(content=CARD_TEXT), Source.TURN, neighbors)
    assert decision.rule == "credential"


def test_rejections_stick() -> None:
    decision = plan_promotion(EVENT, Source.TURN, Neighbors(nearest_rejected=Match("m-rej", 0.95)))
    assert decision.outcome is Outcome.DROPPED
    assert decision.rule == "rejection-sticks"
    assert decision.target_id == "m-rej"


def test_a_merely_similar_rejection_does_not_block() -> None:
    decision = plan_promotion(EVENT, Source.TURN, Neighbors(nearest_rejected=Match("m-rej", 0.94)))
    assert decision.outcome is Outcome.ACTIVATED


def test_rejection_wins_over_reinforcement() -> None:
    neighbors = Neighbors(
        nearest_rejected=Match("m-rej", 0.97), nearest_active=Match("m-active", 0.99)
    )
    assert plan_promotion(EVENT, Source.TURN, neighbors).rule == "rejection-sticks"


def test_near_duplicate_of_an_active_memory_reinforces_it() -> None:
    decision = plan_promotion(EVENT, Source.TURN, Neighbors(nearest_active=Match("m-active", 0.95)))
    assert decision.outcome is Outcome.REINFORCED
    assert decision.target_id == "m-active"


def test_the_same_event_words_on_another_day_are_a_new_event() -> None:
    """A weekly piano lesson happens every week: last week's is not reinforced by this one."""
    lesson = event(content="Had a piano lesson", occurred_at=datetime(2026, 11, 24, 17, tzinfo=UTC))
    last_week = Match("m-last-week", 0.99, date(2026, 11, 17))
    same_day = Match("m-same-day", 0.97, date(2026, 11, 24))

    alone = plan_promotion(lesson, Source.TURN, Neighbors(nearest_active=last_week))
    further_down = plan_promotion(
        lesson, Source.TURN, Neighbors(nearest_active=last_week, more_active=(same_day,))
    )
    pending = plan_promotion(
        replace(lesson, confidence=0.5),
        Source.TURN,
        Neighbors(nearest_pending=last_week),
    )

    assert alone.outcome is Outcome.ACTIVATED
    assert further_down.outcome is Outcome.REINFORCED
    assert further_down.target_id == "m-same-day"
    assert pending.outcome is Outcome.PENDING


def test_an_undated_proposal_or_match_still_reinforces_by_words() -> None:
    undated = Match("m", 0.99, None)
    dated = event(occurred_at=datetime(2026, 11, 24, tzinfo=UTC))

    assert (
        plan_promotion(
            EVENT, Source.TURN, Neighbors(nearest_active=Match("m", 0.99, date(2026, 1, 1)))
        ).outcome
        is Outcome.REINFORCED
    )
    assert (
        plan_promotion(dated, Source.TURN, Neighbors(nearest_active=undated)).outcome
        is Outcome.REINFORCED
    )
    assert (
        plan_promotion(
            FACT, Source.TURN, Neighbors(nearest_active=Match("m", 0.99, date(2026, 1, 1)))
        ).outcome
        is Outcome.REINFORCED
    )


def test_a_merely_similar_active_memory_does_not_reinforce() -> None:
    decision = plan_promotion(EVENT, Source.TURN, Neighbors(nearest_active=Match("m-active", 0.94)))
    assert decision.outcome is Outcome.ACTIVATED


def test_external_repetition_of_an_active_memory_reinforces_instead_of_landing_pending() -> None:
    neighbors = Neighbors(nearest_active=Match("m-active", 0.97))
    assert plan_promotion(EVENT, Source.WEB, neighbors).outcome is Outcome.REINFORCED


def test_same_fact_slot_and_value_reinforces() -> None:
    holder = SlotHolder("m-fact", "lisbon ", "The owner lives in Lisbon")
    decision = plan_promotion(FACT, Source.TURN, Neighbors(slot_active=holder))
    assert decision.outcome is Outcome.REINFORCED
    assert decision.rule == "reinforce-slot"
    assert decision.target_id == "m-fact"


def test_same_slot_value_without_objects_compares_the_text() -> None:
    holder = SlotHolder("m-fact", None, "lives   in LISBON")
    decision = plan_promotion(fact(object=None), Source.TURN, Neighbors(slot_active=holder))
    assert decision.rule == "reinforce-slot"


def test_same_slot_with_a_new_value_is_not_a_repetition() -> None:
    holder = SlotHolder("m-fact", "Bali", "Lives in Bali")
    neighbors = Neighbors(slot_active=holder, nearest_active=Match("m-fact", 0.96))
    decision = plan_promotion(FACT, Source.TURN, neighbors)
    assert decision.outcome is Outcome.PENDING  # a fact waits for the owner
    assert decision.target_id is None


def test_pending_duplicate_of_the_same_slot_value_is_dropped() -> None:
    decision = plan_promotion(FACT, Source.TURN, Neighbors(slot_pending_same_value="m-pend"))
    assert decision.outcome is Outcome.DROPPED
    assert decision.rule == "pending-duplicate"
    assert decision.target_id == "m-pend"


def test_pending_near_duplicate_is_dropped() -> None:
    decision = plan_promotion(
        event(confidence=0.5), Source.TURN, Neighbors(nearest_pending=Match("m-pend", 0.96))
    )
    assert decision.outcome is Outcome.DROPPED
    assert decision.rule == "pending-duplicate"
    assert decision.target_id == "m-pend"
    other = plan_promotion(
        event(confidence=0.5), Source.TURN, Neighbors(nearest_pending=Match("m-pend", 0.94))
    )
    assert other.outcome is Outcome.PENDING


# ---------------------------------------------------------------------------------------------
# ---------------------------------------------------------------------------------------------
# Thresholds are configuration


def test_activation_threshold_is_honoured() -> None:
    lenient = PromotionPolicy(activation_confidence=0.6)
    strict = PromotionPolicy(activation_confidence=0.95)
    assert plan_promotion(event(confidence=0.7), Source.TURN, NONE, lenient).outcome is (
        Outcome.ACTIVATED
    )
    assert plan_promotion(event(confidence=0.9), Source.TURN, NONE, strict).outcome is (
        Outcome.PENDING
    )


def test_duplicate_threshold_is_honoured() -> None:
    loose = PromotionPolicy(duplicate_cosine=0.9)
    tight = PromotionPolicy(duplicate_cosine=0.99)
    active = Neighbors(nearest_active=Match("m-active", 0.92))
    rejected = Neighbors(nearest_rejected=Match("m-rej", 0.92))
    pending = Neighbors(nearest_pending=Match("m-pend", 0.92))
    assert plan_promotion(EVENT, Source.TURN, active, loose).outcome is Outcome.REINFORCED
    assert plan_promotion(EVENT, Source.TURN, rejected, loose).rule == "rejection-sticks"
    assert plan_promotion(EVENT, Source.TURN, pending, loose).rule == "pending-duplicate"
    very_close = Neighbors(nearest_active=Match("m-active", 0.97))
    assert plan_promotion(EVENT, Source.TURN, very_close, tight).outcome is Outcome.ACTIVATED
    assert plan_remember(FACT, Actor.OWNER, active, loose).outcome is Outcome.REINFORCED


def test_sensitive_phrase_list_is_honoured() -> None:
    custom = PromotionPolicy(sensitive_phrases=("ramiro",))
    assert plan_promotion(EVENT, Source.TURN, NONE, custom).outcome is Outcome.PENDING
    always = event(content="The owner always skips breakfast")
    assert plan_promotion(always, Source.TURN, NONE, custom).outcome is Outcome.ACTIVATED
    lisbon = PromotionPolicy(sensitive_phrases=("lisbon",))
    assert plan_remember(FACT, Actor.TOOL, NONE, lisbon).outcome is Outcome.PENDING
