"""The promotion policy (SPEC §3): pure functions that decide what a proposal becomes.

The model proposes; this module decides. It reads only plain data — the proposal, where it came
from and what the store already holds near it — so every rule is unit-testable on its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from enum import StrEnum

from memoryd.memory.model import (
    EXTERNAL_SOURCES,
    TRUSTED_SOURCES,
    Actor,
    Kind,
    Proposal,
    Source,
    normalize_key,
)
from memoryd.memory.slot_policy import SlotPolicy
from memoryd.trust.credential_screening import (
    DEFAULT_SENSITIVE_PHRASES,
    find_credential,
    find_sensitive,
)

CREDENTIAL_RULE = "credential"
TAINTED_REMEMBER_RULE = "tool-after-untrusted-content"


class Outcome(StrEnum):
    """What happened to one proposal."""

    ACTIVATED = "activated"
    PENDING = "pending"
    REINFORCED = "reinforced"
    DROPPED = "dropped"


@dataclass(frozen=True)
class PromotionPolicy:
    """The thresholds of SPEC §3, in one place."""

    # Why 0.8: below it extraction is guessing; events under it wait for the owner.
    activation_confidence: float = 0.8
    # Why 0.95: MiniLM puts paraphrases of one statement at 0.95+, related-but-different
    # statements ("lives in Bali" / "lives in Lisbon") well below it.
    duplicate_cosine: float = 0.95
    sensitive_phrases: tuple[str, ...] = DEFAULT_SENSITIVE_PHRASES
    # Which slot a fact takes when its predicate is new for its subject.
    slots: SlotPolicy = field(default_factory=SlotPolicy)


@dataclass(frozen=True)
class Match:
    """A stored memory close to the proposal (and, for an event, the day it happened)."""

    memory_id: str
    cosine: float
    occurred_on: date | None = None


@dataclass(frozen=True)
class SlotHolder:
    """The active memory currently filling the proposal's fact slot."""

    memory_id: str
    object: str | None
    content: str


@dataclass(frozen=True)
class Neighbors:
    """What the store holds near a proposal, looked up by the service before deciding."""

    slot_active: SlotHolder | None = None
    slot_pending_same_value: str | None = None
    nearest_active: Match | None = None
    nearest_rejected: Match | None = None
    nearest_pending: Match | None = None
    # For a dated event: the next nearest active and pending memories, because the nearest may
    # be the same words on another day (a weekly lesson), and a further one the same event.
    more_active: tuple[Match, ...] = ()
    more_pending: tuple[Match, ...] = ()


@dataclass(frozen=True)
class Decision:
    """The policy's verdict on one proposal; the service applies it in a transaction."""

    outcome: Outcome
    rule: str
    reason: str
    target_id: str | None = None
    supersedes: str | None = None


def is_behavior_changing(proposal: Proposal, policy: PromotionPolicy) -> str | None:
    """Why the proposal could change how the assistant behaves, or None."""
    if proposal.kind is Kind.LESSON:
        return "a lesson changes behaviour"
    if proposal.changes_behavior:
        return "marked changes_behavior"
    phrase = find_sensitive(proposal.content, policy.sensitive_phrases)
    if phrase is not None:
        return f"contains the sensitive phrase {phrase!r}"
    return None


def plan_promotion(
    proposal: Proposal,
    source: Source,
    neighbors: Neighbors,
    policy: PromotionPolicy = PromotionPolicy(),
    taint: str | None = None,
) -> Decision:
    """Decide one extracted proposal: drop, reinforce, land pending, or activate alone.

    ``taint`` names why the text the proposal was extracted from is suspect (it held
    instruction or secret markers): then nothing from it activates alone, however the model
    reworded it."""
    if proposal.general_knowledge:
        return Decision(Outcome.DROPPED, "general-knowledge", "general knowledge is not a memory")
    screened = _screen(proposal, neighbors, policy)
    if screened is not None:
        return screened

    blockers = _activation_blockers(proposal, source, policy)
    if taint is not None:
        blockers.append(f"extracted from text that {taint}")
    if blockers:
        return Decision(
            Outcome.PENDING, "needs-owner", "waits for the owner: " + "; ".join(blockers)
        )
    supersedes = _superseded_slot_holder(proposal, neighbors)
    return Decision(
        Outcome.ACTIVATED,
        "auto-activate-event",
        f"trusted {source.value} event with confidence {proposal.confidence:.2f}",
        supersedes=supersedes,
    )


def plan_remember(
    proposal: Proposal,
    actor: Actor,
    neighbors: Neighbors,
    policy: PromotionPolicy = PromotionPolicy(),
    taint: str | None = None,
) -> Decision:
    """Decide a ``remember``: the owner's is active at once; the model's (a tool call) is too,
    unless it could change behaviour, because a model can be talked into calling a tool.

    ``taint`` says why the model's call is suspect (it was made after the model read untrusted
    content in its session): then it waits for the owner whatever it holds, and a repeat of a
    kept memory changes nothing (it does not reinforce it)."""
    if actor is Actor.OWNER:
        refused = _refuse_credential(proposal)
        if refused is not None:
            return refused
        reinforced = _reinforcement(proposal, neighbors, policy)
        if reinforced is not None:
            return reinforced
        return Decision(
            Outcome.ACTIVATED,
            "owner-remember",
            "the owner asked to remember this",
            supersedes=_superseded_slot_holder(proposal, neighbors),
        )
    screened = _screen(proposal, neighbors, policy)
    if screened is not None and taint is not None and screened.outcome is Outcome.REINFORCED:
        # Untrusted content may not vouch for a memory either (a reinforcement keeps a stale
        # fact from decaying): the memory is already kept, so nothing changes.
        return Decision(
            Outcome.DROPPED,
            TAINTED_REMEMBER_RULE,
            f"{screened.reason}, kept already; not reinforced: {taint}",
            target_id=screened.target_id,
        )
    if screened is not None:
        return screened
    blockers = [taint] if taint is not None else []
    rule = TAINTED_REMEMBER_RULE
    behavior = is_behavior_changing(proposal, policy)
    if behavior is not None:
        blockers.append(f"{behavior}, and a tool call is not an owner action")
        rule = rule if taint is not None else "tool-behaviour-change"
    elif proposal.kind is Kind.INFERENCE:
        blockers.append("an inference")
        rule = rule if taint is not None else "inference-needs-owner"
    if blockers:
        return Decision(Outcome.PENDING, rule, "waits for the owner: " + "; ".join(blockers))
    return Decision(
        Outcome.ACTIVATED,
        "tool-remember",
        "the owner asked the assistant to remember this",
        supersedes=_superseded_slot_holder(proposal, neighbors),
    )


def _screen(proposal: Proposal, neighbors: Neighbors, policy: PromotionPolicy) -> Decision | None:
    """The checks every non-owner write passes first: credentials, rejections, duplicates."""
    refused = _refuse_credential(proposal)
    if refused is not None:
        return refused
    rejected = neighbors.nearest_rejected
    if rejected is not None and rejected.cosine >= policy.duplicate_cosine:
        return _near(Outcome.DROPPED, "rejection-sticks", "matches rejected memory", rejected)
    reinforced = _reinforcement(proposal, neighbors, policy)
    if reinforced is not None:
        return reinforced
    if neighbors.slot_pending_same_value is not None:
        pending_id = neighbors.slot_pending_same_value
        return _same_slot(Outcome.DROPPED, "pending-duplicate", "pending", pending_id)
    pending = _same_memory(proposal, (neighbors.nearest_pending, *neighbors.more_pending), policy)
    if pending is not None:
        return _near(
            Outcome.DROPPED, "pending-duplicate", "near-duplicate of pending memory", pending
        )
    return None


def _refuse_credential(proposal: Proposal) -> Decision | None:
    credential = find_credential(full_text(proposal))
    if credential is None:
        return None
    return Decision(
        Outcome.DROPPED, CREDENTIAL_RULE, f"looks like a {credential.label}; never stored"
    )


def _reinforcement(
    proposal: Proposal, neighbors: Neighbors, policy: PromotionPolicy
) -> Decision | None:
    holder = neighbors.slot_active
    if holder is not None and same_slot_value(proposal, holder.object, holder.content):
        return _same_slot(Outcome.REINFORCED, "reinforce-slot", "active", holder.memory_id)
    active = _same_memory(proposal, (neighbors.nearest_active, *neighbors.more_active), policy)
    if active is not None:
        # A near-identical sentence in the same slot but with a new value is a correction,
        # not a repetition ("lives in Bali" vs "lives in Bali, Indonesia" aside).
        if holder is not None and active.memory_id == holder.memory_id:
            return None
        return _near(
            Outcome.REINFORCED, "reinforce-similar", "near-duplicate of active memory", active
        )
    return None


def _near(outcome: Outcome, rule: str, what: str, match: Match) -> Decision:
    """A decision about the stored memory ``match`` names, by its cosine."""
    reason = f"{what} {match.memory_id} (cosine {match.cosine:.3f})"
    return Decision(outcome, rule, reason, target_id=match.memory_id)


def _same_slot(outcome: Outcome, rule: str, status: str, memory_id: str) -> Decision:
    """A decision about the memory holding the same fact slot with the same value."""
    reason = f"same fact slot and value as {status} memory {memory_id}"
    return Decision(outcome, rule, reason, target_id=memory_id)


def _same_memory(
    proposal: Proposal, matches: tuple[Match | None, ...], policy: PromotionPolicy
) -> Match | None:
    """The first match that says the same thing: within ``duplicate_cosine`` and, for a dated
    event, on the same day (a weekly piano lesson happens every week)."""
    for match in matches:
        if match is None or match.cosine < policy.duplicate_cosine:
            continue
        if not same_day(proposal, match):
            continue
        return match
    return None


def same_day(proposal: Proposal, match: Match) -> bool:
    """Whether a stored memory can be the same happening as the proposal: anything but two
    events dated on different days."""
    if proposal.kind is not Kind.EVENT or proposal.occurred_at is None:
        return True
    return match.occurred_on is None or match.occurred_on == utc_day(proposal.occurred_at)


def utc_day(instant: datetime) -> date:
    """The calendar day of an instant, in UTC (how two events' days are compared)."""
    return instant.astimezone(UTC).date()


def _activation_blockers(proposal: Proposal, source: Source, policy: PromotionPolicy) -> list[str]:
    blockers: list[str] = []
    if proposal.kind is not Kind.EVENT:
        blockers.append(f"a {proposal.kind.value} never activates alone")
    if proposal.confidence < policy.activation_confidence:
        blockers.append(
            f"confidence {proposal.confidence:.2f} is below {policy.activation_confidence:.2f}"
        )
    if proposal.changes_behavior:
        blockers.append("marked changes_behavior")
    phrase = find_sensitive(proposal.content, policy.sensitive_phrases)
    if phrase is not None:
        blockers.append(f"contains the sensitive phrase {phrase!r}")
    if source in EXTERNAL_SOURCES:
        blockers.append(f"derived from {source.value} content, which never activates alone")
    elif source not in TRUSTED_SOURCES:
        blockers.append(f"source {source.value} is not the owner's own conversation")
    return blockers


def _superseded_slot_holder(proposal: Proposal, neighbors: Neighbors) -> str | None:
    holder = neighbors.slot_active
    if holder is None or proposal.slot is None:
        return None
    return None if same_slot_value(proposal, holder.object, holder.content) else holder.memory_id


def same_slot_value(proposal: Proposal, obj: str | None, content: str) -> bool:
    """Whether a stored slot memory (its object and content) says what the proposal says."""
    if proposal.object is not None and obj is not None:
        return normalize_key(proposal.object) == normalize_key(obj)
    return normalize_key(proposal.content) == normalize_key(content)


def full_text(proposal: Proposal) -> str:
    """Every field of a proposal that could carry a secret, as one text."""
    parts = [proposal.content, proposal.subject, proposal.predicate, proposal.object]
    parts.extend(proposal.entities)
    parts.extend(proposal.cues)
    return "\n".join(p for p in parts if p)
