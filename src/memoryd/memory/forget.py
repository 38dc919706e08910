"""Forget: find every memory and document that names an entity or matches a query, then erase
them all in one transaction (the rules are in :mod:`memoryd.memory.forget_policy`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, TypeVar

from memoryd.memory.forget_policy import (
    QUERY_MIN_COSINE,
    ForgetRequest,
    ForgetResult,
    ForgottenChunk,
    ForgottenDocument,
    ForgottenMemory,
    NameMatcher,
    entity_names,
    holds_terms,
    memory_text,
    preview,
)
from memoryd.memory.lookups import embed_texts, require_memory
from memoryd.memory.model import Actor, Memory
from memoryd.words import query_terms

if TYPE_CHECKING:
    from memoryd.clock import Clock
    from memoryd.ids import IdGenerator
    from memoryd.memory.ledger import Ledger
    from memoryd.providers.embedder import Embedder, Vector
    from memoryd.storage.protocols import Store

# The store's key-value table keeps one record per forget: the request and the counts.
FORGET_META_PREFIX = "forget:"
Row = TypeVar("Row")
Key = TypeVar("Key")


@dataclass(frozen=True)
class _Probe:
    """What a row is tested against: an entity's names, or a query's words and vector."""

    names: NameMatcher | None
    terms: tuple[str, ...] = ()
    vector: Vector | None = None

    def why_name(self, text: str, tags: Sequence[str] = ()) -> str | None:
        """Why a row with ``text`` (and entity ``tags``) names the entity, or None."""
        assert self.names is not None
        if self.names.tagged(tags):
            return "tagged with the entity"
        if self.names.named_in(text):
            return "names the entity"
        return None

    def why_query(self, vector: Vector) -> str | None:
        """Why a row holding every query word matches, or None when its vector is too far."""
        assert self.vector is not None
        cosine = _cosine(self.vector, vector)
        if cosine < QUERY_MIN_COSINE:
            return None
        return f"every query word, cosine {cosine:.2f}"


class Forgetting:
    """The owner's forget request against the store."""

    def __init__(
        self, *, store: Store, embedder: Embedder, clock: Clock, ids: IdGenerator, ledger: Ledger
    ) -> None:
        self.store, self.embedder = store, embedder
        self.clock, self.ids, self.ledger = clock, ids, ledger

    def forget(
        self, entity: str | None, query: str | None, dry_run: bool, now: datetime | None
    ) -> ForgetResult:
        """See :meth:`memoryd.service.MemoryService.forget`."""
        request = ForgetRequest.checked(entity, query)
        at = now or self.clock()
        probe = self._probe(request)
        if dry_run:
            return self._plan(request, probe, at, dry_run=True)
        store = self.store
        with store.transaction():
            # Planned again inside the transaction: what is erased is what is there now.
            result = self._plan(request, probe, at, dry_run=False)
            if result.empty:
                return result
            result = replace(result, request_id=self.ids.new_id(at))
            reason = f"forgotten at the owner's request: {result.summary} ({result.request_id})"
            for item in result.memories:
                memory = require_memory(self.store, item.id)
                self.ledger.purge(memory, actor=Actor.OWNER, at=at, reason=reason)
            for document in result.documents:
                store.kb.delete_document(document.id)
            store.set_meta(FORGET_META_PREFIX + str(result.request_id), _record(result))
        store.erase_traces(documents=bool(result.documents))
        return result

    def _probe(self, request: ForgetRequest) -> _Probe:
        if request.entity is not None:
            aliases = self.store.entities.aliases()
            return _Probe(NameMatcher.build(entity_names(request.entity, aliases)))
        assert request.query is not None
        terms = tuple(query_terms(request.query))
        return _Probe(None, terms, embed_texts(self.embedder, [request.query])[0])

    def _plan(
        self, request: ForgetRequest, probe: _Probe, at: datetime, *, dry_run: bool
    ) -> ForgetResult:
        memories = self._memories(probe)
        chunks, documents = self._documents(probe)
        names = probe.names.names if probe.names is not None else ()
        return ForgetResult(request, names, memories, chunks, documents, dry_run, at)

    def _memories(self, probe: _Probe) -> tuple[ForgottenMemory, ...]:
        live = [m for m in self.store.memories.query() if m.purged_at is None]
        if probe.names is not None:
            found = [(m, probe.why_name(memory_text(m), m.entities)) for m in live]
        else:
            candidates = [m for m in live if holds_terms(memory_text(m), probe.terms)]
            stored = self.store.memories.vectors([m.id for m in candidates])
            vectors = _with_missing(candidates, stored, lambda m: m.id, memory_text, self.embedder)
            found = [(m, probe.why_query(vectors[m.id])) for m in candidates]
        return tuple(_forgotten_memory(m, why) for m, why in found if why is not None)

    def _documents(
        self, probe: _Probe
    ) -> tuple[tuple[ForgottenChunk, ...], tuple[ForgottenDocument, ...]]:
        kb = self.store.kb
        chunks: list[ForgottenChunk] = []
        documents: list[ForgottenDocument] = []
        for document in kb.documents():
            found: list[ForgottenChunk] = []
            stored = kb.chunks(document.id)
            if probe.names is not None:
                for chunk in stored:
                    why = probe.why_name(chunk.embedded_text)
                    if why is not None:
                        found.append(
                            ForgottenChunk(document.id, chunk.position, preview(chunk.text), why)
                        )
            else:
                candidates = [c for c in stored if holds_terms(c.embedded_text, probe.terms)]
                by_position = kb.vectors_by_position(document.id) if candidates else {}
                vectors = _with_missing(
                    candidates, by_position, lambda c: c.position, lambda c: c.embedded_text,
                    self.embedder,
                )  # fmt: skip
                for chunk in candidates:
                    why = probe.why_query(vectors[chunk.position])
                    if why is not None:
                        found.append(
                            ForgottenChunk(document.id, chunk.position, preview(chunk.text), why)
                        )
            if found:
                chunks.extend(found)
                documents.append(
                    ForgottenDocument(
                        document.id,
                        document.title,
                        len(stored),
                        tuple(c.position for c in found),
                    )
                )
        return tuple(chunks), tuple(documents)


def _with_missing(
    rows: Sequence[Row],
    stored: dict[Key, Vector],
    key: Callable[[Row], Key],
    text: Callable[[Row], str],
    embedder: Embedder,
) -> dict[Key, Vector]:
    """The stored vectors, plus one embedded now for each row without one (a chunk still
    waiting for its vector, a memory written while the embedder was away)."""
    missing = [row for row in rows if key(row) not in stored]
    vectors = dict(stored)
    for row, vector in zip(missing, embed_texts(embedder, [text(r) for r in missing]), strict=True):
        vectors[key(row)] = vector
    return vectors


def _forgotten_memory(memory: Memory, why: str) -> ForgottenMemory:
    return ForgottenMemory(
        memory.id, memory.status.value, memory.kind.value, preview(memory.content), why
    )


def _cosine(left: Vector, right: Vector) -> float:
    import numpy as np

    norms = float(np.linalg.norm(left) * np.linalg.norm(right))
    return float(np.dot(left, right)) / norms if norms else 0.0


def _record(result: ForgetResult) -> str:
    """The request and what it erased, counted: no content, no ids of what is gone."""
    return json.dumps(
        {
            "at": result.at.isoformat(),
            "request": result.summary,
            "memories": len(result.memories),
            "chunks": len(result.chunks),
            "documents": len(result.documents),
        },
        sort_keys=True,
    )
