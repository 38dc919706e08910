"""The chat proxy's rules, pure: what it reads from a chat request, where the context pack goes,
how a conversation is recognised across requests, what a finished turn is, and the OpenAI
shapes of its errors. No I/O: :mod:`memoryd.proxy.run` does the calls.

A chat app sends the whole conversation with every request. The proxy
- reads the **turn**: the latest user message, the messages before it (``earlier``) and those
  after it (an assistant's tool calls and the tools' results, when the app runs tools);
- appends the fenced pack to the app's own system message (the first ``system`` or
  ``developer`` message), or puts a system message first when there is none, never replacing
  what the app wrote;
- recognises the **conversation**: the id the app sends in the ``X-Memoryd-Conversation``
  header, else the conversation whose finished turn ended with exactly the messages this
  request calls ``earlier`` (the app sends back what it was answered), else a new one;
- calls a turn **finished** when the model answered it in text (not with tool calls).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from memoryd.config.settings import SettingValues, parse_value
from memoryd.words import has_lone_surrogate

COMPLETIONS_PATH = "/v1/chat/completions"
MODELS_PATH = "/v1/models"
PROXY_PATHS = frozenset({COMPLETIONS_PATH, MODELS_PATH})
CONVERSATION_HEADER = "x-memoryd-conversation"
CONTEXT_HEADER = "x-memoryd-context"
# Why 1.5 s: a warm context pack takes tens of milliseconds at 10,000 memories; past this the
# store or the embedder is in trouble, and the chat must not wait for it.
RECALL_DEADLINE = 1.5
SYSTEM_ROLES = ("system", "developer")
TOOL_ROLES = ("tool", "function")
MAX_CONVERSATION_CHARS = 200
OLLAMA_PORT = 11434
# What a turn's answer ended with when the model called tools instead of answering.
TOOL_FINISHES = frozenset({"tool_calls", "function_call"})


@dataclass(frozen=True)
class ProxySettings:
    """The chat proxy's settings (``proxy.*``)."""

    enabled: bool = True
    # "pack" (memories and documents), "memories" (the memory block only) or "off".
    inject: str = "pack"
    observe: bool = True
    # Tokens for what is added; None: the recall budget.
    budget: int | None = None
    recall_deadline: float = RECALL_DEADLINE


def proxy_settings_of(values: SettingValues) -> ProxySettings:
    """``proxy.*`` from the resolved settings; a malformed value raises a SettingsError naming
    where it came from."""

    def given(key: str) -> Any:
        found = values.setting(key)
        return None if found is None else parse_value(key, found.value, found.source())

    defaults = ProxySettings()
    names = ("enabled", "inject", "observe", "budget", "recall_timeout")
    enabled, inject, observe, budget, deadline = (given(f"proxy.{name}") for name in names)
    return ProxySettings(
        enabled=defaults.enabled if enabled is None else bool(enabled),
        inject=defaults.inject if inject is None else str(inject),
        observe=defaults.observe if observe is None else bool(observe),
        budget=None if budget is None else int(budget),
        recall_deadline=defaults.recall_deadline if deadline is None else float(deadline),
    )


class ChatRequestError(ValueError):
    """The chat request is not one the proxy can read (the app gets a 400 saying why)."""


def text_of(content: Any) -> str:
    """A message's text: the string, or the text parts of a list of parts (images left out)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") in ("text", "input_text")
        )
    return str(content)


@dataclass(frozen=True)
class Turn:
    """The turn a request asks about: the latest user message and where it sits."""

    user: str
    # How many user messages the conversation holds up to this one (1 for the first).
    number: int
    earlier: tuple[Mapping[str, Any], ...]
    after: tuple[Mapping[str, Any], ...]

    @property
    def read_tool_output(self) -> bool:
        """Whether the model read a tool's output in this turn (the app ran tools)."""
        return any(m.get("role") in TOOL_ROLES for m in self.after)


def messages_of(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The request's messages, checked to be a non-empty list of objects with a role."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ChatRequestError("'messages' must be a non-empty list of chat messages")
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise ChatRequestError(f"messages[{index}] must be an object with a 'role'")
        if has_lone_surrogate(message):
            # JSON lets "\ud800" through; no tokenizer, store or model server takes it.
            raise ChatRequestError(
                f"messages[{index}] holds invalid Unicode (a lone surrogate such as \\ud800); "
                "an emoji cut in half is the usual cause"
            )
    return messages


def latest_turn(messages: Sequence[Mapping[str, Any]]) -> Turn | None:
    """The latest user message with text, or None when there is none (nothing to recall for,
    nothing to observe)."""
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    for position in reversed(users):
        text = text_of(messages[position].get("content"))
        if text.strip():
            return Turn(
                user=text,
                number=users.index(position) + 1,
                earlier=tuple(messages[:position]),
                after=tuple(messages[position + 1 :]),
            )
    return None


def with_pack(messages: Sequence[Mapping[str, Any]], block: str) -> list[dict[str, Any]]:
    """The messages with ``block`` appended to the app's system message (the first system or
    developer message), or a system message holding it put first; the app's text is kept
    whole. An empty block changes nothing."""
    copied = [dict(m) for m in messages]
    if not block.strip():
        return copied
    for message in copied:
        if message.get("role") in SYSTEM_ROLES:
            content = message.get("content")
            if isinstance(content, list):
                message["content"] = [*content, {"type": "text", "text": "\n\n" + block}]
            else:
                own = text_of(content)
                message["content"] = f"{own}\n\n{block}" if own.strip() else block
            return copied
    return [{"role": "system", "content": block}, *copied]


def history_digest(messages: Sequence[Mapping[str, Any]]) -> str:
    """A digest of a conversation's messages as the app sends them back: roles, texts and
    tool calls, system messages left out (apps put the date or the model's name there), so
    the same history gives the same digest request after request."""
    kept = [
        [m.get("role"), text_of(m.get("content")).strip(), _calls(m)]
        for m in messages
        if m.get("role") not in SYSTEM_ROLES
    ]
    encoded = json.dumps(kept, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return hashlib.sha256(encoded.encode("utf-8")).hexdigest()


def _calls(message: Mapping[str, Any]) -> list[Any]:
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        return []
    named = []
    for call in calls:
        function = call.get("function", {}) if isinstance(call, dict) else {}
        if isinstance(function, dict):
            named.append([function.get("name"), str(function.get("arguments", ""))])
    return named


def conversation_of(
    header: str | None,
    turn: Turn | None,
    messages: Sequence[Mapping[str, Any]],
    known: Callable[[str], str | None],
) -> str:
    """The conversation a request belongs to: the app's header, else the conversation whose
    last finished turn ended with the messages before this turn (``known(digest)``), else one
    named by the digest of those messages (the proxy restarted, or the app trimmed its
    history): the same name request after request. A conversation's first turn is named by
    its first message, so the requests of a turn that runs tools agree."""
    if header is not None and header.strip():
        chosen = header.strip()
        if len(chosen) > MAX_CONVERSATION_CHARS:
            raise ChatRequestError(
                f"the {CONVERSATION_HEADER} header is over {MAX_CONVERSATION_CHARS} characters"
            )
        return chosen
    earlier = turn.earlier if turn is not None else tuple(messages)
    if any(m.get("role") not in SYSTEM_ROLES for m in earlier):
        digest = history_digest(earlier)
        return known(digest) or "h-" + digest[:24]
    first = [{"role": "user", "content": turn.user}] if turn is not None else list(messages)
    return "h-" + history_digest(first)[:24]


def finished_history(messages: Sequence[Mapping[str, Any]], answer: str) -> list[Mapping[str, Any]]:
    """The history the app will send back after this answer (for :func:`history_digest`)."""
    return [*messages, {"role": "assistant", "content": answer}]


def turn_key(conversation: str, turn: Turn, answer: str) -> str:
    """One finished turn: the conversation, which user message, its text and the answer (an
    app that sends the same request again and gets the same answer finished no new turn; a
    regenerated answer that differs is a turn of its own)."""
    said = json.dumps([turn.user.strip(), answer.strip()], ensure_ascii=False)
    return f"{conversation}#{turn.number}:" + hashlib.sha256(said.encode("utf-8")).hexdigest()[:24]


@dataclass
class StreamedAnswer:
    """What a streamed OpenAI-style answer said, read from its server-sent events as they pass
    through: the text of the first choice, how it finished, and whether the stream ended."""

    text: str = ""
    finish: str | None = None
    done: bool = False
    called_tools: bool = False
    _pending: bytes = b""

    def feed(self, data: bytes) -> None:
        """Read the next bytes of the stream (events may be split anywhere)."""
        self._pending += data
        while b"\n" in self._pending:
            line, _, self._pending = self._pending.partition(b"\n")
            self._line(line.strip())

    def _line(self, line: bytes) -> None:
        if not line.startswith(b"data:"):
            return
        payload = line[5:].strip()
        if payload == b"[DONE]":
            self.done = True
            return
        try:
            chunk = json.loads(payload)
        except ValueError:
            return
        choices = chunk.get("choices") if isinstance(chunk, dict) else None
        if not isinstance(choices, list):
            return
        for choice in choices:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if isinstance(delta, dict):
                if isinstance(delta.get("content"), str):
                    self.text += delta["content"]
                if delta.get("tool_calls") or delta.get("function_call"):
                    self.called_tools = True
            if choice.get("finish_reason"):
                self.finish = str(choice["finish_reason"])


def answer_of(completion: Mapping[str, Any]) -> tuple[str, str | None, bool]:
    """A non-streamed completion's first choice: its text, how it finished, and whether it
    called tools."""
    choices = completion.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return "", None, False
    message = choices[0].get("message") or {}
    text = text_of(message.get("content")) if isinstance(message, dict) else ""
    called = bool(isinstance(message, dict) and message.get("tool_calls"))
    finish = choices[0].get("finish_reason")
    return text, None if finish is None else str(finish), called


def finished(text: str, finish: str | None, called_tools: bool) -> bool:
    """Whether an answer ends the owner's turn: text, and no tool calls (the app runs those
    and asks again; that later answer ends the turn)."""
    return bool(text.strip()) and not called_tools and finish not in TOOL_FINISHES


def openai_error(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    """An error in OpenAI's shape, which every OpenAI client shows as the message."""
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def is_ollama(url: str) -> bool:
    """Whether ``url`` is Ollama's usual address (its port)."""
    return urlsplit(url).port == OLLAMA_PORT


def down_hint(url: str) -> str:
    """What to check when the upstream does not answer."""
    if is_ollama(url):
        return f"is Ollama running? Start it with `ollama serve` (tried {url})"
    return f"is the server running? (tried {url})"
