"""The promotion policy (SPEC §3): what each proposal becomes, decided by pure code."""

from __future__ import annotations

import copy
from dataclasses import replace
from datetime import UTC, date, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.model import Actor, Kind, Proposal, Source
from memoryd.promotion import (
    Decision,
    Match,
    Neighbors,
    Outcome,
    PromotionPolicy,
    SlotHolder,
    plan_promotion,
    plan_remember,
)
from memoryd.screening import find_credential, find_sensitive

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


# ---------------------------------------------------------------------------------------------
# Properties

_contents = st.sampled_from(
    [
        "Had lunch with Ana at Cervejaria Ramiro",
        "Lives in Lisbon",
        "Ran 10 km along the river",
        "The owner always skips breakfast",
        "From now on answer in French",
        "Changed the router password today",
        CARD_TEXT,
        f"Set up the new key {FAKE_KEY}",
    ]
) | st.text(min_size=1, max_size=40)
_ids = st.sampled_from(["m1", "m2", "m3"])
_matches = st.builds(Match, _ids, st.floats(min_value=0.0, max_value=1.0))
_maybe_text = st.none() | st.sampled_from(["owner", "lives in", "Lisbon", "Bali"])

proposals = st.builds(
    Proposal,
    kind=st.sampled_from(list(Kind)),
    content=_contents,
    confidence=st.floats(min_value=0.0, max_value=1.0),
    changes_behavior=st.booleans(),
    general_knowledge=st.booleans(),
    subject=_maybe_text,
    predicate=_maybe_text,
    object=_maybe_text,
    entities=st.lists(st.sampled_from(["Ana", "Lisbon", "4111 1111 1111 1111"]), max_size=2).map(
        tuple
    ),
)
neighbor_sets = st.builds(
    Neighbors,
    slot_active=st.none() | st.builds(SlotHolder, _ids, _maybe_text, _contents),
    slot_pending_same_value=st.none() | _ids,
    nearest_active=st.none() | _matches,
    nearest_rejected=st.none() | _matches,
    nearest_pending=st.none() | _matches,
)
policies = st.builds(
    PromotionPolicy,
    activation_confidence=st.floats(min_value=0.0, max_value=1.0),
    duplicate_cosine=st.floats(min_value=0.5, max_value=1.0),
)
sources = st.sampled_from(list(Source))
TRUSTED = {Source.TURN, Source.COMPACTION, Source.OWNER}


def _full_text(p: Proposal) -> str:
    return "\n".join(x for x in [p.content, p.subject, p.predicate, p.object, *p.entities] if x)


@given(proposals, sources, neighbor_sets, policies)
def test_plan_promotion_is_deterministic_and_pure(
    proposal: Proposal, source: Source, neighbors: Neighbors, policy: PromotionPolicy
) -> None:
    inputs = copy.deepcopy((proposal, source, neighbors, policy))
    first = plan_promotion(proposal, source, neighbors, policy)
    second = plan_promotion(*inputs)
    assert first == second
    assert isinstance(first, Decision)
    assert (proposal, source, neighbors, policy) == inputs


@given(proposals, sources, neighbor_sets, policies)
def test_activation_needs_every_condition(
    proposal: Proposal, source: Source, neighbors: Neighbors, policy: PromotionPolicy
) -> None:
    decision = plan_promotion(proposal, source, neighbors, policy)
    if decision.outcome is Outcome.ACTIVATED:
        assert proposal.kind is Kind.EVENT
        assert proposal.confidence >= policy.activation_confidence
        assert not proposal.changes_behavior
        assert find_sensitive(proposal.content, policy.sensitive_phrases) is None
        assert source in TRUSTED
        assert not proposal.general_knowledge
        assert find_credential(_full_text(proposal)) is None


@given(proposals, sources, policies)
def test_a_clean_trusted_confident_event_with_no_neighbours_activates(
    proposal: Proposal, source: Source, policy: PromotionPolicy
) -> None:
    should_activate = (
        proposal.kind is Kind.EVENT
        and proposal.confidence >= policy.activation_confidence
        and not proposal.changes_behavior
        and find_sensitive(proposal.content, policy.sensitive_phrases) is None
        and source in TRUSTED
        and not proposal.general_knowledge
        and find_credential(_full_text(proposal)) is None
    )
    outcome = plan_promotion(proposal, source, NONE, policy).outcome
    assert (outcome is Outcome.ACTIVATED) == should_activate


@given(proposals, sources, neighbor_sets)
def test_nothing_with_a_credential_is_ever_kept(
    proposal: Proposal, source: Source, neighbors: Neighbors
) -> None:
    if find_credential(_full_text(proposal)) is None:
        return
    assert plan_promotion(proposal, source, neighbors).outcome is Outcome.DROPPED
    assert plan_remember(proposal, Actor.TOOL, neighbors).outcome is Outcome.DROPPED


@given(proposals, neighbor_sets, policies)
def test_external_sources_never_activate(
    proposal: Proposal, neighbors: Neighbors, policy: PromotionPolicy
) -> None:
    for source in (Source.DOCUMENT, Source.WEB, Source.TOOL, Source.MISSION):
        assert plan_promotion(proposal, source, neighbors, policy).outcome is not (
            Outcome.ACTIVATED
        )


@given(proposals, neighbor_sets)
def test_tool_remember_never_activates_behaviour_changing_content(
    proposal: Proposal, neighbors: Neighbors
) -> None:
    behaviour_changing = (
        proposal.kind in (Kind.LESSON, Kind.INFERENCE)
        or proposal.changes_behavior
        or find_sensitive(proposal.content) is not None
    )
    if behaviour_changing:
        assert plan_remember(proposal, Actor.TOOL, neighbors).outcome is not Outcome.ACTIVATED


@given(proposals, sources, neighbor_sets, policies, st.data())
def test_re_proposing_an_active_memory_reinforces_it(
    proposal: Proposal,
    source: Source,
    neighbors: Neighbors,
    policy: PromotionPolicy,
    data: st.DataObject,
) -> None:
    """Idempotence: whatever else is around, something already active is never inserted again."""
    proposal = replace(proposal, general_knowledge=False)
    cosine = data.draw(st.floats(min_value=policy.duplicate_cosine, max_value=1.0))
    # The store's own copy: in its slot (if it has one) with the same value, and near in meaning.
    holder = SlotHolder("m-self", proposal.object, proposal.content) if proposal.slot else None
    rejected = neighbors.nearest_rejected
    if rejected is not None and rejected.cosine >= policy.duplicate_cosine:
        rejected = None
    neighbors = replace(
        neighbors,
        slot_active=holder,
        nearest_active=Match("m-self", cosine),
        nearest_rejected=rejected,
    )
    screened = find_credential(_full_text(proposal)) is not None
    decisions = [
        plan_promotion(proposal, source, neighbors, policy),
        plan_remember(proposal, Actor.TOOL, neighbors, policy),
    ]
    if screened:
        assert all(d.rule == "credential" for d in decisions)
    else:
        for decision in decisions:
            assert decision.outcome is Outcome.REINFORCED
            assert decision.target_id == "m-self"
    owner = plan_remember(proposal, Actor.OWNER, neighbors, policy)
    if not screened:
        assert owner.outcome is Outcome.REINFORCED
        assert owner.target_id == "m-self"


@given(proposals, sources, policies)
def test_proposing_the_same_thing_twice_never_stores_two_rows(
    proposal: Proposal, source: Source, policy: PromotionPolicy
) -> None:
    """Whatever the first proposal became, the second one, seen next to it, is not inserted."""
    first = plan_promotion(proposal, source, NONE, policy)
    if first.outcome not in (Outcome.ACTIVATED, Outcome.PENDING):
        return
    copy_of_first = Match("m-first", 1.0)
    if first.outcome is Outcome.ACTIVATED:
        holder = SlotHolder("m-first", proposal.object, proposal.content)
        seen = Neighbors(
            slot_active=holder if proposal.slot else None, nearest_active=copy_of_first
        )
    else:
        seen = Neighbors(
            slot_pending_same_value="m-first" if proposal.slot else None,
            nearest_pending=copy_of_first,
        )
    second = plan_promotion(proposal, source, seen, policy)
    assert second.outcome in (Outcome.REINFORCED, Outcome.DROPPED)
    assert second.target_id == "m-first"


@given(proposals, sources, neighbor_sets, policies, st.floats(min_value=0.0, max_value=1.0))
def test_more_confidence_never_demotes(
    proposal: Proposal,
    source: Source,
    neighbors: Neighbors,
    policy: PromotionPolicy,
    higher: float,
) -> None:
    if higher < proposal.confidence:
        return
    before = plan_promotion(proposal, source, neighbors, policy).outcome
    after = plan_promotion(replace(proposal, confidence=higher), source, neighbors, policy)
    if before is Outcome.ACTIVATED:
        assert after.outcome is Outcome.ACTIVATED
