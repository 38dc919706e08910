"""The owner paraphrase set (bench/data/owner_paraphrase.json) is what it says it is: enough
memories about each part of an owner's life, each with a question that shares no content word
with it, and unrelated questions."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from memoryd.words import query_terms

DATA = Path(__file__).resolve().parents[2] / "bench" / "data" / "owner_paraphrase.json"
TOPICS = {"health", "family", "work", "home", "money", "plans", "tastes"}


def _stems(text: str) -> set[str]:
    """Content words cut to five letters, so "allergy" and "allergic" count as one word."""
    return {word[:5] for word in query_terms(text)}


def test_the_set_covers_an_owners_life_with_enough_pairs() -> None:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    topics = Counter(pair["topic"] for pair in data["pairs"])

    assert len(data["pairs"]) >= 150
    assert set(topics) == TOPICS and min(topics.values()) >= 15
    assert len(set(data["unrelated"])) >= 100
    assert len({pair["memory"] for pair in data["pairs"]}) == len(data["pairs"])


def test_no_question_shares_a_content_word_with_its_memory() -> None:
    data = json.loads(DATA.read_text(encoding="utf-8"))

    shared = {
        pair["question"]: _stems(pair["question"]) & _stems(pair["memory"])
        for pair in data["pairs"]
    }

    assert {question: words for question, words in shared.items() if words} == {}
    assert _stems("Am I allergic?") & _stems("The owner has an allergy") == {"aller"}


HELDOUT = DATA.with_name("owner_paraphrase_heldout.json")


def test_the_held_out_set_pairs_its_own_memories_and_asks_general_and_unanswered_ones() -> None:
    data = json.loads(HELDOUT.read_text(encoding="utf-8"))
    main = json.loads(DATA.read_text(encoding="utf-8"))

    assert len(data["pairs"]) >= 40 and len(set(data["general"])) >= 40
    assert len(set(data["personal_unanswered"])) >= 20
    # Its questions are its own (two of its memories happen to be written as the paraphrase
    # set's are: "The owner is lactose intolerant", "… favourite band is Radiohead").
    assert not {p["question"] for p in data["pairs"]} & {p["question"] for p in main["pairs"]}
    assert len({p["memory"] for p in data["pairs"]} & {p["memory"] for p in main["pairs"]}) <= 2
    shared = {
        pair["question"]: _stems(pair["question"]) & _stems(pair["memory"])
        for pair in data["pairs"]
    }
    assert {question: words for question, words in shared.items() if words} == {}


TOLD = DATA.with_name("owner_told.json")


def test_the_told_set_asks_about_the_owner_sets_memories_and_about_things_never_told() -> None:
    data = json.loads(TOLD.read_text(encoding="utf-8"))
    main = json.loads(DATA.read_text(encoding="utf-8"))
    memories = {p["memory"] for p in main["pairs"]}

    assert len(data["pairs"]) >= 30 and len(set(data["never_told"])) >= 20
    assert len(set(data["general"])) >= 10
    # Each asks about one of the paraphrase set's memories, one memory a question, in words of
    # its own: at most one content word shared with its memory.
    assert {p["memory"] for p in data["pairs"]} <= memories
    assert len({p["memory"] for p in data["pairs"]}) == len(data["pairs"])
    assert not {p["question"] for p in data["pairs"]} & {p["question"] for p in main["pairs"]}
    shared = {
        pair["question"]: _stems(pair["question"]) & _stems(pair["memory"])
        for pair in data["pairs"]
    }
    assert {question: words for question, words in shared.items() if len(words) > 1} == {}
