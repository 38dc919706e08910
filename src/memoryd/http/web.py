"""The owner's web page, served by ``memoryd serve``: server-rendered HTML, no build step.

Pages: the review queue (why each memory waits, what a fact would replace, several confirmed
or rejected at once), the memory browser (chains and audit trails), the reconfirmation queue,
the knowledge-base documents, a recall playground (a preview: nothing it shows is counted as
retrieved) whose results can join the owner's evaluation set, the evaluation page, and forget
(the list first, then a button that erases it). A login form trades the API token for a session
cookie (HttpOnly, SameSite=Strict); every form carries a per-session CSRF token.
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
from starlette.requests import cookie_parser
from starlette.types import ASGIApp, Receive, Scope, Send

from memoryd.errors import InvalidInputError, MemorydError, MemoryNotFoundError
from memoryd.evaluation.policy import parse_overrides
from memoryd.http.auth import token_matches
from memoryd.http.eval_html import eval_html
from memoryd.http.sync_routes import install_sync_pages, synced_html
from memoryd.http.web_html import (
    VERDICTS,
    PendingView,
    browser_html,
    documents_html,
    forget_html,
    login_html,
    memory_html,
    page_html,
    recall_html,
    reconfirm_html,
    review_html,
)
from memoryd.kb.model import page_label, parse_source_type
from memoryd.memory.model import AuditEntry, Kind, Memory, Status
from memoryd.ops.status import JOBS_READ, extraction_health, failing_notices
from memoryd.providers.remote_embedder import OpenAICompatibleEmbedder
from memoryd.service import MemoryService
from memoryd.tools import parse_chunk_range

COOKIE = "memoryd_session"
# Forms whose body may be large: the session is checked before the body is read.
SESSION_FIRST_PATHS = ("/documents/upload",)
SESSION_SECONDS = 12 * 3600
PAGE_LIMIT = 200
NO_REASON = "no reason was recorded when it was proposed"
EXCERPT_CHARS = 80
BULK_ACTIONS = {"confirm": "confirmed", "reject": "rejected"}


class Sessions:
    """Logged-in browser sessions, in memory (a restart logs the owner out)."""

    def __init__(self) -> None:
        self._expiry: dict[str, float] = {}
        self._reports: dict[str, list[str]] = {}
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
                self._reports.pop(session, None)
                return False
            return True

    def end(self, session: str | None) -> None:
        """Log out."""
        with self._lock:
            self._expiry.pop(session or "", None)
            self._reports.pop(session or "", None)

    def report(self, session: str, lines: Sequence[str]) -> None:
        """Keep what an action did for the session's next page (too long for a URL)."""
        with self._lock:
            self._reports[session] = list(lines)

    def take_report(self, session: str) -> list[str]:
        """The report kept for this session, once."""
        with self._lock:
            return self._reports.pop(session, [])

    def csrf(self, session: str) -> str:
        """The form token of a session."""
        return hmac.new(self._secret, session.encode(), sha256).hexdigest()

    def csrf_ok(self, session: str | None, given: str) -> bool:
        """Whether a submitted form token belongs to the session."""
        return bool(session) and hmac.compare_digest(self.csrf(session or ""), given or "")


class SessionBeforeBody:
    """ASGI middleware: the web upload form needs a logged-in session before a byte of its
    body is read, so a page on another site cannot make the owner's browser post 50 MB
    bodies for the server to parse (it gets a redirect to the login page instead)."""

    def __init__(self, app: ASGIApp, *, valid: Callable[[str | None], bool]) -> None:
        self.app = app
        self.valid = valid

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] in SESSION_FIRST_PATHS:
            headers = dict(scope.get("headers") or [])
            cookies = cookie_parser(headers.get(b"cookie", b"").decode("latin-1"))
            if not self.valid(cookies.get(COOKIE)):
                response = RedirectResponse("/login?next=/documents", status_code=303)
                response.headers["connection"] = "close"
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


class _Redirect(Exception):
    def __init__(self, location: str) -> None:
        super().__init__(location)
        self.location = location


def install_web(app: FastAPI, service: MemoryService, token: str) -> None:
    """Add the owner's pages to the API app."""
    sessions = Sessions()
    app.state.session_checker = sessions.valid
    app.add_middleware(SessionBeforeBody, valid=sessions.valid)

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
        report = sessions.take_report(session)
        failing = failing_endpoints(service)
        proxy = getattr(request.app.state, "proxy", None)
        status = [proxy.status_line()] if proxy is not None else []
        return HTMLResponse(
            page_html(
                title,
                body,
                sessions.csrf(session),
                flash=flash,
                report=report,
                failing=failing,
                status=status,
            )
        )

    def act(location: str, call: Callable[[], Any], done: str) -> RedirectResponse:
        try:
            call()
            message = done
        except MemorydError as error:
            message = f"error: {error}"
        separator = "&" if "?" in location else "?"
        return RedirectResponse(f"{location}{separator}flash={quote(message)}", status_code=303)

    def _reingest(document_id: str) -> None:
        # The page returns once the chunks are written; the worker embeds those that changed.
        service.kb.reingest(document_id, wait=False)
        service.worker.wake.set()

    # ---------------------------------------------------------------- login

    @app.get("/login", include_in_schema=False)
    def login_form(next: str = "/") -> HTMLResponse:
        return HTMLResponse(page_html("Log in", login_html(next, None), "", nav=False))

    @app.post("/login", include_in_schema=False)
    def login(given: str = Form("", alias="token"), next: str = Form("/")) -> Response:
        if not given or not token_matches(token, given.strip()):
            body = login_html(next, "That is not the token in $MEMORYD_HOME/token.")
            return HTMLResponse(page_html("Log in", body, "", nav=False), status_code=403)
        response = RedirectResponse(_local_path(next, "/"), status_code=303)
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
        queue = pending_views(service)
        return page(request, "Review", review_html(queue, sessions.csrf(session)), session)

    @app.post("/review", include_in_schema=False)
    def review_selected(
        request: Request,
        csrf: str = Form(""),
        action: str = Form(""),
        ids: list[str] = Form(default=[]),  # noqa: B008 - FastAPI's declaration style
    ) -> Response:
        """Confirm or reject every ticked memory, each in its own transaction; the next page
        says what happened to each."""
        session = checked(request, csrf)
        if action not in BULK_ACTIONS:
            return act(
                "/", lambda: None, f"error: unknown action {action!r}; use confirm or reject"
            )
        if not ids:
            return act("/", lambda: None, f"error: tick the memories to {action} first")
        outcomes = review_many(service, action, ids)
        sessions.report(session, [line for _, line in outcomes])
        done = sum(1 for succeeded, _ in outcomes if succeeded)
        message = f"{BULK_ACTIONS[action]} {done} of {len(outcomes)}"
        return RedirectResponse("/?flash=" + quote(message), status_code=303)

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
        if action == "split":
            outcome: dict[str, str] = {}

            def split() -> None:
                result = service.split(memory_id)
                outcome["text"] = split_message(result.memory, result.restored)

            response = act(target, split, "split")
            if outcome:
                separator = "&" if "?" in target else "?"
                return RedirectResponse(
                    f"{target}{separator}flash={quote(outcome['text'])}", status_code=303
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
        ranks: dict[str, dict[str, int]] = {}
        if q.strip():
            # The owner browsing is not the model using a memory: nothing is stamped.
            found = service.search_memory(q, kind=chosen_kind, limit=50, stamp=False)
            memories = [
                s.memory
                for s in found.items
                if chosen_status is None or s.memory.status is chosen_status
            ]
            ranks = {s.memory.id: dict(s.ranks) for s in found.items}
        else:
            memories = service.list_memories(
                status=chosen_status, kind=chosen_kind, limit=PAGE_LIMIT
            )
        body = browser_html(memories, kind, status, q, ranks)
        return page(request, "Memories", body, session)

    @app.get("/memories/{memory_id}", include_in_schema=False)
    def memory_page(request: Request, memory_id: str) -> Response:
        session = session_of(request)
        try:
            shown = service.show(memory_id)
        except MemorydError as error:
            return page(request, "Memory", f"<p class=error>{escape(str(error))}</p>", session)
        body = memory_html(shown.memory, shown.chain, shown.audit, sessions.csrf(session))
        return page(request, "Memory", body, session)

    @app.get("/reconfirm", include_in_schema=False)
    def reconfirm_page(request: Request) -> HTMLResponse:
        session = session_of(request)
        body = reconfirm_html(service.reconfirmation_queue(), sessions.csrf(session))
        return page(request, "Reconfirm", body, session)

    # ------------------------------------------------------------ documents

    @app.get("/documents", include_in_schema=False)
    def documents_page(request: Request, q: str = "") -> HTMLResponse:
        session = session_of(request)
        documents = service.kb.list_documents(limit=PAGE_LIMIT)
        results = service.kb.search(q, limit=10).to_json(True)["results"] if q.strip() else None
        body = documents_html(
            documents, q, results, sessions.csrf(session), service.kb.fills_running()
        ) + synced_html(service.sync, sessions.csrf(session))
        return page(request, "Documents", body, session)

    install_sync_pages(app, service, checked, act)

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
                wait=False,
            )
            service.worker.wake.set()  # the worker embeds the chunks just written
            pending = result.document.embedding_label if result.document else ""
            outcome["text"] = (
                f"{file.filename}: {result.outcome}"
                + (f" ({result.reason})" if result.reason else "")
                + (f", keyword-searchable now, {pending}" if pending else "")
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
            return act("/documents", lambda: _reingest(document_id), "re-ingested")
        if action == "rename":
            return act("/documents", lambda: service.kb.rename(document_id, title), "renamed")
        return act("/documents", lambda: None, f"error: unknown action {action!r}")

    # -------------------------------------------------------------- recall

    @app.get("/recall", include_in_schema=False)
    def recall_page(request: Request, message: str = "", budget: str = "1500") -> HTMLResponse:
        session = session_of(request)
        result, error = None, None
        if message.strip():
            try:
                # A preview: trying a message here must not count as a retrieval.
                result = service.recall(message, budget=_budget(budget), stamp=False)
            except MemorydError as problem:
                error = f"error: {problem}"
        body = recall_html(message, budget, result, error, sessions.csrf(session))
        return page(request, "Recall", body, session)

    # -------------------------------------------------------------- evaluation set

    @app.post("/eval/verdict", include_in_schema=False)
    def eval_verdict(
        request: Request,
        csrf: str = Form(""),
        question: str = Form(""),
        memory_id: str = Form(""),
        verdict: str = Form(""),
        back: str = Form("/recall"),
    ) -> Response:
        checked(request, csrf)
        chosen = {"expected": ([memory_id], []), "noise": ([], [memory_id])}.get(verdict)
        if chosen is None:
            return act(_local_path(back), lambda: None, f"error: unknown verdict {verdict!r}")
        expected, noise = chosen
        return act(
            _local_path(back),
            lambda: service.eval_add(question, expected=expected, noise=noise),
            f"added to the evaluation set as {VERDICTS[verdict]!r}",
        )

    @app.post("/eval/cases", include_in_schema=False)
    def eval_add(
        request: Request,
        csrf: str = Form(""),
        question: str = Form(""),
        expect: str = Form(""),
        noise: str = Form(""),
    ) -> Response:
        checked(request, csrf)
        return act(
            "/eval",
            lambda: service.eval_add(
                question, expected=expect.replace(",", " ").split(),
                noise=noise.replace(",", " ").split(),
            ),
            "case added",
        )  # fmt: skip

    @app.post("/eval/{case_id}/remove", include_in_schema=False)
    def eval_remove(request: Request, case_id: str, csrf: str = Form("")) -> Response:
        checked(request, csrf)
        return act("/eval", lambda: service.eval_remove(case_id), "case removed")

    @app.get("/eval", include_in_schema=False)
    def eval_page(request: Request, run: str = "", k: str = "5", candidate: str = "") -> Response:
        session = session_of(request)
        cases = service.eval_cases()
        ids = sorted({i for case in cases for i in (*case.expected, *case.noise)})
        labels = {i: _label(service, i) for i in ids}
        report, error = None, None
        if run:
            try:
                pairs = [p for p in candidate.replace(";", ",").split(",") if p.strip()]
                report = service.eval_run(k=_k(k), overrides=parse_overrides(pairs))
            except MemorydError as problem:
                error = f"error: {problem}"
        body = eval_html(cases, labels, sessions.csrf(session), run=report, k=k,
                         candidate=candidate, error=error)  # fmt: skip
        return page(request, "Evaluation", body, session)

    # -------------------------------------------------------------- forget

    @app.get("/forget", include_in_schema=False)
    def forget_page(request: Request, by: str = "entity", text: str = "") -> HTMLResponse:
        session = session_of(request)
        plan, error = None, None
        if text.strip():
            try:
                entity, query = _forget_request(by, text)
                plan = service.forget(entity=entity, query=query, dry_run=True)
            except MemorydError as problem:
                error = f"error: {problem}"
        body = forget_html(by, text, plan, error, sessions.csrf(session))
        return page(request, "Forget", body, session)

    @app.post("/forget", include_in_schema=False)
    def forget_confirmed(
        request: Request, csrf: str = Form(""), by: str = Form(""), text: str = Form("")
    ) -> Response:
        checked(request, csrf)
        try:
            entity, query = _forget_request(by, text)
            message = "erased: " + service.forget(entity=entity, query=query).summary
        except MemorydError as error:
            message = f"error: {error}"
        return RedirectResponse("/forget?flash=" + quote(message), status_code=303)


def _local_path(path: str, fallback: str = "/recall") -> str:
    """A redirect target on this site only (a form's ``back`` or the login's ``next``: a
    phishing link may set either)."""
    # "//host" and "/\\host" leave the site in a browser; only plain local paths return.
    # Browsers drop tabs and newlines inside a URL, so "/\t/host" is "//host" to them.
    local = (
        path.startswith("/")
        and not path.startswith("//")
        and "\\" not in path
        and not any(ord(c) < 0x20 or ord(c) == 0x7F for c in path)
    )
    return path if local else fallback


def _k(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise InvalidInputError(f"k must be a whole number, not {text!r}") from None


def _forget_request(by: str, text: str) -> tuple[str | None, str | None]:
    """(entity, query) from the form's choice and text."""
    if by not in ("entity", "query"):
        raise InvalidInputError(f"forget by 'entity' or 'query', not {by!r}")
    return (text, None) if by == "entity" else (None, text)


def _budget(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise InvalidInputError(
            f"the token budget must be a whole number of tokens, not {text!r}"
        ) from None


def failing_endpoints(service: MemoryService) -> list[str]:
    """The page's status area: the extract route when its jobs fail (from the job table, as
    ``memoryd status`` reads it) and the embeddings endpoint while it fails (what this server's
    embedder saw last)."""
    parts = service.parts
    route = parts.gateway.routes.get("extract")
    extract = (route.model, route.base_url) if route is not None else None
    health = extraction_health(parts.store.jobs.recent(JOBS_READ), parts.now(None))
    embedder = parts.embedder
    embeddings = None
    if isinstance(embedder, OpenAICompatibleEmbedder) and embedder.failing is not None:
        embeddings = (embedder.settings.model, embedder.settings.base_url, *embedder.failing)
    return failing_notices(extract, health, embeddings)


# ------------------------------------------------------------- review queue helpers
# Computed here from the service's public API (review_queue, show, confirm, reject) so the page
# does not depend on what the review queue's items carry; when they carry the reason
# themselves, only pending_views changes.


def pending_views(service: MemoryService) -> list[PendingView]:
    """The review queue, oldest first, each memory with why it is pending (the reason its
    ``create`` audit entry recorded when it was proposed) and the active fact in its slot that
    it would replace."""
    views = []
    for item in service.review_queue():
        try:
            audit = service.show(item.pending.id).audit
        except MemoryNotFoundError:  # gone between the two reads: nothing left to review
            continue
        reason = pending_reason(audit, item.pending.id)
        views.append(PendingView(item.pending, reason, item.would_supersede))
    return views


def pending_reason(audit: Sequence[AuditEntry], memory_id: str) -> str:
    """Why ``memory_id`` is pending: the reason of its ``create`` entry, or else of the latest
    entry that made it pending."""
    own = [entry for entry in audit if entry.memory_id == memory_id]
    for entry in own:
        if entry.action == "create" and entry.to_status is Status.PENDING:
            return entry.reason or NO_REASON
    made_pending = [
        entry
        for entry in own
        if entry.to_status is Status.PENDING and entry.from_status is not Status.PENDING
    ]
    if not made_pending:
        return NO_REASON
    return made_pending[-1].reason or NO_REASON


def review_many(
    service: MemoryService, action: str, memory_ids: Sequence[str]
) -> list[tuple[bool, str]]:
    """Confirm or reject each memory in turn, each in its own transaction, and say what
    happened to each (whether it worked, and a line for the owner), in the order given. A
    memory that cannot take the action (no longer pending, unknown id) is reported and changes
    nothing; the others go on."""
    run: Callable[[str], Memory] = service.confirm if action == "confirm" else service.reject
    done = BULK_ACTIONS[action]
    outcomes: list[tuple[bool, str]] = []
    for memory_id in dict.fromkeys(memory_ids):  # each once, in the order given
        try:
            memory = run(memory_id)
        except MemorydError as error:
            outcomes.append((False, f"not {done}: {_label(service, memory_id)}: {error}"))
            continue
        line = f"{done}: {_excerpt(memory)}"
        if action == "confirm" and memory.supersedes:
            line += f" (replaces {_label(service, memory.supersedes)})"
        outcomes.append((True, line))
    return outcomes


def split_message(memory: Memory, restored: Memory | None) -> str:
    """What the page says after a split."""
    text = f"split: {memory.predicate!r} has its own slot again"
    if restored is not None:
        text += f"; active again: {_excerpt(restored)}"
    return text


def _excerpt(memory: Memory) -> str:
    if memory.purged_at:
        return "[purged]"
    text = " ".join(memory.content.split())
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1].rstrip() + "…"


def _label(service: MemoryService, memory_id: str) -> str:
    try:
        return _excerpt(service.get(memory_id))
    except MemorydError:
        return memory_id
