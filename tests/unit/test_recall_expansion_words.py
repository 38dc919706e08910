"""The feedback leg's expansion words (memoryd.recall.legs.expansion_terms; the words variant of
pseudo-relevance feedback, off as shipped): the same words in the same order on every run,
whatever Python's hash seed — ties go by the word itself, never by a set's order."""

from __future__ import annotations

from types import SimpleNamespace
from typing import cast

from memoryd.recall.legs import expansion_terms
from memoryd.storage.protocols import Store

from .recall_policy_support import memory


class _EveryWordOnce:
    """A text index in which every word is held by one memory: every word weighs the same."""

    def search(self, words: list[str], k: int) -> SimpleNamespace:
        return SimpleNamespace(document_frequency={w: 1 for w in words})


STORE = cast(Store, SimpleNamespace(text=_EveryWordOnce()))
# Both memories hold the same eight words the message does not, in different orders.
WORDS = ["quince", "walnut", "almond", "rhubarb", "fennel", "juniper", "damson", "sorrel"]
TOP = [
    memory("m1", " ".join(WORDS) + " jam"),
    memory("m2", " ".join(reversed(WORDS)) + " tart"),
]


def test_tied_expansion_words_come_in_the_order_of_the_word_itself() -> None:
    found = expansion_terms(STORE, TOP, ["jam"], count=5, most=10, active=100)

    assert found == sorted(WORDS)[:5]


def test_a_word_more_memories_hold_comes_before_its_ties() -> None:
    top = [*TOP, memory("m3", "sorrel soup")]

    found = expansion_terms(STORE, top, ["jam"], count=3, most=10, active=100)

    assert found == ["sorrel", "almond", "damson"]
