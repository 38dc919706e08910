"""A loopback OpenAI-compatible embeddings server with deterministic vectors.

Each text becomes a bag of its lower-cased words hashed into ``dimension`` signed slots, so
texts that share words have a high cosine and unrelated ones a low one, as a real model's would.
The server can fail the next requests (``fail``), answer another dimension (``answer_dimension``),
misbehave (``misbehave``: see :func:`act_out`, shared with the fake LLM server) and counts what it
was asked. Standard library only.
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


# How an endpoint can misbehave (see act_out).
MODES = ("hang", "slow", "endless", "huge")
HUGE_BYTES = 64 << 20


def act_out(
    handler: BaseHTTPRequestHandler, mode: str, body: bytes, interval: float, stop: threading.Event
) -> int:
    """Answer like a broken endpoint, until ``stop`` is set or the client goes away, and say
    how many bytes of the answer's body went out:

    - ``hang``: accept the request and send nothing (for two minutes), then close;
    - ``slow``: send the headers of ``body``, then one byte of it every ``interval`` seconds
      (a token at a time: no read timeout longer than ``interval`` ever fires);
    - ``endless``: a 200 whose chunked body never ends, a kilobyte every ``interval`` seconds;
    - ``huge``: a 200 with a valid JSON body of :data:`HUGE_BYTES`, as fast as the client
      reads, chunked (no Content-Length to refuse it by).
    """
    handler.close_connection = True
    sent = 0

    def send(data: bytes, chunked: bool = True) -> None:
        nonlocal sent
        framed = f"{len(data):x}\r\n".encode() + data + b"\r\n" if chunked else data
        handler.wfile.write(framed)
        handler.wfile.flush()
        sent += len(data)

    try:
        if mode == "hang":
            stop.wait(120)
            return sent
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        if mode == "slow":
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            for index in range(len(body)):
                send(body[index : index + 1], chunked=False)
                if stop.wait(interval):
                    break
            return sent
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        if mode == "huge":
            send(body[:-1] + b', "padding": "')
            block = b" " * (64 << 10)
            for _ in range(HUGE_BYTES // len(block)):
                send(block)
            send(b'"}')
            send(b"")
            return sent
        send(b'{"padding": "')
        while not stop.wait(interval):
            send(b"x" * 1024)
    except OSError:
        pass  # the client gave up: what a bounded client does
    return sent


def json_handler(
    answer: Callable[[str, str, dict[str, Any]], tuple[int, dict[str, Any]]],
    misbehaviour: Callable[[], tuple[str | None, float]] = lambda: (None, 0.0),
    stop: threading.Event | None = None,
    sent: list[int] | None = None,
) -> type[BaseHTTPRequestHandler]:
    """A request handler that decodes a JSON body (none for GET) and sends back what
    ``answer(method, path, body)`` returns: a status and a JSON object. While
    ``misbehaviour()`` names a mode (with its interval), POSTs are answered by :func:`act_out`
    instead (with what ``answer`` would have sent), until ``stop`` is set; ``sent`` gets the
    bytes each such answer sent."""
    stopped = stop or threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._send(*answer("GET", self.path, {}))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            status, body = answer("POST", self.path, json.loads(self.rfile.read(length) or b"{}"))
            mode, interval = misbehaviour()
            if mode is not None and status == 200:
                count = act_out(self, mode, json.dumps(body).encode(), interval, stopped)
                if sent is not None:
                    sent.append(count)
                return
            self._send(status, body)

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
        # One of MODES while the endpoint misbehaves (None: it answers), and its pace.
        self.misbehave: str | None = None
        self.interval = 0.3
        self._failures: list[int] = []
        self._lock = threading.Lock()
        # The body bytes each misbehaving answer sent before the client hung up.
        self.misbehaved_bytes: list[int] = []
        self._stop = threading.Event()
        handler = json_handler(
            self._answer,
            lambda: (self.misbehave, self.interval),
            self._stop,
            self.misbehaved_bytes,
        )
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL (ends in /v1)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def fail(self, times: int, status: int = 503) -> None:
        """Answer the next ``times`` requests with ``status``."""
        with self._lock:
            self._failures.extend([status] * times)

    def recover(self) -> None:
        """Answer properly again: no failures left, no misbehaviour."""
        with self._lock:
            self._failures.clear()
        self.misbehave = None

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
        self._stop.set()
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
