"""search_kb's word sets kept per chunk version: the same counts as reading the chunks, a
chunk read once per version of its document, and a bounded cache."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from memoryd.kb import word_sets
from memoryd.kb.model import Chunk, ChunkKey, Document, DocumentStatus, SourceType
from memoryd.kb.word_sets import WordCache, chunk_word_sets, shared_counts, shared_words
from memoryd.words import query_terms

AT = datetime(2026, 1, 1, tzinfo=UTC)


class Chunks:
    """The one store call chunk_word_sets makes, counting the chunks it reads."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self.chunks = {ChunkKey(c.document_id, c.position): c for c in chunks}
        self.read: list[ChunkKey] = []

    def chunks_by_key(self, keys: Sequence[ChunkKey]) -> dict[ChunkKey, Chunk]:
        self.read.extend(keys)
        return {k: self.chunks[k] for k in keys if k in self.chunks}


def document(doc_id: str, content_hash: str = "h1") -> Document:
    return Document(
        id=doc_id,
        source_uri=f"upload:{doc_id}.md",
        collection="default",
        source_type=SourceType.CURATED,
        title=doc_id,
        status=DocumentStatus.READY,
        created_at=AT,
        updated_at=AT,
        content_hash=content_hash,
    )


def chunk(doc_id: str, position: int, text: str) -> Chunk:
    return Chunk(doc_id, position, (), "Annual report", text, len(text.split()))


CHUNKS = [
    chunk("a", 0, "Net sales rose; the company's revenues grew in 2022"),
    chunk("a", 1, "Purchases of property and equipment"),
    chunk("b", 0, "Diluted net income per share, fiscal 2022"),
]
KEYS = [ChunkKey(c.document_id, c.position) for c in CHUNKS]
TERMS = query_terms("company revenue per share in 2022 and net sales")


def test_counts_from_kept_word_sets_equal_counts_from_the_chunks() -> None:
    store = Chunks(CHUNKS)
    documents = {"a": document("a"), "b": document("b")}
    cache: WordCache = {}

    first, read = chunk_word_sets(store, KEYS, documents, cache)  # type: ignore[arg-type]
    again, read_again = chunk_word_sets(store, KEYS, documents, cache)  # type: ignore[arg-type]

    expected = shared_words(TERMS, {k: store.chunks[k] for k in KEYS})
    assert shared_counts(TERMS, first) == expected == shared_counts(TERMS, again)
    assert expected[KEYS[0]] >= 3  # company, revenue(s), 2022, net, sales
    assert set(read) == set(KEYS) and read_again == {}
    assert store.read == KEYS  # the second search read no chunk


def test_a_new_version_of_a_document_is_read_again() -> None:
    store = Chunks(CHUNKS)
    cache: WordCache = {}
    chunk_word_sets(store, KEYS, {"a": document("a"), "b": document("b")}, cache)  # type: ignore[arg-type]
    store.read.clear()
    changed = {"a": document("a", "h2"), "b": replace(document("b"), updated_at=AT + timedelta(1))}

    chunk_word_sets(store, KEYS, changed, cache)  # type: ignore[arg-type]

    assert store.read == KEYS


def test_a_chunk_of_an_unknown_document_is_read_and_not_kept() -> None:
    store = Chunks(CHUNKS)
    cache: WordCache = {}

    words, _ = chunk_word_sets(store, KEYS, {"a": document("a")}, cache)  # type: ignore[arg-type]

    assert set(words) == set(KEYS)
    assert {k[0] for k in cache} == {"a"}


def test_a_missing_chunk_has_no_words() -> None:
    store = Chunks(CHUNKS[:1])
    words, read = chunk_word_sets(store, KEYS, {"a": document("a")}, {})  # type: ignore[arg-type]
    assert list(words) == [KEYS[0]] and list(read) == [KEYS[0]]


def test_the_cache_keeps_at_most_its_bound_oldest_out_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(word_sets, "WORD_SET_CHUNKS", 2)
    store = Chunks(CHUNKS)
    cache: WordCache = {}

    chunk_word_sets(store, KEYS, {"a": document("a"), "b": document("b")}, cache)  # type: ignore[arg-type]

    assert [k[0::3] for k in cache] == [("a", 1), ("b", 0)]
