"""Synced sources over HTTP: the JSON API (``/v1/kb/sync``) and their part of the documents
page. A pass asked for here writes the chunks and returns (keyword-searchable at once); the
worker embeds them."""

from __future__ import annotations

from html import escape

from fastapi import APIRouter, Form
from fastapi.responses import Response
from pydantic import Field

from memoryd.http import response_models as out
from memoryd.http import schemas as s
from memoryd.http.depends import Service
from memoryd.http.web_html import button_html, csrf_field, table_html
from memoryd.http.web_session import FormSession, act
from memoryd.kb.sync.model import (
    DEFAULT_MAX_BYTES,
    FileState,
    SyncSource,
    SyncSourceJson,
    counts_label,
)
from memoryd.kb.sync.passes import SyncPassJson
from memoryd.kb.sync.run import FolderSync, PassReport
from memoryd.service import MemoryService

# The files the page lists per source: those not current first, then the rest, up to this.
PAGE_FILES = 200


class SyncAddRequest(s._Strict):
    location: str = Field(
        min_length=1, max_length=4096, description="a folder or file on the server's disk, "
        "or an http(s) URL",
    )  # fmt: skip
    collection: str = "default"
    ignore: list[str] = Field(default_factory=list, max_length=200,
                              description=".gitignore-style patterns to leave out")  # fmt: skip
    include_hidden: bool = False
    max_bytes: int = Field(default=DEFAULT_MAX_BYTES, ge=1, le=2_000_000_000)
    every_seconds: int | None = Field(default=None, ge=10, le=31_536_000)


class SyncReadmitRequest(s._Strict):
    path: str = Field(min_length=1, max_length=4096)


def source_json(sync: FolderSync, source: SyncSource) -> SyncSourceJson:
    """A source with every file's state."""
    return {**source.to_json(), "files": [f.to_json() for f in sync.files(source.id)]}


sync_api = APIRouter(tags=["knowledge base"])
sync_pages = APIRouter(include_in_schema=False)


def _ran(service: MemoryService, report: PassReport) -> SyncPassJson:
    # The worker embeds the chunks just written; a new source is watched at once.
    service.jobs.wake(sync=True)
    return report.to_json()


@sync_api.get("/v1/kb/sync", response_model=out.list_of(out.SyncSourceOut))
def sync_list(service: Service) -> list[SyncSourceJson]:
    """Synced sources with each file's state and when each was last looked at."""
    return [source_json(service.sync, source) for source in service.sync.sources()]


@sync_api.post("/v1/kb/sync", response_model=out.SyncPassOut)
def sync_add(service: Service, body: SyncAddRequest) -> SyncPassJson:
    """Keep a folder, file or URL in sync; its first pass runs now."""
    source = service.sync.add(
        body.location,
        collection=body.collection,
        ignore=body.ignore,
        include_hidden=body.include_hidden,
        max_bytes=body.max_bytes,
        every_seconds=body.every_seconds,
    )
    return _ran(service, service.sync.run_pass(source))


@sync_api.delete("/v1/kb/sync/{source_id}", response_model=out.SyncSourceOut)
def sync_remove(service: Service, source_id: str, delete_documents: bool = False) -> SyncSourceJson:
    """Stop syncing a source; its documents stay unless ``delete_documents``."""
    return service.sync.remove(source_id, delete_documents=delete_documents).to_json()


@sync_api.post("/v1/kb/sync/{source_id}/now", response_model=out.SyncPassOut)
def sync_now(service: Service, source_id: str) -> SyncPassJson:
    """Look at a source now."""
    return _ran(service, service.sync.run_pass(service.sync.source(source_id)))


@sync_api.post("/v1/kb/sync/{source_id}/readmit", response_model=out.SyncPassOut)
def sync_readmit(service: Service, source_id: str, body: SyncReadmitRequest) -> SyncPassJson:
    """Read again a file whose document the owner removed (sync leaves it out until
    asked)."""
    service.sync.readmit(source_id, body.path)
    return _ran(service, service.sync.run_pass(service.sync.source(source_id)))


@sync_pages.post("/documents/sync")
def page_sync_add(
    session: FormSession,
    service: Service,
    location: str = Form(""),
    collection: str = Form("default"),
    ignore: str = Form(""),
) -> Response:
    """The documents page's form: sync a folder, file or URL (its first pass runs now)."""

    def add_and_look() -> None:
        source = service.sync.add(location, collection=collection or "default",
                                  ignore=[p for p in ignore.split(",") if p.strip()])  # fmt: skip
        _ran(service, service.sync.run_pass(source))

    return act("/documents", add_and_look, f"syncing {location}")


@sync_pages.post("/documents/sync/{source_id}/{action}")
def page_sync_action(
    session: FormSession, service: Service, source_id: str, action: str
) -> Response:
    """The documents page's buttons: look at a source now, stop syncing it."""
    sync = service.sync
    if action == "now":
        return act("/documents", lambda: _ran(service, sync.run_pass(sync.source(source_id))),
                   "looked at it now")  # fmt: skip
    if action == "remove":
        return act("/documents", lambda: sync.remove(source_id), "no longer synced")
    return act("/documents", lambda: None, f"error: unknown action {action!r}")


def synced_html(sync: FolderSync, csrf: str) -> str:
    """The documents page's part for synced sources: a form to add one, then each source with
    its files' states (those not current first) and when it was last looked at."""
    form = (
        '<form method="post" action="/documents/sync">'
        f'{csrf_field(csrf)}<label>sync a folder, file or URL <input name="location" '
        'size=36 required placeholder="/home/me/notes"></label> '
        '<label>collection <input name="collection" value="default" size=12></label> '
        '<label>ignore <input name="ignore" size=16 placeholder="drafts/, *.tmp"></label> '
        "<button>Sync</button></form>"
    )
    parts = [f"<h2>Synced sources</h2>{form}"]
    for source in sync.sources():
        files = sync.files(source.id)
        error = (
            f" <span class=error>{escape(source.last_error)}</span>" if source.last_error else ""
        )
        parts.append(
            f'<h3 class="synced">{escape(source.location)}</h3><p class=muted>'
            f"{escape(source.kind.value)} · {escape(source.collection)} · "
            f"{escape(counts_label(files))} · last looked {escape(source.looked_label)}{error} "
            + button_html(f"/documents/sync/{source.id}/now", "Look now", csrf)
            + button_html(f"/documents/sync/{source.id}/remove", "Stop syncing", csrf)
            + "</p>"
        )
        ordered = sorted(files, key=lambda f: (f.label == FileState.CURRENT.value, f.file.path))
        rows = [
            [
                escape(f.file.path),
                f'<span class="state">{escape(f.label)}</span>',
                escape(f.file.reason or ""),
            ]
            for f in ordered[:PAGE_FILES]
        ]
        if rows:
            parts.append(table_html(["file", "state", "why"], rows))
        if len(files) > PAGE_FILES:
            parts.append(f"<p class=muted>{len(files) - PAGE_FILES} more files: "
                         "`memoryd kb sync list --files` lists them all</p>")  # fmt: skip
    return "".join(parts)
