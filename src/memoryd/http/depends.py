"""What the API's routers share: the service a request reaches, and reading a body's times."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, tzinfo
from typing import Annotated, Any

from fastapi import Depends, Request

from memoryd.clock import parse_instant
from memoryd.errors import InvalidInputError
from memoryd.extraction.extractor import parse_local_instant
from memoryd.service import MemoryService


async def service_of(request: Request) -> MemoryService:
    """The service the app serves (``create_app`` puts it on the app's state)."""
    service: MemoryService = request.app.state.service
    return service


# A route's parameter ``service: Service`` is the app's service.
Service = Annotated[MemoryService, Depends(service_of)]


def with_field(parse: Callable[[], Any], field: str) -> Any:
    """What ``parse`` returns; its refusal names the body ``field``."""
    try:
        return parse()
    except InvalidInputError as error:
        raise InvalidInputError(str(error), fields=(field,)) from None


def instant(value: str | None, what: str) -> datetime | None:
    """An ISO-8601 time with an offset from a body field, or None when absent."""
    return parse_instant(value, what=what) if value else None


def local_instant(value: str | None, zone: tzinfo, what: str) -> datetime | None:
    """An ISO-8601 time from a body field (without an offset, the owner's local time), or
    None when absent."""
    return parse_local_instant(value, zone, what=what) if value else None
