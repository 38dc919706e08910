"""The documents page's HTML (pure): upload and search forms, results, the documents with
their state and vectors."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any
from urllib.parse import quote

from memoryd.http.web_html import (
    button_html,
    csrf_field,
    table_html,
)
from memoryd.kb.model import Document
from memoryd.kb.vector_fill import FillProgress, pace


def documents_html(
    documents: Sequence[Document],
    query: str,
    results: Sequence[Mapping[str, Any]] | None,
    csrf: str,
    running: Mapping[str, FillProgress] | None = None,
) -> str:
    upload = (
        '<form method="post" action="/documents/upload" enctype="multipart/form-data">'
        f'{csrf_field(csrf)}<label>file <input type="file" name="file" required></label> '
        '<label>collection <input name="collection" value="default" size=12></label> '
        '<label>type <select name="source_type"><option>curated</option><option>mission'
        "</option><option>web</option></select></label> <button>Upload</button></form>"
    )
    search = (
        f'<form method="get" action="/documents"><label>search <input name="q" '
        f'value="{escape(query)}" placeholder="search_kb" size=40></label> '
        "<button>Search</button></form>"
    )
    found = ""
    if results is not None:
        found = "<h2>Results</h2>" + ("".join(result_html(r) for r in results) or "<p>None.</p>")
    rows = [
        [
            f"{escape(d.title)}<br><span class=muted>{escape(d.source_uri)}"
            f"{f' · {d.redactions} secrets redacted' if d.redactions else ''}</span>"
            f'<form class="inline" method="post" action="/documents/{escape(d.id)}/rename">'
            f'{csrf_field(csrf)}<label>title <input name="title" value="{escape(d.title)}" '
            "size=24></label> <button>Rename</button></form>",
            escape(d.collection),
            d.source_type.value,
            f"{d.status.value}{embedding_html(d, (running or {}).get(d.id))}{error_html(d.error)}",
            str(d.chunk_count),
            button_html(f"/documents/{d.id}/reingest", "Re-ingest", csrf)
            + button_html(f"/documents/{d.id}/delete", "Delete", csrf),
        ]
        for d in documents
    ]
    return f"{upload}{search}{found}<h2>{len(documents)} documents</h2>" + table_html(
        ["document", "collection", "type", "status", "chunks", ""], rows
    )


def result_html(result: Mapping[str, Any]) -> str:
    """A search result: where it is (with a link to its pages) and its fenced text."""
    where = escape(result["title"])
    if result.get("pages"):
        first, last = result["pages"]
        span = str(first) if first == last else f"{first}-{last}"
        where += (
            f' · <a href="/documents/{quote(result["doc"])}/read?pages={span}">'
            f"{escape(result['cite'])}</a>"
        )
    return f"<p class=muted>{where}</p><pre>{escape(result['content'])}</pre>"


def embedding_html(document: Document, running: FillProgress | None = None) -> str:
    """ "embedding 120/347" under a document whose vectors are still being filled in, with
    the rate and time left while this process fills them ("5.6 chunks/s, 40 s left")."""
    label = document.embedding_label
    if not label:
        return ""
    if running is not None:
        label = ", ".join([label, *pace(running)])
    return f"<br><span class=muted>{escape(label)}</span>"


def error_html(error: str | None) -> str:
    return f"<br><span class=error>{escape(error)}</span>" if error else ""
