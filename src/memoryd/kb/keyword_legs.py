"""search_kb's library-wide keyword legs (chunks and table rows), read only as deep as the
search will use them.

Both legs are read from the store best first (``ORDER BY`` the index's rank), so a shorter read
is the start of a longer one. The deep read (``deep`` chunks) is used only for the candidates
of the documents a question names, and only when their own search within those documents is
not run (the question's topic words are all its words); otherwise fusion takes the first
``pool`` chunks and the first ``row_pool`` row chunks. A question whose words are spelled out
searches the legs again with the longer list, and then the first read's depth did not matter
at all: reading it shallow first saved ~5 ms of the row index's ~13 ms a search on the filings
library, the same chunks in the same order (bench/README.md, "search_kb's keyword legs read as
deep as used").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memoryd.kb.model import ChunkKey
from memoryd.kb.search import KbSearchPolicy
from memoryd.storage.kb_protocols import KnowledgeStore


@dataclass(frozen=True)
class KeywordLegs:
    """The library-wide keyword legs of one list of terms, best first; ``deep``: whether they
    hold the first ``deep`` chunks of each (else the first ``pool`` and ``row_pool``)."""

    terms: tuple[str, ...]
    chunks: list[ChunkKey]
    rows: list[ChunkKey]
    deep: bool


def read_legs(
    kb: KnowledgeStore, terms: Sequence[str], policy: KbSearchPolicy, deep: int, full: bool
) -> KeywordLegs:
    """The keyword legs of ``terms``: the first ``deep`` chunks of each with ``full``, else the
    first ``policy.pool`` chunks and ``policy.row_pool`` row chunks (all there are when fewer)."""
    rows: list[ChunkKey] = []
    if full:
        if policy.row_weight > 0:
            rows = kb.keyword_rows(terms, deep)
        return KeywordLegs(tuple(terms), kb.keyword_chunks(terms, deep), rows, True)
    chunks = kb.keyword_chunks(terms, min(policy.pool, deep))
    if policy.row_weight > 0:
        wanted = min(policy.row_pool, deep)
        rows = kb.keyword_rows(terms, min(2 * wanted, deep))
        # Several of the best rows may share a chunk: fewer than ``wanted`` chunks back means
        # the deep read decides the first ``wanted``.
        if len(rows) < wanted:
            rows = kb.keyword_rows(terms, deep)
    return KeywordLegs(tuple(terms), chunks, rows, False)


def needs_deep(named: set[str], topic: Sequence[str], terms: Sequence[str]) -> bool:
    """Whether the search uses the legs' deep read: the candidates of the named documents are
    taken from it only when their own search within them is not run (always, without
    ``route_topic_only``: then the first read is deep already)."""
    return bool(named) and list(topic) == list(terms)


def final_legs(
    kb: KnowledgeStore,
    first: KeywordLegs,
    terms: Sequence[str],
    policy: KbSearchPolicy,
    deep: int,
    full: bool,
) -> KeywordLegs:
    """The legs fusion takes: ``first`` when it was read for ``terms`` as deep as needed, else
    read again."""
    if first.terms == tuple(terms) and (first.deep or not full):
        return first
    return read_legs(kb, terms, policy, deep, full)
