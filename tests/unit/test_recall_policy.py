"""Recall policy (SPEC §4), pure: gates, fusion, recency as a tie-breaker, the relative cut,
packing and attention order."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.model import Importance, Kind, Memory, Source, Status
from memoryd.recall import (
    LESSONS_HEADING,
    MEMORIES_HEADING,
    Candidate,
    Packed,
    QueryFacts,
    RecallPolicy,
    Scored,
    attention_order,
    extend_ranking,
    gate,
    pack_block,
    rank_candidates,
    recency,
    relative_cut,
    render_block,
    render_item,
    text_coverage,
)
from memoryd.timewindow import TimeWindow
from memoryd.tokens import O200kTokenizer

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


# ---------------------------------------------------------------------------------------------
# The formula, on examples


def test_one_leg_at_rank_one_today_scores_one_over_sixty_one() -> None:
    ranking = rank_candidates(candidates({"text": ["a"]}, {"a": memory("a")}), FACTS, NOW)

    assert [s.memory.id for s in ranking.items] == ["a"] and ranking.dropped == ()
    assert ranking.items[0].score == pytest.approx(1 / 61)
    assert dict(ranking.items[0].ranks) == {"text": 1}
    assert ranking.items[0].gates == ("text",)


def test_legs_add_up_and_age_takes_at_most_a_tenth_off() -> None:
    found = {"a": memory("a", age_days=90), "b": memory("b", age_days=3650)}
    legs = {"vector": ["a", "b"], "text": ["b", "a"]}

    by_id = {s.memory.id: s for s in fused(legs, found)}

    assert by_id["a"].recency == pytest.approx(0.95)
    assert by_id["a"].score == pytest.approx((1 / 61 + 1 / 62) * 0.95)
    assert by_id["b"].recency == pytest.approx(0.9, abs=1e-9)
    assert by_id["b"].score == pytest.approx((1 / 62 + 1 / 61) * (1 - 0.1 * (1 - 0.5**40.56)))


def test_recency_breaks_ties_and_never_outweighs_a_second_leg() -> None:
    """Two memories found alike: the newer comes first. A ten-year-old memory that two legs
    found still beats a fresh one that only one leg found: age takes a tenth at most."""
    found = {"old": memory("old", age_days=3650), "new": memory("new", age_days=0)}

    tied = fused({"vector": ["old"], "text": ["new"]}, found)
    assert [s.memory.id for s in tied] == ["new", "old"]

    found_twice = fused({"vector": ["old", "new"], "text": ["old"]}, found)
    assert [s.memory.id for s in found_twice] == ["old", "new"]


@pytest.mark.parametrize("age", [0, 30, 90, 215, 365, 3650, 36500])
def test_recency_is_between_nine_tenths_and_one_whatever_the_age(age: float) -> None:
    value = recency(age, POLICY)

    assert 0.9 <= value <= 1.0
    assert value == pytest.approx(1 - 0.1 * (1 - 0.5 ** (age / 90)))


def test_kind_weights_events_and_inferences_less_than_facts() -> None:
    found = {
        "fact": memory("fact"),
        "lesson": memory("lesson", kind=Kind.LESSON, importance=Importance.MEDIUM),
        "event": memory("event", kind=Kind.EVENT),
        "inference": memory("inference", kind=Kind.INFERENCE, confidence=0.5),
    }
    legs = {leg: [memory_id] for leg, memory_id in zip(LEGS, found, strict=True)}

    scores = {s.memory.id: s.score for s in fused(legs, found)}

    assert scores["fact"] == pytest.approx(1 / 61)
    assert scores["lesson"] == pytest.approx(1 / 61)
    assert scores["event"] == pytest.approx(0.8 / 61)
    assert scores["inference"] == pytest.approx(0.6 * 0.5 / 61)


def test_an_empty_block_is_empty_text_and_zero_tokens() -> None:
    packed = pack_block([], [], TOKENIZER, 1500)

    assert packed.text == "" and packed.tokens == 0


# ---------------------------------------------------------------------------------------------
# The gates


def test_a_vector_hit_under_the_gate_is_stopped_with_its_cosine() -> None:
    weak = Candidate(memory("weak"), {"vector": 1}, cosine=0.2)

    verdict = gate(weak, FACTS, POLICY)

    assert verdict.admitted == () and verdict.strong is None
    assert verdict.stopped["vector"] == "cosine 0.20 < 0.25"


def test_a_vector_hit_between_the_gates_is_admitted_but_opens_nothing() -> None:
    middling = Candidate(memory("m"), {"vector": 1}, cosine=0.3)

    verdict = gate(middling, FACTS, POLICY)
    ranking = rank_candidates({"m": middling}, FACTS, NOW)

    assert verdict.admitted == ("vector",) and verdict.strong is None
    assert ranking.items == ()
    assert ranking.silence is not None and "no strong evidence" in ranking.silence
    assert [d.memory_id for d in ranking.dropped] == ["m"]


def test_one_strong_item_opens_the_block_for_the_weaker_ones() -> None:
    strong = Candidate(memory("strong"), {"vector": 1}, cosine=0.6)
    middling = Candidate(memory("middling"), {"vector": 2}, cosine=0.3)

    ranking = rank_candidates({"strong": strong, "middling": middling}, FACTS, NOW)

    assert [s.memory.id for s in ranking.items] == ["strong", "middling"]
    assert ranking.silence is None


def test_a_text_hit_on_common_words_only_is_stopped() -> None:
    common = Candidate(memory("c"), {"text": 1}, cosine=0.5, words=frozenset({"owner"}))

    verdict = gate(common, FACTS, POLICY)

    assert verdict.admitted == ()
    assert verdict.stopped["text"] == "matched only common words (owner)"


def test_a_text_hit_whose_meaning_differs_is_stopped() -> None:
    """ "race condition" is not a charity race."""
    homonym = Candidate(memory("h"), {"text": 1}, cosine=0.02, words=frozenset({"tea"}))

    verdict = gate(homonym, FACTS, POLICY)

    assert verdict.admitted == ()
    assert "the meaning does not" in verdict.stopped["text"]


def test_a_text_hit_carrying_the_rare_words_is_strong() -> None:
    hit = Candidate(memory("t"), {"text": 1}, cosine=0.3, words=frozenset({"tea", "owner"}))

    verdict = gate(hit, FACTS, POLICY)

    assert verdict.admitted == ("text",)
    assert verdict.strong is not None and "tea" in verdict.strong
    assert text_coverage(frozenset({"tea"}), FACTS) > 0.9


def test_without_the_embedder_text_matches_are_judged_on_words_alone() -> None:
    blind = replace(FACTS, embedded=False)
    hit = Candidate(memory("t"), {"text": 1}, cosine=None, words=frozenset({"tea"}))

    verdict = gate(hit, blind, POLICY)

    assert verdict.admitted == ("text",) and verdict.strong is not None


def test_a_selective_name_and_a_time_window_each_open_the_block() -> None:
    by_name = Candidate(memory("n"), {"entity": 3}, cosine=0.0)
    by_time = Candidate(memory("t", kind=Kind.EVENT, age_days=2), {"time": 1}, cosine=0.0)
    windowed = replace(FACTS, window=LAST_WEEK)

    assert gate(by_name, FACTS, POLICY).strong is not None
    assert gate(by_time, windowed, POLICY).strong is not None
    assert [s.memory.id for s in rank_candidates({"n": by_name}, FACTS, NOW).items] == ["n"]


def test_an_event_outside_the_named_window_is_not_admitted_by_any_leg() -> None:
    """ "What did I do last week?": a hike three weeks ago is no answer, however alike — as long
    as the store holds events of last week at all."""
    windowed = replace(FACTS, window=LAST_WEEK, window_events=3)
    old_hike = Candidate(memory("old", kind=Kind.EVENT, age_days=21), {"vector": 1}, cosine=0.8)
    fact = Candidate(memory("fact"), {"vector": 2}, cosine=0.8)

    verdict = gate(old_hike, windowed, POLICY)

    assert verdict.admitted == ()
    assert "outside the time window 'last week'" in verdict.stopped["vector"]
    assert gate(fact, windowed, POLICY).admitted == ("vector",)
    assert gate(old_hike, windowed, RecallPolicy(window_bounds_events=False)).admitted == (
        "vector",
    )
    nothing_then = replace(windowed, window_events=0)
    assert gate(old_hike, nothing_then, POLICY).admitted == ("vector",)


def test_a_message_naming_someone_unknown_needs_a_much_closer_match() -> None:
    """ "When did Caroline go to the support group?" asked of Jon and Gina's store: their
    support-group memories are related words, not an answer."""
    unfamiliar = replace(FACTS, unknown_names=("Caroline",))
    related = Candidate(memory("r"), {"vector": 1, "time": 1}, cosine=0.45)
    close = Candidate(memory("c"), {"vector": 2}, cosine=0.6)

    assert gate(related, FACTS, POLICY).strong is not None
    assert gate(related, unfamiliar, POLICY).strong is None
    silent = rank_candidates({"r": related}, unfamiliar, NOW)
    assert silent.items == () and silent.silence is not None and "Caroline" in silent.silence
    opened = rank_candidates({"r": related, "c": close}, unfamiliar, NOW)
    assert [s.memory.id for s in opened.items] == ["r", "c"]


def test_a_question_whose_weightiest_words_no_memory_holds_needs_a_closer_match() -> None:
    """ "How do I make a roux for gravy?" of a store that talks about recipes: a recipe memory
    at cosine 0.45 is related, not an answer, when "roux" and "gravy" appear nowhere."""
    roux = QueryFacts(
        words=("make", "roux", "gravy"),
        word_frequency={"make": 84, "roux": 0, "gravy": 0},
        memory_count=700,
    )
    recipe = Candidate(memory("r"), {"vector": 1}, cosine=0.45)

    assert gate(recipe, roux, POLICY).strong is None
    assert gate(
        recipe, replace(roux, word_frequency={"make": 84, "roux": 2, "gravy": 1}), POLICY
    ).strong
    small_store = replace(roux, memory_count=POLICY.min_memories_for_shares - 1)
    assert gate(recipe, small_store, POLICY).strong is not None, (
        "in a small store every word is new"
    )


def test_only_the_legs_whose_gates_pass_count_in_the_score() -> None:
    half = Candidate(memory("h"), {"vector": 1, "text": 1}, cosine=0.6, words=frozenset({"owner"}))

    [item] = rank_candidates({"h": half}, FACTS, NOW).items

    assert item.gates == ("vector",)
    assert dict(item.ranks) == {"vector": 1}
    assert item.score == pytest.approx(1 / 61)


def test_the_episode_leg_admits_only_what_is_not_far_off_in_meaning() -> None:
    near = Candidate(memory("n", kind=Kind.EVENT), {"episode": 1}, cosine=0.2)
    far = Candidate(memory("f", kind=Kind.EVENT), {"episode": 2}, cosine=0.05)

    assert gate(near, FACTS, POLICY).admitted == ("episode",)
    assert gate(near, FACTS, POLICY).strong is None
    assert gate(far, FACTS, POLICY).admitted == ()


# ---------------------------------------------------------------------------------------------
# The relative cut


def test_the_relative_cut_keeps_what_scores_near_the_best() -> None:
    found = {i: memory(i) for i in ("a", "b", "c")}
    ranking = fused({"vector": ["a", "b"], "text": ["a"], "time": ["c"]}, found)
    # a: two legs at rank 1 (2/61); c: one leg at rank 1 (1/61); b: one at rank 2 (1/62).
    kept, dropped = relative_cut(ranking, RecallPolicy(relative_cut=0.45))

    assert [s.memory.id for s in kept] == ["a", "c", "b"] and dropped == []
    kept, dropped = relative_cut(ranking, RecallPolicy(relative_cut=0.6))
    assert [s.memory.id for s in kept] == ["a"]
    assert {d.memory_id for d in dropped} == {"b", "c"}
    assert all("far below the best" in d.reason for d in dropped)


@fusion
@given(data=st.data(), share=st.floats(0.0, 1.0))
def test_the_cut_keeps_a_prefix_and_never_the_best_out(data: st.DataObject, share: float) -> None:
    found = data.draw(memory_sets(content=PLAIN, max_size=15))
    ranking = fused(data.draw(leg_rankings(sorted(found))), found)

    kept, dropped = relative_cut(ranking, RecallPolicy(relative_cut=share))

    assert kept == ranking[: len(kept)]
    assert [d.memory_id for d in dropped] == [s.memory.id for s in ranking[len(kept) :]]
    if ranking:
        assert kept[0] == ranking[0]
        assert all(s.score >= share * ranking[0].score for s in kept)


# ---------------------------------------------------------------------------------------------
# Fusion is monotone


def _score_of(legs: dict[str, list[str]], found: dict[str, Memory], memory_id: str) -> float:
    """The memory's fused score, or 0 when it is not a candidate."""
    return next((s.score for s in fused(legs, found) if s.memory.id == memory_id), 0.0)


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

    before = _score_of(legs, found, target)
    after = _score_of(with_leg, found, target)

    assert after >= before
    if found[target].confidence > 0:
        assert after > before


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


@fusion
@given(data=st.data())
def test_extending_a_ranking_equals_ranking_everything_at_once(data: st.DataObject) -> None:
    found = data.draw(memory_sets(min_size=1, content=PLAIN, max_size=15))
    ids = sorted(found)
    pool = candidates(data.draw(leg_rankings(ids)), found)
    later = data.draw(st.lists(st.sampled_from(ids), unique=True))
    joined = {
        i: replace(pool[i], ranks={**pool[i].ranks, "episode": n})
        if i in pool
        else Candidate(found[i], {"episode": n}, 0.5)
        for n, i in enumerate(later, start=1)
    }

    first = rank_candidates(pool, EVER, NOW)
    extended = extend_ranking(first, joined, EVER, NOW)
    at_once = rank_candidates({**pool, **joined}, EVER, NOW)

    assert [s.memory.id for s in extended.items] == [s.memory.id for s in at_once.items]
    assert [s.score for s in extended.items] == [s.score for s in at_once.items]
    assert {d.memory_id for d in extended.dropped} == {d.memory_id for d in at_once.dropped}


@fusion
@given(data=st.data())
def test_a_candidate_no_gate_admits_never_changes_the_others(data: st.DataObject) -> None:
    found = data.draw(memory_sets(min_size=1, content=PLAIN, max_size=15))
    legs = data.draw(leg_rankings(sorted(found)))
    pool = candidates(legs, found)
    stray = Candidate(memory("stray"), {"vector": 1, "text": 2}, 0.1, frozenset({"owner"}))

    before = rank_candidates(pool, EVER, NOW)
    after = rank_candidates({**pool, "stray": stray}, EVER, NOW)

    assert after.items == before.items
    assert "stray" in {d.memory_id for d in after.dropped}


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
