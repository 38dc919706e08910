"""The web page's knowledge base: the documents (search, upload, read, rename, re-ingest,
delete); the synced sources' part of the page is in sync_routes."""

from __future__ import annotations

from html import escape

from fastapi import APIRouter, File, Form, Request, UploadFile
from fastapi.responses import HTMLResponse, Response

from memoryd.errors import MemorydError
from memoryd.http.depends import Service
from memoryd.http.sync_routes import synced_html
from memoryd.http.web_documents_html import documents_html
from memoryd.http.web_session import FormSession, Session, act, checked, csrf_of, page
from memoryd.kb.model import page_label, parse_source_type
from memoryd.kb.results import IngestResult
from memoryd.tools import parse_chunk_range

router = APIRouter(include_in_schema=False)

PAGE_LIMIT = 200


@router.get("/documents")
def documents_page(
    request: Request, service: Service, session: Session, q: str = ""
) -> HTMLResponse:
    """The documents, newest first, with a search box and the synced sources."""
    kb = service.kb
    csrf = csrf_of(request, session)
    results = kb.search(q, limit=10).to_json(True)["results"] if q.strip() else None
    body = documents_html(kb.list_documents(limit=PAGE_LIMIT), q, results, csrf,
                          kb.fills_running()) + synced_html(service.sync, csrf)  # fmt: skip
    return page(request, "Documents", body, session)


@router.post("/documents/upload")
def upload(
    request: Request,
    service: Service,
    csrf: str = Form(""),
    collection: str = Form("default"),
    source_type: str = Form("curated"),
    file: UploadFile = File(...),  # noqa: B008 - FastAPI's declaration style
) -> Response:
    """An uploaded document: written (keyword-searchable now), the worker embeds it."""
    # Checked here, not as a FormSession: a post without its file is refused (422) first.
    checked(request, csrf)

    def ingest() -> IngestResult:
        result = service.kb.ingest_bytes(
            file.file.read(),
            file.filename or "upload",
            collection=collection or "default",
            source_type=parse_source_type(source_type),
            content_type=file.content_type,
            wait=False,
        )
        service.jobs.wake()
        return result

    def said(result: IngestResult) -> str:
        pending = result.document.embedding_label if result.document else ""
        return (
            f"{file.filename}: {result.outcome}"
            + (f" ({result.reason})" if result.reason else "")
            + (f", keyword-searchable now, {pending}" if pending else "")
        )

    return act("/documents", ingest, said)


@router.get("/documents/{document_id}/read")
def document_read(
    request: Request, service: Service, session: Session, document_id: str, pages: str = ""
) -> HTMLResponse:
    """The pages a search result cites (or the start of the document)."""
    try:
        span = parse_chunk_range(pages, what="pages") if pages else None
        read = service.kb.read(document_id, pages=span)
        body = (
            f"<p class=muted>{escape(read.document.title)} · "
            f"{escape(page_label(read.pages) or 'from the start')}</p>"
            f"<pre>{escape(read.text)}</pre>"
        )
    except MemorydError as error:
        body = f"<p class=error>{escape(str(error))}</p>"
    return page(request, "Document", body, session)


@router.post("/documents/{document_id}/{action}")
def document_action(
    session: FormSession,
    service: Service,
    document_id: str,
    action: str,
    title: str = Form(""),
) -> Response:
    """Delete, re-ingest or rename a document."""
    kb = service.kb
    if action == "delete":
        return act("/documents", lambda: kb.delete(document_id), "deleted")
    if action == "reingest":

        def reingest() -> None:
            # The page returns once the chunks are written; the worker embeds those changed.
            kb.reingest(document_id, wait=False)
            service.jobs.wake()

        return act("/documents", reingest, "re-ingested")
    if action == "rename":
        return act("/documents", lambda: kb.rename(document_id, title), "renamed")
    return act("/documents", lambda: None, f"error: unknown action {action!r}")
