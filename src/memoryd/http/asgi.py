"""Raw ASGI helpers for the middlewares that answer before any route runs."""

from __future__ import annotations

import json
from typing import Any

from starlette.types import Send


async def send_json(
    send: Send,
    status: int,
    body: dict[str, Any],
    extra_headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    """Answer with ``body`` as JSON and ``status``, plus ``extra_headers``."""
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
                *(extra_headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})
