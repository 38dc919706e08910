"""The owner's web page, served by ``memoryd serve``: server-rendered HTML, no build step.

Pages: the review queue, the memory browser (chains and audit trails), the reconfirmation
queue, the knowledge-base documents and a recall playground. A login form trades the API token
for a session cookie (HttpOnly, SameSite=Strict); every form carries a per-session CSRF token.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from hashlib import sha256
from html import escape
from typing import Any
from urllib.parse import quote

from fastapi import FastAPI, File, Form, Request, UploadFile
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from ..errors import MemorydError
from ..kb.model import Document, page_label, parse_source_type
from ..model import AuditEntry, Kind, Memory, Status
from ..service import MemoryService, RecallResult, ReviewItem
from ..tools import parse_chunk_range
from .auth import token_matches

COOKIE = "memoryd_session"
SESSION_SECONDS = 12 * 3600
PAGE_LIMIT = 200


class Sessions:
    """Logged-in browser sessions, in memory (a restart logs the owner out)."""

    def __init__(self) -> None:
        self._expiry: dict[str, float] = {}
        self._secret = secrets.token_bytes(32)
        self._lock = threading.Lock()

    def create(self) -> str:
        """A new session id."""
        session = secrets.token_urlsafe(32)
        with self._lock:
            self._expiry[session] = time.monotonic() + SESSION_SECONDS
        return session

    def valid(self, session: str | None) -> bool:
        """Whether the cookie names a live session."""
        if not session:
            return False
        with self._lock:
            expiry = self._expiry.get(session)
            if expiry is None or expiry < time.monotonic():
                self._expiry.pop(session, None)
                return False
            return True

    def end(self, session: str | None) -> None:
        """Log out."""
        with self._lock:
            self._expiry.pop(session or "", None)

    def csrf(self, session: str) -> str:
        """The form token of a session."""
        return hmac.new(self._secret, session.encode(), sha256).hexdigest()

    def csrf_ok(self, session: str | None, given: str) -> bool:
        """Whether a submitted form token belongs to the session."""
        return bool(session) and hmac.compare_digest(self.csrf(session or ""), given or "")


class _Redirect(Exception):
    def __init__(self, location: str) -> None:
        super().__init__(location)
        self.location = location


def install_web(app: FastAPI, service: MemoryService, token: str) -> None:
    """Add the owner's pages to the API app."""
    sessions = Sessions()
    app.state.session_checker = sessions.valid

    def session_of(request: Request) -> str:
        session = request.cookies.get(COOKIE)
        if not sessions.valid(session):
            raise _Redirect("/login?next=" + quote(request.url.path))
        assert session is not None
        return session

    def checked(request: Request, csrf: str) -> str:
        session = session_of(request)
        if not sessions.csrf_ok(session, csrf):
            raise _Redirect("/?flash=" + quote("the form expired; try again"))
        return session

    @app.exception_handler(_Redirect)
    async def redirect(request: Request, error: Exception) -> Response:
        assert isinstance(error, _Redirect)
        return RedirectResponse(error.location, status_code=303)

    def page(request: Request, title: str, body: str, session: str) -> HTMLResponse:
        flash = request.query_params.get("flash")
        notice = f'<p class="flash">{escape(flash)}</p>' if flash else ""
        return HTMLResponse(_layout(title, notice + body, sessions.csrf(session)))

    def act(location: str, call: Callable[[], Any], done: str) -> RedirectResponse:
        try:
            call()
            message = done
        except MemorydError as error:
            message = f"error: {error}"
        separator = "&" if "?" in location else "?"
        return RedirectResponse(f"{location}{separator}flash={quote(message)}", status_code=303)

    # ---------------------------------------------------------------- login

    @app.get("/login", include_in_schema=False)
    def login_form(next: str = "/") -> HTMLResponse:
        return HTMLResponse(_layout("Log in", _login(next, None), "", nav=False))

    @app.post("/login", include_in_schema=False)
    def login(given: str = Form("", alias="token"), next: str = Form("/")) -> Response:
        if not given or not token_matches(token, given.strip()):
            body = _login(next, "That is not the token in $MEMORYD_HOME/token.")
            return HTMLResponse(_layout("Log in", body, "", nav=False), status_code=403)
        response = RedirectResponse(next if next.startswith("/") else "/", status_code=303)
        response.set_cookie(
            COOKIE, sessions.create(), max_age=SESSION_SECONDS, httponly=True, samesite="strict"
        )
        return response

    @app.post("/logout", include_in_schema=False)
    def logout(request: Request, csrf: str = Form("")) -> Response:
        session = checked(request, csrf)
        sessions.end(session)
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(COOKIE)
        return response

    # --------------------------------------------------------------- review

    @app.get("/", include_in_schema=False)
    def review_page(request: Request) -> HTMLResponse:
        session = session_of(request)
        queue = service.review_queue()
        return page(request, "Review", _review(queue, sessions.csrf(session)), session)

    @app.post("/memories/{memory_id}/{action}", include_in_schema=False)
    def memory_action(
        request: Request,
        memory_id: str,
        action: str,
        csrf: str = Form(""),
        content: str = Form(""),
        back: str = Form("/"),
    ) -> Response:
        checked(request, csrf)
        target = back if back.startswith("/") else "/"
        calls: dict[str, Callable[[], Any]] = {
            "confirm": lambda: service.confirm(memory_id),
            "reject": lambda: service.reject(memory_id),
            "archive": lambda: service.archive(memory_id),
            "reconfirm": lambda: service.reconfirm(memory_id),
        }
        if action == "edit":
            result: dict[str, Memory] = {}

            def edit() -> None:
                result["new"] = service.edit(memory_id, content)

            response = act(target, edit, "edited")
            if "new" in result:
                return RedirectResponse(
                    f"/memories/{result['new'].id}?flash="
                    + quote("edited: the old version is superseded"),
                    status_code=303,
                )
            return response
        if action not in calls:
            return act(target, lambda: None, f"error: unknown action {action!r}")
        return act(target, calls[action], f"{action}ed" if action != "archive" else "archived")

    # -------------------------------------------------------------- browser

    @app.get("/memories", include_in_schema=False)
    def browser(request: Request, kind: str = "", status: str = "", q: str = "") -> HTMLResponse:
        session = session_of(request)
        chosen_kind = Kind(kind) if kind in {k.value for k in Kind} else None
        chosen_status = Status(status) if status in {s.value for s in Status} else None
        if q.strip():
            found = service.search_memory(q, kind=chosen_kind, limit=50)
            memories = [
                s.memory
                for s in found.items
                if chosen_status is None or s.memory.status is chosen_status
            ]
        else:
            memories = service.list_memories(
                status=chosen_status, kind=chosen_kind, limit=PAGE_LIMIT
            )
        body = _browser(memories, kind, status, q)
        return page(request, "Memories", body, session)

    @app.get("/memories/{memory_id}", include_in_schema=False)
    def memory_page(request: Request, memory_id: str) -> Response:
        session = session_of(request)
        try:
            shown = service.show(memory_id)
        except MemorydError as error:
            return page(request, "Memory", f"<p class=error>{escape(str(error))}</p>", session)
        body = _memory(shown.memory, shown.chain, shown.audit, sessions.csrf(session))
        return page(request, "Memory", body, session)

    @app.get("/reconfirm", include_in_schema=False)
    def reconfirm_page(request: Request) -> HTMLResponse:
        session = session_of(request)
        body = _reconfirm(service.reconfirmation_queue(), sessions.csrf(session))
        return page(request, "Reconfirm", body, session)

    # ------------------------------------------------------------ documents

    @app.get("/documents", include_in_schema=False)
    def documents_page(request: Request, q: str = "") -> HTMLResponse:
        session = session_of(request)
        documents = service.kb.list_documents(limit=PAGE_LIMIT)
        results = service.kb.search(q, limit=10).to_json(True)["results"] if q.strip() else None
        body = _documents(documents, q, results, sessions.csrf(session))
        return page(request, "Documents", body, session)

    @app.post("/documents/upload", include_in_schema=False)
    def upload(
        request: Request,
        csrf: str = Form(""),
        collection: str = Form("default"),
        source_type: str = Form("curated"),
        file: UploadFile = File(...),  # noqa: B008 - FastAPI's declaration style
    ) -> Response:
        checked(request, csrf)
        data = file.file.read()
        outcome: dict[str, str] = {}

        def ingest() -> None:
            result = service.kb.ingest_bytes(
                data,
                file.filename or "upload",
                collection=collection or "default",
                source_type=parse_source_type(source_type),
                content_type=file.content_type,
            )
            outcome["text"] = f"{file.filename}: {result.outcome}" + (
                f" ({result.reason})" if result.reason else ""
            )

        response = act("/documents", ingest, "uploaded")
        if outcome:
            return RedirectResponse("/documents?flash=" + quote(outcome["text"]), status_code=303)
        return response

    @app.get("/documents/{document_id}/read", include_in_schema=False)
    def document_read(request: Request, document_id: str, pages: str = "") -> HTMLResponse:
        """The pages a search result cites (or the start of the document)."""
        session = session_of(request)
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

    @app.post("/documents/{document_id}/{action}", include_in_schema=False)
    def document_action(
        request: Request,
        document_id: str,
        action: str,
        csrf: str = Form(""),
        title: str = Form(""),
    ) -> Response:
        checked(request, csrf)
        if action == "delete":
            return act("/documents", lambda: service.kb.delete(document_id), "deleted")
        if action == "reingest":
            return act("/documents", lambda: service.kb.reingest(document_id), "re-ingested")
        if action == "rename":
            return act("/documents", lambda: service.kb.rename(document_id, title), "renamed")
        return act("/documents", lambda: None, f"error: unknown action {action!r}")

    # -------------------------------------------------------------- recall

    @app.get("/recall", include_in_schema=False)
    def recall_page(request: Request, message: str = "", budget: int = 1500) -> HTMLResponse:
        session = session_of(request)
        result = service.recall(message, budget=budget) if message.strip() else None
        return page(request, "Recall", _recall(message, budget, result), session)


# ---------------------------------------------------------------------- HTML

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


def _layout(title: str, body: str, csrf: str, *, nav: bool = True) -> str:
    links = ""
    if nav:
        links = (
            '<a href="/">Review</a><a href="/memories">Memories</a>'
            '<a href="/reconfirm">Reconfirm</a><a href="/documents">Documents</a>'
            '<a href="/recall">Recall</a>'
            f'<form class="inline" method="post" action="/logout">{_csrf(csrf)}'
            "<button>Log out</button></form>"
        )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)} · memoryd</title><style>{_STYLE}</style></head><body>"
        f"<header><b>memoryd</b>{links}</header><main><h1>{escape(title)}</h1>{body}"
        "</main></body></html>"
    )


def _csrf(csrf: str) -> str:
    return f'<input type="hidden" name="csrf" value="{escape(csrf)}">'


def _login(next_path: str, error: str | None) -> str:
    problem = f'<p class="error">{escape(error)}</p>' if error else ""
    return (
        f"{problem}<form method=post action=/login>"
        f'<input type="hidden" name="next" value="{escape(next_path)}">'
        '<label>API token <input type="password" name="token" size=50 autofocus></label> '
        "<button>Log in</button></form>"
        '<p class="muted">The token is in <code>$MEMORYD_HOME/token</code> '
        "(or <code>MEMORYD_TOKEN</code>).</p>"
    )


def _button(path: str, label: str, csrf: str, back: str = "/") -> str:
    return (
        f'<form class="inline" method="post" action="{escape(path)}">{_csrf(csrf)}'
        f'<input type="hidden" name="back" value="{escape(back)}">'
        f"<button>{escape(label)}</button></form>"
    )


def _memory_cell(memory: Memory) -> str:
    content = "[purged]" if memory.purged_at else escape(memory.content)
    return (
        f'<a href="/memories/{escape(memory.id)}">{content}</a><br>'
        f'<span class="pill">{memory.kind.value}</span> '
        f'<span class="pill">{memory.status.value}</span> '
        f'<span class="muted">confidence {memory.confidence:.2f} · {memory.source.value} · '
        f"{memory.created_at.date().isoformat()}</span>"
    )


def _review(queue: Sequence[ReviewItem], csrf: str) -> str:
    if not queue:
        return "<p>Nothing to review.</p>"
    rows = []
    for item in queue:
        memory = item.pending
        replaces = (
            _memory_cell(item.would_supersede)
            if item.would_supersede
            else '<span class="muted">nothing</span>'
        )
        base = f"/memories/{memory.id}"
        rows.append(
            f"<tr><td>{_memory_cell(memory)}</td><td>{replaces}</td><td>"
            + _button(f"{base}/confirm", "Confirm", csrf)
            + _button(f"{base}/reject", "Reject", csrf)
            + f'<details><summary>Edit</summary><form method="post" action="{base}/edit">'
            + _csrf(csrf)
            + f'<textarea name="content" rows=2>{escape(memory.content)}</textarea>'
            + "<button>Save</button></form></details></td></tr>"
        )
    return (
        f"<p>{len(queue)} pending. Nothing here is active until you confirm it.</p>"
        "<table><tr><th>pending</th><th>would replace</th><th></th></tr>"
        + "".join(rows)
        + "</table>"
    )


def _browser(memories: Sequence[Memory], kind: str, status: str, query: str) -> str:
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
    rows = "".join(f"<tr><td>{_memory_cell(m)}</td></tr>" for m in memories)
    return f"{form}<p>{len(memories)} shown.</p><table>{rows}</table>"


def _memory(memory: Memory, chain: Sequence[Memory], audit: Sequence[AuditEntry], csrf: str) -> str:
    fields = "".join(
        f"<tr><th>{escape(k)}</th><td>{escape(str(v))}</td></tr>"
        for k, v in memory.to_json().items()
        if v not in (None, [], False)
    )
    actions = ""
    back = f"/memories/{memory.id}"
    if memory.status is Status.ACTIVE:
        actions = (
            _button(f"{back}/archive", "Archive", csrf, back)
            + _button(f"{back}/reject", "Reject", csrf, back)
            + f'<form method="post" action="{back}/edit">{_csrf(csrf)}'
            + f'<input type="hidden" name="back" value="{back}">'
            + f'<textarea name="content" rows=2>{escape(memory.content)}</textarea>'
            + "<button>Save edit</button></form>"
        )
    elif memory.status is Status.PENDING:
        actions = _button(f"{back}/confirm", "Confirm", csrf, back) + _button(
            f"{back}/reject", "Reject", csrf, back
        )
    chain_rows = "".join(
        f"<tr><td>{'→ ' if m.id == memory.id else ''}{_memory_cell(m)}</td></tr>" for m in chain
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


def _reconfirm(queue: Sequence[Memory], csrf: str) -> str:
    if not queue:
        return "<p>Nothing to reconfirm.</p>"
    rows = "".join(
        f"<tr><td>{_memory_cell(m)}</td><td>"
        + _button(f"/memories/{m.id}/reconfirm", "Still true", csrf, "/reconfirm")
        + _button(f"/memories/{m.id}/archive", "Archive", csrf, "/reconfirm")
        + "</td></tr>"
        for m in queue
    )
    return (
        "<p>Facts nobody confirmed for a year; consolidation lowered their confidence.</p>"
        f"<table>{rows}</table>"
    )


def _documents(
    documents: Sequence[Document], query: str, results: list[dict[str, Any]] | None, csrf: str
) -> str:
    upload = (
        '<form method="post" action="/documents/upload" enctype="multipart/form-data">'
        f'{_csrf(csrf)}<input type="file" name="file" required> '
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
        found = "<h2>Results</h2>" + ("".join(_result(r) for r in results) or "<p>None.</p>")
    rows = "".join(
        f"<tr><td>{escape(d.title)}<br><span class=muted>{escape(d.source_uri)}</span>"
        f'<form class="inline" method="post" action="/documents/{escape(d.id)}/rename">'
        f'{_csrf(csrf)}<label>title <input name="title" value="{escape(d.title)}" size=30>'
        "</label> <button>Rename</button></form></td>"
        f"<td>{escape(d.collection)}</td><td>{d.source_type.value}</td>"
        f"<td>{d.status.value}{_error_line(d.error)}</td><td>{d.chunk_count}</td><td>"
        + _button(f"/documents/{d.id}/reingest", "Re-ingest", csrf)
        + _button(f"/documents/{d.id}/delete", "Delete", csrf)
        + "</td></tr>"
        for d in documents
    )
    return (
        f"{upload}{search}{found}<h2>{len(documents)} documents</h2><table><tr><th>document"
        "</th><th>collection</th><th>type</th><th>status</th><th>chunks</th><th></th></tr>"
        f"{rows}</table>"
    )


def _result(result: dict[str, Any]) -> str:
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


def _error_line(error: str | None) -> str:
    return f"<br><span class=error>{escape(error)}</span>" if error else ""


def _recall(message: str, budget: int, result: RecallResult | None) -> str:
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
