"""The owner's web page, served by ``memoryd serve``: server-rendered HTML, no build step.

Pages: the review queue (why each memory waits, what a fact would replace, several confirmed
or rejected at once), the memory browser (chains and audit trails), the reconfirmation queue,
the knowledge-base documents, a recall playground (a preview: nothing it shows is counted as
retrieved) whose results can join the owner's evaluation set, the evaluation page, and forget
(the list first, then a button that erases it). A login form trades the API token for a session
cookie (HttpOnly, SameSite=Strict); every form carries a per-session CSRF token.

Each group of pages is a router (web_review_routes, web_document_routes, web_recall_routes,
and sync_routes' forms); what they share is in web_session.
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from memoryd.http import web_document_routes, web_recall_routes, web_review_routes
from memoryd.http.auth import token_matches
from memoryd.http.sync_routes import sync_pages
from memoryd.http.web_html import login_html, page_html
from memoryd.http.web_session import (
    COOKIE,
    SESSION_SECONDS,
    FormSession,
    Redirect,
    SessionBeforeBody,
    Sessions,
    local_path,
    sessions_of,
)

login_router = APIRouter(include_in_schema=False)


def install_web(app: FastAPI, token: str) -> None:
    """Add the owner's pages to the API app (whose state holds the service); ``token`` is
    what the login form asks for."""
    sessions = Sessions()
    app.state.web_sessions = sessions
    app.state.web_token = token
    app.state.session_checker = sessions.valid
    app.add_middleware(SessionBeforeBody, valid=sessions.valid)

    @app.exception_handler(Redirect)
    async def redirect(request: Request, error: Exception) -> Response:
        assert isinstance(error, Redirect)
        return RedirectResponse(error.location, status_code=303)

    for router in (
        login_router,
        web_review_routes.router,
        web_document_routes.router,
        sync_pages,
        web_recall_routes.router,
    ):
        app.include_router(router)


@login_router.get("/login")
def login_form(next: str = "/") -> HTMLResponse:
    """The login form."""
    return HTMLResponse(page_html("Log in", login_html(next, None), "", nav=False))


@login_router.post("/login")
def login(
    request: Request, given: str = Form("", alias="token"), next: str = Form("/")
) -> Response:
    """The token traded for a session cookie."""
    if not given or not token_matches(request.app.state.web_token, given.strip()):
        body = login_html(next, "That is not the token in $MEMORYD_HOME/token.")
        return HTMLResponse(page_html("Log in", body, "", nav=False), status_code=403)
    response = RedirectResponse(local_path(next, "/"), status_code=303)
    session = sessions_of(request).create()
    response.set_cookie(COOKIE, session, max_age=SESSION_SECONDS, httponly=True, samesite="strict")
    return response


@login_router.post("/logout")
def logout(request: Request, session: FormSession) -> Response:
    """End the session."""
    sessions_of(request).end(session)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE)
    return response
