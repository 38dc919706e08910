"""What the recall-policy unit tests share: the clock, the policy, memories and candidates on
examples, and the Hypothesis strategies for memory sets, leg rankings and lessons.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from memoryd.memory.model import Importance, Kind, Memory, Source, Status
from memoryd.providers.tokenizer import O200kTokenizer
from memoryd.recall.evidence_policy import Candidate, QueryFacts
from memoryd.recall.pack_policy import Packed
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.score_policy import Scored, rank_candidates
from memoryd.recall.time_window_policy import TimeWindow

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
TOKENIZER = O200kTokenizer()
LEGS = ("vector", "text", "entity", "time")
POLICY = RecallPolicy()
# A message about tea in a store of 1,000 memories: "tea" is rare, "owner" is everywhere.
FACTS = QueryFacts(
    words=("tea", "owner"), word_frequency={"tea": 5, "owner": 900}, memory_count=1000
)
LAST_WEEK = TimeWindow(NOW - timedelta(days=7), NOW, "last week")
# For the fusion properties: a window around every generated memory, so every leg is real.
EVER = replace(
    FACTS, window=TimeWindow(NOW - timedelta(days=1000), NOW + timedelta(days=1), "ever")
)

# o200k counting dominates; a few hundred examples stay well under a few seconds each.
packing = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
fusion = settings(max_examples=120, deadline=None)
# Fusion never reads the content; a fixed text keeps those examples cheap.
PLAIN = st.just("Owner likes green tea")


def memory(
    memory_id: str,
    content: str = "Owner likes green tea",
    *,
    kind: Kind = Kind.FACT,
    age_days: float = 0.0,
    confidence: float = 1.0,
    importance: Importance | None = None,
) -> Memory:
    """An active memory last confirmed ``age_days`` before NOW."""
    confirmed = NOW - timedelta(days=age_days)
    return Memory(
        id=memory_id,
        kind=kind,
        status=Status.ACTIVE,
        content=content,
        source=Source.OWNER,
        created_at=confirmed,
        last_confirmed_at=confirmed,
        confidence=confidence,
        importance=importance,
        occurred_at=confirmed if kind is Kind.EVENT else None,
    )


def candidates(
    legs: Mapping[str, list[str]], found: Mapping[str, Memory], cosine: float = 0.9
) -> dict[str, Candidate]:
    """Candidates from leg rankings, every one strong enough to pass every gate it meets:
    a close cosine and the rare query word."""
    ranks: dict[str, dict[str, int]] = {}
    for leg, ids in legs.items():
        for position, memory_id in enumerate(ids, start=1):
            ranks.setdefault(memory_id, {}).setdefault(leg, position)
    return {
        memory_id: Candidate(found[memory_id], leg_ranks, cosine, frozenset({"tea"}))
        for memory_id, leg_ranks in ranks.items()
        if memory_id in found
    }


def fused(
    legs: Mapping[str, list[str]],
    found: Mapping[str, Memory],
    policy: RecallPolicy = POLICY,
) -> list[Scored]:
    return list(rank_candidates(candidates(legs, found), EVER, NOW, policy).items)


# Random unicode of random lengths, with fence-ish and whitespace-heavy text mixed in.
contents = st.one_of(
    st.text(min_size=1, max_size=400),
    st.text(alphabet=st.sampled_from(" \n\t\u3000\u200bab<>/&;é漢😀"), min_size=1, max_size=80),
    st.sampled_from(["</memory>", '<memory trust="data">', "&lt;/memory&gt;", "x" * 2000]),
)


@st.composite
def memory_sets(
    draw: st.DrawFn,
    min_size: int = 0,
    max_size: int = 30,
    content: st.SearchStrategy[str] = contents,
) -> dict[str, Memory]:
    """Active memories of every kind with random content, ages and confidences."""
    count = draw(st.integers(min_size, max_size))
    found: dict[str, Memory] = {}
    for index in range(count):
        kind = draw(st.sampled_from(list(Kind)))
        memory_id = f"m{index:05d}"
        found[memory_id] = memory(
            memory_id,
            draw(content),
            kind=kind,
            age_days=draw(st.floats(0, 500, allow_nan=False)),
            confidence=draw(st.floats(0.05, 1.0)),
            importance=Importance.MEDIUM if kind is Kind.LESSON else None,
        )
    return found


@st.composite
def leg_rankings(draw: st.DrawFn, ids: list[str]) -> dict[str, list[str]]:
    """Each leg ranks a random subset of ``ids`` in a random order; some legs are absent."""
    legs: dict[str, list[str]] = {}
    if not ids:
        return legs
    for leg in LEGS:
        if draw(st.booleans()):
            order = draw(st.permutations(ids))
            legs[leg] = list(order[: draw(st.integers(1, len(ids)))])
    return legs


@st.composite
def lesson_lists(draw: st.DrawFn) -> list[Memory]:
    """Standing lessons (importance high or critical), as the store hands them to recall."""
    count = draw(st.integers(0, 3))
    return [
        memory(
            f"lesson{index}",
            draw(contents),
            kind=Kind.LESSON,
            importance=draw(st.sampled_from([Importance.HIGH, Importance.CRITICAL])),
            age_days=draw(st.floats(0, 900)),
        )
        for index in range(count)
    ]


@st.composite
def recall_inputs(draw: st.DrawFn) -> tuple[list[Memory], list[Scored], int]:
    """(standing lessons, scored candidates best first, budget)."""
    found = draw(memory_sets())
    legs = draw(leg_rankings(sorted(found)))
    scored = fused(legs, found)
    lessons = draw(lesson_lists())
    if lessons and scored and draw(st.booleans()):
        # A standing lesson can also come back from the legs as an ordinary candidate.
        twin = scored[0].memory
        lessons[0] = replace(lessons[0], id=twin.id)
    return lessons, scored, draw(st.integers(0, 2000))


def memory_lines(text: str) -> list[str]:
    """The item lines of a rendered block, in order."""
    return [line for line in text.split("\n") if line.startswith("- [")]


def included_ids(packed: Packed) -> set[str]:
    return {m.id for m in packed.lessons} | {s.memory.id for s in packed.items}
