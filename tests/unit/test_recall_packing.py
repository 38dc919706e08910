"""Recall policy (SPEC §4), pure: packing the block within the budget, lessons first, and
attention order.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memoryd.memory.model import Importance, Kind, Memory
from memoryd.recall.pack_policy import (
    LESSONS_HEADING,
    MEMORIES_HEADING,
    attention_order,
    pack_block,
    render_block,
    render_item,
)
from memoryd.recall.score_policy import Scored

from .recall_policy_support import (
    TOKENIZER,
    contents,
    fused,
    included_ids,
    memory,
    memory_lines,
    packing,
    recall_inputs,
)

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
    ordered = attention_order(items)

    assert sorted(ordered) == sorted(items)
    if len(items) >= 1:
        assert ordered[0] == items[0]
    if len(items) >= 2:
        assert ordered[-1] == items[1]
    assert ordered[1:-1] == items[2:]  # the rest keep their order in the middle


def test_a_budget_of_zero_packs_nothing() -> None:
    lesson = memory("l", "Always answer in French", kind=Kind.LESSON, importance=Importance.HIGH)
    scored = fused({"text": ["a"]}, {"a": memory("a")})

    packed = pack_block([lesson], scored, TOKENIZER, 0)

    assert packed.text == "" and packed.tokens == 0
    assert {d.memory_id for d in packed.dropped} == {"l", "a"}


def test_a_budget_that_fits_only_the_lesson_keeps_the_lesson_and_drops_the_memories() -> None:
    lesson = memory("l", "Always answer in French", kind=Kind.LESSON, importance=Importance.HIGH)
    found = {f"m{i}": memory(f"m{i}", f"Owner fact number {i}") for i in range(5)}
    scored = fused({"text": sorted(found)}, found)
    budget = TOKENIZER.count(render_block([lesson], []))

    packed = pack_block([lesson], scored, TOKENIZER, budget)

    assert packed.lessons == (lesson,) and packed.items == ()
    assert packed.tokens <= budget
    assert {d.memory_id for d in packed.dropped} == set(found)
    assert all("budget" in d.reason for d in packed.dropped)
