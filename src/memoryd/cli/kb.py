"""``memoryd kb …``: the knowledge base from the command line (a thin adapter)."""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import TYPE_CHECKING

import click

from memoryd.cli.common import (
    MAX_LISTED,
    echo_list,
    echo_one,
    now_from,
    open_store_service,
    parsed,
    print_json,
    with_json,
    with_now_json,
)
from memoryd.cli.kb_progress import IngestProgress
from memoryd.cli.kb_sync import source_lines, sync
from memoryd.errors import InvalidInputError, MemorydError
from memoryd.kb.converted import Limits
from memoryd.kb.model import DEFAULT_COLLECTION, Document, SourceType, parse_source_type
from memoryd.tools import parse_chunk_range

if TYPE_CHECKING:
    from memoryd.kb.results import IngestResult


@click.group()
def kb() -> None:
    """The owner's documents: ingest, search, read, list, delete, sync."""


kb.add_command(sync)


@kb.command()
@click.argument("sources", nargs=-1, required=True)
@click.option("--collection", default=DEFAULT_COLLECTION, show_default=True)
@click.option(
    "--source-type",
    type=click.Choice([t.value for t in SourceType]),
    help="curated (weight 1.0), mission output (0.8) or web clip (0.6); default: web for "
    "URLs, curated for files.",
)
@click.option(
    "--max-size",
    type=click.FloatRange(min=0.001),
    default=Limits().max_bytes / 1e6,
    show_default=True,
    help="Refuse files (and pages) larger than this many MB.",
)
@click.option(
    "--wait/--no-wait",
    default=True,
    show_default=True,
    help="Embed each document's chunks before finishing (the next file converts meanwhile). "
    "--no-wait: finish once the chunks are written (keyword-searchable at once) and leave "
    "the vectors to `memoryd serve` or `memoryd worker`; `kb list` shows 'embedding n/m'.",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Progress on stderr: pages and chunks written, then vectors with rate and time "
    "left. Default: on a terminal, without --json.",
)
@with_now_json
def ingest(
    ctx: click.Context,
    sources: tuple[str, ...],
    collection: str,
    source_type: str | None,
    max_size: float,
    wait: bool,
    progress: bool | None,
    now_text: str | None,
    as_json: bool,
) -> None:
    """Ingest files, folders (recursively) and http(s) URLs. Exit code 1 if any failed."""
    kind = parse_source_type(source_type) if source_type else None
    shown = progress if progress is not None else (sys.stderr.isatty() and not as_json)
    watcher = IngestProgress(sys.stderr, redraw=sys.stderr.isatty()) if shown else None
    with open_store_service(ctx) as service:
        service.kb.limits = replace(service.kb.limits, max_bytes=int(max_size * 1e6))
        if not service.kb.expand(list(sources)):
            raise InvalidInputError("nothing to ingest: the folders given hold no files")
        at = now_from(now_text) if now_text else None
        try:
            # The folders themselves, not their files: each file is judged against its folder.
            results = service.kb.ingest(
                list(sources),
                collection=collection,
                source_type=kind,
                now=at,
                wait=wait,
                watcher=watcher,
            )
        except KeyboardInterrupt:
            raise IngestStoppedError(_stopped_note(service.kb.list_documents())) from None
        finally:
            if watcher is not None:
                watcher.close()
    if as_json:
        print_json([r.to_json() for r in results])
    else:
        _echo_summary(results)
        waiting = [r for r in results if r.document and r.document.pending_vectors]
        if waiting:
            click.echo(
                f"{len(waiting)} document(s) keyword-searchable now; their vectors are filled "
                "by `memoryd serve` or `memoryd worker` (`memoryd kb list` shows progress, "
                "`memoryd kb ingest --wait` embeds them here)"
            )
    if any(r.outcome == "failed" for r in results):
        ctx.exit(1)


class IngestStoppedError(MemorydError):
    """``kb ingest`` stopped by Ctrl-C: what was written is kept."""


def _stopped_note(documents: list[Document]) -> str:
    """What a Ctrl-C left: the documents still waiting for vectors, and how to finish."""
    waiting = [d for d in documents if d.pending_vectors]
    shown = "; ".join(f"{d.title} ({d.embedding_label})" for d in waiting[:5])
    more = f" and {len(waiting) - 5} more" if len(waiting) > 5 else ""
    left = (
        f" Keyword-searchable, waiting for their vectors: {shown}{more} (`memoryd serve` or "
        "`memoryd worker` fills them)."
        if waiting
        else ""
    )
    return (
        "stopped (Ctrl-C): every document already written is kept, a file cut off while "
        f"converting was not stored.{left} Run the same `memoryd kb ingest` again to ingest "
        "what was not reached and finish the vectors (unchanged files are not read twice)."
    )


@kb.command()
@click.argument("query")
@click.option("--pin", "pinned", multiple=True, help="A collection to boost 1.5x (repeatable).")
@click.option("--limit", type=click.IntRange(min=1, max=20), default=5, show_default=True)
@click.option(
    "--explain",
    is_flag=True,
    help="Show the documents the query names, each hit's cosine, leg ranks and weight.",
)
@with_json
def search(
    ctx: click.Context,
    query: str,
    pinned: tuple[str, ...],
    limit: int,
    explain: bool,
    as_json: bool,
) -> None:
    """search_kb: the passages the model would get, fenced."""
    with open_store_service(ctx) as service:
        result = service.kb.search(query, pinned_collections=pinned, limit=limit)
    if as_json:
        print_json(result.to_json(explain))
        return
    if not result.hits:
        click.echo("no matching documents")
    if explain and result.routing_line:
        click.echo(result.routing_line + "\n")
    for hit in result.hits:
        if explain:
            parts = hit.explained()
            # The whole library's ranks first, then those within the named documents: the
            # table-row ranks followed the named documents' and read as theirs.
            click.echo(
                f"score {hit.ranked.score:.5f}  cosine {parts['cosine']}  vector rank "
                f"{parts['vector_rank']}  keyword rank {parts['keyword_rank']}  table row rank "
                f"{parts['row_rank']}  row label rank {parts['row_vector_rank']}  shared words "
                f"{parts['shared_words']}  weight {parts['weight']}  within named documents: "
                f"vector rank {parts['routed_vector_rank']}, keyword rank "
                f"{parts['routed_keyword_rank']}, row rank {parts['routed_row_rank']}, row "
                f"label rank {parts['routed_row_vector_rank']}"
            )
        click.echo(hit.fenced + "\n")


@kb.command()
@click.argument("document_id")
@click.option("--section", help="Read the section under this heading.")
@click.option("--chunks", "span", help="A chunk id or range, e.g. 3 or 3-6.")
@click.option("--pages", help="A page or a page range of a PDF, e.g. 34 or 34-35.")
@click.option("--max-tokens", type=click.IntRange(min=1, max=8000), default=2000, show_default=True)
@with_json
def read(
    ctx: click.Context,
    document_id: str,
    section: str | None,
    span: str | None,
    pages: str | None,
    max_tokens: int,
    as_json: bool,
) -> None:
    """read_kb: a document, a section, a chunk range or a page range, fenced and bounded."""
    chunk_range = parsed("chunks", lambda: parse_chunk_range(span)) if span else None
    page_range = parsed("pages", lambda: parse_chunk_range(pages, "pages")) if pages else None
    with open_store_service(ctx) as service:
        result = service.kb.read(
            service.kb.resolve_id(document_id),
            section=section,
            chunks=chunk_range,
            pages=page_range,
            max_tokens=max_tokens,
        )
    echo_one(result, as_json, lambda read: read.fenced)


@kb.command()
@click.argument("document_id")
@click.argument("title")
@with_json
def rename(ctx: click.Context, document_id: str, title: str, as_json: bool) -> None:
    """Give a document your own title (its chunks' breadcrumbs follow)."""
    with open_store_service(ctx) as service:
        document = service.kb.rename(service.kb.resolve_id(document_id), title)
    echo_one(document, as_json, lambda renamed: f"renamed: {_document_line(renamed)}")


@kb.command(name="list")
@click.option("--collection")
@click.option("--limit", type=click.IntRange(min=1, max=MAX_LISTED))
@with_json
def list_(ctx: click.Context, collection: str | None, limit: int | None, as_json: bool) -> None:
    """Documents with their status, chunk count and errors, newest first; then each synced
    source with the files that are not current (queued, converting, embedding n/m, failed,
    skipped, erased) and when it was last looked at."""
    with open_store_service(ctx) as service:
        documents = service.kb.list_documents(collection=collection, limit=limit)
        synced, _ = source_lines(service.sync, every_file=False)
    echo_list(documents, as_json, _document_line, "no documents")
    if synced and not as_json:
        click.echo("\nsynced sources:")
        for line in synced:
            click.echo(line)


@kb.command()
@click.argument("document_ids", nargs=-1, required=True)
@with_json
def delete(ctx: click.Context, document_ids: tuple[str, ...], as_json: bool) -> None:
    """Remove documents and their chunks."""
    with open_store_service(ctx) as service:
        # Every id is checked before anything is deleted.
        resolved = [service.kb.resolve_id(document_id) for document_id in document_ids]
        deleted = [service.kb.delete(document_id) for document_id in dict.fromkeys(resolved)]
    echo_list(deleted, as_json, lambda document: f"deleted {document.id}  {document.title}")


@kb.command()
@click.argument("document_id")
@with_now_json
def reingest(ctx: click.Context, document_id: str, now_text: str | None, as_json: bool) -> None:
    """Read a document's file or URL again, even if unchanged (chunks whose text is unchanged
    keep their vectors; the others are embedded here)."""
    with open_store_service(ctx) as service:
        at = now_from(now_text) if now_text else None
        result = service.kb.reingest(service.kb.resolve_id(document_id), now=at)
    if as_json:
        print_json(result.to_json())
    else:
        _echo_summary([result])
    if result.outcome == "failed":
        ctx.exit(1)


def _echo_summary(results: list[IngestResult]) -> None:
    """The summary table: one row per source, then the totals."""
    rows = [("outcome", "chunks", "source", "detail")]
    for result in results:
        chunks = (
            str(result.document.chunk_count) if result.document and result.outcome == "ok" else ""
        )
        detail = result.reason or (
            result.document.title + redacted_note(result.document) if result.document else ""
        )
        rows.append((result.outcome, chunks, _short(result.source), detail))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        click.echo(f"{row[0]:<{widths[0]}}  {row[1]:>{widths[1]}}  {row[2]:<{widths[2]}}  {row[3]}")
    counts: dict[str, int] = {}
    for result in results:
        counts[result.outcome] = counts.get(result.outcome, 0) + 1
    click.echo(
        "\n" + ", ".join(f"{counts.get(k, 0)} {k}" for k in ("ok", "skipped", "queued", "failed"))
    )


def _document_line(document: Document) -> str:
    embedding = f"{document.embedding_label}  " if document.embedding_label else ""
    error = f"  error: {document.error}" if document.error else ""
    return (
        f"{document.id}  {document.status.value:<6} {document.collection:<12} "
        f"{document.source_type.value:<7} {document.chunk_count:>5} chunks  {embedding}"
        f"{document.title}"
        f"  ({document.source_uri}){redacted_note(document)}{error}"
    )


def redacted_note(document: Document) -> str:
    """``  2 secrets redacted`` when the document's text held any, else ''."""
    count = document.redactions
    if not count:
        return ""
    return f"  {count} secret{'s' if count != 1 else ''} redacted"


def _short(source: str, width: int = 60) -> str:
    return source if len(source) <= width else "…" + source[-(width - 1) :]
