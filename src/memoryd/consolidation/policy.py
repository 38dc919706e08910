"""Consolidation policy (SPEC §5), pure: which memories each daily stage touches, and how.

Every action is a status change or a supersede, never an in-place edit, so the service applies a
plan as audited writes. Plans are deterministic and idempotent: a memory a stage has just acted
on is not eligible for the same stage again on the same day.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from memoryd.memory.model import Kind, Memory, Status
from memoryd.trust.credential_screening import find_credential


class Stage(StrEnum):
    """The stages of the daily job, in the order they run."""

    MERGE = "merge-near-duplicates"
    DEDUPE_PENDING = "dedupe-pending"
    ARCHIVE_EPISODIC = "archive-episodic"
    DECAY_SEMANTIC = "decay-semantic"
    DECAY_INFERENCES = "decay-inferences"
    REFLECT = "reflect"
    DEMOTE_PENDING = "demote-pending"
    WRITE_CUES = "write-cues"


class Action(StrEnum):
    """What a planned step does to a memory."""

    ARCHIVE = "archive"
    REJECT = "reject"
    SUPERSEDE = "supersede"  # a new row with the new confidence replaces the old one
    MERGE = "merge"  # a group of near-duplicates is superseded by one merged row
    KEEP = "keep"  # a merge the guard refused: the group stays as it was
    PROPOSE = "propose"  # reflection proposed an insight (it lands pending)
    CUE = "cue"  # cues written for a memory made without a model (its content unchanged)


@dataclass(frozen=True)
class ConsolidationPolicy:
    """SPEC §5's thresholds, in one place."""

    episodic_idle_days: int = 180
    semantic_unconfirmed_days: int = 365
    semantic_decay_factor: float = 0.8
    inference_half_life_days: int = 90
    inference_archive_below: float = 0.3
    pending_max_age_days: int = 60
    # "Low confidence" for demoting stale pending items.
    pending_low_confidence: float = 0.5
    reflect_window_days: int = 7
    reflect_min_events: int = 10
    reflect_max_insights: int = 3
    duplicate_cosine: float = 0.95
    # A merged text may be at most this much shorter or longer than the longest original.
    merge_max_length_change: float = 0.5
    # Why 0.9: write-time reinforcement already absorbs ≥ 0.95; what remains between 0.9 and
    # 0.95 is mostly the same statement reworded, which is what merging is for.
    merge_cosine: float = 0.9
    merge_max_group: int = 5
    merge_max_groups_per_run: int = 20
    # One model call per memory: a store of `remember`s gets its cues over a few runs.
    cues_per_run: int = 200


@dataclass(frozen=True)
class Step:
    """One planned change."""

    stage: Stage
    memory_id: str
    action: Action
    reason: str
    new_confidence: float | None = None


def _active(memories: Iterable[Memory], kind: Kind) -> Iterator[Memory]:
    """The active memories of ``kind`` (a stage's input may hold others)."""
    return (m for m in memories if m.kind is kind and m.status is Status.ACTIVE)


def plan_archive_episodic(
    events: Iterable[Memory], now: datetime, policy: ConsolidationPolicy
) -> list[Step]:
    """Active events neither created nor retrieved within ``episodic_idle_days``."""
    limit = timedelta(days=policy.episodic_idle_days)
    steps = []
    for memory in _active(events, Kind.EVENT):
        last_touch = max(memory.created_at, memory.last_retrieved_at or memory.created_at)
        if now - last_touch > limit:
            idle = (now - last_touch).days
            steps.append(Step(Stage.ARCHIVE_EPISODIC, memory.id, Action.ARCHIVE,
                              f"neither created nor retrieved for {idle} days"))  # fmt: skip
    return steps


def plan_decay_semantic(
    facts: Iterable[Memory], now: datetime, policy: ConsolidationPolicy
) -> list[Step]:
    """Active facts unconfirmed for ``semantic_unconfirmed_days``: confidence × 0.8 through a
    supersede; the new row is not eligible again for another full period."""
    limit = timedelta(days=policy.semantic_unconfirmed_days)
    steps = []
    for memory in _active(facts, Kind.FACT):
        anchor = max(memory.last_confirmed_at, memory.created_at)
        if now - anchor > limit:
            confidence = round(memory.confidence * policy.semantic_decay_factor, 6)
            steps.append(Step(Stage.DECAY_SEMANTIC, memory.id, Action.SUPERSEDE,
                              f"unconfirmed for {(now - anchor).days} days; queued for "
                              "reconfirmation", confidence))  # fmt: skip
    return steps


def plan_decay_inferences(
    inferences: Iterable[Memory], now: datetime, policy: ConsolidationPolicy
) -> list[Step]:
    """Active inferences: confidence halves per ``inference_half_life_days`` without
    reconfirmation (applied once per elapsed half-life); below the floor they are archived."""
    half_life = timedelta(days=policy.inference_half_life_days)
    steps = []
    for memory in _active(inferences, Kind.INFERENCE):
        anchor = max(memory.last_confirmed_at, memory.created_at)
        periods = (now - anchor) // half_life
        if periods < 1:
            continue
        confidence = round(memory.confidence * 0.5**periods, 6)
        if confidence < policy.inference_archive_below:
            steps.append(Step(Stage.DECAY_INFERENCES, memory.id, Action.ARCHIVE,
                              f"confidence would fall to {confidence:.2f}, under "
                              f"{policy.inference_archive_below}"))  # fmt: skip
        else:
            steps.append(Step(Stage.DECAY_INFERENCES, memory.id, Action.SUPERSEDE,
                              f"unconfirmed for {periods} half-lives", confidence))  # fmt: skip
    return steps


def plan_demote_pending(
    pending: Iterable[Memory], now: datetime, policy: ConsolidationPolicy
) -> list[Step]:
    """Pending memories with low confidence, never retrieved, older than the limit."""
    limit = timedelta(days=policy.pending_max_age_days)
    steps = []
    for memory in pending:
        if memory.status is not Status.PENDING:
            continue
        if (
            memory.confidence < policy.pending_low_confidence
            and memory.retrieval_hits == 0
            and now - memory.created_at > limit
        ):
            steps.append(Step(Stage.DEMOTE_PENDING, memory.id, Action.ARCHIVE,
                              f"pending {(now - memory.created_at).days} days with confidence "
                              f"{memory.confidence:.2f}, never retrieved"))  # fmt: skip
    return steps


def plan_dedupe_pending(
    pairs: Iterable[tuple[Memory, Memory, float]], policy: ConsolidationPolicy
) -> list[Step]:
    """Of two pending near-duplicates, the newer is rejected (each memory at most once)."""
    rejected: set[str] = set()
    steps = []
    for first, second, cosine in sorted(pairs, key=lambda p: (p[0].id, p[1].id)):
        if cosine < policy.duplicate_cosine:
            continue
        older, newer = sorted((first, second), key=lambda m: m.id)
        if older.id in rejected or newer.id in rejected:
            continue
        if older.status is not Status.PENDING or newer.status is not Status.PENDING:
            continue
        rejected.add(newer.id)
        steps.append(Step(Stage.DEDUPE_PENDING, newer.id, Action.REJECT,
                          f"near-duplicate of older pending {older.id} "
                          f"(cosine {cosine:.3f})"))  # fmt: skip
    return steps


def reflection_due(events: Sequence[Memory], now: datetime, policy: ConsolidationPolicy) -> bool:
    """Whether enough events happened in the window to ask for insights."""
    since = now - timedelta(days=policy.reflect_window_days)
    recent = [
        m for m in events if m.kind is Kind.EVENT and (m.occurred_at or m.created_at) >= since
    ]
    return len(recent) >= policy.reflect_min_events


_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")
_NAME = re.compile(r"\b[A-Z][\w'’-]+")


def specific_tokens(text: str) -> set[str]:
    """Numbers, dates and capitalised names: what a merge must never drop."""
    return set(_NUMBER.findall(text)) | {m.rstrip("'’") for m in _NAME.findall(text)}


def merge_guard(originals: Sequence[str], merged: str, policy: ConsolidationPolicy) -> str | None:
    """Why a merge must be rejected (None when it is acceptable): it drops a specific token
    (name, number, date) of any original, or its length strays too far from the longest."""
    if not merged.strip():
        return "the merged text is empty"
    kept = specific_tokens(merged)
    merged_lower = merged.casefold()
    for original in originals:
        for token in sorted(specific_tokens(original)):
            if token not in kept and token.casefold() not in merged_lower:
                return f"the merge drops {token!r}"
    longest = max(len(o) for o in originals)
    change = abs(len(merged) - longest) / max(1, longest)
    if change > policy.merge_max_length_change:
        return (
            f"the merge changes the length by {change:.0%} (limit "
            f"{policy.merge_max_length_change:.0%})"
        )
    return None


def group_near_duplicates(
    memories: Sequence[Memory],
    pairs: Iterable[tuple[str, str, float]],
    policy: ConsolidationPolicy,
) -> list[list[Memory]]:
    """Groups of active facts or inferences, same kind and same fact slot, linked by cosine ≥
    ``merge_cosine``; behaviour-changing memories, lessons and events are never merged (events
    are append-only; a model must not rewrite a rule). Oldest group first, oldest member first."""
    mergeable = {
        m.id: m
        for m in memories
        if m.status is Status.ACTIVE
        and m.kind in (Kind.FACT, Kind.INFERENCE)
        and not m.changes_behavior
        and m.purged_at is None
    }
    parent = {memory_id: memory_id for memory_id in mergeable}

    def root(memory_id: str) -> str:
        while parent[memory_id] != memory_id:
            parent[memory_id] = parent[parent[memory_id]]
            memory_id = parent[memory_id]
        return memory_id

    for first, second, cosine in pairs:
        a, b = mergeable.get(first), mergeable.get(second)
        if a is None or b is None or cosine < policy.merge_cosine:
            continue
        if a.kind is not b.kind or a.slot != b.slot:
            continue
        parent[root(a.id)] = root(b.id)
    groups: dict[str, list[Memory]] = {}
    for memory_id, memory in mergeable.items():
        groups.setdefault(root(memory_id), []).append(memory)
    found = [sorted(g, key=lambda m: m.id)[: policy.merge_max_group] for g in groups.values()]
    found = [g for g in found if len(g) > 1]
    found.sort(key=lambda g: g[0].id)
    return found[: policy.merge_max_groups_per_run]


@dataclass(frozen=True)
class MergeReply:
    """What the ``merge`` route answered for one group: the merged text, or why the answer
    could not be read."""

    text: str | None = None
    error: str | None = None


def plan_merge(
    group: Sequence[Memory], reply: MergeReply | None, policy: ConsolidationPolicy
) -> Step:
    """The decision for one group of near-duplicates. With no ``reply`` (a dry run, before the
    LLM is asked) the step says the group would be merged; with one, it merges the group only
    when the answer was readable, passes :func:`merge_guard` and holds no credential."""
    ids = ", ".join(m.id for m in group)
    head = group[0].id
    if reply is None:
        return Step(
            Stage.MERGE, head, Action.MERGE, f"would ask the LLM to merge {len(group)}: {ids}"
        )
    refused = reply.error
    if refused is None:
        merged = reply.text or ""
        refused = merge_guard([m.content for m in group], merged, policy)
        if refused is None and find_credential(merged) is not None:
            refused = "the merge looks like it holds a credential"
    if refused is not None:
        return Step(Stage.MERGE, head, Action.KEEP, f"kept {ids}: {refused}")
    return Step(Stage.MERGE, head, Action.MERGE, f"merged {ids}")


# The memories whose cues answer was unusable, kept in the store's key-value table: asked again
# each day, a few hundred such memories (oldest first) would hold every newer one back.
UNANSWERED_CUES_KEY = "cues_unanswered"
MAX_UNANSWERED_CUES = 10_000


def unanswered_cues(stored: str | None, model: str) -> frozenset[str]:
    """The memories ``model`` (the extract route: provider, model, endpoint) gave no usable cues
    for, from the stored value; none when the value is missing, unreadable or another model's
    (a new model is asked again)."""
    return frozenset(_stored_ids(stored, model))


def with_unanswered(stored: str | None, model: str, added: Sequence[str]) -> str:
    """The stored value with ``added`` recorded for ``model``: the newest
    :data:`MAX_UNANSWERED_CUES` kept, another model's list replaced."""
    fresh = set(added)
    before = [i for i in _stored_ids(stored, model) if i not in fresh]
    ids = [*before, *added][-MAX_UNANSWERED_CUES:]
    return json.dumps({"model": model, "ids": ids})


def waiting_for_cues(
    memories: Iterable[Memory], unanswered: frozenset[str], limit: int
) -> list[Memory]:
    """Memories without cues that the model has not already failed to give any for, in the
    order given (oldest first), at most ``limit``."""
    waiting = (m for m in memories if not m.cues and m.purged_at is None)
    return [m for m in waiting if m.id not in unanswered][:limit]


def _stored_ids(stored: str | None, model: str) -> list[str]:
    try:
        value = json.loads(stored or "{}")
    except json.JSONDecodeError:
        return []
    if not isinstance(value, dict) or value.get("model") != model:
        return []
    ids = value.get("ids")
    return [i for i in ids if isinstance(i, str)] if isinstance(ids, list) else []
