"""What every page of the owner's web page shares: the logged-in sessions (a cookie, a CSRF
token per session), the check that runs before an upload's body is read, and the helpers a
route calls to require a session, render a page and redirect after an action.

The sessions live on the app's state (``install_web`` puts them there), so the page routers
are plain module-level ``APIRouter`` s."""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from hashlib import sha256
from typing import Annotated, TypeVar, cast
from urllib.parse import quote

from fastapi import Depends, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.requests import cookie_parser
from starlette.types import ASGIApp, Receive, Scope, Send

from memoryd.errors import MemorydError
from memoryd.http.web_html import page_html

T = TypeVar("T")

COOKIE = "memoryd_session"
# Forms whose body may be large: the session is checked before the body is read.
SESSION_FIRST_PATHS = ("/documents/upload",)
SESSION_SECONDS = 12 * 3600


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


class Redirect(Exception):
    """Raised by a page route to send the browser elsewhere (``install_web`` answers it with
    a 303)."""

    def __init__(self, location: str) -> None:
        super().__init__(location)
        self.location = location


def sessions_of(request: Request) -> Sessions:
    """The app's sessions."""
    sessions: Sessions = request.app.state.web_sessions
    return sessions


async def session_of(request: Request) -> str:
    """The request's live session, or a redirect to the login page."""
    session = request.cookies.get(COOKIE)
    if session is None or not sessions_of(request).valid(session):
        raise Redirect("/login?next=" + quote(request.url.path))
    return session


# A page route's parameter ``session: Session`` is the logged-in session (else: log in).
Session = Annotated[str, Depends(session_of)]


def checked(request: Request, csrf: str = Form("")) -> str:
    """The session of a form post whose CSRF token belongs to it, or a redirect."""
    session = request.cookies.get(COOKIE)
    sessions = sessions_of(request)
    if session is None or not sessions.valid(session):
        raise Redirect("/login?next=" + quote(request.url.path))
    if not sessions.csrf_ok(session, csrf):
        raise Redirect("/?flash=" + quote("the form expired; try again"))
    return session


# A form route's parameter ``session: FormSession`` is the session whose form (its ``csrf``
# field) this is: checked before the route runs (else: log in, or the form expired).
FormSession = Annotated[str, Depends(checked)]


def csrf_of(request: Request, session: str) -> str:
    """The form token the page's forms carry."""
    return sessions_of(request).csrf(session)


def page(request: Request, title: str, body: str, session: str) -> HTMLResponse:
    """A whole page: the flash message and the action report, the failing endpoints and the
    chat proxy's status line above ``body``."""
    report = sessions_of(request).take_report(session)
    proxy = getattr(request.app.state, "proxy", None)
    status = [proxy.status_line()] if proxy is not None else []
    failing = request.app.state.service.admin.failing_endpoints()
    return HTMLResponse(
        page_html(
            title,
            body,
            csrf_of(request, session),
            flash=request.query_params.get("flash"),
            report=report,
            failing=failing,
            status=status,
        )
    )


def flash_redirect(location: str, message: str) -> RedirectResponse:
    """Back to ``location`` with ``message`` shown on top."""
    separator = "&" if "?" in location else "?"
    return RedirectResponse(f"{location}{separator}flash={quote(message)}", status_code=303)


def act(location: str, call: Callable[[], T], done: str | Callable[[T], str]) -> RedirectResponse:
    """Run an action and go back to ``location`` saying ``done`` (or what ``done`` makes of
    the action's result), or the error it raised."""
    result, error = attempt(call)
    if error is not None:
        return flash_redirect(location, error)
    return flash_redirect(location, done if isinstance(done, str) else done(cast("T", result)))


def attempt(call: Callable[[], T]) -> tuple[T | None, str | None]:
    """What ``call`` returns, or the page's error line for the refusal it raised."""
    try:
        return call(), None
    except MemorydError as problem:
        return None, f"error: {problem}"


def local_path(path: str, fallback: str = "/recall") -> str:
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
