"""Scripted fake LLM servers on loopback that speak the real provider wire formats.

`FakeLLMServer` runs a `http.server.ThreadingHTTPServer` on ``127.0.0.1`` (an ephemeral port)
in a daemon thread and answers like the OpenAI Chat Completions API (``flavor="openai"``) or the
Anthropic Messages API (``flavor="anthropic"``), so end-to-end tests can point the official
``openai`` / ``anthropic`` SDKs (or a gateway built on them) at it::

    with FakeLLMServer("openai") as server:
        server.script(Reply('{"ok": true}'), Status(500), Delay(5.0, then=Reply("late")))
        client = openai.OpenAI(base_url=server.base_url + "/v1", api_key="k", max_retries=0)
        ...
        assert server.last_body()["model"] == "m"

Each completion request consumes one scripted step (FIFO); when the script is empty the
server's ``default`` step answers (by default a 503 in the provider's error JSON format).
Every request is recorded, and `FakeLLMServer.down` / `FakeLLMServer.up` close and re-open
the listening socket on the same port to simulate an unreachable provider.

A `Misbehave` step answers like a broken endpoint (hang, slow, endless, huge: see
`tests.fake_embeddings.act_out`, which the fake embeddings server shares).

Standard library only: the tests import the SDKs, this module must not.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal, Self, TypeAlias, cast
from urllib.parse import urlsplit

from tests.fake_embeddings import act_out

__all__ = [
    "Delay",
    "FakeLLMServer",
    "Flavor",
    "Hang",
    "Misbehave",
    "Recorded",
    "Reply",
    "Responder",
    "Status",
    "Step",
    "error_body",
]

Flavor: TypeAlias = Literal["openai", "anthropic"]

_FLAVORS: tuple[str, ...] = ("openai", "anthropic")
_COMPLETION_PATHS: dict[str, frozenset[str]] = {
    "openai": frozenset({"/v1/chat/completions", "/chat/completions"}),
    "anthropic": frozenset({"/v1/messages", "/messages"}),
}
_MODELS_PATHS = frozenset({"/v1/models", "/models"})
_POLL_INTERVAL = 0.05  # serve_forever poll: bounds how long down()/stop() wait


# --------------------------------------------------------------------------------------------
# Script steps
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """Answer 200 with a completion whose assistant text is `text`.

    `model` overrides the echoed request model; `truncated` reports a length stop
    (openai ``finish_reason="length"``, anthropic ``stop_reason="max_tokens"``); token counts
    default to a rough length-based estimate; `headers` are added to the response.
    """

    text: str
    model: str | None = None
    truncated: bool = False
    input_tokens: int | None = None
    output_tokens: int | None = None
    headers: Mapping[str, str] | None = None


@dataclass(frozen=True)
class Status:
    """Answer with HTTP status `code`.

    `body`: None sends the provider's error JSON for that code (see `error_body`); a dict or
    list is sent as JSON; str/bytes are sent verbatim as ``text/plain`` (override with a
    ``content-type`` header). A 429 gets ``retry-after: 0`` unless `headers` set a retry-after.
    """

    code: int
    body: Any = None
    headers: Mapping[str, str] | None = None


@dataclass(frozen=True)
class Delay:
    """Sleep `seconds` before answering with `then` (use to trigger client timeouts).

    The sleep is cut short, and the connection closed without an answer, by `down()`/`stop()`.
    """

    seconds: float
    then: Step = field(default_factory=lambda: Reply(""))


@dataclass(frozen=True)
class Hang:
    """Hold the connection for `seconds`, then close it without sending any response."""

    seconds: float = 60.0


@dataclass(frozen=True)
class Misbehave:
    """Answer `reply` the way a broken endpoint would: `mode` is ``hang``, ``slow`` (a byte
    every `interval` seconds), ``endless`` (a body that never ends) or ``huge`` (megabytes of
    valid JSON); see `tests.fake_embeddings.act_out`."""

    mode: str
    interval: float = 0.3
    reply: Reply = field(default_factory=lambda: Reply('{"proposals": []}'))


@dataclass(frozen=True)
class Recorded:
    """One request as received: path (no query), lower-cased headers, parsed JSON body.

    `body` is None when the request had no body or it was not valid JSON; `raw` keeps the bytes.
    """

    path: str
    headers: dict[str, str]
    body: Any
    method: str = "POST"
    raw: bytes = field(default=b"", repr=False)

    @property
    def api_key(self) -> str | None:
        """The credential sent: ``x-api-key``, else the ``Authorization: Bearer`` token.

        (The installed anthropic SDK sends ``api_key`` as a Bearer token, older ones as
        ``x-api-key``; this reads either.)
        """
        key = self.headers.get("x-api-key")
        if key is not None:
            return key
        auth = self.headers.get("authorization", "")
        return auth[7:].strip() if auth.lower().startswith("bearer ") else None


Responder: TypeAlias = Callable[[Recorded], "Step"]
"""A step computed from the request, e.g. ``lambda rec: Reply(rec.body["model"])``."""

Step: TypeAlias = Reply | Status | Delay | Hang | Misbehave | Responder
"""Anything `FakeLLMServer.script` accepts."""


# --------------------------------------------------------------------------------------------
# Wire formats
# --------------------------------------------------------------------------------------------

_OPENAI_ERRORS: dict[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "Invalid request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("permission_error", None, "You are not allowed to perform this request."),
    404: ("invalid_request_error", "model_not_found", "The model does not exist."),
    409: ("invalid_request_error", None, "Conflict."),
    422: ("invalid_request_error", None, "Unprocessable entity."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached. Please try again later."),
    500: ("server_error", None, "The server had an error while processing your request."),
    502: ("server_error", None, "Bad gateway."),
    503: ("server_error", None, "The engine is currently overloaded, please try again later."),
    504: ("server_error", None, "Gateway timeout."),
}

_ANTHROPIC_ERRORS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "Invalid request."),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Your API key does not have permission to use this resource."),
    404: ("not_found_error", "The requested resource could not be found."),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "Number of requests has exceeded your rate limit."),
    500: ("api_error", "Internal server error."),
    503: ("api_error", "Service unavailable."),
    529: ("overloaded_error", "Overloaded"),
}


def error_body(flavor: Flavor, code: int, message: str | None = None) -> dict[str, Any]:
    """The error JSON `flavor`'s API sends with HTTP status `code`.

    openai: ``{"error": {"message", "type", "param", "code"}}``;
    anthropic: ``{"type": "error", "error": {"type", "message"}}``.
    """
    if flavor == "openai":
        default_type = "server_error" if code >= 500 else "invalid_request_error"
        etype, ecode, emsg = _OPENAI_ERRORS.get(code, (default_type, None, f"HTTP {code}"))
        return {"error": {"message": message or emsg, "type": etype, "param": None, "code": ecode}}
    if flavor == "anthropic":
        default_type = "api_error" if code >= 500 else "invalid_request_error"
        atype, amsg = _ANTHROPIC_ERRORS.get(code, (default_type, f"HTTP {code}"))
        return {"type": "error", "error": {"type": atype, "message": message or amsg}}
    raise ValueError(f"unknown flavor {flavor!r}")


def _estimate_tokens(text: str) -> int:
    """Roughly four characters per token, at least one."""
    return max(1, len(text) // 4)


def _openai_completion(
    reply: Reply, request: Mapping[str, Any], completion_id: str
) -> dict[str, Any]:
    """A ChatCompletion object for `reply`."""
    prompt = reply.input_tokens
    if prompt is None:
        prompt = _estimate_tokens(json.dumps(request.get("messages", [])))
    completion = reply.output_tokens
    if completion is None:
        completion = _estimate_tokens(reply.text)
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": reply.model or str(request.get("model", "fake-model")),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.text, "refusal": None},
                "logprobs": None,
                "finish_reason": "length" if reply.truncated else "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
        "system_fingerprint": None,
    }


def _anthropic_message(reply: Reply, request: Mapping[str, Any], message_id: str) -> dict[str, Any]:
    """A Messages API Message object for `reply`."""
    prompt = reply.input_tokens
    if prompt is None:
        source = {"system": request.get("system"), "messages": request.get("messages", [])}
        prompt = _estimate_tokens(json.dumps(source))
    output = reply.output_tokens
    if output is None:
        output = _estimate_tokens(reply.text)
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": reply.model or str(request.get("model", "fake-model")),
        "content": [{"type": "text", "text": reply.text}],
        "stop_reason": "max_tokens" if reply.truncated else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": prompt,
            "output_tokens": output,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


def _models_list(flavor: Flavor, models: Sequence[str]) -> dict[str, Any]:
    """The ``GET /v1/models`` answer for `flavor`."""
    if flavor == "openai":
        return {
            "object": "list",
            "data": [
                {"id": m, "object": "model", "created": 1700000000, "owned_by": "fake"}
                for m in models
            ],
        }
    return {
        "data": [
            {"type": "model", "id": m, "display_name": m, "created_at": "2024-01-01T00:00:00Z"}
            for m in models
        ],
        "has_more": False,
        "first_id": models[0] if models else None,
        "last_id": models[-1] if models else None,
    }


def _validation_error(flavor: Flavor, body: Any) -> str | None:
    """Why `body` is not an acceptable completion request, or None if it is."""
    if not isinstance(body, dict):
        return "request body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: field required"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: field required and must be a non-empty array"
    if flavor == "anthropic" and not isinstance(body.get("max_tokens"), int):
        return "max_tokens: field required"
    if body.get("stream"):
        return "stream: streaming is not supported by the fake LLM server"
    return None


# --------------------------------------------------------------------------------------------
# HTTP plumbing
# --------------------------------------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    """One listening generation of a `FakeLLMServer` (replaced on every `up()`)."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], fake: FakeLLMServer) -> None:
        self.fake = fake
        self.abort = threading.Event()
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet about clients that went away (timeouts, `down()`); report the rest."""
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError):
            return
        super().handle_error(request, client_address)

    def kill_connections(self) -> None:
        """Wake sleeping handlers and cut every open client connection."""
        self.abort.set()
        with self.connections_lock:
            conns = list(self.connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    """Parses and records a request, then lets the owning `FakeLLMServer` answer it."""

    protocol_version = "HTTP/1.1"
    server_version = "FakeLLM/1.0"

    @property
    def _srv(self) -> _Server:
        return cast(_Server, self.server)

    def setup(self) -> None:
        super().setup()
        with self._srv.connections_lock:
            self._srv.connections.add(self.connection)

    def finish(self) -> None:
        try:
            with contextlib.suppress(OSError):
                super().finish()
        finally:
            with self._srv.connections_lock:
                self._srv.connections.discard(self.connection)

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default per-request stderr logging."""

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def _read_body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _serve(self, method: str) -> None:
        raw = self._read_body()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        recorded = Recorded(
            path=urlsplit(self.path).path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            method=method,
            raw=raw,
        )
        self._srv.fake._handle(self, recorded, self._srv.abort)

    def send_payload(self, code: int, payload: bytes, headers: Mapping[str, str]) -> None:
        """Write a complete response and mark the connection for closing."""
        self.close_connection = True
        try:
            self.send_response(code)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()
        except OSError:
            pass  # the client gave up (timeout) or down() cut the connection


# --------------------------------------------------------------------------------------------
# The server
# --------------------------------------------------------------------------------------------


class FakeLLMServer:
    """A scripted OpenAI- or Anthropic-compatible HTTP server on loopback.

    The server starts listening in the constructor (also usable as a context manager, which
    stops it on exit). Completion requests (openai: ``POST /v1/chat/completions`` or
    ``/chat/completions``; anthropic: ``POST /v1/messages``) consume one scripted step each,
    or use `default` when the script is empty. ``GET /v1/models`` lists `models`. Other paths
    get a 404 in the provider's error format. Every request is recorded. With `capabilities`
    (model → capability names), ``POST /api/show`` answers like Ollama's: ``{"capabilities":
    [...]}`` for a listed model, a 404 for any other.

    With `validate` (default), a completion request that the real API would reject outright
    (not a JSON object, no ``model``, empty ``messages``, anthropic without ``max_tokens``, or
    ``stream: true``, which the fake does not implement) gets a 400 and consumes no step.
    With `api_key` set, a request not carrying it (``Authorization: Bearer`` or ``x-api-key``)
    gets a 401 and consumes no step.
    """

    def __init__(
        self,
        flavor: Flavor = "openai",
        *,
        default: Step | None = None,
        api_key: str | None = None,
        models: Sequence[str] = ("fake-model",),
        validate: bool = True,
        host: str = "127.0.0.1",
        capabilities: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        if flavor not in _FLAVORS:
            raise ValueError(f"flavor must be 'openai' or 'anthropic', not {flavor!r}")
        self.flavor: Flavor = flavor
        self.default: Step = default if default is not None else Status(503)
        self.api_key = api_key
        self.models: tuple[str, ...] = tuple(models)
        self.validate = validate
        self.capabilities = dict(capabilities) if capabilities is not None else None
        self._host = host
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._steps: deque[Step] = deque()
        # The body bytes each Misbehave answer sent before the client hung up.
        self.misbehaved_bytes: list[int] = []
        self._requests: list[Recorded] = []
        self._ids = itertools.count(1)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._stopped = False
        self._port = 0
        self.up()

    # -- lifecycle -----------------------------------------------------------------------

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "up" if self.is_up else "down"
        return f"FakeLLMServer({self.flavor!r}, {self.base_url}, {state})"

    @property
    def port(self) -> int:
        """The TCP port; stable across `down()` / `up()`."""
        return self._port

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash, no ``/v1``)."""
        return f"http://{self._host}:{self._port}"

    @property
    def sdk_base_url(self) -> str:
        """The ``base_url`` to hand this flavor's SDK (openai wants ``/v1``, anthropic not)."""
        return self.base_url + "/v1" if self.flavor == "openai" else self.base_url

    @property
    def is_up(self) -> bool:
        """Whether the listening socket is open."""
        return self._server is not None

    def up(self) -> None:
        """(Re)open the listening socket on the same port; no-op if already up."""
        if self._stopped:
            raise RuntimeError("FakeLLMServer was stopped")
        if self._server is not None:
            return
        server = _Server((self._host, self._port), self)
        self._port = server.server_address[1]
        thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": _POLL_INTERVAL},
            name=f"fake-llm-{self.flavor}-{self._port}",
            daemon=True,
        )
        self._server, self._thread = server, thread
        thread.start()

    def down(self) -> None:
        """Close the listening socket (new connections are refused) and cut open connections.

        Requests in flight (e.g. in a `Delay` or `Hang`) are dropped without a response.
        No-op if already down.
        """
        server, thread = self._server, self._thread
        if server is None:
            return
        self._server = self._thread = None
        server.shutdown()
        server.server_close()
        server.kill_connections()
        if thread is not None:
            thread.join(timeout=5)

    def stop(self) -> None:
        """Shut the server down for good (idempotent)."""
        self.down()
        self._stopped = True

    # -- script --------------------------------------------------------------------------

    def script(self, *steps: Step) -> None:
        """Append `steps` to the FIFO of answers for completion requests."""
        for step in steps:
            if not isinstance(step, Reply | Status | Delay | Hang | Misbehave) and not callable(
                step
            ):
                raise TypeError(f"not a script step: {step!r}")
        with self._lock:
            self._steps.extend(steps)

    @property
    def remaining(self) -> int:
        """How many scripted steps have not been consumed yet."""
        with self._lock:
            return len(self._steps)

    # -- recorded requests -----------------------------------------------------------------

    @property
    def requests(self) -> list[Recorded]:
        """A snapshot of every request received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def request_count(self) -> int:
        """How many requests (of any kind) have been received."""
        with self._lock:
            return len(self._requests)

    def last_request(self) -> Recorded:
        """The most recent request; AssertionError if there is none."""
        with self._lock:
            if not self._requests:
                raise AssertionError("the fake LLM server has received no requests")
            return self._requests[-1]

    def last_body(self) -> Any:
        """The parsed JSON body of the most recent request; AssertionError if none."""
        return self.last_request().body

    def wait_for_requests(self, count: int, timeout: float = 5.0) -> list[Recorded]:
        """Block until at least `count` requests were received; AssertionError on timeout."""
        with self._changed:
            if not self._changed.wait_for(lambda: len(self._requests) >= count, timeout):
                raise AssertionError(
                    f"expected {count} requests within {timeout}s, got {len(self._requests)}"
                )
            return list(self._requests)

    def clear(self) -> None:
        """Forget recorded requests and unconsumed steps."""
        with self._lock:
            self._requests.clear()
            self._steps.clear()

    # -- request handling (runs on handler threads) ----------------------------------------

    def _handle(self, handler: _Handler, rec: Recorded, abort: threading.Event) -> None:
        """Record `rec` and answer it on `handler`."""
        with self._changed:
            self._requests.append(rec)
            self._changed.notify_all()
        if rec.method == "GET" and rec.path in _MODELS_PATHS:
            self._send_json(handler, 200, _models_list(self.flavor, self.models))
            return
        if rec.method == "POST" and rec.path == "/api/show" and self.capabilities is not None:
            model = rec.body.get("model") if isinstance(rec.body, dict) else None
            if model in self.capabilities:
                self._send_json(handler, 200, {"capabilities": list(self.capabilities[model])})
            else:
                self._send_json(handler, 404, {"error": f"model '{model}' not found"})
            return
        if rec.method != "POST" or rec.path not in _COMPLETION_PATHS[self.flavor]:
            message = f"fake {self.flavor} server: no route for {rec.method} {rec.path}"
            self._send_json(handler, 404, error_body(self.flavor, 404, message))
            return
        if self.api_key is not None and not self._authorized(rec):
            self._send_json(handler, 401, error_body(self.flavor, 401))
            return
        if self.validate:
            problem = _validation_error(self.flavor, rec.body)
            if problem is not None:
                self._send_json(handler, 400, error_body(self.flavor, 400, problem))
                return
        with self._lock:
            step = self._steps.popleft() if self._steps else self.default
        self._run(step, handler, rec, abort)

    def _authorized(self, rec: Recorded) -> bool:
        auth = rec.headers.get("authorization", "")
        bearer = auth[7:].strip() if auth.lower().startswith("bearer ") else None
        return self.api_key in (rec.headers.get("x-api-key"), bearer)

    def _run(self, step: Step, handler: _Handler, rec: Recorded, abort: threading.Event) -> None:
        """Carry out one script step."""
        for _ in range(100):  # bound the chain of Delay/Responder indirections
            if isinstance(step, Delay):
                if abort.wait(max(0.0, step.seconds)):
                    handler.close_connection = True
                    return
                step = step.then
            elif isinstance(step, Hang):
                abort.wait(max(0.0, step.seconds))
                handler.close_connection = True
                with contextlib.suppress(OSError):
                    handler.connection.shutdown(socket.SHUT_RDWR)
                return
            elif isinstance(step, Status):
                self._send_status(handler, step)
                return
            elif isinstance(step, Reply):
                self._send_reply(handler, step, rec)
                return
            elif isinstance(step, Misbehave):
                body = json.dumps(self._payload(step.reply, rec)).encode()
                sent = act_out(handler, step.mode, body, step.interval, abort)
                with self._lock:
                    self.misbehaved_bytes.append(sent)
                return
            else:
                step = step(rec)
        raise RuntimeError("script step chain too deep")

    def _next_id(self, prefix: str) -> str:
        with self._lock:
            return f"{prefix}{next(self._ids):08d}"

    def _send_reply(self, handler: _Handler, reply: Reply, rec: Recorded) -> None:
        self._send_json(handler, 200, self._payload(reply, rec), reply.headers)

    def _payload(self, reply: Reply, rec: Recorded) -> dict[str, Any]:
        request = rec.body if isinstance(rec.body, dict) else {}
        if self.flavor == "openai":
            return _openai_completion(reply, request, self._next_id("chatcmpl-fake"))
        return _anthropic_message(reply, request, self._next_id("msg_fake"))

    def _send_status(self, handler: _Handler, status: Status) -> None:
        extra = {k.lower(): v for k, v in (status.headers or {}).items()}
        if status.code == 429 and "retry-after" not in extra and "retry-after-ms" not in extra:
            extra["retry-after"] = "0"
        body = status.body
        if body is None:
            self._send_json(handler, status.code, error_body(self.flavor, status.code), extra)
        elif isinstance(body, str | bytes):
            data = body.encode() if isinstance(body, str) else body
            headers = {"content-type": "text/plain; charset=utf-8", **self._id_header(), **extra}
            handler.send_payload(status.code, data, headers)
        else:
            self._send_json(handler, status.code, body, extra)

    def _id_header(self) -> dict[str, str]:
        name = "x-request-id" if self.flavor == "openai" else "request-id"
        return {name: self._next_id("req_fake")}

    def _send_json(
        self,
        handler: _Handler,
        code: int,
        payload: Any,
        extra: Mapping[str, str] | None = None,
    ) -> None:
        headers = {"content-type": "application/json", **self._id_header()}
        headers.update({k.lower(): v for k, v in (extra or {}).items()})
        handler.send_payload(code, json.dumps(payload).encode(), headers)
