"""Conversation histories exported from ChatGPT and Claude, read into turns (pure: decoded
conversations in, one at a time, frozen dataclasses out; ``chat_export_file`` reads the file).

A turn is one owner message and the assistant's reply that follows it, dated by the owner's
message, keyed by the conversation's id and that message's id. Only what the owner saw is read:
ChatGPT's shown branch (from ``current_node`` back to the root), never the system prompt, tool
calls, tool output or hidden messages; attachments and images are left out (documents belong in
the knowledge base).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from memoryd.clock import MAX_YEAR, MIN_YEAR, parse_instant
from memoryd.errors import InvalidInputError

ChatFormat = Literal["chatgpt", "claude"]
FORMATS: tuple[ChatFormat, ...] = ("chatgpt", "claude")
_NAMES = {"chatgpt": "ChatGPT", "claude": "Claude"}

# Why these caps: the owner's words are what memories come from; the reply is only context
# for them, and a long answer (code, an essay) would multiply the cost of every extraction.
# An owner message past the cap is mostly pasted material, which belongs in the knowledge base.
OWNER_CHARS = 12_000
REPLY_CHARS = 2_000
_NEVER = datetime.max.replace(tzinfo=UTC)
_CHATGPT_SHOWN_CONTENT = frozenset({"text", "multimodal_text"})


class ChatExportError(InvalidInputError):
    """The file is not a conversation export memoryd can read; nothing was imported."""


@dataclass(frozen=True)
class ChatTurn:
    """One owner message and the assistant's reply to it."""

    message_id: str
    at: datetime
    owner: str
    reply: str


@dataclass(frozen=True)
class Conversation:
    """One conversation's turns, in order, and how many of its messages were left out."""

    id: str
    title: str
    turns: tuple[ChatTurn, ...]
    skipped: int


@dataclass(frozen=True)
class ChatExport:
    """A whole export: its format and its conversations, oldest first."""

    format: ChatFormat
    conversations: tuple[Conversation, ...]


@dataclass(frozen=True)
class ImportPlan:
    """What an import queues (each conversation with only its new turns, oldest first) and
    what it leaves out."""

    format: ChatFormat
    conversations: tuple[Conversation, ...]
    conversation_count: int
    already_imported: int
    skipped_empty: int

    @property
    def turn_count(self) -> int:
        """How many turns are queued."""
        return sum(len(c.turns) for c in self.conversations)


def read_conversations(
    raws: Iterable[Any], chosen: str = "auto"
) -> tuple[ChatFormat, Iterator[Conversation]]:
    """The export's format and its conversations read one at a time, in the file's order, from
    the file's list of conversations (decoded JSON, given lazily); ``chosen`` is ``chatgpt``,
    ``claude`` or ``auto`` (recognised by the first conversation of a known shape). Raises
    :class:`ChatExportError` naming what is wrong, when it is reached."""
    if chosen not in (*FORMATS, "auto"):
        raise ChatExportError(
            f"unknown format {chosen!r}; use chatgpt, claude or auto", fields=("format",)
        )
    given = iter(raws)
    # Those before the first of a known shape are kept: the first of them is refused by the
    # format found (a conversation without "mapping" or "chat_messages" always is).
    held: list[Any] = []
    found: ChatFormat | None = None
    for raw in given:
        held.append(raw)
        found = _shape(raw)
        if found is not None:
            break
        del held[1:-1]
    if not held:
        raise ChatExportError("the file holds no conversations; nothing to import")
    if found is None:
        raise ChatExportError(
            'unknown format: no conversation has a "mapping" (ChatGPT) or "chat_messages" '
            "(Claude); give the conversations.json of a ChatGPT or Claude export, or its .zip"
        )
    if chosen not in ("auto", found):
        raise ChatExportError(
            f"the file looks like a {_NAMES[found]} export, not {_NAMES[chosen]}; choose the "
            f"format {found} or auto",
            fields=("format",),
        )
    parse = _chatgpt_conversation if found == "chatgpt" else _claude_conversation

    def parsed() -> Iterator[Conversation]:
        for index, raw in enumerate(itertools.chain(held, given)):
            yield parse(raw, index)

    return found, parsed()


def by_first_turn(conversation: Conversation) -> datetime:
    """The sort key of conversations oldest first: the first turn's time (none: last)."""
    return conversation.turns[0].at if conversation.turns else _NEVER


def plan_import(export: ChatExport, imported: frozenset[tuple[str, str]]) -> ImportPlan:
    """Leave out the turns already imported (``(conversation id, message id)`` pairs)."""
    kept = []
    already = 0
    for conversation in export.conversations:
        new = new_turns(conversation, imported)
        already += len(conversation.turns) - len(new)
        if new:
            kept.append(
                Conversation(conversation.id, conversation.title, new, conversation.skipped)
            )
    return ImportPlan(
        export.format,
        tuple(kept),
        len(export.conversations),
        already,
        sum(c.skipped for c in export.conversations),
    )


def new_turns(
    conversation: Conversation, imported: frozenset[tuple[str, str]]
) -> tuple[ChatTurn, ...]:
    """The conversation's turns not imported yet (``(conversation id, message id)`` pairs)."""
    return tuple(t for t in conversation.turns if (conversation.id, t.message_id) not in imported)


def _shape(raw: Any) -> ChatFormat | None:
    if isinstance(raw, Mapping):
        if "mapping" in raw:
            return "chatgpt"
        if "chat_messages" in raw:
            return "claude"
    return None


# ----------------------------------------------------------------------------- conversations


def _where(index: int, raw: Mapping[str, Any]) -> str:
    title = raw.get("title") or raw.get("name")
    return f"conversation {index}" + (f" ({title!r})" if isinstance(title, str) and title else "")


def _field(raw: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    value = raw.get(key)
    if not isinstance(value, kind) or (kind is str and not value):
        got = "missing" if value is None else f"a {type(value).__name__}"
        raise ChatExportError(f'{where} has no valid "{key}" ({got}); is the export complete?')
    return value


def _capped(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    return text[:limit].rstrip() + f" […{len(text) - limit} more characters left out]"


def _epoch(value: Any, where: str) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ChatExportError(f'{where} has a "create_time" that is not epoch seconds: {value!r}')
    try:
        at = datetime.fromtimestamp(float(value), UTC)
    except (OverflowError, OSError, ValueError):
        at = None
    if at is None or not MIN_YEAR <= at.year <= MAX_YEAR:
        raise ChatExportError(f'{where} has a "create_time" out of range: {value!r}')
    return at


def _iso(text: str, where: str) -> datetime:
    try:
        return parse_instant(text, what=f'{where} "created_at"')
    except InvalidInputError as error:
        raise ChatExportError(str(error)) from None


def _group(
    messages: Sequence[tuple[str, str, str, datetime]], skipped: int
) -> tuple[tuple[ChatTurn, ...], int]:
    """``(role, id, text, at)`` in order → turns: each owner message with the assistant text
    that follows it (an assistant message before any owner message is left out)."""
    turns: list[ChatTurn] = []
    owner: tuple[str, str, datetime] | None = None
    replies: list[str] = []

    def close() -> None:
        if owner is not None:
            message_id, text, at = owner
            reply = _capped("\n\n".join(replies), REPLY_CHARS)
            turns.append(ChatTurn(message_id, at, _capped(text, OWNER_CHARS), reply))

    for role, message_id, text, at in messages:
        if role == "user":
            close()
            owner, replies = (message_id, text, at), []
        elif owner is None:
            skipped += 1
        else:
            replies.append(text)
    close()
    return tuple(turns), skipped


# ----------------------------------------------------------------------------- ChatGPT


def _chatgpt_conversation(raw: Any, index: int) -> Conversation:
    if not isinstance(raw, Mapping):
        raise ChatExportError(f"conversation {index} is not a JSON object")
    where = _where(index, raw)
    conversation_id = raw.get("conversation_id") or raw.get("id")
    if not isinstance(conversation_id, str) or not conversation_id:
        raise ChatExportError(f'{where} has no "conversation_id" or "id"; is the export complete?')
    mapping = _field(raw, "mapping", Mapping, where)
    started = _epoch(raw.get("create_time"), where)
    messages: list[tuple[str, str, str, datetime]] = []
    skipped = 0
    last = started
    for node_id in _shown_branch(mapping, raw.get("current_node"), where):
        node = mapping[node_id]
        message = node.get("message") if isinstance(node, Mapping) else None
        if not isinstance(message, Mapping):
            continue
        role = _chatgpt_role(message)
        if role is None:
            continue
        text = _chatgpt_text(message)
        at = _epoch(message.get("create_time"), f"{where}, message {node_id!r},") or last
        if not text:
            skipped += 1
            continue
        if at is None:
            raise ChatExportError(
                f'{where}, message {node_id!r}, has no "create_time" and neither has the '
                "conversation"
            )
        last = at
        message_id = message.get("id") or node_id
        messages.append((role, str(message_id), text, at))
    turns, skipped = _group(messages, skipped)
    return Conversation(conversation_id, str(raw.get("title") or ""), turns, skipped)


def _shown_branch(mapping: Mapping[str, Any], current: Any, where: str) -> list[str]:
    """Node ids from the root to the node the owner last saw (``current_node``; without one,
    the newest child at every fork)."""
    if isinstance(current, str) and current in mapping:
        return _walk(mapping, current, _parent)[::-1]
    if current is not None:
        raise ChatExportError(f'{where} has a "current_node" {current!r} not in its "mapping"')
    roots = [
        key
        for key, node in mapping.items()
        if not isinstance(node, Mapping) or node.get("parent") not in mapping
    ]
    return _walk(mapping, roots[0] if roots else None, _newest_child)


def _walk(
    mapping: Mapping[str, Any], start: Any, step: Callable[[Mapping[str, Any]], Any]
) -> list[str]:
    """Node ids from ``start``, each ``step`` on from the one before, until a node is not in
    the mapping or comes round again (an export's cycle ends the walk)."""
    path: list[str] = []
    seen: set[str] = set()
    node_id = start
    while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
        seen.add(node_id)
        path.append(node_id)
        node = mapping[node_id]
        node_id = step(node) if isinstance(node, Mapping) else None
    return path


def _parent(node: Mapping[str, Any]) -> Any:
    return node.get("parent")


def _newest_child(node: Mapping[str, Any]) -> Any:
    children = node.get("children")
    return children[-1] if isinstance(children, list) and children else None


def _chatgpt_role(message: Mapping[str, Any]) -> str | None:
    """``user`` or ``assistant`` for a message the owner saw, None for the rest (system,
    tool, a tool call, hidden context such as custom instructions)."""
    author = message.get("author")
    role = author.get("role") if isinstance(author, Mapping) else None
    if role not in ("user", "assistant"):
        return None
    metadata = message.get("metadata")
    if isinstance(metadata, Mapping) and metadata.get("is_visually_hidden_from_conversation"):
        return None
    if message.get("recipient", "all") != "all":
        return None
    content = message.get("content")
    if not isinstance(content, Mapping) or content.get("content_type") not in (
        _CHATGPT_SHOWN_CONTENT
    ):
        return None
    return str(role)


def _chatgpt_text(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    parts = content.get("parts") if isinstance(content, Mapping) else None
    if not isinstance(parts, list):
        return ""
    # Images and files are objects among the parts: the words are the strings.
    return "\n".join(p for p in parts if isinstance(p, str) and p.strip()).strip()


# ----------------------------------------------------------------------------- Claude


def _claude_conversation(raw: Any, index: int) -> Conversation:
    if not isinstance(raw, Mapping):
        raise ChatExportError(f"conversation {index} is not a JSON object")
    where = _where(index, raw)
    conversation_id = _field(raw, "uuid", str, where)
    chat = _field(raw, "chat_messages", list, where)
    messages: list[tuple[str, str, str, datetime]] = []
    skipped = 0
    for position, message in enumerate(_claude_branch(chat, where)):
        spot = f"{where}, message {position},"
        message_id = _field(message, "uuid", str, spot)
        sender = message.get("sender")
        at = _iso(_field(message, "created_at", str, spot), spot)
        text = _claude_text(message)
        if sender not in ("human", "assistant") or not text:
            skipped += 1
            continue
        messages.append(("user" if sender == "human" else "assistant", message_id, text, at))
    turns, skipped = _group(messages, skipped)
    return Conversation(conversation_id, str(raw.get("name") or ""), turns, skipped)


def _claude_branch(chat: list[Any], where: str) -> list[Mapping[str, Any]]:
    """The messages in the order shown. With ``parent_message_uuid`` links (an edited or
    retried message forks the conversation), the branch ending at the last message."""
    for position, entry in enumerate(chat):
        if not isinstance(entry, Mapping):
            raise ChatExportError(f"{where}, message {position}, is not a JSON object")
    by_id = {m.get("uuid"): m for m in chat}
    if not chat or not any(m.get("parent_message_uuid") in by_id for m in chat):
        return list(chat)
    branch: list[Mapping[str, Any]] = []
    seen: set[Any] = set()
    message: Mapping[str, Any] | None = chat[-1]
    while message is not None and message.get("uuid") not in seen:
        seen.add(message.get("uuid"))
        branch.append(message)
        message = by_id.get(message.get("parent_message_uuid"))
    return branch[::-1]


def _claude_text(message: Mapping[str, Any]) -> str:
    """The text blocks' words (thinking, tool use and tool results left out), else ``text``."""
    content = message.get("content")
    if isinstance(content, list) and content:
        words = [
            str(block.get("text") or "")
            for block in content
            if isinstance(block, Mapping) and block.get("type") == "text"
        ]
        return "\n".join(w.strip() for w in words if w.strip()).strip()
    text = message.get("text")
    return text.strip() if isinstance(text, str) else ""
