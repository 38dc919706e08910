"""Two gates that stopped evidence the legs had found (SPEC §4): a time window holding a single
event does not bound the others, and a text match the meaning only doubts ranks its memory
without opening the block or moving what the others are measured against.
"""

from __future__ import annotations

from dataclasses import replace

from memoryd.memory.model import Kind
from memoryd.recall.evidence_policy import Candidate
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.score_policy import rank_candidates

from .recall_policy_support import FACTS, LAST_WEEK, NOW, POLICY, memory

# "How many days after I started limiting work emails did I block Tuesday mornings?": the
# window ("on Tuesday") holds one event, and both legs' best match happened before it.
THAT_DAY = Candidate(memory("day", kind=Kind.EVENT, age_days=2), {"time": 1}, cosine=0.2)
BEST_MATCH = Candidate(
    memory("best", kind=Kind.EVENT, age_days=21), {"vector": 1, "text": 1}, 0.6, frozenset({"tea"})
)


def _ranked(window_events: int, policy: RecallPolicy = POLICY) -> list[str]:
    facts = replace(FACTS, window=LAST_WEEK, window_events=window_events)
    found = {"day": THAT_DAY, "best": BEST_MATCH}
    return [s.memory.id for s in rank_candidates(found, facts, NOW, policy).items]


def test_a_window_holding_one_event_bounds_the_others_unless_the_policy_asks_for_more() -> None:
    # Shipped: the one event in the window is all the block holds ("What did I eat yesterday?").
    assert _ranked(window_events=1) == ["day"]
    # window_min_events 2 (BEAM's choice, not shipped): the legs' best match stays.
    assert _ranked(1, replace(POLICY, window_min_events=2)) == ["best", "day"]


def test_a_window_holding_several_events_still_bounds_them() -> None:
    assert _ranked(2, replace(POLICY, window_min_events=2)) == ["day"]


# "When did Melanie get hurt?": the text leg's first match holds the rare word, at a cosine the
# meaning check doubts.
DOUBTED = 0.08
CLOSE = Candidate(memory("close", "Owner drinks tea at noon"), {"vector": 1}, 0.5)


def _doubted(cosine: float = DOUBTED) -> Candidate:
    return Candidate(memory("hurt", "Owner hurt a knee"), {"text": 1}, cosine, frozenset({"tea"}))


def test_a_doubted_text_match_joins_an_open_block() -> None:
    found = {"close": CLOSE, "hurt": _doubted()}

    ranking = rank_candidates(found, FACTS, NOW)
    before = rank_candidates(found, FACTS, NOW, replace(POLICY, text_doubt_cosine=0.1))

    assert [s.memory.id for s in ranking.items] == ["close", "hurt"]
    assert ranking.items[1].gates == ("text",)
    # --explain says the match was doubted.
    assert ranking.items[1].gate_labels() == ("text (doubtful)",)
    assert ranking.items[0].gate_labels() == ("vector",)
    assert [s.memory.id for s in before.items] == ["close"]
    assert "the meaning does not" in before.dropped[0].reason


def test_a_doubted_text_match_never_opens_the_block_nor_moves_the_others() -> None:
    about_me = replace(FACTS, personal=1.0)

    alone = rank_candidates({"hurt": _doubted()}, about_me, NOW)
    sure = rank_candidates({"hurt": _doubted(POLICY.text_min_cosine)}, about_me, NOW)
    beside = rank_candidates({"close": CLOSE, "hurt": _doubted()}, FACTS, NOW)
    without = rank_candidates({"close": CLOSE}, FACTS, NOW)

    assert alone.items == () and alone.silence is not None
    assert [s.memory.id for s in sure.items] == ["hurt"]
    assert beside.context == without.context
    assert beside.items[0].relevance == without.items[0].relevance


def test_a_homonym_stays_out() -> None:
    """ "race condition" is no charity race: under the doubt, no leg admits it."""
    ranking = rank_candidates({"close": CLOSE, "hurt": _doubted(0.02)}, FACTS, NOW)

    assert [s.memory.id for s in ranking.items] == ["close"]
