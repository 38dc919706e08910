"""The web page's memories: the review queue (why each waits, several confirmed or rejected at
once), the owner's actions on one memory, the memory browser and the reconfirmation queue."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape
from urllib.parse import quote

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from memoryd.errors import MemorydError
from memoryd.http.depends import Service
from memoryd.http.web_html import (
    PendingView,
    browser_html,
    memory_html,
    reconfirm_html,
    review_html,
)
from memoryd.http.web_session import (
    FormSession,
    Session,
    act,
    attempt,
    csrf_of,
    flash_redirect,
    local_path,
    page,
)
from memoryd.memory.model import Kind, Memory, Status
from memoryd.memory.review_policy import NO_REASON
from memoryd.service import MemoryService

router = APIRouter(include_in_schema=False)

PAGE_LIMIT = 200
EXCERPT_CHARS = 80
BULK_ACTIONS = {"confirm": "confirmed", "reject": "rejected"}


@router.get("/")
def review_page(request: Request, service: Service, session: Session) -> HTMLResponse:
    """The review queue."""
    body = review_html(pending_views(service), csrf_of(request, session))
    return page(request, "Review", body, session)


@router.post("/review")
def review_selected(
    request: Request,
    session: FormSession,
    service: Service,
    action: str = Form(""),
    ids: list[str] = Form(default=[]),  # noqa: B008 - FastAPI's declaration style
) -> Response:
    """Confirm or reject every ticked memory, each in its own transaction; the next page
    says what happened to each."""
    if action not in BULK_ACTIONS:
        return flash_redirect("/", f"error: unknown action {action!r}; use confirm or reject")
    if not ids:
        return flash_redirect("/", f"error: tick the memories to {action} first")
    outcomes = review_many(service, action, ids)
    request.app.state.web_sessions.report(session, [line for _, line in outcomes])
    done = sum(1 for succeeded, _ in outcomes if succeeded)
    return flash_redirect("/", f"{BULK_ACTIONS[action]} {done} of {len(outcomes)}")


@router.post("/memories/{memory_id}/{action}")
def memory_action(
    session: FormSession,
    service: Service,
    memory_id: str,
    action: str,
    content: str = Form(""),
    back: str = Form("/"),
) -> Response:
    """The owner's action on one memory, from the review queue or the memory's page."""
    target = local_path(back, "/")
    memories = service.memories
    calls: dict[str, Callable[[str], Memory]] = {
        "confirm": memories.confirm,
        "reject": memories.reject,
        "archive": memories.archive,
        "reconfirm": memories.reconfirm,
    }
    if action == "edit":
        edited, error = attempt(lambda: memories.edit(memory_id, content))
        if edited is None:
            return flash_redirect(target, error or "")
        return RedirectResponse(
            f"/memories/{edited.id}?flash=" + quote("edited: the old version is superseded"),
            status_code=303,
        )
    if action == "split":
        return act(target, lambda: memories.split(memory_id),
                   lambda split: split_message(split.memory, split.restored))  # fmt: skip
    if action not in calls:
        return flash_redirect(target, f"error: unknown action {action!r}")
    done = f"{action}ed" if action != "archive" else "archived"
    return act(target, lambda: calls[action](memory_id), done)


@router.get("/memories")
def browser(
    request: Request,
    service: Service,
    session: Session,
    kind: str = "",
    status: str = "",
    q: str = "",
) -> HTMLResponse:
    """The memory browser: by kind and status, or searched."""
    chosen_kind = Kind(kind) if kind in {k.value for k in Kind} else None
    chosen_status = Status(status) if status in {s.value for s in Status} else None
    ranks: dict[str, dict[str, int]] = {}
    if q.strip():
        # The owner browsing is not the model using a memory: nothing is stamped.
        found = service.retrieval.search(q, kind=chosen_kind, limit=50, stamp=False)
        memories = [
            s.memory
            for s in found.items
            if chosen_status is None or s.memory.status is chosen_status
        ]
        ranks = {s.memory.id: dict(s.ranks) for s in found.items}
    else:
        memories = service.memories.list(status=chosen_status, kind=chosen_kind, limit=PAGE_LIMIT)
    return page(request, "Memories", browser_html(memories, kind, status, q, ranks), session)


@router.get("/memories/{memory_id}")
def memory_page(request: Request, service: Service, session: Session, memory_id: str) -> Response:
    """One memory with its chain and audit trail."""
    try:
        shown = service.memories.show(memory_id)
    except MemorydError as error:
        return page(request, "Memory", f"<p class=error>{escape(str(error))}</p>", session)
    body = memory_html(shown.memory, shown.chain, shown.audit, csrf_of(request, session))
    return page(request, "Memory", body, session)


@router.get("/reconfirm")
def reconfirm_page(request: Request, service: Service, session: Session) -> HTMLResponse:
    """Facts consolidation marked as unconfirmed for a year."""
    queue = service.memories.reconfirmation_queue()
    return page(request, "Reconfirm", reconfirm_html(queue, csrf_of(request, session)), session)


def pending_views(service: MemoryService) -> list[PendingView]:
    """The review queue, oldest first, each memory with why it is pending (the review
    queue's reason: see :mod:`memoryd.memory.review_policy`) and the active fact in its slot
    that it would replace."""
    return [
        PendingView(item.pending, item.reason or NO_REASON, item.would_replace)
        for item in service.memories.review_queue()
    ]


def review_many(
    service: MemoryService, action: str, memory_ids: Sequence[str]
) -> list[tuple[bool, str]]:
    """Confirm or reject each memory in turn, each in its own transaction, and say what
    happened to each (whether it worked, and a line for the owner), in the order given. A
    memory that cannot take the action (no longer pending, unknown id) is reported and changes
    nothing; the others go on."""
    memories = service.memories
    run: Callable[[str], Memory] = memories.confirm if action == "confirm" else memories.reject
    done = BULK_ACTIONS[action]
    outcomes: list[tuple[bool, str]] = []
    for memory_id in dict.fromkeys(memory_ids):  # each once, in the order given
        try:
            memory = run(memory_id)
        except MemorydError as error:
            outcomes.append((False, f"not {done}: {label(service, memory_id)}: {error}"))
            continue
        line = f"{done}: {excerpt(memory)}"
        if action == "confirm" and memory.supersedes:
            line += f" (replaces {label(service, memory.supersedes)})"
        outcomes.append((True, line))
    return outcomes


def split_message(memory: Memory, restored: Memory | None) -> str:
    """What the page says after a split."""
    text = f"split: {memory.predicate!r} has its own slot again"
    if restored is not None:
        text += f"; active again: {excerpt(restored)}"
    return text


def excerpt(memory: Memory) -> str:
    """A memory's content on one short line."""
    if memory.purged_at:
        return "[purged]"
    text = " ".join(memory.content.split())
    return text if len(text) <= EXCERPT_CHARS else text[: EXCERPT_CHARS - 1].rstrip() + "…"


def label(service: MemoryService, memory_id: str) -> str:
    """A memory's excerpt, or its id when it cannot be read."""
    try:
        return excerpt(service.memories.get(memory_id))
    except MemorydError:
        return memory_id
