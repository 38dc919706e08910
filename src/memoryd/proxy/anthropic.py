"""OpenAI chat requests to Anthropic's Messages API and back, pure: the request, the answer,
the streamed events and the model list. Text only: a request with tools or images is refused
with a clear message (the app can use an OpenAI-compatible upstream for those)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memoryd.proxy.policy import SYSTEM_ROLES, ChatRequestError, text_of

ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
_STOPS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
}


def to_anthropic(body: Mapping[str, Any], model: str) -> dict[str, Any]:
    """The Messages API request for an OpenAI chat request (system messages joined into
    ``system``; consecutive messages of one role merged, as the API wants them alternating)."""
    if body.get("tools") or body.get("functions"):
        raise ChatRequestError(
            "requests with tools are not translated for an Anthropic upstream; point "
            "llm.chat at an OpenAI-compatible endpoint to use tools"
        )
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for message in body.get("messages", []):
        role = message.get("role")
        content = message.get("content")
        if isinstance(content, list) and any(
            isinstance(p, dict) and p.get("type") not in ("text", "input_text") for p in content
        ):
            raise ChatRequestError("only text messages are translated for an Anthropic upstream")
        text = text_of(content)
        if role in SYSTEM_ROLES:
            system.append(text)
            continue
        if role not in ("user", "assistant"):
            raise ChatRequestError(f"a {role!r} message cannot be translated for Anthropic")
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += "\n\n" + text
        else:
            turns.append({"role": role, "content": text})
    most = body.get("max_completion_tokens") or body.get("max_tokens") or DEFAULT_MAX_TOKENS
    if isinstance(most, bool) or not isinstance(most, int) or most < 1:
        raise ChatRequestError(f"max_tokens must be a positive integer, not {most!r}"[:120])
    request: dict[str, Any] = {"model": model, "messages": turns, "max_tokens": most}
    if system:
        request["system"] = "\n\n".join(system)
    for name in ("temperature", "top_p"):
        if body.get(name) is not None:
            request[name] = body[name]
    stop = body.get("stop")
    if stop:
        stops = [stop] if isinstance(stop, str) else stop
        if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
            raise ChatRequestError("stop must be a string or a list of strings")
        request["stop_sequences"] = stops
    if body.get("stream"):
        request["stream"] = True
    return request


def from_anthropic(answer: Any) -> dict[str, Any]:
    """The OpenAI chat completion for a Messages API answer; whatever shape the upstream
    answered in, fields it lacks or misshaped are left empty (never an error here)."""
    answer = _mapping(answer)
    text = "".join(
        str(block.get("text", ""))
        for block in _list(answer.get("content"))
        if isinstance(block, dict) and block.get("type") == "text"
    )
    usage = _mapping(answer.get("usage"))
    prompt = _count(usage.get("input_tokens"))
    completion = _count(usage.get("output_tokens"))
    return {
        "id": f"chatcmpl-{answer.get('id', '')}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": str(answer.get("model", "")),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": _STOPS.get(str(answer.get("stop_reason")), "stop"),
            }
        ],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


def models_from_anthropic(listing: Any) -> dict[str, Any]:
    """The OpenAI model list for Anthropic's (the models it names by an id)."""
    return {
        "object": "list",
        "data": [
            {"id": str(item["id"]), "object": "model", "created": 0, "owned_by": "anthropic"}
            for item in _list(_mapping(listing).get("data"))
            if isinstance(item, dict) and "id" in item
        ],
    }


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _count(value: Any) -> int:
    """A token count as the upstream wrote it, 0 for anything that is not a whole number."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


@dataclass
class AnthropicStream:
    """Anthropic's streamed events in, OpenAI chat completion chunks (as server-sent event
    bytes) out, as they arrive."""

    model: str
    id: str = "chatcmpl-anthropic"
    created: int = field(default_factory=lambda: int(time.time()))
    _pending: bytes = b""
    _event: str = ""

    def feed(self, data: bytes) -> bytes:
        """The OpenAI events for the next bytes of Anthropic's stream."""
        self._pending += data
        out = b""
        while b"\n" in self._pending:
            line, _, self._pending = self._pending.partition(b"\n")
            out += self._line(line.strip())
        return out

    def _line(self, line: bytes) -> bytes:
        if line.startswith(b"event:"):
            self._event = line[6:].strip().decode("utf-8", "replace")
            return b""
        if not line.startswith(b"data:"):
            return b""
        try:
            event = json.loads(line[5:].strip())
        except ValueError:
            return b""
        if not isinstance(event, dict):
            return b""
        kind = event.get("type", self._event)
        delta = _mapping(event.get("delta"))
        if kind == "message_start":
            message = _mapping(event.get("message"))
            self.id = f"chatcmpl-{message.get('id', 'anthropic')}"
            return self._chunk({"role": "assistant", "content": ""}, None)
        if kind == "content_block_delta" and delta.get("type") == "text_delta":
            return self._chunk({"content": str(delta.get("text", ""))}, None)
        if kind == "message_delta":
            stop = delta.get("stop_reason")
            if stop:
                return self._chunk({}, _STOPS.get(str(stop), "stop"))
        if kind == "message_stop":
            return b"data: [DONE]\n\n"
        if kind == "error":
            error = _mapping(event.get("error"))
            body = {"error": {"message": str(error.get("message", "")), "type": "upstream_error"}}
            return b"data: " + json.dumps(body).encode() + b"\n\n"
        return b""

    def _chunk(self, delta: dict[str, Any], finish: str | None) -> bytes:
        chunk = {
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        # A lone surrogate the upstream escaped into its JSON goes out as "?", not an error.
        encoded = json.dumps(chunk, ensure_ascii=False).encode("utf-8", "replace")
        return b"data: " + encoded + b"\n\n"
