"""The ingest pipeline: a file, URL or upload read, converted and chunked outside any
transaction, then its document row and all of its chunks written in one (SPEC §6), keyword-
searchable from that commit; the vectors follow batch by batch (:mod:`memoryd.kb.vector_fill`),
in this process when the caller waits, else by the worker. A re-ingest keeps the vector of every
chunk whose embedded text is unchanged.

A source that cannot be read is reported and leaves what was stored before untouched (a new
one leaves no document at all); one that failed for a passing reason (a URL timing out) is
retried from the persisted job queue (:mod:`memoryd.kb.failures`).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Protocol

from memoryd.clock import Clock
from memoryd.errors import MemorydError
from memoryd.ids import IdGenerator
from memoryd.jobs.model import Job
from memoryd.kb.chunking import ChunkPolicy, breadcrumb, chunk_markdown
from memoryd.kb.converted import ConversionError, Converted, Limits
from memoryd.kb.failures import JOB_KIND, Filing, IngestFailures, RetrySettings
from memoryd.kb.folder_rules import FileChangedError, read_file, refuse_reason
from memoryd.kb.images import ImageReader
from memoryd.kb.model import Chunk, Document, DocumentStatus, SourceType
from memoryd.kb.results import IngestResult
from memoryd.kb.urls import FetchUnavailableError, check_url, is_url
from memoryd.kb.vector_fill import IngestWatcher, VectorFiller, reusable_vectors, vectors_kept
from memoryd.providers.embedder import Embedder
from memoryd.providers.tokenizer import TokenCodec
from memoryd.storage.protocols import Store
from memoryd.trust.credential_screening import find_credential, redact_counted, redact_credentials
from memoryd.words import strip_controls


@dataclass(frozen=True)
class IngestRequest:
    """One source's bytes on their way to the store, and where they are filed."""

    filing: Filing
    name: str
    data: bytes
    content_type: str | None
    now: datetime | None
    started: float
    # Convert again even when the bytes are unchanged (a re-ingest or a retry).
    force: bool = False


class IngestSettings(RetrySettings, Protocol):
    """What a document may cost and how it is chunked, read at each ingest (the owner may
    replace them between ingests)."""

    limits: Limits
    chunk_policy: ChunkPolicy
    # memoryd's home and the store's own files: never ingested by any path (folder_rules).
    home: Path | None
    protected_files: tuple[Path, ...]


@dataclass(eq=False)
class Ingester:
    """Reads sources into documents and chunks; the knowledge base's ingest half."""

    store: Store
    settings: IngestSettings
    embedder: Embedder
    tokenizer: TokenCodec
    make_reader: Callable[[], ImageReader]
    _: KW_ONLY
    clock: Clock
    ids: IdGenerator
    failures: IngestFailures = field(init=False)
    filler: VectorFiller = field(init=False)
    _reader: ImageReader | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.failures = IngestFailures(self.store, self.ids, self.settings)
        self.filler = VectorFiller(self.store, self.embedder, self.ids, clock=self.clock)

    @property
    def reader(self) -> ImageReader:
        """The image reader, made on first use (OCR models load only when needed)."""
        if self._reader is None:
            self._reader = self.make_reader()
        return self._reader

    def ingest_source(
        self,
        filing: Filing,
        now: datetime | None,
        *,
        force: bool = False,
        job: Job | None = None,
        wait: bool = True,
        watcher: IngestWatcher | None = None,
    ) -> IngestResult:
        """Read one file or URL (``filing.uri`` as the caller gave it) and store it; a passing
        failure is queued for retry unless this is the retry ``job`` (then it is raised).
        ``wait``: embed the chunks here before returning (else the worker's job does)."""
        started = time.perf_counter()
        source = filing.uri
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
                from memoryd.kb.fetch import fetch  # the HTTP client only when a URL is ingested

                check_url(source)
                fetched = fetch(
                    source,
                    max_bytes=self.settings.limits.max_bytes,
                    timeout=self.settings.limits.fetch_timeout,
                )
                request = IngestRequest(
                    filing, fetched.name, fetched.data, fetched.content_type, now, started, force
                )
                return self.store_converted(request, wait=wait, watcher=watcher)
            given = Path(source).expanduser()
            try:
                path = given.resolve()
            except RuntimeError:
                path = given  # a link loop: refuse_reason names it
            except OSError as error:  # swapped for a link while it was resolved
                raise FileChangedError(f"{given} changed while it was read: {error}") from None
            root = Path(filing.root) if filing.root else None
            home, own = self.settings.home, self.settings.protected_files
            # Both: the name as found, and what it resolved to (it may have been swapped since).
            refusal = refuse_reason(given, root, home, also=own) or refuse_reason(
                path, root, home, also=own
            )
            if refusal is not None:
                # Nothing is recorded: even a failed row would name a file it must not touch.
                return IngestResult(
                    str(given), "failed", None, refusal, time.perf_counter() - started
                )
            data = read_file(path, self.settings.limits, home, also=own)
            request = IngestRequest(
                replace(filing, uri=str(path)), path.name, data, None, now, started, force
            )
            return self.store_converted(request, wait=wait, watcher=watcher)
        except FetchUnavailableError as error:
            if job is not None:
                raise
            return self.failures.queue_retry(filing, str(error), now or self.clock(), started)
        except FileChangedError as error:
            # Not recorded: what the name points at now may be a file it must not touch.
            return IngestResult(source, "failed", None, str(error), time.perf_counter() - started)
        except ConversionError as error:
            failed = replace(filing, uri=_uri_of(source))
            return self.failures.record(failed, str(error), now or self.clock(), started)

    def store_converted(
        self,
        request: IngestRequest,
        *,
        wait: bool = True,
        watcher: IngestWatcher | None = None,
    ) -> IngestResult:
        """Convert and chunk the request's bytes, write the document and its chunks in one
        transaction (skipped when the stored copy is the same), then, when ``wait``, embed
        the chunks still without a vector."""
        result = self.write_chunks(request)
        if watcher is not None:
            watcher.written(result)
        if not wait:
            return result
        return self.finish_vectors(result, watcher)

    def write_chunks(self, request: IngestRequest) -> IngestResult:
        """Convert and chunk, then commit the document and its chunks (with the vectors kept
        from the stored copy) and a job for the missing vectors; keyword-searchable then."""
        filing = request.filing
        at = request.now or self.clock()
        digest = hashlib.sha256(request.data).hexdigest()
        existing = self.store.kb.document_by_uri(filing.uri)
        if (
            not request.force
            and existing is not None
            and existing.status is DocumentStatus.READY
            and existing.error is None
            and existing.content_hash == digest
            and existing.collection == filing.collection
            and existing.source_type is filing.source_type
        ):
            return IngestResult(
                filing.uri,
                "skipped",
                self.counted(existing),
                "unchanged since the last ingest",
                time.perf_counter() - request.started,
            )
        from memoryd.kb.convert import convert  # the converters only when a document is read

        try:
            converted = convert(
                request.data,
                request.name,
                self.reader,
                limits=self.settings.limits,
                content_type=request.content_type,
            )
        except ConversionError as error:
            return self._failed(request, str(error))
        converted, redactions = screened(converted)
        chunks = self._chunk(converted)
        if not chunks:
            return self._failed(request, "the document has no text to index")
        kept = reusable_vectors(self.store, existing.id) if existing else {}
        vectors = vectors_kept(chunks, kept)
        document = Document(
            id=existing.id if existing else self.ids.new_id(at),
            source_uri=filing.uri,
            collection=filing.collection,
            source_type=filing.source_type,
            title=converted.title,
            status=DocumentStatus.READY,
            created_at=existing.created_at if existing else at,
            updated_at=at,
            content_hash=digest,
            document_type=converted.document_type.value,
            chunk_count=len(chunks),
            token_count=sum(c.tokens for c in chunks),
            images_read=converted.images_read,
            redactions=redactions,
            byte_size=len(request.data),
            embedded_chunks=sum(v is not None for v in vectors),
            metadata=converted.metadata,
        )
        job = None
        with self.store.transaction():
            # Another ingest of the same source may have finished meanwhile: take its id, so
            # the source keeps one document whatever the race.
            current = self.store.kb.document_by_uri(filing.uri)
            if current is not None and current.id != document.id:
                document = replace(document, id=current.id, created_at=current.created_at)
            chunks = [replace(c, document_id=document.id) for c in chunks]
            self.store.kb.save_document(document)
            self.store.kb.replace_chunks(document.id, chunks, vectors)
            # Table rows whose label is new wait for a vector too (kb.rows).
            if document.pending_vectors or self.store.kb.pending_rows(document.id, 1):
                job = self.filler.job_for(document.id, at)
                self.store.jobs.enqueue(job)
        elapsed = time.perf_counter() - request.started
        pages = max((c.page_range[1] for c in chunks if c.page_range), default=0)
        note = None
        if converted.images_skipped:
            note = (
                f"{converted.images_skipped} picture(s) left unread: reading pictures used the "
                f"document's {self.settings.limits.image_seconds:g} s budget"
            )
        return IngestResult(
            filing.uri, "ok", document, note, elapsed, elapsed, job.id if job else None, pages
        )

    def finish_vectors(
        self, result: IngestResult, watcher: IngestWatcher | None = None
    ) -> IngestResult:
        """Embed the result's document's missing vectors here (its job, if still queued,
        ends done); the result with the document counted again and the time added."""
        document = result.document
        waiting = document is not None and (document.pending_vectors or result.vector_job)
        if document is None or result.outcome == "failed" or not waiting:
            return result
        started = time.perf_counter()
        listener = watcher.embedding if watcher is not None else None
        self.filler.fill_with_job(document.id, result.vector_job, listener)
        counted = self.counted(document)
        reason = result.reason
        filled = document.pending_vectors - counted.pending_vectors
        if result.outcome == "skipped" and filled > 0:  # a file read before, cut off (Ctrl-C)
            reason = f"{reason}; its {filled} missing vectors embedded now"
        return replace(
            result,
            document=counted,
            reason=reason,
            seconds=result.seconds + time.perf_counter() - started,
            vector_job=None,
        )

    def counted(self, document: Document) -> Document:
        """The document with how many of its chunks have their vector."""
        done = self.store.kb.vector_counts([document.id]).get(document.id, 0)
        return replace(document, embedded_chunks=done)

    def run_retries(self, now: datetime | None, limit: int | None) -> list[IngestResult]:
        """Claim and run the due ingest retries, at most ``limit`` (None: all due)."""
        results: list[IngestResult] = []
        while limit is None or len(results) < limit:
            at = now or self.clock()
            with self.store.transaction():
                job = self.store.jobs.claim(
                    [JOB_KIND], at, self.failures.retry_policy.lease_seconds
                )
            if job is None:
                break
            results.append(self._run_retry(job, at))
        return results

    def _run_retry(self, job: Job, at: datetime) -> IngestResult:
        filing = Filing(
            str(job.payload["source"]),
            str(job.payload["collection"]),
            SourceType(str(job.payload["source_type"])),
        )
        started = time.perf_counter()
        if self.store.kb.document_by_uri(filing.uri) is None:
            # The owner deleted the document while it waited: the retry is cancelled.
            self.failures.fail_job(job, "the document was deleted; retry cancelled", at)
            return IngestResult(
                filing.uri,
                "failed",
                None,
                "the document was deleted",
                time.perf_counter() - started,
            )
        try:
            result = self.ingest_source(filing, at, force=True, job=job)
        except FetchUnavailableError as error:
            retry_at = self.failures.retry_policy.next_attempt(job.attempts + 1, at)
            if retry_at is None:
                reason = f"{error}; gave up after {job.attempts + 1} attempts"
                self.failures.fail_job(job, reason, at)
                return self.failures.record(filing, reason, at, started)
            return self.failures.postpone(job, str(error), retry_at, at, started)
        except MemorydError as error:
            self.failures.fail_job(job, str(error), at)
            raise
        self.failures.settle_job(job, result, at)
        return result

    def _failed(self, request: IngestRequest, reason: str) -> IngestResult:
        return self.failures.record(
            request.filing, reason, request.now or self.clock(), request.started
        )

    def _chunk(self, converted: Converted) -> list[Chunk]:
        drafts = chunk_markdown(
            converted.markdown, self.tokenizer.count, self._tail, self.settings.chunk_policy
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


def screened(converted: Converted) -> tuple[Converted, int]:
    """The document as the store may keep it: no control characters or bidi overrides, and
    every credential in its text and title redacted (the same detectors that refuse one in a
    memory), with how many were."""
    markdown, count = redact_counted(strip_controls(converted.markdown))
    title, in_title = redact_counted(strip_controls(converted.title))
    return replace(converted, markdown=markdown, title=title), count + in_title


def expand_sources(sources: Sequence[str | Path]) -> list[tuple[str, str | None]]:
    """Sources with folders replaced by their files (recursive, sorted, hidden skipped), each
    with the folder it was found in (None for a file or URL named on its own)."""
    expanded: list[tuple[str, str | None]] = []
    for source in sources:
        text = str(source)
        if is_url(text) or "\x00" in text:
            expanded.append((text, None))
            continue
        path = Path(text).expanduser()
        if _is_folder(path):
            expanded.extend(
                (str(p), str(path))
                for p in sorted(path.rglob("*"))
                if p.is_file()
                and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
        else:
            expanded.append((text, None))
    return expanded


def _is_folder(path: Path) -> bool:
    """Whether ``path`` names a folder; a name the system cannot even look up (too long: the
    stat fails with ENAMETOOLONG, which ``Path.is_dir`` passes on) is left to :func:`read_file`
    to refuse with its reason."""
    try:
        return path.is_dir()
    except OSError:
        return False


def _uri_of(source: str) -> str:
    if is_url(source) or source.startswith("upload:"):
        return source
    try:
        return str(Path(source).expanduser().resolve())
    except (OSError, RuntimeError):  # changing under us, or a link loop
        return str(Path(source).expanduser().absolute())
