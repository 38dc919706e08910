"""What the knowledge base answers: an ingest's outcome, search hits and read spans, each with
its JSON shape and its text fenced for the model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, NotRequired, TypedDict

from memoryd.json_shapes import CliOnly, Default, Described
from memoryd.kb.model import Chunk, ChunkKey, Document, DocumentJson, page_label
from memoryd.kb.result_policy import merge_pages
from memoryd.kb.routing import Route
from memoryd.kb.search import KbSearchPolicy, RankedChunk
from memoryd.trust.fence import escape_data, fence

IngestOutcome = Literal["ok", "skipped", "queued", "failed"]


class IngestJson(TypedDict):
    # What one ingest did.
    source: str
    outcome: IngestOutcome
    reason: str | None
    document: DocumentJson | None
    seconds: float
    searchable_seconds: Annotated[
        float | None,
        Default(None),
        Described("seconds until the chunks were written (keyword-searchable)"),
    ]


@dataclass(frozen=True)
class IngestResult:
    """What happened to one source: ok, skipped (unchanged), queued (retry) or failed."""

    source: str
    outcome: IngestOutcome
    document: Document | None = None
    reason: str | None = None
    seconds: float = 0.0
    # Seconds from the start until the chunks were committed (keyword-searchable from then).
    searchable_seconds: float | None = None
    # The persisted job that fills the document's missing vectors, when this ingest made one.
    vector_job: str | None = None
    # The last page the chunks cite (0: no pages, or nothing written).
    pages: int = 0

    def to_json(self) -> IngestJson:
        """JSON shape for the CLI and API."""
        return {
            "source": self.source,
            "outcome": self.outcome,
            "reason": self.reason,
            "document": self.document.to_json() if self.document else None,
            "seconds": round(self.seconds, 3),
            "searchable_seconds": (
                None if self.searchable_seconds is None else round(self.searchable_seconds, 3)
            ),
        }


class KbHitJson(TypedDict):
    # A passage search_kb found.
    doc: str
    chunk: int
    title: str
    breadcrumb: str
    pages: Annotated[list[int] | None, Default(None)]
    cite: Annotated[str | None, Default(None)]
    source: str
    collection: str
    score: float
    content: str
    # Only with ``explain``: the score's parts.
    explain: NotRequired[Annotated[dict[str, Any] | None, Default(None)]]


@dataclass(frozen=True)
class KbHit:
    """One search result, fenced for the model: its best chunk and the other chunks found on
    the same pages (:mod:`memoryd.kb.result_policy`), shown together in document order."""

    document: Document
    chunk: Chunk
    ranked: RankedChunk
    merged: tuple[Chunk, ...] = ()

    @property
    def chunks(self) -> tuple[Chunk, ...]:
        """The result's chunks in document order."""
        return tuple(sorted((self.chunk, *self.merged), key=lambda c: c.position))

    @property
    def text(self) -> str:
        """The result's text: its chunks in document order, consecutive ones without the
        text they repeat."""
        if not self.merged:
            return self.chunk.text
        parts: list[str] = []
        previous: int | None = None
        for chunk in self.chunks:
            consecutive = previous is not None and chunk.position == previous + 1
            parts.append(chunk.text[chunk.overlap_chars if consecutive else 0 :].strip("\n"))
            previous = chunk.position
        return "\n\n".join(part for part in parts if part)

    @property
    def page_range(self) -> tuple[int, int] | None:
        """The pages the result's chunks come from, or None."""
        ranges = [c.page_range for c in self.chunks if c.page_range is not None]
        if not ranges:
            return None
        return min(r[0] for r in ranges), max(r[1] for r in ranges)

    @property
    def fenced(self) -> str:
        """The result inside ``<untrusted_content …>``, escaped, citing its pages."""
        return _fenced(
            self.document,
            ",".join(str(c.position) for c in self.chunks),
            self.text,
            self.chunk.breadcrumb,
            self.page_range,
        )

    def to_json(self, explain: bool = False) -> KbHitJson:
        """JSON shape; ``explain`` adds the score's parts."""
        shaped: KbHitJson = {
            "doc": self.document.id,
            "chunk": self.chunk.position,
            # Outside the fence, so escaped as fenced text is: a document's author wrote them.
            "title": escape_data(self.document.title),
            "breadcrumb": escape_data(self.chunk.breadcrumb),
            "pages": list(self.page_range) if self.page_range else None,
            "cite": page_label(self.page_range) or None,
            "source": escape_data(self.document.source_uri),
            "collection": escape_data(self.document.collection),
            "score": round(self.ranked.score, 6),
            "content": self.fenced,
        }
        if explain:
            shaped["explain"] = self.explained()
        return shaped

    def explained(self) -> dict[str, Any]:
        """The score's parts (``explain`` in the JSON shape)."""
        return {
            "cosine": None if self.ranked.cosine is None else round(self.ranked.cosine, 4),
            "vector_rank": self.ranked.vector_rank,
            "keyword_rank": self.ranked.keyword_rank,
            "shared_words": self.ranked.shared_words,
            "weight": self.ranked.weight,
            "routed_vector_rank": self.ranked.routed_vector_rank,
            "routed_keyword_rank": self.ranked.routed_keyword_rank,
            "row_rank": self.ranked.row_rank,
            "routed_row_rank": self.ranked.routed_row_rank,
            "row_vector_rank": self.ranked.row_vector_rank,
            "routed_row_vector_rank": self.ranked.routed_row_vector_rank,
            "row_evidence_rank": self.ranked.row_evidence_rank,
            "merged_chunks": [c.position for c in self.merged],
        }


def assemble_hits(
    ranked: Sequence[RankedChunk],
    documents: Mapping[str, Document],
    chunks: Mapping[ChunkKey, Chunk],
    limit: int,
    policy: KbSearchPolicy,
) -> tuple[KbHit, ...]:
    """At most ``limit`` results from the fused ranking, best first; with the policy's
    ``merge_pages``, the chunks on a page of a better result of the same document join that
    result (at most ``merge_most`` chunks a result)."""
    found = [r for r in ranked if r.key in chunks and r.key.document_id in documents]
    if not policy.merge_pages:
        return tuple(KbHit(documents[r.key.document_id], chunks[r.key], r) for r in found[:limit])
    pages = {r.key: chunks[r.key].page_range for r in found}
    return tuple(
        KbHit(
            documents[lead.key.document_id],
            chunks[lead.key],
            lead,
            tuple(chunks[key] for key in more),
        )
        for lead, more in merge_pages(found, pages, limit, policy.merge_most)
    )


class KbRouteJson(TypedDict):
    # A document the question names, and why.
    doc: str
    title: str
    because: list[str]


class KbSearchJson(TypedDict):
    # search_kb's answer.
    query: str
    pinned_collections: list[str]
    results: list[KbHitJson]
    # Only with ``explain``, and only on the CLI.
    routed_to: NotRequired[Annotated[list[KbRouteJson], CliOnly()]]


@dataclass(frozen=True)
class KbSearchResult:
    """search_kb's answer."""

    query: str
    hits: tuple[KbHit, ...]
    pinned: tuple[str, ...] = ()
    # The nearest chunks the gates stopped, with why (for the context pack's dropped list).
    stopped: tuple[tuple[ChunkKey, str], ...] = ()
    # The documents the question names (company, period, form, title), with why.
    routes: tuple[Route, ...] = ()

    @property
    def text(self) -> str:
        """All hits fenced, best first, for the model."""
        if not self.hits:
            return "No matching documents."
        return "\n\n".join(hit.fenced for hit in self.hits)

    def to_json(self, explain: bool = False) -> KbSearchJson:
        """JSON shape."""
        shaped: KbSearchJson = {
            "query": self.query,
            "pinned_collections": list(self.pinned),
            "results": [hit.to_json(explain) for hit in self.hits],
        }
        if explain:
            shaped["routed_to"] = [
                {"doc": r.document_id, "title": r.title, "because": list(r.reasons)}
                for r in self.routes
            ]
        return shaped

    @property
    def routing_line(self) -> str:
        """One line saying which documents the question names and why ('' when none)."""
        if not self.routes:
            return ""
        named = "; ".join(f"{r.title} ({', '.join(r.reasons)})" for r in self.routes)
        return f"the question names: {named}"


class KbReadJson(TypedDict):
    # read_kb's answer.
    doc: str
    title: str
    chunks: list[int]
    pages: Annotated[list[int] | None, Default(None)]
    cite: Annotated[str | None, Default(None)]
    tokens: int
    next_chunk: int | None
    content: str


@dataclass(frozen=True)
class KbReadResult:
    """read_kb's answer: a bounded, fenced span of one document."""

    document: Document
    first: int
    last: int
    text: str
    tokens: int
    next_chunk: int | None
    sections: tuple[str, ...] = field(default=())
    pages: tuple[int, int] | None = None

    @property
    def fenced(self) -> str:
        """The span inside ``<untrusted_content …>``, with where to continue."""
        span = str(self.first) if self.first == self.last else f"{self.first}-{self.last}"
        body = _fenced(self.document, span, self.text, self.document.title, self.pages)
        if self.next_chunk is not None:
            body += (
                f"\n(truncated at the token budget; continue with doc={self.document.id} "
                f"chunks={self.next_chunk}-{self.document.chunk_count - 1})"
            )
        return body

    def to_json(self) -> KbReadJson:
        """JSON shape."""
        return {
            "doc": self.document.id,
            "title": escape_data(self.document.title),
            "chunks": [self.first, self.last],
            "pages": list(self.pages) if self.pages else None,
            "cite": page_label(self.pages) or None,
            "tokens": self.tokens,
            "next_chunk": self.next_chunk,
            "content": self.fenced,
        }


def _fenced(
    document: Document, chunk: str, text: str, crumb: str, pages: tuple[int, int] | None
) -> str:
    cite = page_label(pages)
    head = " ".join(
        part for part in (f"[{crumb}]" if crumb else "", f"({cite})" if cite else "") if part
    )
    body = escape_data(f"{head}\n{text}" if head else text)
    attributes = {"source": document.source_uri, "doc": document.id, "chunk": chunk}
    if pages is not None:
        first, last = pages
        attributes["pages"] = str(first) if first == last else f"{first}-{last}"
    return fence("untrusted_content", body, attributes)
