"""The knowledge base: ingest documents, search and read them for the model (SPEC §6).

Conversion, chunking and embedding happen outside any transaction; a document's row and all
of its chunks are then written in one. A source that cannot be read leaves what was stored
before untouched; one that failed for a passing reason (a URL timing out) is retried from the
persisted job queue after 2, 10 and 30 minutes.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from ..clock import Clock, utc_now
from ..embedding import Embedder
from ..errors import DocumentNotFoundError, InvalidInputError, MemorydError
from ..fence import escape_data, fence
from ..ids import IdGenerator
from ..jobs import Job, JobStatus, RetryPolicy
from ..screening import find_credential, redact_credentials
from ..storage.protocols import Store
from ..textutil import query_terms
from ..tokens import TokenCodec
from .chunking import ChunkPolicy, breadcrumb, chunk_markdown, join_chunks
from .convert import ConversionError, Converted, Limits, convert
from .fetch import FetchUnavailableError, check_url, fetch, is_url
from .images import ImageReader
from .model import (
    Chunk,
    Document,
    DocumentStatus,
    SourceType,
    check_collection,
    page_label,
)
from .search import DocumentWeighting, KbSearchPolicy, RankedChunk, fuse

log = logging.getLogger(__name__)

JOB_KIND = "kb_ingest"
DEFAULT_COLLECTION = "default"
# SPEC §6: transient failures retry after 2, 10 and 30 minutes, then the document fails.
KB_RETRY = RetryPolicy(steps_seconds=(120, 600, 1800), max_attempts=4, lease_seconds=900)
# read_kb never returns more than this many tokens, whatever the caller asks.
READ_DEFAULT_TOKENS = 2000
READ_MAX_TOKENS = 8000
MAX_TITLE_CHARS = 200


@dataclass(frozen=True)
class IngestResult:
    """What happened to one source: ok, skipped (unchanged), queued (retry) or failed."""

    source: str
    outcome: str
    document: Document | None = None
    reason: str | None = None
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """JSON shape for the CLI and API."""
        return {
            "source": self.source,
            "outcome": self.outcome,
            "reason": self.reason,
            "document": self.document.to_json() if self.document else None,
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True)
class KbHit:
    """One search result, fenced for the model."""

    document: Document
    chunk: Chunk
    ranked: RankedChunk

    @property
    def fenced(self) -> str:
        """The chunk inside ``<untrusted_content …>``, escaped, citing its pages."""
        return _fenced(
            self.document,
            str(self.chunk.position),
            self.chunk.text,
            self.chunk.breadcrumb,
            self.chunk.page_range,
        )

    def to_json(self, explain: bool = False) -> dict[str, Any]:
        """JSON shape; ``explain`` adds the score's parts."""
        shaped: dict[str, Any] = {
            "doc": self.document.id,
            "chunk": self.chunk.position,
            "title": self.document.title,
            "breadcrumb": self.chunk.breadcrumb,
            "pages": list(self.chunk.page_range) if self.chunk.page_range else None,
            "cite": self.chunk.page_label or None,
            "source": self.document.source_uri,
            "collection": self.document.collection,
            "score": round(self.ranked.score, 6),
            "content": self.fenced,
        }
        if explain:
            shaped["explain"] = {
                "cosine": None if self.ranked.cosine is None else round(self.ranked.cosine, 4),
                "vector_rank": self.ranked.vector_rank,
                "keyword_rank": self.ranked.keyword_rank,
                "shared_words": self.ranked.shared_words,
                "weight": self.ranked.weight,
            }
        return shaped


@dataclass(frozen=True)
class KbSearchResult:
    """search_kb's answer."""

    query: str
    hits: tuple[KbHit, ...]
    pinned: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """All hits fenced, best first, for the model."""
        if not self.hits:
            return "No matching documents."
        return "\n\n".join(hit.fenced for hit in self.hits)

    def to_json(self, explain: bool = False) -> dict[str, Any]:
        """JSON shape."""
        return {
            "query": self.query,
            "pinned_collections": list(self.pinned),
            "results": [hit.to_json(explain) for hit in self.hits],
        }


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

    def to_json(self) -> dict[str, Any]:
        """JSON shape."""
        return {
            "doc": self.document.id,
            "title": self.document.title,
            "chunks": [self.first, self.last],
            "pages": list(self.pages) if self.pages else None,
            "cite": page_label(self.pages) or None,
            "tokens": self.tokens,
            "next_chunk": self.next_chunk,
            "content": self.fenced,
        }


class KnowledgeBase:
    """Documents for the model to pull with tools; owned by the memory service."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        tokenizer: TokenCodec,
        reader: Callable[[], ImageReader],
        *,
        limits: Limits | None = None,
        chunk_policy: ChunkPolicy | None = None,
        search_policy: KbSearchPolicy | None = None,
        retry_policy: RetryPolicy = KB_RETRY,
        clock: Clock = utc_now,
        ids: IdGenerator | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.tokenizer = tokenizer
        self._reader_factory = reader
        self._reader: ImageReader | None = None
        self.limits = limits or Limits()
        self.chunk_policy = chunk_policy or ChunkPolicy()
        self.search_policy = search_policy or KbSearchPolicy()
        self.retry_policy = retry_policy
        self._clock = clock
        self._ids = ids or IdGenerator()

    # ----------------------------------------------------------------- ingest

    def expand(self, sources: Sequence[str | Path]) -> list[str]:
        """Sources with folders replaced by their files (recursive, sorted, hidden skipped)."""
        expanded: list[str] = []
        for source in sources:
            text = str(source)
            if is_url(text) or "\x00" in text:
                expanded.append(text)
                continue
            path = Path(text).expanduser()
            if path.is_dir():
                expanded.extend(
                    str(p)
                    for p in sorted(path.rglob("*"))
                    if p.is_file()
                    and not any(part.startswith(".") for part in p.relative_to(path).parts)
                )
            else:
                expanded.append(text)
        return expanded

    def ingest(
        self,
        sources: Sequence[str | Path],
        *,
        collection: str = DEFAULT_COLLECTION,
        source_type: SourceType | None = None,
        now: datetime | None = None,
        progress: Callable[[IngestResult], None] | None = None,
    ) -> list[IngestResult]:
        """Ingest files, folders and URLs; one result per file, failures included. Without a
        ``source_type``, URLs are web clips and files are curated."""
        collection = check_collection(collection)
        results = []
        for source in self.expand(sources):
            kind = source_type or (SourceType.WEB if is_url(source) else SourceType.CURATED)
            result = self._ingest_source(source, collection, kind, now)
            results.append(result)
            if progress is not None:
                progress(result)
        return results

    def ingest_bytes(
        self,
        data: bytes,
        name: str,
        *,
        collection: str = DEFAULT_COLLECTION,
        source_type: SourceType = SourceType.CURATED,
        source_uri: str | None = None,
        content_type: str | None = None,
        now: datetime | None = None,
    ) -> IngestResult:
        """Ingest given bytes (an upload); ``source_uri`` defaults to ``upload:<name>``."""
        collection = check_collection(collection)
        if not name.strip():
            raise InvalidInputError("an upload needs a file name (it decides the type)")
        uri = source_uri or f"upload:{Path(name).name}"
        started = time.perf_counter()
        return self._store_converted(
            uri, name, data, content_type, collection, source_type, now, started
        )

    def reingest(self, document_id: str, *, now: datetime | None = None) -> IngestResult:
        """Read a document's source again (a file or URL), even if unchanged."""
        document = self.get(document_id)
        if document.source_uri.startswith("upload:"):
            raise InvalidInputError(
                f"document {document_id} was uploaded; upload the new version instead"
            )
        return self._ingest_source(
            document.source_uri, document.collection, document.source_type, now, force=True
        )

    def run_retries(
        self, *, now: datetime | None = None, limit: int | None = None
    ) -> list[IngestResult]:
        """Run the due ingest retries (called by the worker and by ``memoryd worker``)."""
        results: list[IngestResult] = []
        while limit is None or len(results) < limit:
            at = now or self._clock()
            with self.store.transaction():
                job = self.store.jobs.claim([JOB_KIND], at, self.retry_policy.lease_seconds)
            if job is None:
                break
            results.append(self._run_retry(job, at))
        return results

    # ------------------------------------------------------------ search, read

    def search(
        self,
        query: str,
        *,
        pinned_collections: Sequence[str] = (),
        limit: int | None = None,
    ) -> KbSearchResult:
        """search_kb: the gated vector and keyword legs, fused and weighted (SPEC §6)."""
        policy = self.search_policy
        text = query.strip()
        if not text:
            raise InvalidInputError("search_kb needs a query")
        if len(text) > 2000:
            raise InvalidInputError("the query is over 2,000 characters; shorten it")
        wanted = policy.default_limit if limit is None else limit
        if not 1 <= wanted <= policy.max_limit:
            raise InvalidInputError(f"limit must be between 1 and {policy.max_limit}")
        pinned = tuple(check_collection(c) for c in pinned_collections)
        terms = query_terms(text)
        vector = self.embedder.embed([text])[0]
        vector_hits = self.store.kb.nearest_chunks(vector, policy.pool)
        keyword_hits = self.store.kb.keyword_chunks(terms, policy.pool)
        keyword_chunks = self.store.kb.chunks_by_key(keyword_hits)
        stems = {_stem(t) for t in terms}
        shared = {
            key: len(stems & {_stem(t) for t in query_terms(_searchable(chunk))})
            for key, chunk in keyword_chunks.items()
        }
        documents = self.store.kb.documents_by_id(
            [k.document_id for k, _ in vector_hits] + [k.document_id for k in keyword_hits]
        )
        weighting = {
            doc_id: DocumentWeighting(doc.source_type, doc.collection)
            for doc_id, doc in documents.items()
        }
        ranked = fuse(
            vector_hits, keyword_hits, shared, weighting, frozenset(pinned), policy, wanted
        )
        missing = [r.key for r in ranked if r.key not in keyword_chunks]
        chunks = {**keyword_chunks, **self.store.kb.chunks_by_key(missing)}
        hits = tuple(
            KbHit(documents[r.key.document_id], chunks[r.key], r) for r in ranked if r.key in chunks
        )
        return KbSearchResult(text, hits, pinned)

    def read(
        self,
        document_id: str,
        *,
        section: str | None = None,
        chunks: tuple[int, int] | None = None,
        pages: tuple[int, int] | None = None,
        max_tokens: int = READ_DEFAULT_TOKENS,
    ) -> KbReadResult:
        """read_kb: a document, one section, a chunk range or a page range, bounded by
        ``max_tokens``."""
        document = self.get(document_id)
        if document.status is not DocumentStatus.READY:
            raise InvalidInputError(
                f"document {document_id} is {document.status.value}"
                + (f": {document.error}" if document.error else "")
            )
        if not 1 <= max_tokens <= READ_MAX_TOKENS:
            raise InvalidInputError(f"max_tokens must be between 1 and {READ_MAX_TOKENS}")
        if sum(x is not None for x in (section, chunks, pages)) > 1:
            raise InvalidInputError("read a section, a chunk range or a page range: one at a time")
        if pages is not None:
            return self._read_pages(document, pages, max_tokens)
        if chunks is not None:
            first, last = chunks
            if first < 0 or last < first:
                raise InvalidInputError("a chunk range is first-last with 0 <= first <= last")
            if first >= document.chunk_count:
                raise InvalidInputError(
                    f"document {document_id} has chunks 0-{document.chunk_count - 1}"
                )
            span = self.store.kb.chunks(document_id, first, last)
        elif section is not None:
            span = self._section(document, section)
        else:
            span = self.store.kb.chunks(document_id)
        taken: list[Chunk] = []
        used = 0
        for chunk in span:
            cost = (
                chunk.tokens
                if not taken
                else self.tokenizer.count(chunk.text[chunk.overlap_chars :])
            )
            if taken and used + cost > max_tokens:
                break
            taken.append(chunk)
            used += cost
        text = join_chunks([(c.text, c.overlap_chars) for c in taken])
        if used > max_tokens:  # a single chunk larger than the budget
            text, used = self._bounded(text, max_tokens)
        following = span[len(taken)].position if len(taken) < len(span) else None
        return KbReadResult(
            document,
            taken[0].position,
            taken[-1].position,
            text,
            used,
            following,
            pages=_pages_of(taken),
        )

    def _read_pages(
        self, document: Document, pages: tuple[int, int], max_tokens: int
    ) -> KbReadResult:
        """Exactly the text of pages first–last (as converted), bounded by ``max_tokens``."""
        first, last = pages
        if first < 1 or last < first:
            raise InvalidInputError("a page range is first-last with 1 <= first <= last")
        every = self.store.kb.chunks(document.id)
        known = _pages_of(every)
        if known is None:
            raise InvalidInputError(
                f"document {document.id} has no pages ({document.document_type}); read it by "
                "section or chunks"
            )
        if first > known[1]:
            raise InvalidInputError(f"document {document.id} has pages {known[0]}-{known[1]}")
        span = [c for c in every if _overlaps(c.page_range, first, last)]
        text, starts = _joined_with_pages(span)
        begin = starts.get(first, 0) if first > span[0].page_range[0] else 0  # type: ignore[index]
        following = [offset for page, offset in starts.items() if page > last]
        end = min(following) if following else len(text)
        text = text[begin:end].strip("\n")
        text, used = self._bounded(text, max_tokens)
        return KbReadResult(
            document,
            span[0].position,
            span[-1].position,
            text,
            used,
            None,
            pages=(max(first, known[0]), min(last, known[1])),
        )

    # ------------------------------------------------------------------- owner

    def get(self, document_id: str) -> Document:
        """One document, or a clear error."""
        document = self.store.kb.get_document(document_id.strip())
        if document is None:
            raise DocumentNotFoundError(
                f"no document with id {document_id!r}; `memoryd kb list` shows the ids"
            )
        return document

    def list_documents(
        self, *, collection: str | None = None, limit: int | None = None
    ) -> list[Document]:
        """Documents, newest first."""
        return self.store.kb.documents(collection=collection, limit=limit)

    def rename(self, document_id: str, title: str, *, now: datetime | None = None) -> Document:
        """The owner's title for a document: every chunk's breadcrumb (embedded with it) is
        rebuilt and embedded again, in one transaction."""
        name = " ".join(title.split())
        if not name:
            raise InvalidInputError("a document's title cannot be empty")
        if len(name) > MAX_TITLE_CHARS:
            raise InvalidInputError(f"a document's title is at most {MAX_TITLE_CHARS} characters")
        document = self.get(document_id)
        chunks = [
            replace(c, breadcrumb=breadcrumb(name, c.headings))
            for c in self.store.kb.chunks(document.id)
        ]
        vectors = list(self.embedder.embed([c.embedded_text for c in chunks])) if chunks else []
        renamed = replace(document, title=name, updated_at=now or self._clock())
        with self.store.transaction():
            self.store.kb.save_document(renamed)
            if chunks:
                self.store.kb.replace_chunks(document.id, chunks, vectors)
        return renamed

    def delete(self, document_id: str) -> Document:
        """Remove a document and its chunks."""
        document = self.get(document_id)
        with self.store.transaction():
            self.store.kb.delete_document(document.id)
        return document

    def pinned_hint(self, pinned_collections: Sequence[str]) -> str:
        """One line for the system prompt when collections are pinned ('' when none)."""
        names = [check_collection(c) for c in pinned_collections]
        if not names:
            return ""
        listed = ", ".join(names)
        return (
            f"The owner's documents in {listed} are relevant to this conversation: call "
            "search_kb before answering from memory or general knowledge."
        )

    # -------------------------------------------------------------- internals

    @property
    def reader(self) -> ImageReader:
        """The image reader, made on first use (OCR models load only when needed)."""
        if self._reader is None:
            self._reader = self._reader_factory()
        return self._reader

    def _ingest_source(
        self,
        source: str,
        collection: str,
        source_type: SourceType,
        now: datetime | None,
        *,
        force: bool = False,
        job: Job | None = None,
    ) -> IngestResult:
        started = time.perf_counter()
        if "\x00" in source:
            return IngestResult(
                source.replace("\x00", "\\x00"),
                "failed",
                None,
                "the source holds a NUL byte; no file or URL can have that name",
                time.perf_counter() - started,
            )
        if find_credential(source) is not None:
            # Recording the source (even as failed) would store the credential it carries.
            return IngestResult(
                redact_credentials(source),
                "failed",
                None,
                "the source carries a password or token, and memoryd never stores "
                "credentials; download the file and ingest it from disk",
                time.perf_counter() - started,
            )
        try:
            if is_url(source):
                check_url(source)
                fetched = fetch(
                    source, max_bytes=self.limits.max_bytes, timeout=self.limits.fetch_timeout
                )
                return self._store_converted(
                    source,
                    fetched.name,
                    fetched.data,
                    fetched.content_type,
                    collection,
                    source_type,
                    now,
                    started,
                    force=force,
                )
            path = Path(source).expanduser().resolve()
            data = _read_file(path, self.limits)
            return self._store_converted(
                str(path),
                path.name,
                data,
                None,
                collection,
                source_type,
                now,
                started,
                force=force,
            )
        except FetchUnavailableError as error:
            if job is not None:
                raise
            return self._queue_retry(source, collection, source_type, str(error), now, started)
        except ConversionError as error:
            return self._record_failure(
                _uri_of(source), collection, source_type, str(error), now, started
            )

    def _store_converted(
        self,
        uri: str,
        name: str,
        data: bytes,
        content_type: str | None,
        collection: str,
        source_type: SourceType,
        now: datetime | None,
        started: float,
        *,
        force: bool = False,
    ) -> IngestResult:
        at = now or self._clock()
        digest = hashlib.sha256(data).hexdigest()
        existing = self.store.kb.document_by_uri(uri)
        if (
            not force
            and existing is not None
            and existing.status is DocumentStatus.READY
            and existing.error is None
            and existing.content_hash == digest
            and existing.collection == collection
            and existing.source_type is source_type
        ):
            return IngestResult(
                uri,
                "skipped",
                existing,
                "unchanged since the last ingest",
                time.perf_counter() - started,
            )
        try:
            converted = convert(
                data, name, self.reader, limits=self.limits, content_type=content_type
            )
        except ConversionError as error:
            return self._record_failure(uri, collection, source_type, str(error), now, started)
        chunks = self._chunk(converted)
        if not chunks:
            return self._record_failure(
                uri, collection, source_type, "the document has no text to index", now, started
            )
        vectors = list(self.embedder.embed([c.embedded_text for c in chunks]))
        document = Document(
            id=existing.id if existing else self._ids.new_id(at),
            source_uri=uri,
            collection=collection,
            source_type=source_type,
            title=converted.title,
            status=DocumentStatus.READY,
            created_at=existing.created_at if existing else at,
            updated_at=at,
            content_hash=digest,
            document_type=converted.document_type.value,
            chunk_count=len(chunks),
            token_count=sum(c.tokens for c in chunks),
            images_read=converted.images_read,
            byte_size=len(data),
        )
        with self.store.transaction():
            # Another ingest of the same source may have finished meanwhile: take its id, so
            # the source keeps one document whatever the race.
            current = self.store.kb.document_by_uri(uri)
            if current is not None and current.id != document.id:
                document = replace(document, id=current.id, created_at=current.created_at)
            chunks = [replace(c, document_id=document.id) for c in chunks]
            self.store.kb.save_document(document)
            self.store.kb.replace_chunks(document.id, chunks, vectors)
        return IngestResult(uri, "ok", document, None, time.perf_counter() - started)

    def _chunk(self, converted: Converted) -> list[Chunk]:
        drafts = chunk_markdown(
            converted.markdown, self.tokenizer.count, self._tail, self.chunk_policy
        )
        return [
            Chunk(
                document_id="",
                position=d.position,
                headings=d.headings,
                breadcrumb=breadcrumb(converted.title, d.headings),
                text=d.text,
                tokens=d.tokens,
                overlap_chars=d.overlap_chars,
                pages=d.pages,
            )
            for d in drafts
        ]

    def _tail(self, text: str, tokens: int) -> str:
        if tokens <= 0:
            return ""
        ids = self.tokenizer.encode(text)
        return self.tokenizer.decode(ids[-tokens:]) if tokens < len(ids) else text

    def _bounded(self, text: str, max_tokens: int) -> tuple[str, int]:
        """``text`` cut to its first ``max_tokens`` tokens, and its token count."""
        tokens = self.tokenizer.encode(text)
        if len(tokens) <= max_tokens:
            return text, len(tokens)
        head = self.tokenizer.decode(tokens[:max_tokens])
        return head, self.tokenizer.count(head)

    def _section(self, document: Document, section: str) -> list[Chunk]:
        wanted = " ".join(section.split()).casefold()
        every = self.store.kb.chunks(document.id)
        exact = [c for c in every if any(h.casefold() == wanted for h in c.headings)]
        if exact:
            return exact
        partial = [c for c in every if any(wanted in h.casefold() for h in c.headings)]
        if partial:
            return partial
        names = list(dict.fromkeys(h for c in every for h in c.headings))
        listed = "; ".join(names[:20]) or "none (the document has no headings)"
        raise InvalidInputError(
            f"no section {section!r} in document {document.id}; sections: {listed}"
        )

    def _record_failure(
        self,
        source: str,
        collection: str,
        source_type: SourceType,
        reason: str,
        now: datetime | None,
        started: float,
    ) -> IngestResult:
        """A failed source: a new one is recorded as failed; a stored one keeps its chunks
        (bad input never loses what was stored) and carries the error."""
        at = now or self._clock()
        uri = source
        with self.store.transaction():
            existing = self.store.kb.document_by_uri(uri)
            if existing is not None and existing.status is DocumentStatus.READY:
                document = replace(
                    existing, error=f"the last re-ingest failed: {reason}", updated_at=at
                )
            else:
                document = Document(
                    id=existing.id if existing else self._ids.new_id(at),
                    source_uri=uri,
                    collection=collection,
                    source_type=source_type,
                    title=existing.title if existing else _title_of(uri),
                    status=DocumentStatus.FAILED,
                    created_at=existing.created_at if existing else at,
                    updated_at=at,
                    error=reason,
                )
            self.store.kb.save_document(document)
        return IngestResult(uri, "failed", document, reason, time.perf_counter() - started)

    def _queue_retry(
        self,
        source: str,
        collection: str,
        source_type: SourceType,
        reason: str,
        now: datetime | None,
        started: float,
    ) -> IngestResult:
        at = now or self._clock()
        retry_at = self.retry_policy.next_attempt(1, at)
        assert retry_at is not None
        job = Job(
            id=self._ids.new_id(at),
            kind=JOB_KIND,
            payload={"source": source, "collection": collection, "source_type": source_type.value},
            status=JobStatus.QUEUED,
            attempts=0,
            next_attempt_at=retry_at,
            created_at=at,
        )
        with self.store.transaction():
            existing = self.store.kb.document_by_uri(source)
            document = existing or Document(
                id=self._ids.new_id(at),
                source_uri=source,
                collection=collection,
                source_type=source_type,
                title=_title_of(source),
                status=DocumentStatus.QUEUED,
                created_at=at,
                updated_at=at,
            )
            document = replace(
                document, error=f"{reason}; retrying at {retry_at.isoformat()}", updated_at=at
            )
            self.store.kb.save_document(document)
            self.store.jobs.enqueue(job)
        return IngestResult(
            source,
            "queued",
            document,
            f"{reason}; retry at {retry_at.isoformat(timespec='minutes')}",
            time.perf_counter() - started,
        )

    def _run_retry(self, job: Job, at: datetime) -> IngestResult:
        source = str(job.payload["source"])
        collection = str(job.payload["collection"])
        source_type = SourceType(str(job.payload["source_type"]))
        started = time.perf_counter()
        if self.store.kb.document_by_uri(source) is None:
            # The owner deleted the document while it waited: the retry is cancelled.
            with self.store.transaction():
                self.store.jobs.fail(job.id, "the document was deleted; retry cancelled", at)
            return IngestResult(
                source, "failed", None, "the document was deleted", time.perf_counter() - started
            )
        try:
            result = self._ingest_source(source, collection, source_type, at, force=True, job=job)
        except FetchUnavailableError as error:
            retry_at = self.retry_policy.next_attempt(job.attempts + 1, at)
            if retry_at is None:
                reason = f"{error}; gave up after {job.attempts + 1} attempts"
                with self.store.transaction():
                    self.store.jobs.fail(job.id, reason, at)
                return self._record_failure(source, collection, source_type, reason, at, started)
            with self.store.transaction():
                self.store.jobs.retry(job.id, str(error), retry_at)
                existing = self.store.kb.document_by_uri(source)
                if existing is not None:
                    self.store.kb.save_document(
                        replace(
                            existing,
                            error=f"{error}; retrying at {retry_at.isoformat()}",
                            updated_at=at,
                        )
                    )
            return IngestResult(
                source,
                "queued",
                self.store.kb.document_by_uri(source),
                str(error),
                time.perf_counter() - started,
            )
        except MemorydError as error:
            with self.store.transaction():
                self.store.jobs.fail(job.id, str(error), at)
            raise
        with self.store.transaction():
            if result.outcome == "failed":
                self.store.jobs.fail(job.id, result.reason or "failed", at)
            else:
                self.store.jobs.finish(job.id, {"outcome": result.outcome}, at)
        return result


def _read_file(path: Path, limits: Limits) -> bytes:
    """A file's bytes, or a clear per-file error (missing, a folder, too big, unreadable)."""
    if "\x00" in str(path):
        raise ConversionError("the path holds a NUL byte; no file can have that name")
    if not path.exists():
        raise ConversionError(f"no such file: {path}")
    if not path.is_file():
        raise ConversionError(f"{path} is not a regular file")
    size = path.stat().st_size
    if size > limits.max_bytes:
        raise ConversionError(
            f"the file is {size / 1e6:.1f} MB, over the {limits.max_bytes / 1e6:g} MB limit; "
            "split it or raise the limit"
        )
    try:
        return path.read_bytes()
    except OSError as error:
        raise ConversionError(f"cannot read the file: {error.strerror}") from None


def _uri_of(source: str) -> str:
    if is_url(source) or source.startswith("upload:"):
        return source
    return str(Path(source).expanduser().resolve())


def _pages_of(chunks: Sequence[Chunk]) -> tuple[int, int] | None:
    """The pages a run of chunks covers, or None when they have none."""
    ranges = [c.page_range for c in chunks if c.page_range is not None]
    if not ranges:
        return None
    return min(r[0] for r in ranges), max(r[1] for r in ranges)


def _overlaps(pages: tuple[int, int] | None, first: int, last: int) -> bool:
    return pages is not None and pages[1] >= first and pages[0] <= last


def _joined_with_pages(chunks: Sequence[Chunk]) -> tuple[str, dict[int, int]]:
    """Consecutive chunks as one text (as :func:`join_chunks` joins them) and where each page
    begins in it."""
    text = ""
    starts: dict[int, int] = {}
    for index, chunk in enumerate(chunks):
        skip = chunk.overlap_chars if index else 0
        part = chunk.text[skip:]
        lead = len(part) - len(part.lstrip("\n"))
        base = len(text) + (2 if text else 0)
        for page, offset in chunk.pages:
            if offset >= skip and page not in starts:
                starts[page] = base + max(0, offset - skip - lead)
        piece = part.strip("\n")
        if piece:
            text = f"{text}\n\n{piece}" if text else piece
    return text, starts


def _title_of(uri: str) -> str:
    name = uri.rstrip("/").rsplit("/", 1)[-1]
    return name or uri


def _searchable(chunk: Chunk) -> str:
    return f"{chunk.breadcrumb}\n{chunk.text}"


def _stem(word: str) -> str:
    """A light English stem so 'cats' shares a word with 'cat' (as the porter index does)."""
    for suffix, keep in (
        ("ies", "y"),
        ("sses", "ss"),
        ("ing", ""),
        ("ed", ""),
        ("es", ""),
        ("s", ""),
    ):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: len(word) - len(suffix)] + keep
    return word


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
