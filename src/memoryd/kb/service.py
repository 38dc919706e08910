"""The knowledge base's front door: ingest documents, search and read them for the model, and
the owner's list, rename and delete (SPEC §6).

The work is split by job: :mod:`memoryd.kb.ingest` reads sources into documents and chunks,
:mod:`memoryd.kb.failures` keeps failed sources and their retries, :mod:`memoryd.kb.search`
decides (purely) what a search or a read returns, and :mod:`memoryd.kb.results` shapes the
answers.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from memoryd.clock import Clock, utc_now
from memoryd.config.settings import default_home
from memoryd.errors import DocumentNotFoundError, InvalidInputError
from memoryd.ids import IdGenerator, resolve_prefix
from memoryd.jobs.model import RetryPolicy
from memoryd.kb.chunking import ChunkPolicy, breadcrumb
from memoryd.kb.converted import Limits
from memoryd.kb.failures import JOB_KIND, KB_RETRY, Filing
from memoryd.kb.images import ImageReader
from memoryd.kb.ingest import Ingester, IngestRequest, expand_sources
from memoryd.kb.keyword_legs import candidates_and_routes, final_legs, needs_deep
from memoryd.kb.model import DEFAULT_COLLECTION, ChunkKey, Document, SourceType, check_collection
from memoryd.kb.naming import LabelCache, spell_out, topic_terms
from memoryd.kb.result_policy import row_evidence_first
from memoryd.kb.results import IngestResult, KbHit, KbReadResult, KbSearchResult, assemble_hits
from memoryd.kb.routing import spell_fiscal_years
from memoryd.kb.search import (
    READ_DEFAULT_TOKENS,
    READ_MAX_TOKENS,
    KbSearchPolicy,
    below_gates,
    bounded,
    check_chunk_range,
    check_query,
    check_read,
    fit_span,
    fuse,
    page_span,
    pages_of,
    section_chunks,
    weighting,
)
from memoryd.kb.urls import is_url
from memoryd.kb.vector_fill import FillListener, FillProgress, FillReport, IngestWatcher
from memoryd.kb.word_sets import WordCache, chunk_word_sets, shared_counts
from memoryd.providers.embedder import Embedder
from memoryd.providers.tokenizer import TokenCodec
from memoryd.storage.protocols import Store
from memoryd.trust.credential_screening import screened_field
from memoryd.words import query_terms

__all__ = [
    "DEFAULT_COLLECTION",
    "JOB_KIND",
    "KB_RETRY",
    "MAX_TITLE_CHARS",
    "READ_DEFAULT_TOKENS",
    "READ_MAX_TOKENS",
    "FillProgress",
    "IngestResult",
    "IngestWatcher",
    "KbHit",
    "KbReadResult",
    "KbSearchResult",
    "KnowledgeBase",
]

MAX_TITLE_CHARS = 200


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
        home: Path | None = None,
    ) -> None:
        self.store = store
        # Never ingested by any path: memoryd's home (the token, the settings) and the store.
        self.home: Path | None = home if home is not None else default_home(os.environ)
        location = getattr(store, "path", None)
        self.protected_files: tuple[Path, ...] = (location,) if isinstance(location, Path) else ()
        self.embedder = embedder
        self.tokenizer = tokenizer
        # Read at each use: a caller may replace them (``memoryd kb add --max-size``).
        self.limits = limits or Limits()
        self.chunk_policy = chunk_policy or ChunkPolicy()
        self.search_policy = search_policy or KbSearchPolicy()
        self._labels = LabelCache()  # the named documents' row labels, split into words
        self._words: WordCache = {}  # the words of chunks the keyword legs found
        self.retry_policy = retry_policy
        self._clock = clock
        self._ingester = Ingester(
            store, self, embedder, tokenizer, reader, clock=clock, ids=ids or IdGenerator()
        )

    @property
    def reader(self) -> ImageReader:
        """The image reader, made on first use (OCR models load only when needed)."""
        return self._ingester.reader

    # ----------------------------------------------------------------- ingest

    def expand(self, sources: Sequence[str | Path]) -> list[str]:
        """Sources with folders replaced by their files (recursive, sorted, hidden skipped)."""
        return [source for source, _ in expand_sources(sources)]

    def ingest(
        self,
        sources: Sequence[str | Path],
        *,
        collection: str = DEFAULT_COLLECTION,
        source_type: SourceType | None = None,
        now: datetime | None = None,
        progress: Callable[[IngestResult], None] | None = None,
        wait: bool = True,
        watcher: IngestWatcher | None = None,
    ) -> list[IngestResult]:
        """Ingest files, folders and URLs; one result per file, failures included. Without a
        ``source_type``, URLs are web clips and files are curated. Each document is keyword-
        searchable once its chunks are written; ``wait`` (the default) embeds its chunks
        before its result is given (converting the next file meanwhile), else the worker's
        job fills the vectors."""
        collection = check_collection(collection)
        filings = [
            Filing(
                source,
                collection,
                source_type or (SourceType.WEB if is_url(source) else SourceType.CURATED),
                root,
            )
            for source, root in expand_sources(sources)
        ]
        results = []
        for result in self._ingest_each(filings, now, wait, watcher):
            results.append(result)
            if progress is not None:
                progress(result)
        return results

    def _ingest_each(
        self,
        filings: Sequence[Filing],
        now: datetime | None,
        wait: bool,
        watcher: IngestWatcher | None,
    ) -> Iterator[IngestResult]:
        ingester = self._ingester
        if not wait or len(filings) < 2:
            for filing in filings:
                yield ingester.ingest_source(filing, now, wait=wait, watcher=watcher)
            return

        def write(filing: Filing) -> IngestResult:
            return ingester.ingest_source(filing, now, wait=False, watcher=watcher)

        # One file ahead: the next file is converted and its chunks written on this thread
        # while the current one's vectors are embedded (the converter and the embedder each
        # keep a core busy; the embedder releases the GIL).
        with ThreadPoolExecutor(1, thread_name_prefix="memoryd-convert") as pool:
            ahead = pool.submit(write, filings[0])
            for index in range(len(filings)):
                written = ahead.result()
                if index + 1 < len(filings):
                    ahead = pool.submit(write, filings[index + 1])
                yield ingester.finish_vectors(written, watcher)

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
        wait: bool = True,
    ) -> IngestResult:
        """Ingest given bytes (an upload); ``source_uri`` defaults to ``upload:<name>``.
        ``wait`` (the default) embeds the chunks before returning, else the worker does."""
        collection = check_collection(collection)
        name = screened_field(name, "file name")
        if not name:
            raise InvalidInputError("an upload needs a file name (it decides the type)")
        uri = source_uri or f"upload:{Path(name).name}"
        started = time.perf_counter()
        filing = Filing(uri, collection, source_type)
        return self._ingester.store_converted(
            IngestRequest(filing, name, data, content_type, now, started), wait=wait
        )

    def reingest(
        self, document_id: str, *, now: datetime | None = None, wait: bool = True
    ) -> IngestResult:
        """Read a document's source again (a file or URL), even if unchanged; chunks whose
        embedded text is unchanged keep their vectors."""
        document = self.get(document_id)
        if document.source_uri.startswith("upload:"):
            raise InvalidInputError(
                f"document {document_id} was uploaded; upload the new version instead"
            )
        filing = Filing(document.source_uri, document.collection, document.source_type)
        return self._ingester.ingest_source(filing, now, force=True, wait=wait)

    def fill_vectors(self, document_id: str, *, progress: FillListener | None = None) -> Document:
        """Embed a document's chunks that still have no vector, here and now (``kb ingest
        --wait`` after a ``--no-wait``); the document, counted."""
        document = self.get(document_id)
        self._ingester.filler.fill(document.id, progress)
        return self.get(document.id)

    def run_vector_jobs(
        self,
        *,
        now: datetime | None = None,
        limit: int | None = None,
        pause: Callable[[], bool] | None = None,
    ) -> list[FillReport]:
        """Fill the vectors of documents written without them (called by the worker, whose
        ``pause`` says when other jobs wait: the job then goes back to the queue)."""
        return self._ingester.filler.run_jobs(now, limit, pause)

    def fills_running(self) -> dict[str, FillProgress]:
        """The vector fills this process runs now, by document id, as of their last batch."""
        return self._ingester.filler.live()

    def run_retries(
        self, *, now: datetime | None = None, limit: int | None = None
    ) -> list[IngestResult]:
        """Run the due ingest retries (called by the worker and by ``memoryd worker``)."""
        return self._ingester.run_retries(now, limit)

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
        text, wanted = check_query(query, limit, policy)
        pinned = tuple(check_collection(c) for c in pinned_collections)
        kb = self.store.kb
        vector = self.embedder.embed([text])[0]
        deep = max(policy.pool, policy.deep_pool) if policy.route_weight > 0 else policy.pool
        vector_deep = kb.nearest_chunks(vector, deep)
        vector_hits = vector_deep[: policy.pool]
        terms = query_terms(question := spell_fiscal_years(text))
        first, documents, routes = candidates_and_routes(kb, text, terms, vector_hits, policy, deep)
        named = {r.document_id for r in routes}
        if named - documents.keys():  # a document named by a ticker the legs did not find
            documents.update(kb.documents_by_id(sorted(named - documents.keys())))
        named_docs = [documents[i] for i in sorted(named) if i in documents]
        spelled, extra = spell_out(kb, text, named_docs, terms, policy, self._labels)
        terms = [*terms, *extra]
        topic = topic_terms(terms, routes, documents, text) if policy.route_topic_only else terms
        legs = final_legs(kb, first, terms, policy, deep, needs_deep(named, topic, terms))
        keyword_hits = legs.chunks[: policy.pool]
        row_hits = legs.rows[: policy.row_pool] if policy.rows_everywhere else []
        if new_ids := {k.document_id for k in [*keyword_hits, *row_hits]} - documents.keys():
            documents.update(kb.documents_by_id(sorted(new_ids)))
        label_vector = vector
        if spelled and policy.expand_label_vector:
            phrases = "; ".join(p for e in spelled for p in e.phrases)
            label_vector = self.embedder.embed([f"{text} ({phrases})"])[0]
        routed_vector = [h for h in vector_deep if h[0].document_id in named][: policy.routed_pool]
        routed_keyword = [k for k in legs.chunks if k.document_id in named][: policy.routed_pool]
        routed_rows = [k for k in legs.rows if k.document_id in named][: policy.row_pool]
        if named and topic != terms:
            routed_keyword = kb.keyword_chunks(topic, policy.routed_pool, documents=sorted(named))
            if policy.row_weight > 0:
                routed_rows = kb.keyword_rows(topic, policy.row_pool, documents=sorted(named))
        near_rows: list[tuple[ChunkKey, float]] = []
        if policy.row_vector_weight > 0 and (named or policy.row_vectors_everywhere):
            within = None if policy.row_vectors_everywhere else sorted(named)
            near_rows = kb.nearest_rows(label_vector, deep, documents=within)
        routed_near_rows = [h for h in near_rows if h[0].document_id in named][: policy.row_pool]
        near_rows = near_rows[: policy.row_pool] if policy.row_vectors_everywhere else []
        found_by_words = [*keyword_hits, *routed_keyword, *row_hits, *routed_rows]
        found = list(dict.fromkeys(found_by_words))
        words, keyword_chunks = chunk_word_sets(kb, found, documents, self._words)
        shared = shared_counts(terms, words)
        ranked = fuse(
            vector_hits,
            keyword_hits,
            shared,
            weighting(documents),
            frozenset(pinned),
            policy,
            wanted * policy.merge_depth if policy.merge_pages else wanted,
            routed_vector_hits=routed_vector,
            routed_keyword_hits=routed_keyword,
            row_hits=row_hits,
            routed_row_hits=routed_rows,
            row_vector_hits=near_rows,
            routed_row_vector_hits=routed_near_rows,
        )
        missing = [r.key for r in ranked if r.key not in keyword_chunks]
        chunks = {**keyword_chunks, **kb.chunks_by_key(missing)}
        ranked = row_evidence_first(ranked, chunks, question, topic, policy, frozenset(named))
        hits = assemble_hits(ranked, documents, chunks, wanted, policy)
        stopped = below_gates(vector_hits, keyword_hits, shared, policy, wanted)
        return KbSearchResult(text, hits, pinned, tuple(stopped), tuple(routes))

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
        check_read(document, section=section, chunks=chunks, pages=pages, max_tokens=max_tokens)
        if pages is not None:
            every = self.store.kb.chunks(document.id)
            span, text, covered = page_span(document, every, pages)
            text, used = bounded(text, max_tokens, self.tokenizer)
            first, last = span[0].position, span[-1].position
            return KbReadResult(document, first, last, text, used, None, pages=covered)
        if chunks is not None:
            check_chunk_range(document, chunks)
            span = self.store.kb.chunks(document.id, *chunks)
        elif section is not None:
            span = section_chunks(document, self.store.kb.chunks(document.id), section)
        else:
            span = self.store.kb.chunks(document.id)
        taken, text, used = fit_span(span, max_tokens, self.tokenizer)
        following = span[len(taken)].position if len(taken) < len(span) else None
        return KbReadResult(
            document,
            taken[0].position,
            taken[-1].position,
            text,
            used,
            following,
            pages=pages_of(taken),
        )

    # ------------------------------------------------------------------- owner

    def resolve_id(self, document_id: str) -> str:
        """The whole id of the document ``document_id`` names: its id, or a unique start of it
        of at least 4 characters. DocumentNotFoundError when none, AmbiguousIdError (listing
        them) when several. For the owner's command line; the HTTP API and the model's tools
        take whole ids only (a document can be deleted, and a shortened id would then name
        another)."""
        kb = self.store.kb
        return resolve_prefix(
            document_id,
            ("document", "documents"),
            get=kb.get_document,
            starting=kb.document_ids_starting,
            label=lambda document: document.title,
            not_found=DocumentNotFoundError,
        )

    def get(self, document_id: str) -> Document:
        """One document (with how many of its chunks have their vector), or a clear error."""
        document = self.store.kb.get_document(document_id.strip())
        if document is None:
            raise DocumentNotFoundError(f"no document with id {document_id!r}")
        return self._ingester.counted(document)

    def list_documents(
        self, *, collection: str | None = None, limit: int | None = None
    ) -> list[Document]:
        """Documents, newest first, each with how many of its chunks have their vector."""
        documents = self.store.kb.documents(collection=collection, limit=limit)
        counts = self.store.kb.vector_counts([d.id for d in documents])
        return [replace(d, embedded_chunks=counts.get(d.id, 0)) for d in documents]

    def rename(self, document_id: str, title: str, *, now: datetime | None = None) -> Document:
        """The owner's title for a document: every chunk's breadcrumb (embedded with it) is
        rebuilt and embedded again, in one transaction."""
        name = " ".join(screened_field(title, "title").split())
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
