"""The context pack's packing, pure: one fenced block within a token budget, standing lessons
first, then the memories and document chunks on the calibrated score of
:mod:`memoryd.recall.context_policy`, an item that does not fit leaving room for smaller ones.
The tokenizer is passed in."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from memoryd.memory.model import Memory
from memoryd.recall.context_policy import CONTEXT_HEADING, CONTEXT_PREAMBLE, PackDrop, PackItem
from memoryd.recall.pack_policy import LESSONS_HEADING, TokenCounter, fenced_block, render_item
from memoryd.trust.fence import fence


def render_context(lessons: Sequence[Memory], items: Sequence[PackItem]) -> str:
    """The one fenced block; empty when there is nothing to say. Memory lines are escaped by
    :func:`render_item`; each chunk keeps its own ``<untrusted_content>`` fence inside."""
    if not lessons and not items:
        return ""
    return fenced_block(
        CONTEXT_PREAMBLE,
        [render_item(m) for m in lessons],
        CONTEXT_HEADING,
        [item.rendered for item in items],
    )


def pack_context(
    lessons: Sequence[Memory], items: Sequence[PackItem], counter: TokenCounter, budget: int
) -> tuple[str, int, list[Memory], list[PackItem], list[PackDrop]]:
    """Lessons first, then items best first; an item that does not fit is left out and the
    next, smaller ones may still fit (a 500-token chunk must not keep out a 20-token memory).
    Counted exactly, fence included: (text, tokens, lessons, items, dropped)."""
    quick = _pack_by_lines(lessons, items, counter, budget)
    return quick if quick is not None else pack_exactly(lessons, items, counter, budget)


def pack_exactly(
    lessons: Sequence[Memory], items: Sequence[PackItem], counter: TokenCounter, budget: int
) -> tuple[str, int, list[Memory], list[PackItem], list[PackDrop]]:
    """:func:`pack_context` counting the whole block for every candidate."""
    kept_lessons: list[Memory] = []
    kept: list[PackItem] = []
    dropped: list[PackDrop] = []
    for lesson in lessons:
        if _count(counter, [*kept_lessons, lesson], kept) <= budget:
            kept_lessons.append(lesson)
        else:
            dropped.append(PackDrop("lesson", lesson.id, "lesson does not fit in the token budget"))
    for item in items:
        # Each candidate is tried in the whole block, counted exactly: o200k may merge tokens
        # across a chunk's lines, so costing items one by one could overrun the budget.
        if _count(counter, kept_lessons, [*kept, item]) <= budget:
            kept.append(item)
        else:
            dropped.append(PackDrop(item.kind, item.id, "over the token budget"))
    text = render_context(kept_lessons, kept)
    return text, counter.count(text) if text else 0, kept_lessons, kept, dropped


# Why 8: o200k splits text at line breaks, so a line added to the block costs what it costs
# alone, give or take the break merging with whitespace around it (a token or two). Within this
# margin of the budget the whole block is counted exactly.
LINE_SLACK = 8


def _pack_by_lines(
    lessons: Sequence[Memory], items: Sequence[PackItem], counter: TokenCounter, budget: int
) -> tuple[str, int, list[Memory], list[PackItem], list[PackDrop]] | None:
    """:func:`pack_context`'s choices, costing each candidate by its own line instead of
    counting the whole block again for every one (which made packing quadratic: ~40 % of a
    context pack at 10,000 memories). The whole block is counted exactly where a candidate
    comes within :data:`LINE_SLACK` of the budget, and once at the end: None when that count
    is over the budget, and the caller packs the exact way."""
    kept_lessons: list[Memory] = []
    kept: list[PackItem] = []
    dropped: list[PackDrop] = []
    used = counter.count(_EMPTY_FENCE)
    # Whether ``used`` is the block's exact count: line costs drift (a line's break may merge
    # with its neighbour), so near the budget the block is counted again before deciding.
    exact_now = False

    def fits(rendered: str, trial: Callable[[], int], heading: str | None) -> bool:
        nonlocal used, exact_now
        added = counter.count("\n" + rendered) + (counter.count("\n" + heading) if heading else 0)
        if used + added > budget - LINE_SLACK and not exact_now:
            text = render_context(kept_lessons, kept)
            used, exact_now = (counter.count(text) if text else used), True
        estimate = used + added
        if estimate <= budget - LINE_SLACK:
            used, exact_now = estimate, False
            return True
        if estimate > budget + LINE_SLACK:
            return False
        exact = trial()
        if exact <= budget:
            used, exact_now = exact, True
            return True
        return False

    for lesson in lessons:
        heading = LESSONS_HEADING if not kept_lessons else None
        trial = functools.partial(_count, counter, [*kept_lessons, lesson], kept)
        if fits(render_item(lesson), trial, heading):
            kept_lessons.append(lesson)
        else:
            dropped.append(PackDrop("lesson", lesson.id, "lesson does not fit in the token budget"))
    for item in items:
        heading = CONTEXT_HEADING if not kept else None
        trial = functools.partial(_count, counter, kept_lessons, [*kept, item])
        if fits(item.rendered, trial, heading):
            kept.append(item)
        else:
            dropped.append(PackDrop(item.kind, item.id, "over the token budget"))
    text = render_context(kept_lessons, kept)
    tokens = counter.count(text) if text else 0
    if tokens > budget:
        return None
    return text, tokens, kept_lessons, kept, dropped


_EMPTY_FENCE = fence("memory", CONTEXT_PREAMBLE, {"trust": "data"})


def _count(counter: TokenCounter, lessons: Sequence[Memory], items: Sequence[PackItem]) -> int:
    text = render_context(lessons, items)
    return counter.count(text) if text else 0
