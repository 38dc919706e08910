"""``/v1/kb``: the knowledge base over HTTP. An ingest returns once the chunks are written
(keyword-searchable at once) and wakes the worker, which embeds them."""

from __future__ import annotations

from fastapi import APIRouter, File, Form, UploadFile

from memoryd.errors import InvalidInputError
from memoryd.http import response_models as out
from memoryd.http import schemas as s
from memoryd.http.depends import Service
from memoryd.http.limits import UPLOAD_PATH
from memoryd.kb.model import DocumentJson, parse_source_type
from memoryd.kb.results import IngestJson, KbReadJson, KbSearchJson
from memoryd.tools import parse_chunk_range

router = APIRouter(tags=["knowledge base"])


@router.post("/v1/kb/ingest", response_model=out.list_of(out.IngestOut))
def kb_ingest(service: Service, body: s.KbIngestRequest) -> list[IngestJson]:
    """Ingest files or folders on the server's disk, or http(s) URLs."""
    results = service.kb.ingest(
        body.sources,
        collection=body.collection,
        source_type=parse_source_type(body.source_type) if body.source_type else None,
        wait=False,
    )
    service.jobs.wake()
    return [r.to_json() for r in results]


@router.post(UPLOAD_PATH, response_model=out.IngestOut)
def kb_upload(
    service: Service,
    file: UploadFile = File(...),  # noqa: B008 - FastAPI's declaration style
    collection: str = Form("default"),
    source_type: str = Form("curated"),
) -> IngestJson:
    """Upload a document (multipart form: file, collection, source_type)."""
    result = service.kb.ingest_bytes(
        file.file.read(),
        file.filename or "upload",
        collection=collection,
        source_type=parse_source_type(source_type),
        content_type=file.content_type,
        wait=False,
    )
    service.jobs.wake()
    return result.to_json()


@router.post("/v1/kb/search", response_model=out.KbSearchOut)
def kb_search(service: Service, body: s.KbSearchRequest) -> KbSearchJson:
    """search_kb: fenced passages, best first."""
    found = service.kb.search(
        body.query, pinned_collections=body.pinned_collections, limit=body.limit
    )
    return found.to_json(body.explain)


@router.post("/v1/kb/read", response_model=out.KbReadOut)
def kb_read(service: Service, body: s.KbReadRequest) -> KbReadJson:
    """read_kb: a document, a section, a chunk range or a page range, fenced and
    bounded."""
    span = parse_chunk_range(body.chunks) if body.chunks else None
    pages = parse_chunk_range(body.pages, what="pages") if body.pages else None
    return service.kb.read(
        body.doc, section=body.section, chunks=span, pages=pages, max_tokens=body.max_tokens
    ).to_json()


@router.get("/v1/kb/documents", response_model=out.list_of(out.DocumentOut))
def kb_list(
    service: Service, collection: str | None = None, limit: int = 500
) -> list[DocumentJson]:
    """Documents with status and errors, newest first."""
    if not 1 <= limit <= 100_000:
        raise InvalidInputError("limit must be between 1 and 100000")
    return [d.to_json() for d in service.kb.list_documents(collection=collection, limit=limit)]


@router.get("/v1/kb/documents/{document_id}", response_model=out.DocumentOut)
def kb_get(service: Service, document_id: str) -> DocumentJson:
    """One document."""
    return service.kb.get(document_id).to_json()


@router.patch("/v1/kb/documents/{document_id}", response_model=out.DocumentOut)
def kb_rename(service: Service, document_id: str, body: s.KbRenameRequest) -> DocumentJson:
    """The owner's title for a document."""
    return service.kb.rename(document_id, body.title).to_json()


@router.delete("/v1/kb/documents/{document_id}", response_model=out.DocumentOut)
def kb_delete(service: Service, document_id: str) -> DocumentJson:
    """Remove a document and its chunks."""
    return service.kb.delete(document_id).to_json()


@router.post("/v1/kb/documents/{document_id}/reingest", response_model=out.IngestOut)
def kb_reingest(service: Service, document_id: str) -> IngestJson:
    """Read a document's file or URL again."""
    result = service.kb.reingest(document_id, wait=False)
    service.jobs.wake()
    return result.to_json()
