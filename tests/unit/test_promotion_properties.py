"""The promotion policy (SPEC §3): Hypothesis properties of plan_promotion and plan_remember."""

from __future__ import annotations

import copy
from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from memoryd.memory.model import Actor, Kind, Proposal, Source
from memoryd.memory.promotion_policy import (
    Decision,
    Match,
    Neighbors,
    Outcome,
    PromotionPolicy,
    SlotHolder,
    plan_promotion,
    plan_remember,
)
from memoryd.trust.credential_screening import find_credential, find_sensitive

from .promotion_support import CARD_TEXT, FAKE_KEY, NONE

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
