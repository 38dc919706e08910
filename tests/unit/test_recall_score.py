"""Recall policy (SPEC §4), pure: the score formula on examples, recency as a tie-breaker, the
gates and the relative cut.
"""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.memory.model import Importance, Kind
from memoryd.recall.evidence_policy import Candidate, QueryFacts
from memoryd.recall.gate_policy import gate, text_coverage
from memoryd.recall.pack_policy import pack_block
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.relevance_policy import (
    FEATURES,
    UNKNOWN_COSINE,
    Context,
    Model,
    calibrated,
    contributions,
    features,
    probability,
)
from memoryd.recall.score_policy import rank_candidates, recency, relative_cut

from .recall_policy_support import (
    FACTS,
    LAST_WEEK,
    LEGS,
    NOW,
    PLAIN,
    POLICY,
    TOKENIZER,
    candidates,
    fused,
    fusion,
    leg_rankings,
    memory,
    memory_sets,
)

# ---------------------------------------------------------------------------------------------
# The formula, on examples

# What the fused score adds for the cosine of the examples' candidates (0.9, see ``candidates``).
K = POLICY.rrf_k
COSINE = POLICY.fused_cosine_weight * 0.9 / K


def test_one_leg_at_rank_one_today_scores_one_over_k_plus_one() -> None:
    ranking = rank_candidates(candidates({"text": ["a"]}, {"a": memory("a")}), FACTS, NOW)

    assert [s.memory.id for s in ranking.items] == ["a"] and ranking.dropped == ()
    assert ranking.items[0].score == pytest.approx(1 / (K + 1) + COSINE)
    assert dict(ranking.items[0].ranks) == {"text": 1}
    assert ranking.items[0].gates == ("text",)


def test_legs_add_up_and_age_takes_at_most_a_tenth_off() -> None:
    found = {"a": memory("a", age_days=90), "b": memory("b", age_days=3650)}
    legs = {"vector": ["a", "b"], "text": ["b", "a"]}

    by_id = {s.memory.id: s for s in fused(legs, found)}

    assert by_id["a"].recency == pytest.approx(0.95)
    assert by_id["a"].score == pytest.approx((1 / (K + 1) + 1 / (K + 2) + COSINE) * 0.95)
    assert by_id["b"].recency == pytest.approx(0.9, abs=1e-9)
    faded = 1 - 0.1 * (1 - 0.5**40.56)
    assert by_id["b"].score == pytest.approx((1 / (K + 2) + 1 / (K + 1) + COSINE) * faded)


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

    assert scores["fact"] == pytest.approx(1 / (K + 1) + COSINE)
    assert scores["lesson"] == pytest.approx(1 / (K + 1) + COSINE)
    assert scores["event"] == pytest.approx(0.8 * (1 / (K + 1) + COSINE))
    assert scores["inference"] == pytest.approx(0.6 * 0.5 * (1 / (K + 1) + COSINE))


def test_an_empty_block_is_empty_text_and_zero_tokens() -> None:
    packed = pack_block([], [], TOKENIZER, 1500)

    assert packed.text == "" and packed.tokens == 0


# ---------------------------------------------------------------------------------------------
# The gates


def relevance(candidates: dict[str, Candidate], facts: QueryFacts = FACTS) -> float:
    """The best relevance among the candidates, kept or dropped."""
    ranking = rank_candidates(candidates, facts, NOW)
    found = [s.relevance for s in ranking.items]
    found += [d.relevance for d in ranking.dropped if d.relevance is not None]
    return max(found)


def opens(candidates: dict[str, Candidate], facts: QueryFacts = FACTS) -> bool:
    """Whether the candidates open the block (the memories section is not empty)."""
    return rank_candidates(candidates, facts, NOW).silence is None


def in_store(candidates: dict[str, Candidate], cosine: float = 0.18) -> dict[str, Candidate]:
    """``candidates`` among what the vector leg finds around any message in a store of a
    thousand memories: nine more, each at a low ``cosine`` (the message's background)."""
    ranked = len(candidates)
    around = {
        f"bg{n}": Candidate(memory(f"bg{n}"), {"vector": ranked + n}, cosine=cosine)
        for n in range(1, 10)
    }
    return {**candidates, **around}


def test_a_vector_hit_under_the_gate_is_stopped_with_its_cosine() -> None:
    weak = Candidate(memory("weak"), {"vector": 1}, cosine=0.1)

    verdict = gate(weak, FACTS, POLICY)

    assert verdict.admitted == ()
    assert verdict.stopped["vector"] == "cosine 0.10 < 0.15"


def test_a_vector_hit_past_the_gate_is_admitted_but_a_weak_one_opens_nothing() -> None:
    middling = Candidate(memory("m"), {"vector": 1}, cosine=0.2)

    verdict = gate(middling, FACTS, POLICY)
    ranking = rank_candidates({"m": middling}, FACTS, NOW)

    assert verdict.admitted == ("vector",)
    assert ranking.items == ()
    assert ranking.silence is not None and "no strong evidence" in ranking.silence
    assert [d.memory_id for d in ranking.dropped] == ["m"]
    [dropped] = ranking.dropped
    assert dropped.relevance is not None and dropped.relevance < POLICY.open_score
    assert set(dropped.contributions) == set(FEATURES)


def test_one_strong_item_opens_the_block_for_the_weaker_ones() -> None:
    strong = Candidate(memory("strong"), {"vector": 1}, cosine=0.6)
    middling = Candidate(memory("middling"), {"vector": 2}, cosine=0.2)

    ranking = rank_candidates({"strong": strong, "middling": middling}, FACTS, NOW)

    assert [s.memory.id for s in ranking.items] == ["strong", "middling"]
    assert ranking.silence is None
    assert ranking.items[0].relevance >= POLICY.open_score
    assert ranking.items[0].relevance > ranking.items[1].relevance
    # Alone, the middling one opens nothing (the test above); beside a close match the message's
    # background is higher, and so is its relevance: it is measured against this message.
    alone = rank_candidates({"middling": middling}, FACTS, NOW)
    assert alone.items == () and alone.dropped[0].relevance is not None
    assert alone.dropped[0].relevance < ranking.items[1].relevance


def test_the_relevance_is_the_fitted_logistic_model_and_explains_itself() -> None:
    strong = Candidate(memory("s"), {"vector": 1, "text": 2}, cosine=0.5, words=frozenset({"tea"}))

    [item] = rank_candidates({"s": strong}, FACTS, NOW).items
    logit = POLICY.score_bias + sum(item.contributions.values())

    assert item.relevance == pytest.approx(1 / (1 + math.exp(-logit)))
    assert item.contributions["cosine"] == pytest.approx(0.5 * POLICY.score_weights["cosine"])
    cosine = POLICY.fused_cosine_weight * 0.5 / K
    expected = (1 / (K + 1) + 1 / (K + 2) + cosine) * item.recency * item.weight
    assert item.score == pytest.approx(expected)


_UNIT = st.floats(-1.0, 1.0, allow_nan=False)


@given(
    legs=st.dictionaries(
        st.sampled_from(["vector", "text", "entity", "time", "episode"]), st.integers(1, 100)
    ),
    cosine=st.none() | _UNIT,
    coverage=st.floats(0.0, 1.0),
    context=st.builds(
        Context,
        _UNIT,
        st.floats(0.0, 1.0),
        _UNIT,
        st.booleans(),
        _UNIT,
        _UNIT,
        st.booleans(),
        st.booleans(),
    ),
    weights=st.dictionaries(st.sampled_from(FEATURES), st.floats(-9.0, 9.0)),
    bias=st.floats(-9.0, 9.0),
)
def test_the_one_pass_model_gives_the_features_numbers_bit_for_bit(
    legs: dict[str, int],
    cosine: float | None,
    coverage: float,
    context: Context,
    weights: dict[str, float],
    bias: float,
) -> None:
    for coefficients in (weights, POLICY.score_weights):
        expected = calibrated(features(legs, cosine, coverage, context), coefficients, bias)
        relevance, shares = Model(coefficients, bias, context).relevance(legs, cosine, coverage)
        assert relevance == expected[0]
        assert list(shares.items()) == list(expected[1].items())


def test_the_closer_of_two_candidates_found_at_the_same_ranks_scores_higher() -> None:
    """Reciprocal ranks alone tie a text leg's wrong match with the vector leg's right one;
    the cosine in the fused score breaks the tie for meaning (no cosine, no embedding: a
    tie)."""
    close = Candidate(memory("c"), {"vector": 1}, cosine=0.6)
    worded = Candidate(memory("w"), {"text": 1}, cosine=0.2, words=frozenset({"tea"}))

    ranked = rank_candidates({"c": close, "w": worded}, FACTS, NOW).items
    assert [s.memory.id for s in ranked] == ["c", "w"]
    assert ranked[0].score - ranked[1].score == pytest.approx(POLICY.fused_cosine_weight * 0.4 / K)
    blind = rank_candidates(
        {"c": close, "w": worded},
        replace(FACTS, embedded=False),
        NOW,
        replace(POLICY, open_score=0),
    )
    assert [s.score for s in blind.items] == [pytest.approx(1 / (K + 1))] * 2
    # A memory only a name found has no cosine measured: it counts the typical evidence one.
    named = Candidate(memory("n"), {"entity": 1})
    [item] = rank_candidates({"n": named}, FACTS, NOW, replace(POLICY, open_score=0)).items
    unknown = POLICY.fused_cosine_weight * UNKNOWN_COSINE / K
    assert item.score == pytest.approx(1 / (K + 1) + unknown)


def test_one_legs_first_match_outranks_two_legs_agreeing_far_down() -> None:
    """The reciprocal ranks fall steeply (k = 5): a memory one leg ranks first is not pushed
    down by one that both legs found twentieth (on BEAM and LoCoMo those deep agreements were
    the wrong items that pushed evidence out of the first ten). At k = 60 the deep pair won."""
    first = Candidate(memory("f"), {"vector": 1}, cosine=0.5)
    deep = Candidate(memory("d"), {"vector": 20, "text": 20}, cosine=0.45, words=frozenset({"tea"}))

    ranked = rank_candidates({"f": first, "d": deep}, FACTS, NOW).items
    assert [s.memory.id for s in ranked] == ["f", "d"]
    flat = rank_candidates({"f": first, "d": deep}, FACTS, NOW, replace(POLICY, rrf_k=60)).items
    assert [s.memory.id for s in flat] == ["d", "f"]


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


def test_a_text_hit_carrying_the_rare_words_raises_the_relevance() -> None:
    alike = Candidate(memory("t"), {"vector": 1}, cosine=0.3)
    worded = Candidate(memory("t"), {"vector": 1, "text": 1}, cosine=0.3, words=frozenset({"tea"}))

    assert gate(worded, FACTS, POLICY).admitted == ("vector", "text")
    assert text_coverage(frozenset({"tea"}), FACTS) > 0.9
    assert relevance({"t": worded}) > relevance({"t": alike})


def test_without_the_embedder_text_matches_are_judged_on_words_alone() -> None:
    blind = replace(FACTS, embedded=False)
    hit = Candidate(memory("t"), {"text": 1}, cosine=None, words=frozenset({"tea"}))

    verdict = gate(hit, blind, POLICY)

    assert verdict.admitted == ("text",)


def test_a_time_window_holding_the_event_opens_the_block() -> None:
    by_time = Candidate(memory("t", kind=Kind.EVENT, age_days=2), {"time": 1}, cosine=0.2)
    windowed = replace(FACTS, window=LAST_WEEK, window_events=1)

    assert gate(by_time, windowed, POLICY).admitted == ("time",)
    assert opens({"t": by_time}, windowed)


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
    support-group memories are related words, not an answer. An unknown name silences recall
    only when nothing else is strong."""
    unfamiliar = replace(FACTS, unknown_names=("Caroline",))
    related = Candidate(memory("r"), {"vector": 1}, cosine=0.5)
    close = Candidate(memory("c"), {"vector": 2}, cosine=0.65)

    assert opens(in_store({"r": related}))
    silent = rank_candidates(in_store({"r": related}), unfamiliar, NOW)
    assert silent.items == () and silent.silence is not None and "Caroline" in silent.silence
    opened = rank_candidates(in_store({"r": related, "c": close}), unfamiliar, NOW)
    assert {"r", "c"} <= {s.memory.id for s in opened.items}


def test_a_question_whose_weightiest_words_no_memory_holds_needs_a_closer_match() -> None:
    """ "How do I make a roux for gravy?" of a store that talks about recipes: a recipe memory
    at cosine 0.5 is related, not an answer, when "roux" and "gravy" appear nowhere."""
    roux = QueryFacts(
        words=("make", "roux", "gravy"),
        word_frequency={"make": 84, "roux": 0, "gravy": 0},
        memory_count=700,
    )
    recipe = Candidate(memory("r"), {"vector": 1}, cosine=0.5)

    assert not opens(in_store({"r": recipe}), roux)
    known = replace(roux, word_frequency={"make": 84, "roux": 2, "gravy": 1})
    assert opens(in_store({"r": recipe}), known)


def test_a_close_match_among_close_neighbours_opens_where_a_lone_one_does_not() -> None:
    """A message about what the store holds finds several memories near it; a question about
    nothing there finds one by a shared word and little around it ("Why is the sky blue?" of
    a store that says "the owner's favourite colour is deep blue"): the same cosine is
    stronger evidence on a higher background."""
    match = Candidate(memory("m"), {"vector": 1}, cosine=0.4)

    assert not opens(in_store({"m": match}, cosine=0.16))
    assert opens(in_store({"m": match}, cosine=0.4))


def test_a_question_naming_someone_the_store_knows_opens_where_a_general_one_does_not() -> None:
    """ "What did Caroline paint last summer?" of a chat where Caroline talks: a question about
    someone the store knows has its answer there more often than a general question at the
    same cosine ("Why is the sky blue?" of a chat about painting skies)."""
    painting = Candidate(memory("p"), {"vector": 1}, cosine=0.4)
    named = replace(FACTS, named=True)

    assert not opens(in_store({"p": painting}))
    assert opens(in_store({"p": painting}), named)
    ranked = rank_candidates(in_store({"p": painting}), named, NOW)
    assert ranked.items[0].contributions["named"] == POLICY.score_weights["named"] > 0


def test_a_bare_definite_reference_to_the_owners_world_opens_a_close_paraphrase() -> None:
    """ "Where's the hammer?" of a store that says where the toolbox is: no first person, but
    "the hammer" is one thing of its writer's world, and a close match opens the block; the
    same match for a message without it ("Where is a good place for a picnic?") does not."""
    toolbox = Candidate(memory("t"), {"vector": 1}, cosine=0.45)
    definite = replace(FACTS, definite=True)

    assert not opens(in_store({"t": toolbox}))
    assert opens(in_store({"t": toolbox}), definite)


def test_a_question_about_the_owner_opens_on_a_paraphrase_a_general_one_does_not() -> None:
    """ "What pill do I swallow before breakfast?" meets "takes levothyroxine every morning"
    at a cosine a general question reaches by chance ("What is the speed of light?" against
    a memory about light bulbs): a message about its writer's own life is evidence that the
    store holds the answer, and the relevance shows that share."""
    paraphrase = Candidate(memory("p"), {"vector": 1}, cosine=0.3)
    personal = replace(FACTS, personal=1.0)

    assert not opens(in_store({"p": paraphrase}, cosine=0.2))
    assert opens(in_store({"p": paraphrase}, cosine=0.2), personal)
    ranked = rank_candidates(in_store({"p": paraphrase}, cosine=0.2), personal, NOW)
    assert ranked.items[0].contributions["personal"] == POLICY.score_weights["personal"] > 0


def test_only_the_legs_whose_gates_pass_count_in_the_score() -> None:
    half = Candidate(memory("h"), {"vector": 1, "text": 1}, cosine=0.6, words=frozenset({"owner"}))

    [item] = rank_candidates({"h": half}, FACTS, NOW).items

    assert item.gates == ("vector",)
    assert dict(item.ranks) == {"vector": 1}
    assert item.score == pytest.approx(1 / (K + 1) + POLICY.fused_cosine_weight * 0.6 / K)


def test_the_episode_leg_admits_only_what_is_not_far_off_in_meaning() -> None:
    near = Candidate(memory("n", kind=Kind.EVENT), {"episode": 1}, cosine=0.2)
    far = Candidate(memory("f", kind=Kind.EVENT), {"episode": 2}, cosine=0.05)

    assert gate(near, FACTS, POLICY).admitted == ("episode",)
    assert gate(far, FACTS, POLICY).admitted == ()


def test_the_feedback_leg_admits_by_the_messages_own_cosine_and_never_opens() -> None:
    near = Candidate(memory("n"), {"feedback": 1}, cosine=0.2)
    far = Candidate(memory("f"), {"feedback": 2}, cosine=0.05)
    # Found by the message's vector too: that leg opens, the feedback leg adds its rank.
    both = Candidate(memory("b"), {"vector": 3, "feedback": 1}, cosine=0.5)

    assert gate(near, FACTS, POLICY).admitted == ("feedback",)
    assert not gate(near, FACTS, POLICY).opens
    assert gate(far, FACTS, POLICY).admitted == ()
    assert gate(both, FACTS, POLICY).opens
    weighed = replace(POLICY, feedback_weight=0.25)
    scored = rank_candidates({"b": both}, FACTS, NOW, weighed).items[0]
    cosine_term = POLICY.fused_cosine_weight * 0.5 / K
    assert scored.rrf == pytest.approx(1 / (K + 3) + 0.25 / (K + 1) + cosine_term)


# ---------------------------------------------------------------------------------------------
# The relative cut


def test_the_relative_cut_keeps_what_scores_near_the_best() -> None:
    found = {i: memory(i) for i in ("a", "b", "c")}
    ranking = fused({"vector": ["a", "b"], "text": ["a"], "time": ["c"]}, found)
    # a: two legs at rank 1 (2/(k+1)); c: one leg at rank 1 (1/(k+1)); b: one at rank 2
    # (1/(k+2)); each plus the same cosine term (2 × 0.9 / k).
    kept, dropped = relative_cut(ranking, RecallPolicy(relative_cut=0.65, cut_floor_chars=0))

    assert [s.memory.id for s in kept] == ["a", "c", "b"] and dropped == []
    kept, dropped = relative_cut(ranking, RecallPolicy(relative_cut=0.8, cut_floor_chars=0))
    assert [s.memory.id for s in kept] == ["a"]
    assert {d.memory_id for d in dropped} == {"b", "c"}
    assert all("far below the best" in d.reason for d in dropped)
    # Below the cut, the next ones join while the kept memories' characters stay in the floor.
    held = len(found["a"].content) + len(found["c"].content)
    kept, _ = relative_cut(ranking, RecallPolicy(relative_cut=0.8, cut_floor_chars=held))
    assert [s.memory.id for s in kept] == ["a", "c"]


@fusion
@given(data=st.data(), share=st.floats(0.0, 1.0), chars=st.integers(0, 400))
def test_the_cut_keeps_a_prefix_and_never_the_best_out(
    data: st.DataObject, share: float, chars: int
) -> None:
    found = data.draw(memory_sets(content=PLAIN, max_size=15))
    ranking = fused(data.draw(leg_rankings(sorted(found))), found)

    kept, dropped = relative_cut(ranking, RecallPolicy(relative_cut=share, cut_floor_chars=chars))

    assert kept == ranking[: len(kept)]
    assert [d.memory_id for d in dropped] == [s.memory.id for s in ranking[len(kept) :]]
    if ranking:
        assert kept[0] == ranking[0]
        near = [s for s in kept if s.score >= share * ranking[0].score]
        held = sum(len(s.memory.content) for s in kept)
        # What scores far below the best is kept only within the floor's characters, and
        # packing stops at the first one that would pass it.
        assert near == kept or held <= chars
        if dropped:
            after = ranking[len(kept)]
            assert after.score < share * ranking[0].score
            assert held + len(after.memory.content) > chars


def test_relevance_in_one_pass_is_the_probability_and_the_contributions() -> None:
    rng = random.Random(28)
    weights = RecallPolicy().score_weights
    for _ in range(200):
        values = {name: rng.uniform(-1.0, 1.5) for name in FEATURES}
        bias = rng.uniform(-6.0, 2.0)

        found, shares = calibrated(values, weights, bias)

        assert found == probability(values, weights, bias)
        assert shares == contributions(values, weights)
