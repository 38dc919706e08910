"""The text leg with stand-ins: the store's word searched for an everyday word no memory holds
(:mod:`memoryd.recall.stand_in_policy` says which)."""

from __future__ import annotations

from collections.abc import Sequence

from memoryd.memory.model import Kind
from memoryd.recall.stand_in_policy import stand_in_words, stand_ins_to_look_up, table
from memoryd.storage.protocols import Store, TextResult


def searched_text(
    store: Store, words: Sequence[str], depth: int, kinds: Sequence[Kind], stand_ins: int
) -> tuple[TextResult, tuple[str, ...]]:
    """Active memories by BM25 over ``words``, and the words searched. With ``stand_ins``
    (a level of :func:`~memoryd.recall.stand_in_policy.table`), a word no memory holds gives
    way to its stand-in that some memory holds (one more count and one more search, only
    then); the document frequencies cover the message's words and the stand-ins."""
    found = store.text.search(words, depth, kinds)
    chosen = table(stand_ins)
    if not chosen:
        return found, tuple(words)
    wanted = stand_ins_to_look_up(words, found.document_frequency, chosen)
    if not wanted:
        return found, tuple(words)
    held = store.text.search(wanted, 0, kinds).document_frequency
    replaced = stand_in_words(words, found.document_frequency, held, chosen)
    if replaced is None:
        return found, tuple(words)
    again = store.text.search(replaced, depth, kinds)
    frequency = {**found.document_frequency, **again.document_frequency}
    return TextResult(again.hits, frequency), replaced
