"""A loopback OpenAI-compatible embeddings server with deterministic vectors.

Each text becomes a bag of its lower-cased words hashed into ``dimension`` signed slots, so
texts that share words have a high cosine and unrelated ones a low one, as a real model's would.
The server can fail the next requests (``fail``), answer another dimension (``answer_dimension``)
and counts what it was asked. Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self

_WORD = re.compile(r"[a-z0-9]+")


def fake_vector(text: str, dimension: int) -> list[float]:
    """The server's vector for ``text`` (not normalised)."""
    values = [0.0] * dimension
    for word in _WORD.findall(text.lower()):
        digest = hashlib.sha256(word.encode()).digest()
        slot = int.from_bytes(digest[:4], "big") % dimension
        values[slot] += 1.0 if digest[4] % 2 else -1.0
    if not any(values):
        values[0] = 1.0
    return values


def json_handler(
    answer: Callable[[str, str, dict[str, Any]], tuple[int, dict[str, Any]]],
) -> type[BaseHTTPRequestHandler]:
    """A request handler that decodes a JSON body (none for GET) and sends back what
    ``answer(method, path, body)`` returns: a status and a JSON object."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._send(*answer("GET", self.path, {}))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            self._send(*answer("POST", self.path, json.loads(self.rfile.read(length) or b"{}")))

        def _send(self, status: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return

    return Handler


def embeddings_answer(texts: list[str], model: str, dimension: int) -> dict[str, Any]:
    """The body of a ``/v1/embeddings`` answer: a :func:`fake_vector` per text, in order."""
    data = [
        {"object": "embedding", "index": i, "embedding": fake_vector(text, dimension)}
        for i, text in enumerate(texts)
    ]
    usage = {"prompt_tokens": len(texts), "total_tokens": len(texts)}
    return {"object": "list", "data": data, "model": model, "usage": usage}


class FakeEmbeddingServer:
    """``/v1/embeddings`` on 127.0.0.1 at an ephemeral port, in a daemon thread."""

    def __init__(self, dimension: int = 768, model: str = "fake-embed") -> None:
        self.dimension = dimension
        self.model = model
        self.answer_dimension: int | None = None
        # Seconds each answer waits (a slow endpoint, so a test can stop a client mid-way).
        self.delay = 0.0
        self.requests = 0
        self.texts = 0
        self._failures: list[int] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), json_handler(self._answer))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL (ends in /v1)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def fail(self, times: int, status: int = 503) -> None:
        """Answer the next ``times`` requests with ``status``."""
        with self._lock:
            self._failures.extend([status] * times)

    def env(self) -> dict[str, str]:
        """The environment that points memoryd at this server."""
        return {
            "MEMORYD_EMBED_BASE_URL": self.base_url,
            "MEMORYD_EMBED_MODEL": self.model,
            "MEMORYD_EMBED_MAX_RETRIES": "0",
            "MEMORYD_EMBED_TIMEOUT": "5",
        }

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _answer(self, method: str, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if method != "POST" or path.rstrip("/") not in ("/v1/embeddings", "/embeddings"):
            return 404, {"error": {"message": f"no route {path}", "type": "not_found"}}
        with self._lock:
            self.requests += 1
            if self._failures:
                status = self._failures.pop(0)
                return status, {"error": {"message": "unavailable", "type": "server_error"}}
        if body.get("model") != self.model:
            return 404, {"error": {"message": f"model {body.get('model')!r} not found"}}
        if self.delay:
            time.sleep(self.delay)
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        assert isinstance(texts, list)
        with self._lock:
            self.texts += len(texts)
        size = self.answer_dimension or int(body.get("dimensions") or self.dimension)
        return 200, embeddings_answer(texts, self.model, size)
