"""``/v1/memories``, the review queues and forget: the owner's memories over HTTP."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter

from memoryd.errors import InvalidInputError
from memoryd.http import response_models as out
from memoryd.http import schemas as s
from memoryd.http.depends import Service, instant
from memoryd.memory.forget_policy import ForgetJson
from memoryd.memory.model import (
    Importance,
    Memory,
    MemoryJson,
    ShowJson,
    Status,
    kind_from_user,
    parse_kind,
)
from memoryd.results import ReviewItemJson, SplitJson, WriteJson
from memoryd.service import MemoryService

router = APIRouter()


@router.get("/v1/memories", response_model=out.list_of(out.MemoryOut), tags=["memories"])
def list_memories(
    service: Service, status: str | None = None, kind: str | None = None, limit: int = 100
) -> list[MemoryJson]:
    """Memories, newest first, filtered by status and kind."""
    if not 1 <= limit <= 10_000:
        raise InvalidInputError("limit must be between 1 and 10000")
    chosen = _status(status) if status else None
    found = service.memories.list(status=chosen, kind=kind_from_user(kind), limit=limit)
    return [m.to_json() for m in found]


@router.post("/v1/memories", response_model=out.WriteOut, tags=["memories"])
def remember(service: Service, body: s.RememberRequest) -> WriteJson:
    """An owner action: remember this (active at once unless refused)."""
    result = service.memories.remember(
        body.content,
        kind=parse_kind(body.kind),
        subject=body.subject,
        predicate=body.predicate,
        object=body.object,
        entities=body.entities,
        importance=Importance(body.importance) if body.importance else None,
        changes_behavior=body.changes_behavior,
        occurred_at=instant(body.occurred_at, "occurred_at"),
    )
    return result.to_json()


@router.get("/v1/memories/{memory_id}", response_model=out.ShowOut, tags=["memories"])
def show(service: Service, memory_id: str) -> ShowJson:
    """A memory with its supersede chain (oldest first) and audit trail."""
    return service.memories.show(memory_id).to_json()


def _owner_action(name: str, call: Callable[[MemoryService, str], Memory]) -> None:
    def action(
        service: Service, memory_id: str, body: s.OwnerActionRequest | None = None
    ) -> MemoryJson:
        return call(service, memory_id).to_json()

    action.__name__ = name
    action.__doc__ = f"Owner action: {name} the memory."
    router.post(
        f"/v1/memories/{{memory_id}}/{name}", response_model=out.MemoryOut, tags=["review"]
    )(action)


_owner_action("confirm", lambda service, memory_id: service.memories.confirm(memory_id))
_owner_action("reject", lambda service, memory_id: service.memories.reject(memory_id))
_owner_action("archive", lambda service, memory_id: service.memories.archive(memory_id))
_owner_action("purge", lambda service, memory_id: service.memories.purge(memory_id))
_owner_action("reconfirm", lambda service, memory_id: service.memories.reconfirm(memory_id))


@router.post("/v1/memories/{memory_id}/edit", response_model=out.MemoryOut, tags=["review"])
def edit(service: Service, memory_id: str, body: s.EditRequest) -> MemoryJson:
    """Owner action: supersede the memory with corrected text."""
    return service.memories.edit(memory_id, body.content, object=body.object).to_json()


@router.post("/v1/memories/{memory_id}/split", response_model=out.SplitOut, tags=["review"])
def split(service: Service, memory_id: str, body: s.OwnerActionRequest | None = None) -> SplitJson:
    """Owner action: a fact treated as the same slot as another predicate gets its own
    slot back; the fact it replaced there, if any, is active again."""
    return service.memories.split(memory_id).to_json()


@router.get("/v1/review", response_model=out.list_of(out.ReviewItemOut), tags=["review"])
def review(service: Service) -> list[ReviewItemJson]:
    """Pending memories, oldest first, each with the fact it would replace."""
    return [item.to_json() for item in service.memories.review_queue()]


@router.get("/v1/reconfirmation", response_model=out.list_of(out.MemoryOut), tags=["review"])
def reconfirmation(service: Service) -> list[MemoryJson]:
    """Facts consolidation marked as a year unconfirmed."""
    return [m.to_json() for m in service.memories.reconfirmation_queue()]


@router.post("/v1/forget", response_model=out.ForgetOut, tags=["review"])
def forget(service: Service, body: s.ForgetRequest) -> ForgetJson:
    """Owner action: erase every memory (any status) and knowledge-base document that
    names ``entity`` or matches ``query``, in one transaction; with ``dry_run``, only
    list them."""
    result = service.memories.forget(entity=body.entity, query=body.query, dry_run=body.dry_run)
    return result.to_json()


def _status(value: str) -> Status:
    try:
        return Status(value)
    except ValueError:
        raise InvalidInputError(
            f"unknown status {value!r}; use pending, active, rejected or archived"
        ) from None
