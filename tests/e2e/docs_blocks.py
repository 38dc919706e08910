"""The fenced blocks of the project's Markdown files, and a stand-in Ollama for running them.

A block's language says what the docs test does with it: ``sh`` and ``python`` blocks are run,
``json`` and ``toml`` blocks are parsed (and checked where they configure memoryd), ``text``
blocks are output shown to the reader. An HTML comment on the line just before a block,
``<!-- docs: background -->``, runs it in the background (a server) until the file's blocks
are done; ``<!-- docs: fails -->`` expects it to exit with an error (it shows one).
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from tests.fake_embeddings import embeddings_answer, json_handler

RUN = frozenset({"sh", "python"})
PARSED = frozenset({"json", "toml"})
SHOWN = frozenset({"text"})
DIRECTIVES = frozenset({"background", "fails"})
_FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
CHAT_ANSWER = "Penicillin is out for you; ask about a macrolide instead."
_DIRECTIVE = re.compile(r"^\s*<!-- docs: (\S+) -->\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced block: where it starts, its language, its text, and a directive if any."""

    path: Path
    line: int
    language: str
    text: str
    directive: str | None

    @property
    def where(self) -> str:
        return f"{self.path.name}:{self.line}"


def blocks_of(path: Path) -> list[Block]:
    """Every fenced block of ``path`` in order (indented ones too, their indent removed)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent, language = opening.group(1), opening.group(2)
        directive_line = _DIRECTIVE.match(lines[index - 1]) if index else None
        body: list[str] = []
        index += 1
        while index < len(lines) and lines[index].strip() != "```":
            body.append(lines[index].removeprefix(indent))
            index += 1
        found.append(
            Block(
                path,
                index - len(body),
                language,
                "\n".join(body) + "\n",
                directive_line.group(1) if directive_line else None,
            )
        )
        index += 1
    return found


class FakeOllama:
    """What the docs' examples talk to at Ollama's address: OpenAI-compatible chat
    completions (every extraction answers the event ``answer``), embeddings (word-hash vectors
    of ``dimension``), the model list and Ollama's own ``/api/show``. Standard library only."""

    def __init__(self, port: int = 11434, *, dimension: int = 768) -> None:
        self.dimension = dimension
        self.chats = 0
        self.answer = {
            "memories": [
                {
                    "kind": "event",
                    "content": "Had dinner with Ana at Taberna Sal Grosso",
                    "confidence": 0.9,
                    "changes_behavior": False,
                    "entities": ["Ana"],
                }
            ]
        }
        self._server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        """JSON answers, and a chat completion asked with ``stream`` as server-sent events (a
        chat app through memoryd's chat proxy)."""
        plain = json_handler(self._answer)
        fake = self

        class Handler(plain):  # type: ignore[misc, valid-type]
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length) or b"{}"
                body = json.loads(raw)
                if not (self.path.endswith("/chat/completions") and body.get("stream")):
                    status, answer = fake._answer("POST", self.path, body)
                    self._send(status, answer)
                    return
                fake.chats += 1
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for word in CHAT_ANSWER.split(" "):
                    chunk = {"id": f"chatcmpl-{fake.chats}", "object": "chat.completion.chunk",
                             "created": 0, "model": body.get("model", ""),
                             "choices": [{"index": 0, "delta": {"content": word + " "},
                                          "finish_reason": None}]}  # fmt: skip
                    self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                self.wfile.write(b"data: [DONE]\n\n")
                self.close_connection = True

        return Handler

    def _answer(self, method: str, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if method == "GET":
            if path.rstrip("/") in ("/v1/models", "/api/tags"):
                return 200, {"object": "list", "data": [], "models": []}
            return 404, {"error": f"no route {path}"}
        return 200, self._post(path, body)

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        model = str(body.get("model", ""))
        if path.endswith("/embeddings"):
            texts = body.get("input", [])
            texts = [texts] if isinstance(texts, str) else texts
            return embeddings_answer(texts, model, self.dimension)
        if path.endswith("/chat/completions"):
            self.chats += 1
            return {
                "id": f"chatcmpl-{self.chats}",
                "object": "chat.completion",
                "created": 0,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": json.dumps(self.answer)},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        if path == "/api/show":
            vision = "llava" in model or "vision" in model
            return {"capabilities": ["completion", *(["vision"] if vision else [])]}
        return {"error": f"no route {path}"}

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
