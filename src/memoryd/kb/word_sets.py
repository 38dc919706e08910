"""The words of the chunks a search's keyword legs find, kept per version of each chunk's
document: a search counts the question's words in a few hundred chunks, and splitting their
text into words took a third of search_kb's time (bench/README.md). A chunk whose words are
known is not read again; only the chunks the results show are.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

from memoryd.kb.model import Chunk, ChunkKey, Document
from memoryd.kb.search import SUFFIX_RULES, stem
from memoryd.storage.kb_protocols import KnowledgeStore
from memoryd.words import word_set

# Chunks whose words are kept, at most (the oldest go first): about 5 kB each, so 20 MB at most;
# a library of 11 filings has 5,572 chunks.
WORD_SET_CHUNKS = 4096
WordCache = dict[tuple[str, str | None, str, int], frozenset[str]]


Counts = dict[ChunkKey, int]


def shared_words(terms: Sequence[str], chunks: Mapping[ChunkKey, Chunk]) -> Counts:
    """How many of the query's words (stemmed) each chunk's breadcrumb and text hold."""
    return shared_counts(terms, {k: chunk_words(c) for k, c in chunks.items()})


def chunk_words(chunk: Chunk) -> frozenset[str]:
    """The words of a chunk's breadcrumb and text that :func:`shared_words` counts."""
    return frozenset(word_set(f"{chunk.breadcrumb}\n{chunk.text}"))


def shared_counts(terms: Sequence[str], words: Mapping[ChunkKey, frozenset[str]]) -> Counts:
    """:func:`shared_words` from each chunk's words (:func:`chunk_words`)."""
    # Why the surface forms: stemming every word of a few hundred chunks per search took
    # most of search_kb's time; the few words that stem to each query stem are checked instead.
    forms = [_forms_of(s) for s in {stem(t) for t in terms}]
    return {k: sum(1 for f in forms if not f.isdisjoint(held)) for k, held in words.items()}


def _forms_of(stemmed: str) -> frozenset[str]:
    """Every word :func:`stem` maps to ``stemmed``."""
    candidates = {stemmed}
    for suffix, keep in SUFFIX_RULES:
        if stemmed.endswith(keep):
            candidates.add(stemmed[: len(stemmed) - len(keep)] + suffix)
    return frozenset(c for c in candidates if stem(c) == stemmed)


def chunk_word_sets(
    kb: KnowledgeStore,
    keys: Sequence[ChunkKey],
    documents: Mapping[str, Document],
    cache: WordCache,
) -> tuple[dict[ChunkKey, frozenset[str]], dict[ChunkKey, Chunk]]:
    """Each chunk's words (:func:`chunk_words`) by key, and the chunks that
    had to be read for them (the others come from ``cache``, by document version)."""
    words: dict[ChunkKey, frozenset[str]] = {}
    version: dict[ChunkKey, tuple[str, str | None, str, int]] = {}
    for key in keys:
        document = documents.get(key.document_id)
        if document is None:
            continue
        version[key] = (
            document.id,
            document.content_hash,
            document.updated_at.isoformat(),
            key.position,
        )
        if version[key] in cache:
            words[key] = cache[version[key]]
    read = kb.chunks_by_key([key for key in keys if key not in words])
    for key, chunk in read.items():
        words[key] = frozenset(sys.intern(word) for word in chunk_words(chunk))
        if key in version:
            while len(cache) >= WORD_SET_CHUNKS:
                del cache[next(iter(cache))]
            cache[version[key]] = words[key]
    return {key: words[key] for key in keys if key in words}, read
