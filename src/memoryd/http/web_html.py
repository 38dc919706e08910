"""The web page's HTML: pure functions from data to markup, every value escaped on the way in."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from ..kb.model import Document
from ..kb.vector_fill import FillProgress, pace
from ..model import AuditEntry, Kind, Memory, Status

if TYPE_CHECKING:
    from ..service import RecallResult, ReviewItem

_STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
header{background:#23395d;color:#fff;padding:.6em 1.2em;display:flex;gap:1.2em;align-items:center}
header a{color:#fff;text-decoration:none}header b{margin-right:1em}
main{padding:1em 1.4em;max-width:1150px}
table{border-collapse:collapse;width:100%;background:#fff}
td,th{border-bottom:1px solid #ddd;padding:.4em .5em;text-align:left;vertical-align:top}
th{background:#eef1f6}.muted{color:#777}.error{color:#b00020}.flash{background:#fff7d6;
padding:.5em;border:1px solid #e6d27a}form.inline{display:inline}
button{cursor:pointer;margin:.1em}textarea{width:100%;font:inherit}
pre{white-space:pre-wrap;background:#f2f2f2;padding:.7em;border:1px solid #ddd}
.pill{font-size:.8em;padding:.1em .45em;border-radius:.6em;background:#e3e8f0}
"""


def page_html(title: str, body: str, csrf: str, *, nav: bool = True) -> str:
    links = ""
    if nav:
        links = (
            '<a href="/">Review</a><a href="/memories">Memories</a>'
            '<a href="/reconfirm">Reconfirm</a><a href="/documents">Documents</a>'
            '<a href="/recall">Recall</a>'
            f'<form class="inline" method="post" action="/logout">{csrf_field(csrf)}'
            "<button>Log out</button></form>"
        )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)} · memoryd</title><style>{_STYLE}</style></head><body>"
        f"<header><b>memoryd</b>{links}</header><main><h1>{escape(title)}</h1>{body}"
        "</main></body></html>"
    )


def csrf_field(csrf: str) -> str:
    return f'<input type="hidden" name="csrf" value="{escape(csrf)}">'


def login_html(next_path: str, error: str | None) -> str:
    problem = f'<p class="error">{escape(error)}</p>' if error else ""
    return (
        f"{problem}<form method=post action=/login>"
        f'<input type="hidden" name="next" value="{escape(next_path)}">'
        '<label>API token <input type="password" name="token" size=50 autofocus></label> '
        "<button>Log in</button></form>"
        '<p class="muted">The token is in <code>$MEMORYD_HOME/token</code> '
        "(or <code>MEMORYD_TOKEN</code>).</p>"
    )


def button_html(path: str, label: str, csrf: str, back: str = "/") -> str:
    return (
        f'<form class="inline" method="post" action="{escape(path)}">{csrf_field(csrf)}'
        f'<input type="hidden" name="back" value="{escape(back)}">'
        f"<button>{escape(label)}</button></form>"
    )


def memory_cell_html(memory: Memory) -> str:
    content = "[purged]" if memory.purged_at else escape(memory.content)
    return (
        f'<a href="/memories/{escape(memory.id)}">{content}</a><br>'
        f'<span class="pill">{memory.kind.value}</span> '
        f'<span class="pill">{memory.status.value}</span> '
        f'<span class="muted">confidence {memory.confidence:.2f} · {memory.source.value} · '
        f"{memory.created_at.date().isoformat()}</span>"
    )


def review_html(queue: Sequence[ReviewItem], csrf: str) -> str:
    if not queue:
        return "<p>Nothing to review.</p>"
    rows = []
    for item in queue:
        memory = item.pending
        replaces = (
            memory_cell_html(item.would_supersede)
            if item.would_supersede
            else '<span class="muted">nothing</span>'
        )
        base = f"/memories/{memory.id}"
        rows.append(
            f"<tr><td>{memory_cell_html(memory)}</td><td>{replaces}</td><td>"
            + button_html(f"{base}/confirm", "Confirm", csrf)
            + button_html(f"{base}/reject", "Reject", csrf)
            + f'<details><summary>Edit</summary><form method="post" action="{base}/edit">'
            + csrf_field(csrf)
            + f'<textarea name="content" rows=2>{escape(memory.content)}</textarea>'
            + "<button>Save</button></form></details></td></tr>"
        )
    return (
        f"<p>{len(queue)} pending. Nothing here is active until you confirm it.</p>"
        "<table><tr><th>pending</th><th>would replace</th><th></th></tr>"
        + "".join(rows)
        + "</table>"
    )


def browser_html(memories: Sequence[Memory], kind: str, status: str, query: str) -> str:
    def options(values: Sequence[str], chosen: str) -> str:
        return "".join(
            f'<option value="{v}"{" selected" if v == chosen else ""}>{v or "any"}</option>'
            for v in values
        )

    form = (
        '<form method="get" action="/memories">'
        f'<input name="q" value="{escape(query)}" placeholder="search"> '
        f'<select name="kind">{options(["", *[k.value for k in Kind]], kind)}</select> '
        f'<select name="status">{options(["", *[s.value for s in Status]], status)}</select> '
        "<button>Filter</button></form>"
    )
    rows = "".join(f"<tr><td>{memory_cell_html(m)}</td></tr>" for m in memories)
    return f"{form}<p>{len(memories)} shown.</p><table>{rows}</table>"


def memory_html(
    memory: Memory, chain: Sequence[Memory], audit: Sequence[AuditEntry], csrf: str
) -> str:
    fields = "".join(
        f"<tr><th>{escape(k)}</th><td>{escape(str(v))}</td></tr>"
        for k, v in memory.to_json().items()
        if v not in (None, [], False)
    )
    actions = ""
    back = f"/memories/{memory.id}"
    if memory.status is Status.ACTIVE:
        actions = (
            button_html(f"{back}/archive", "Archive", csrf, back)
            + button_html(f"{back}/reject", "Reject", csrf, back)
            + f'<form method="post" action="{back}/edit">{csrf_field(csrf)}'
            + f'<input type="hidden" name="back" value="{back}">'
            + f'<textarea name="content" rows=2>{escape(memory.content)}</textarea>'
            + "<button>Save edit</button></form>"
        )
    elif memory.status is Status.PENDING:
        actions = button_html(f"{back}/confirm", "Confirm", csrf, back) + button_html(
            f"{back}/reject", "Reject", csrf, back
        )
    chain_rows = "".join(
        f"<tr><td>{'→ ' if m.id == memory.id else ''}{memory_cell_html(m)}</td></tr>" for m in chain
    )
    audit_rows = "".join(
        f"<tr><td>{e.at.isoformat(timespec='seconds')}</td><td>{escape(e.memory_id)}</td>"
        f"<td>{escape(e.action)}</td><td>{e.from_status.value if e.from_status else '-'} → "
        f"{e.to_status.value}</td><td>{e.actor.value}</td><td>{escape(e.rule or '')}</td>"
        f"<td>{escape(e.reason)}</td></tr>"
        for e in audit
    )
    return (
        f"<table>{fields}</table><p>{actions}</p>"
        f"<h2>Supersede chain (oldest first)</h2><table>{chain_rows}</table>"
        "<h2>Audit trail</h2><table><tr><th>at</th><th>memory</th><th>action</th>"
        f"<th>status</th><th>by</th><th>rule</th><th>reason</th></tr>{audit_rows}</table>"
    )


def reconfirm_html(queue: Sequence[Memory], csrf: str) -> str:
    if not queue:
        return "<p>Nothing to reconfirm.</p>"
    rows = "".join(
        f"<tr><td>{memory_cell_html(m)}</td><td>"
        + button_html(f"/memories/{m.id}/reconfirm", "Still true", csrf, "/reconfirm")
        + button_html(f"/memories/{m.id}/archive", "Archive", csrf, "/reconfirm")
        + "</td></tr>"
        for m in queue
    )
    return (
        "<p>Facts nobody confirmed for a year; consolidation lowered their confidence.</p>"
        f"<table>{rows}</table>"
    )


def documents_html(
    documents: Sequence[Document],
    query: str,
    results: list[dict[str, Any]] | None,
    csrf: str,
    running: Mapping[str, FillProgress] | None = None,
) -> str:
    upload = (
        '<form method="post" action="/documents/upload" enctype="multipart/form-data">'
        f'{csrf_field(csrf)}<input type="file" name="file" required> '
        '<input name="collection" value="default" size=12> '
        '<select name="source_type"><option>curated</option><option>mission</option>'
        "<option>web</option></select> <button>Upload</button></form>"
    )
    search = (
        f'<form method="get" action="/documents"><input name="q" value="{escape(query)}" '
        'placeholder="search_kb" size=50> <button>Search</button></form>'
    )
    found = ""
    if results is not None:
        found = "<h2>Results</h2>" + ("".join(result_html(r) for r in results) or "<p>None.</p>")
    rows = "".join(
        f"<tr><td>{escape(d.title)}<br><span class=muted>{escape(d.source_uri)}</span>"
        f'<form class="inline" method="post" action="/documents/{escape(d.id)}/rename">'
        f'{csrf_field(csrf)}<label>title <input name="title" value="{escape(d.title)}" size=30>'
        "</label> <button>Rename</button></form></td>"
        f"<td>{escape(d.collection)}</td><td>{d.source_type.value}</td>"
        f"<td>{d.status.value}{embedding_html(d, (running or {}).get(d.id))}"
        f"{error_html(d.error)}</td>"
        f"<td>{d.chunk_count}</td><td>"
        + button_html(f"/documents/{d.id}/reingest", "Re-ingest", csrf)
        + button_html(f"/documents/{d.id}/delete", "Delete", csrf)
        + "</td></tr>"
        for d in documents
    )
    return (
        f"{upload}{search}{found}<h2>{len(documents)} documents</h2><table><tr><th>document"
        "</th><th>collection</th><th>type</th><th>status</th><th>chunks</th><th></th></tr>"
        f"{rows}</table>"
    )


def result_html(result: dict[str, Any]) -> str:
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


def recall_html(message: str, budget: int, result: RecallResult | None) -> str:
    form = (
        '<form method="get" action="/recall">'
        f'<textarea name="message" rows=3 placeholder="a message to the assistant">'
        f"{escape(message)}</textarea> "
        f'<label>budget <input name="budget" type="number" value="{budget}" min=0 max=32000>'
        "</label> <button>Recall</button></form>"
    )
    if result is None:
        return form
    legs = ", ".join(f"{escape(k)} {escape(v)}" for k, v in result.legs.items())
    rows = "".join(
        f"<tr><td>{escape(i['kind'])}</td><td>{escape(i['content'])}</td>"
        f"<td>{i['score'] if i['score'] is not None else 'always'}</td>"
        f"<td>{escape(', '.join(i.get('gates', [])) or 'standing lesson')}</td>"
        f"<td>{escape(', '.join(f'{leg} {rank}' for leg, rank in i['legs'].items()))}</td>"
        f"<td>{'' if i.get('cosine') is None else i['cosine']}</td>"
        f"<td>{i.get('recency', '')}</td><td>{i.get('weight', '')}</td></tr>"
        for i in result.to_json()["items"]
    )
    dropped = "".join(f"<li>{escape(d.memory_id)}: {escape(d.reason)}</li>" for d in result.dropped)
    silence = (
        f"<p class=muted>memories section empty: {escape(result.silence)}</p>"
        if result.silence
        else ""
    )
    return (
        f"{form}<h2>Block ({result.packed.tokens} tokens)</h2>"
        f"<pre>{escape(result.text) or '(empty)'}</pre>{silence}<p class=muted>legs: {legs}</p>"
        "<h2>Explain</h2><table><tr><th>kind</th><th>content</th><th>score</th><th>gates</th>"
        "<th>leg ranks</th><th>cosine</th><th>recency</th><th>weight</th></tr>"
        f"{rows}</table>" + (f"<h2>Dropped</h2><ul>{dropped}</ul>" if dropped else "")
    )
