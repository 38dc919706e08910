"""Where a memory holds the message's words (SPEC §4), pure: in one passage or scattered
through a long text (recall/proximity_policy.py; off as shipped, bench/README.md, "One passage
or scattered words")."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from memoryd.recall.evidence_policy import Candidate, QueryFacts
from memoryd.recall.gate_policy import read_query
from memoryd.recall.proximity_policy import best_window, key, text_reranked, with_passages
from memoryd.recall.score_policy import Ranking, rank_candidates

from .recall_policy_support import NOW, POLICY, memory

# "Which charger did I buy for the camera battery?" in a store of 1,000 memories.
FACTS = QueryFacts(
    words=("charger", "camera", "battery"),
    word_frequency={"charger": 8, "camera": 20, "battery": 12},
    memory_count=1000,
)
WEIGHTS = read_query(FACTS, POLICY).weights
ALL = frozenset(FACTS.words)
# A pasted page that names each word once, paragraphs apart.
FILLER = "The quarterly report covers revenue, hiring and the office move in detail. " * 4
SCATTERED = (
    f"Notes from the meeting. The charger cable was mentioned. {FILLER}"
    f"Someone had a camera. {FILLER}Then a battery came up at the very end."
)
# One sentence that holds all three.
TOLD = "I bought the fast charger for my camera battery last week."


def test_a_word_is_found_by_its_light_stem() -> None:
    assert key("batteries") == key("battery") == "batte"
    assert key("charging") == key("charger")[:5] == "charg"
    text = "Two spare batteries and the charging dock"

    assert best_window(text * 10, frozenset({"battery", "charger"}), WEIGHTS, 60) == {
        "battery",
        "charger",
    }


def test_a_scattered_memory_holds_less_in_its_best_passage_than_a_told_one() -> None:
    scattered = best_window(SCATTERED, ALL, WEIGHTS, 200)
    told = best_window(TOLD, ALL, WEIGHTS, 200)

    assert told == ALL
    assert len(scattered) == 1
    # Whole, both hold every word.
    assert best_window(SCATTERED, ALL, WEIGHTS, 0) == ALL


def test_a_memory_no_longer_than_the_passage_is_read_whole() -> None:
    # A short chat turn holds its words as the text leg said, found or not.
    assert best_window(TOLD, frozenset({"charger", "tripod"}), WEIGHTS, 200) == {
        "charger",
        "tripod",
    }


def candidate(memory_id: str, content: str, text_rank: int) -> Candidate:
    return Candidate(memory(memory_id, content), {"text": text_rank}, 0.5, ALL)


def test_the_text_legs_first_are_ranked_again_by_their_best_passage() -> None:
    found = {
        "scattered": candidate("scattered", SCATTERED, 1),
        "told": candidate("told", TOLD, 2),
        "other": replace(candidate("other", "A camera bag", 3), words=frozenset({"camera"})),
    }
    ranked = ["scattered", "told", "other"]

    again = text_reranked(found, ranked, WEIGHTS, 3, 200)

    assert {i: c.ranks["text"] for i, c in again.items()} == {
        "told": 1,
        "scattered": 2,
        "other": 3,
    }
    # Only the scattered one moved: it follows the others, which keep the text leg's order.
    apart = text_reranked(found, ranked, WEIGHTS, 3, 200, scattered=0.8)
    assert {i: c.ranks["text"] for i, c in apart.items()} == {
        "told": 1,
        "other": 2,
        "scattered": 3,
    }
    # With no depth, or a depth of one, the text leg's order stands.
    assert text_reranked(found, ranked, WEIGHTS, 0, 200) == found
    assert text_reranked(found, ranked, WEIGHTS, 1, 200) == found


def test_a_scattered_long_memory_ranks_under_a_short_one_told_in_one_sentence() -> None:
    """With the text leg ranked by passage, the memory that says it in one sentence comes
    first; as shipped, the one the text leg put first does."""
    older = replace(memory("told", TOLD), created_at=NOW - timedelta(days=1))
    found = {
        "scattered": candidate("scattered", SCATTERED, 1),
        "told": Candidate(older, {"text": 2}, 0.5, ALL),
    }
    on = replace(POLICY, text_window_depth=10)

    shipped = rank_candidates(found, FACTS, NOW, POLICY)
    again = rank_candidates(
        text_reranked(found, ["scattered", "told"], WEIGHTS, 10, 200), FACTS, NOW, on
    )

    assert [s.memory.id for s in shipped.items] == ["scattered", "told"]
    assert [s.memory.id for s in again.items] == ["told", "scattered"]


def test_the_coverage_read_in_the_best_passage_lowers_a_scattered_memory() -> None:
    found = {"scattered": candidate("scattered", SCATTERED, 1), "told": candidate("told", TOLD, 2)}
    windowed = with_passages(found, WEIGHTS, 200)

    whole = rank_candidates(found, FACTS, NOW, POLICY)
    passage = rank_candidates(windowed, FACTS, NOW, POLICY)

    def coverage(ranking: Ranking, memory_id: str) -> float:
        item = next(s for s in ranking.items if s.memory.id == memory_id)
        return item.contributions["coverage"]

    assert windowed["told"].covering == ALL
    assert coverage(passage, "scattered") < coverage(whole, "scattered")
    assert coverage(passage, "told") == coverage(whole, "told")
