"""Recall policy (SPEC §4): fusion, decay, the floor, packing and attention order, pure."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.model import Importance, Kind, Memory, Source, Status
from memoryd.recall import (
    LESSONS_HEADING,
    MEMORIES_HEADING,
    Packed,
    RecallPolicy,
    Scored,
    attention_order,
    pack_block,
    render_block,
    render_item,
    score_candidates,
)
from memoryd.tokens import O200kTokenizer

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
TOKENIZER = O200kTokenizer()
LEGS = ("vector", "text", "entity", "time")
NO_FLOOR = RecallPolicy(floor=0.0)

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
    for leg in LEGS:
        if ids and draw(st.booleans()):
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
    scored, _ = score_candidates(legs, found, NOW)
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


# ---------------------------------------------------------------------------------------------
# The formula, on examples


def test_one_leg_at_rank_one_today_scores_one_over_sixty_one() -> None:
    kept, dropped = score_candidates({"text": ["a"]}, {"a": memory("a")}, NOW)

    assert [s.memory.id for s in kept] == ["a"] and dropped == []
    assert kept[0].score == pytest.approx(1 / 61)
    assert dict(kept[0].ranks) == {"text": 1}


def test_legs_add_up_and_age_halves_the_score_every_ninety_days() -> None:
    memories = {"a": memory("a", age_days=90), "b": memory("b", age_days=180)}
    legs = {"vector": ["a", "b"], "text": ["b", "a"]}

    kept, _ = score_candidates(legs, memories, NOW)
    by_id = {s.memory.id: s for s in kept}

    assert by_id["a"].score == pytest.approx((1 / 61 + 1 / 62) * 0.5)
    assert by_id["b"].score == pytest.approx((1 / 62 + 1 / 61) * 0.25)
    assert [s.memory.id for s in kept] == ["a", "b"]


def test_kind_weights_events_and_inferences_less_than_facts() -> None:
    memories = {
        "fact": memory("fact"),
        "lesson": memory("lesson", kind=Kind.LESSON, importance=Importance.MEDIUM),
        "event": memory("event", kind=Kind.EVENT),
        "inference": memory("inference", kind=Kind.INFERENCE, confidence=0.5),
    }
    legs = {leg: [memory_id] for leg, memory_id in zip(LEGS, memories, strict=True)}

    kept, _ = score_candidates(legs, memories, NOW, NO_FLOOR)
    scores = {s.memory.id: s.score for s in kept}

    assert scores["fact"] == pytest.approx(1 / 61)
    assert scores["lesson"] == pytest.approx(1 / 61)
    assert scores["event"] == pytest.approx(0.8 / 61)
    assert scores["inference"] == pytest.approx(0.6 * 0.5 / 61)


def test_ids_the_store_no_longer_returns_are_ignored() -> None:
    kept, dropped = score_candidates({"text": ["gone", "a"]}, {"a": memory("a")}, NOW)

    assert [s.memory.id for s in kept] == ["a"] and dropped == []
    assert dict(kept[0].ranks) == {"text": 2}


def test_an_empty_block_is_empty_text_and_zero_tokens() -> None:
    packed = pack_block([], [], TOKENIZER, 1500)

    assert packed.text == "" and packed.tokens == 0


# ---------------------------------------------------------------------------------------------
# The floor


@fusion
@given(data=st.data(), floor=st.sampled_from([0.005, 0.0, 0.01, 0.02]))
def test_scores_under_the_floor_never_come_back(data: st.DataObject, floor: float) -> None:
    found = data.draw(memory_sets(content=PLAIN, max_size=15))
    legs = data.draw(leg_rankings(sorted(found)))
    policy = RecallPolicy(floor=floor)

    kept, dropped = score_candidates(legs, found, NOW, policy)

    assert all(s.score >= floor for s in kept)
    ranked_ids = {i for ids in legs.values() for i in ids}
    assert {s.memory.id for s in kept} | {d.memory_id for d in dropped} == ranked_ids
    assert not {s.memory.id for s in kept} & {d.memory_id for d in dropped}
    # Independently recomputed: what was dropped really was under the floor.
    for dropped_item in dropped:
        target = found[dropped_item.memory_id]
        rrf = sum(1 / (60 + ids.index(target.id) + 1) for ids in legs.values() if target.id in ids)
        age = (NOW - target.last_confirmed_at).total_seconds() / 86400
        weight = {Kind.EVENT: 0.8, Kind.INFERENCE: 0.6 * target.confidence}.get(target.kind, 1.0)
        assert rrf * 0.5 ** (age / 90) * weight < floor
        assert "floor" in dropped_item.reason
    assert [s.score for s in kept] == sorted((s.score for s in kept), reverse=True)


# ---------------------------------------------------------------------------------------------
# Fusion is monotone


def _score_of(legs: dict[str, list[str]], found: dict[str, Memory], memory_id: str) -> float:
    return _score_or_zero(legs, found, memory_id, NO_FLOOR)


def _score_or_zero(
    legs: dict[str, list[str]], found: dict[str, Memory], memory_id: str, policy: RecallPolicy
) -> float:
    """The memory's fused score, or 0 when it is not a candidate or is under the floor."""
    kept, _ = score_candidates(legs, found, NOW, policy)
    return next((s.score for s in kept if s.memory.id == memory_id), 0.0)


@fusion
@given(data=st.data())
def test_a_better_rank_in_a_leg_never_lowers_a_memorys_score(data: st.DataObject) -> None:
    found = data.draw(memory_sets(min_size=2, content=PLAIN, max_size=15))
    legs = data.draw(leg_rankings(sorted(found)))
    movable = [(leg, ids) for leg, ids in legs.items() if len(ids) >= 2]
    if not movable:
        legs = {"text": sorted(found)}
        movable = list(legs.items())
    leg, ids = data.draw(st.sampled_from(movable))
    old_position = data.draw(st.integers(1, len(ids) - 1))
    new_position = data.draw(st.integers(0, old_position - 1))
    target = ids[old_position]
    promoted = [i for i in ids if i != target]
    promoted.insert(new_position, target)

    before = _score_of(legs, found, target)
    after = _score_of({**legs, leg: promoted}, found, target)

    assert after >= before


@fusion
@given(data=st.data())
def test_one_more_leg_finding_a_memory_never_lowers_its_score(data: st.DataObject) -> None:
    found = data.draw(memory_sets(min_size=1, content=PLAIN, max_size=15))
    ids = sorted(found)
    legs = data.draw(leg_rankings(ids))
    new_leg = data.draw(st.sampled_from(LEGS))
    legs.pop(new_leg, None)
    target = data.draw(st.sampled_from(ids))
    others = data.draw(st.permutations([i for i in ids if i != target]))
    position = data.draw(st.integers(0, len(others)))
    ranking = [*others[:position], target, *others[position:]]
    with_leg = {**legs, new_leg: ranking}

    before = _score_or_zero(legs, found, target, NO_FLOOR)
    after = _score_or_zero(with_leg, found, target, NO_FLOOR)

    assert after >= before
    if found[target].confidence > 0:
        assert after > before
    if _score_or_zero(legs, found, target, RecallPolicy()) > 0:
        assert _score_or_zero(with_leg, found, target, RecallPolicy()) > 0


@fusion
@given(data=st.data(), newer_by_days=st.floats(0.001, 600))
def test_a_newer_confirmation_never_lowers_a_memorys_score(
    data: st.DataObject, newer_by_days: float
) -> None:
    found = data.draw(memory_sets(min_size=1, content=PLAIN, max_size=15))
    ids = sorted(found)
    legs = data.draw(leg_rankings(ids))
    ranked = sorted({i for r in legs.values() for i in r})
    if not ranked:
        legs = {"text": ids}
        ranked = ids
    target = data.draw(st.sampled_from(ranked))
    old = found[target]
    reconfirmed = replace(
        old, last_confirmed_at=old.last_confirmed_at + timedelta(days=newer_by_days)
    )

    before = _score_of(legs, found, target)
    after = _score_of(legs, {**found, target: reconfirmed}, target)

    assert after >= before
    if reconfirmed.last_confirmed_at <= NOW and old.kind is not Kind.INFERENCE:
        assert after > before


# ---------------------------------------------------------------------------------------------
# Packing


@packing
@given(inputs=recall_inputs())
def test_the_block_never_exceeds_the_budget_counted_on_the_exact_text(
    inputs: tuple[list[Memory], list[Scored], int],
) -> None:
    lessons, scored, budget = inputs

    packed = pack_block(lessons, scored, TOKENIZER, budget)

    assert TOKENIZER.count(packed.text) <= budget
    assert packed.tokens == TOKENIZER.count(packed.text)
    if not packed.lessons and not packed.items:
        assert packed.text == ""
    # What the result says it packed is what the text holds, one line each.
    expected = [render_item(m) for m in packed.lessons]
    expected += [render_item(s.memory) for s in packed.items]
    assert memory_lines(packed.text) == expected


@packing
@given(inputs=recall_inputs())
def test_a_higher_scored_item_is_never_dropped_for_a_lower_one(
    inputs: tuple[list[Memory], list[Scored], int],
) -> None:
    lessons, scored, budget = inputs

    packed = pack_block(lessons, scored, TOKENIZER, budget)

    inside = included_ids(packed)
    left_out = [s for s in scored if s.memory.id not in inside]
    lowest_packed = min((s.score for s in packed.items), default=float("inf"))
    for candidate in left_out:
        assert candidate.score <= lowest_packed, (candidate.score, lowest_packed)
    # Everything left out is accounted for, with a reason.
    dropped_ids = {d.memory_id for d in packed.dropped}
    assert {s.memory.id for s in left_out} <= dropped_ids


@packing
@given(inputs=recall_inputs(), lesson_content=contents)
def test_a_standing_lesson_that_fits_is_always_packed_first(
    inputs: tuple[list[Memory], list[Scored], int], lesson_content: str
) -> None:
    _, scored, budget = inputs
    lesson = memory("lesson-standing", lesson_content, kind=Kind.LESSON, importance=Importance.HIGH)

    packed = pack_block([lesson], scored, TOKENIZER, budget)

    if TOKENIZER.count(render_block([lesson], [])) <= budget:
        assert [m.id for m in packed.lessons] == [lesson.id]
        lines = packed.text.split("\n")
        assert lines[2] == LESSONS_HEADING
        assert lines[3] == render_item(lesson)
    else:
        assert lesson.id not in {m.id for m in packed.lessons}


@packing
@given(inputs=recall_inputs())
def test_which_lessons_are_packed_does_not_depend_on_the_candidates(
    inputs: tuple[list[Memory], list[Scored], int],
) -> None:
    lessons, scored, budget = inputs

    with_candidates = pack_block(lessons, scored, TOKENIZER, budget)
    alone = pack_block(lessons, [], TOKENIZER, budget)

    assert with_candidates.lessons == alone.lessons
    if lessons and TOKENIZER.count(render_block(lessons[:1], [])) <= budget:
        assert with_candidates.lessons[:1] == tuple(lessons[:1])


@packing
@given(inputs=recall_inputs())
def test_the_best_item_comes_first_and_the_runner_up_last(
    inputs: tuple[list[Memory], list[Scored], int],
) -> None:
    lessons, scored, budget = inputs

    packed = pack_block(lessons, scored, TOKENIZER, budget)

    by_score = sorted(packed.items, key=lambda s: -s.score)
    lines = memory_lines(packed.text)[len(packed.lessons) :]
    if len(by_score) >= 1:
        assert packed.items[0].score == by_score[0].score
        assert lines[0] == render_item(packed.items[0].memory)
    if len(by_score) >= 2:
        assert packed.items[-1].score == by_score[1].score
        assert lines[-1] == render_item(packed.items[-1].memory)
    if packed.items:
        heading = packed.text.split("\n").index(MEMORIES_HEADING)
        assert packed.text.split("\n")[heading + 1] == lines[0]


@given(items=st.lists(st.integers(), max_size=12, unique=True))
def test_attention_order_is_best_first_runner_up_last_rest_in_between(items: list[int]) -> None:
    ordered = attention_order(items)  # type: ignore[arg-type]

    assert sorted(ordered) == sorted(items)
    if len(items) >= 1:
        assert ordered[0] == items[0]
    if len(items) >= 2:
        assert ordered[-1] == items[1]
    assert ordered[1:-1] == items[2:]  # the rest keep their order in the middle


def test_a_budget_of_zero_packs_nothing() -> None:
    lesson = memory("l", "Always answer in French", kind=Kind.LESSON, importance=Importance.HIGH)
    scored, _ = score_candidates({"text": ["a"]}, {"a": memory("a")}, NOW)

    packed = pack_block([lesson], scored, TOKENIZER, 0)

    assert packed.text == "" and packed.tokens == 0
    assert {d.memory_id for d in packed.dropped} == {"l", "a"}


def test_a_budget_that_fits_only_the_lesson_keeps_the_lesson_and_drops_the_memories() -> None:
    lesson = memory("l", "Always answer in French", kind=Kind.LESSON, importance=Importance.HIGH)
    found = {f"m{i}": memory(f"m{i}", f"Owner fact number {i}") for i in range(5)}
    scored, _ = score_candidates({"text": sorted(found)}, found, NOW)
    budget = TOKENIZER.count(render_block([lesson], []))

    packed = pack_block([lesson], scored, TOKENIZER, budget)

    assert packed.lessons == (lesson,) and packed.items == ()
    assert packed.tokens <= budget
    assert {d.memory_id for d in packed.dropped} == set(found)
    assert all("budget" in d.reason for d in packed.dropped)
