"""A chat model server on loopback for the proxy's tests and benchmark: OpenAI chat completions
and Anthropic messages, streamed (server-sent events, one word per event) or not, recording
every request body it received and when it sent each streamed event.

    with ChatUpstream() as upstream:
        upstream.answer = "Lisbon is lovely."
        ... point memoryd's llm.base_url at upstream.base_url + "/v1" ...
        assert "<memory" in upstream.bodies()[-1]["messages"][0]["content"]

``tool_call`` makes the next OpenAI answers call a tool instead of answering;
``chunk_delay`` spaces the streamed events (seconds). Standard library only.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self


class ChatUpstream:
    """The server, its recorded requests and its script."""

    def __init__(self, answer: str = "Noted, thank you.") -> None:
        self.answer = answer
        self.chunk_delay = 0.0
        self.first_delay = 0.0
        self.tool_call = False
        self.models = ["chat-model"]
        self._bodies: list[dict[str, Any]] = []
        self._headers: list[dict[str, str]] = []
        # The last user message of a streamed request → the monotonic time its first content
        # event was written (the benchmark measures the proxy's relay delay against it).
        self.first_sent: dict[str, float] = {}
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def bodies(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._bodies)

    def headers(self) -> list[dict[str, str]]:
        with self._lock:
            return list(self._headers)

    def record(self, body: dict[str, Any], headers: dict[str, str]) -> int:
        with self._lock:
            self._bodies.append(body)
            self._headers.append(headers)
            return len(self._bodies) - 1

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()


def _words(text: str) -> list[str]:
    parts = text.split(" ")
    return [part if i == 0 else " " + part for i, part in enumerate(parts)]


def _handler(upstream: ChatUpstream) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def _json(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                data = [{"id": m, "object": "model", "created": 0, "owned_by": "test"}
                        for m in upstream.models]  # fmt: skip
                self._json(200, {"object": "list", "data": data})
                return
            self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            number = upstream.record(body, {k.lower(): v for k, v in self.headers.items()})
            if self.path.endswith("/chat/completions"):
                self._openai(body, number)
            elif self.path.endswith("/messages"):
                self._anthropic(body, number)
            else:
                self._json(404, {"error": {"message": "no route", "type": "not_found"}})

        def _stream(self, events: list[bytes], body: dict[str, Any], first: int) -> None:
            users = [m for m in body.get("messages", []) if m.get("role") == "user"]
            key = str(users[-1].get("content")) if users else ""
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            time.sleep(upstream.first_delay)
            for index, event in enumerate(events):
                if index == first:
                    upstream.first_sent.setdefault(key, time.monotonic())
                self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
                self.wfile.flush()
                if upstream.chunk_delay:
                    time.sleep(upstream.chunk_delay)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def _openai(self, body: dict[str, Any], number: int) -> None:
            model = str(body.get("model", ""))
            if upstream.tool_call:
                call = {"id": "call_1", "type": "function",
                        "function": {"name": "lookup", "arguments": "{}"}}  # fmt: skip
                message: dict[str, Any] = {"role": "assistant", "content": None,
                                           "tool_calls": [call]}  # fmt: skip
                finish = "tool_calls"
            else:
                message = {"role": "assistant", "content": upstream.answer}
                finish = "stop"
            if not body.get("stream"):
                self._json(200, {
                    "id": f"chatcmpl-{number}", "object": "chat.completion", "created": 0,
                    "model": model,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                })  # fmt: skip
                return

            def chunk(delta: dict[str, Any], done: str | None) -> bytes:
                choice = {"index": 0, "delta": delta, "finish_reason": done}
                data = {"id": f"chatcmpl-{number}", "object": "chat.completion.chunk",
                        "created": 0, "model": model, "choices": [choice]}  # fmt: skip
                return b"data: " + json.dumps(data).encode() + b"\n\n"

            events = [chunk({"role": "assistant", "content": ""}, None)]
            if upstream.tool_call:
                events.append(chunk({"tool_calls": [{"index": 0, **message["tool_calls"][0]}]},
                                    None))  # fmt: skip
            else:
                events += [chunk({"content": word}, None) for word in _words(upstream.answer)]
            events += [chunk({}, finish), b"data: [DONE]\n\n"]
            self._stream(events, body, 1)

        def _anthropic(self, body: dict[str, Any], number: int) -> None:
            model = str(body.get("model", ""))
            if not body.get("stream"):
                self._json(200, {
                    "id": f"msg_{number}", "type": "message", "role": "assistant",
                    "model": model, "content": [{"type": "text", "text": upstream.answer}],
                    "stop_reason": "end_turn", "usage": {"input_tokens": 3, "output_tokens": 4},
                })  # fmt: skip
                return

            def event(name: str, data: dict[str, Any]) -> bytes:
                return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()

            events = [event("message_start", {"type": "message_start", "message": {
                "id": f"msg_{number}", "model": model}})]  # fmt: skip
            events += [
                event("content_block_delta", {"type": "content_block_delta", "index": 0,
                      "delta": {"type": "text_delta", "text": word}})
                for word in _words(upstream.answer)
            ]  # fmt: skip
            events += [
                event("message_delta", {"type": "message_delta",
                      "delta": {"stop_reason": "end_turn"}}),
                event("message_stop", {"type": "message_stop"}),
            ]  # fmt: skip
            self._stream(events, body, 1)

    return Handler
