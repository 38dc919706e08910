"""A yes/no question wants both sides (SPEC §4, pure; bench/README.md, "Both sides of a yes/no
question"): when the fused ten hold the memory that denies what the question asks and none that
states it, the best one stating it joins the ten."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC
from typing import cast

import pytest

from memoryd.recall.evidence_policy import Candidate
from memoryd.recall.legs import Evidence
from memoryd.recall.score import rank
from memoryd.recall.score_policy import relative_cut
from memoryd.recall.sides_policy import (
    asks_yes_or_no,
    denied,
    other_side,
    question_words,
    yes_or_no_words,
)
from memoryd.storage.protocols import Store

from .recall_policy_support import FACTS, NOW, POLICY, memory

QUESTION = "Have I ever completed a first draft of a screenplay?"
ASKED = yes_or_no_words(QUESTION)
DENIAL = "I've never completed a first draft of any screenplay, can you give me some tips?"
SAID_OTHERWISE = "I felt a confidence boost when I completed my first draft on April 1."
# Memories on the same subject that state nothing either way.
SAME_SUBJECT = [
    f"I've set a goal to finish scene {n} of the screenplay draft outline by Friday."
    for n in range(1, 14)
]


@pytest.mark.parametrize(
    ("message", "asks"),
    [
        ("Have I ever completed a first draft of a screenplay?", True),
        ("Did Caroline go to the support group?", True),
        ("Would Melanie enjoy a trip to the national park?", True),
        ("Do I usually feel anxious after feedback?", True),
        ("Am I allergic to anything?", True),
        ("Can you list the order in which I met them?", False),
        ("Could you summarize my screenplay progress?", False),
        ("When did I complete my first draft?", False),
        ("I have completed my draft.", False),  # a statement: the auxiliary comes second
        ("", False),
    ],
)
def test_a_yes_or_no_question_opens_with_an_auxiliary_and_is_no_request(
    message: str, asks: bool
) -> None:
    assert asks_yes_or_no(message) is asks
    assert bool(yes_or_no_words(message)) is (asks and bool(question_words(message)))


def test_a_denial_is_a_negation_just_before_the_question_s_words() -> None:
    assert denied(DENIAL, ASKED) == {"completed", "first"}
    assert denied(SAID_OTHERWISE, ASKED) == frozenset()
    # A negation about something else ("not sure") denies none of them.
    assert denied("I'm not sure how my first draft reads.", ASKED) == frozenset()


def test_the_memory_that_says_otherwise_is_found_below_the_ten() -> None:
    contents = [DENIAL, *SAME_SUBJECT[:11], SAID_OTHERWISE, *SAME_SUBJECT[11:]]

    # The denial holds completed, first, draft, screenplay; the same-subject memories hold half
    # of them (draft, screenplay), the one saying otherwise three: most of them.
    assert other_side(contents, ASKED, POLICY) == 12


def test_a_memory_holding_half_the_denied_words_is_no_other_side() -> None:
    half = "I completed the outline of the screenplay on Friday."  # completed, screenplay
    contents = [DENIAL, *SAME_SUBJECT[:11], half, SAID_OTHERWISE]

    assert other_side(contents, ASKED, POLICY) == 13
    assert other_side([DENIAL, *SAME_SUBJECT[:11], half], ASKED, POLICY) is None


def test_nothing_moves_when_the_ten_hold_both_sides_or_no_denial() -> None:
    both = [DENIAL, SAID_OTHERWISE, *SAME_SUBJECT]
    no_denial = [*SAME_SUBJECT[:11], SAID_OTHERWISE, DENIAL]
    below = [DENIAL, *SAME_SUBJECT[:11], SAID_OTHERWISE]

    assert other_side(both, ASKED, POLICY) is None
    assert other_side(no_denial, ASKED, POLICY) is None
    # Not a yes/no question; the rule off; the other side deeper than the depth.
    assert other_side(below, yes_or_no_words("When did I finish it?"), POLICY) is None
    assert other_side(below, ASKED, replace(POLICY, other_side_depth=0)) is None
    assert other_side(below, ASKED, replace(POLICY, other_side_depth=12)) is None


def test_recall_ranks_the_other_side_tenth_at_the_tenth_s_score_and_keeps_it() -> None:
    """Through the score stage: the denial first, the memory saying otherwise 13th by the
    vector leg; it is ranked 10th, scored as the item whose place it took, so the relative cut
    keeps it exactly when it keeps that place."""
    texts = [DENIAL, *SAME_SUBJECT[:11], SAID_OTHERWISE, *SAME_SUBJECT[11:]]
    candidates = {
        f"m{at:02d}": Candidate(memory(f"m{at:02d}", text), {"vector": at + 1}, 0.6 - at * 0.01)
        for at, text in enumerate(texts)
    }
    facts = replace(FACTS, words=tuple(sorted(ASKED)), yes_or_no=ASKED)
    evidence = Evidence(candidates, facts, {"vector": "ok"}, {"vector": list(candidates)}, None)
    policy = replace(POLICY, episode_depth=0)
    store = cast(Store, None)  # neither the episode leg nor diversity reads it here

    shipped, _ = rank(store, evidence, NOW, policy, UTC)
    before, _ = rank(store, evidence, NOW, replace(policy, other_side_depth=0), UTC)

    ids = [s.memory.id for s in shipped.items]
    assert [s.memory.id for s in before.items][:13] == [f"m{at:02d}" for at in range(13)]
    assert ids[:10] == [*(f"m{at:02d}" for at in range(9)), "m12"]
    assert ids[10:13] == ["m09", "m10", "m11"]
    assert shipped.items[9].score == before.items[9].score
    scores = [s.score for s in shipped.items]
    assert scores == sorted(scores, reverse=True)
    kept, _ = relative_cut(shipped.items, policy)
    kept_before, _ = relative_cut(before.items, policy)
    assert ("m12" in {s.memory.id for s in kept}) is (len(kept_before) >= 10)
