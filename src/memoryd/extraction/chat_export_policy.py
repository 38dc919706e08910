"""Conversation histories exported from ChatGPT and Claude, read into turns (pure: bytes in,
frozen dataclasses out; the importer does the I/O).

A turn is one owner message and the assistant's reply that follows it, dated by the owner's
message, keyed by the conversation's id and that message's id. Only what the owner saw is read:
ChatGPT's shown branch (from ``current_node`` back to the root), never the system prompt, tool
calls, tool output or hidden messages; attachments and images are left out (documents belong in
the knowledge base).
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable, Mapping, Sequence
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
# A zip's conversations.json larger than this is refused rather than inflated in memory.
MAX_JSON_BYTES = 2 * 1024**3
# Exported JSON packs 5-20x; a member that claims more than this is a bomb (as for Office files).
MAX_ZIP_RATIO = 200.0

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


def parse_export(data: bytes, chosen: str = "auto") -> ChatExport:
    """The conversations in an export file's bytes (``conversations.json``, or the export's
    .zip holding it); ``chosen`` is ``chatgpt``, ``claude`` or ``auto`` (recognised by shape).
    Raises :class:`ChatExportError` naming what is wrong."""
    if chosen not in (*FORMATS, "auto"):
        raise ChatExportError(
            f"unknown format {chosen!r}; use chatgpt, claude or auto", fields=("format",)
        )
    conversations = _conversation_list(_json_of(data))
    if not conversations:
        raise ChatExportError("the file holds no conversations; nothing to import")
    found = detect_format(conversations)
    if chosen not in ("auto", found):
        raise ChatExportError(
            f"the file looks like a {_NAMES[found]} export, not {_NAMES[chosen]}; choose the "
            f"format {found} or auto",
            fields=("format",),
        )
    parse = _chatgpt_conversation if found == "chatgpt" else _claude_conversation
    parsed = [parse(raw, index) for index, raw in enumerate(conversations)]
    parsed.sort(key=lambda c: c.turns[0].at if c.turns else datetime.max.replace(tzinfo=UTC))
    return ChatExport(found, tuple(parsed))


def detect_format(conversations: Sequence[Any]) -> ChatFormat:
    """``chatgpt`` (conversations with a ``mapping``) or ``claude`` (with ``chat_messages``)."""
    for raw in conversations:
        if isinstance(raw, Mapping):
            if "mapping" in raw:
                return "chatgpt"
            if "chat_messages" in raw:
                return "claude"
    raise ChatExportError(
        'unknown format: no conversation has a "mapping" (ChatGPT) or "chat_messages" '
        "(Claude); give the conversations.json of a ChatGPT or Claude export, or its .zip"
    )


def plan_import(export: ChatExport, imported: frozenset[tuple[str, str]]) -> ImportPlan:
    """Leave out the turns already imported (``(conversation id, message id)`` pairs)."""
    kept = []
    already = 0
    for conversation in export.conversations:
        new = tuple(
            t for t in conversation.turns if (conversation.id, t.message_id) not in imported
        )
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


# ----------------------------------------------------------------------------- the file


def _json_of(data: bytes) -> Any:
    if data.startswith(b"PK\x03\x04"):
        data = _from_zip(data)
    try:
        return json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        raise ChatExportError(
            "the file is not JSON (not UTF-8 text); give the conversations.json of a ChatGPT "
            "or Claude export, or its .zip"
        ) from None
    except RecursionError:
        raise ChatExportError("the file's JSON is nested too deeply to be an export") from None
    except json.JSONDecodeError as error:
        raise ChatExportError(
            f"the file is not JSON ({error.msg} at line {error.lineno} column {error.colno}); "
            "give the conversations.json of a ChatGPT or Claude export, or its .zip"
        ) from None


def _from_zip(data: bytes) -> bytes:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        names = [
            i for i in archive.infolist() if i.filename.rsplit("/", 1)[-1] == "conversations.json"
        ]
        if not names:
            raise ChatExportError(
                "the .zip holds no conversations.json; is it a ChatGPT or Claude data export?"
            )
        entry = min(names, key=lambda i: i.filename.count("/"))
        if entry.file_size > MAX_JSON_BYTES:
            raise ChatExportError(
                f"the .zip's {entry.filename} is {entry.file_size} bytes, over the "
                f"{MAX_JSON_BYTES} memoryd reads; unzip it and import the part you need"
            )
        if entry.file_size > MAX_ZIP_RATIO * max(1, entry.compress_size):
            # zipfile stops a member at its declared size, so the declared one is what counts.
            raise ChatExportError(
                f"the .zip's {entry.filename} would inflate {entry.file_size} bytes from "
                f"{entry.compress_size} (more than {MAX_ZIP_RATIO:g}x: a zip bomb, not an "
                "export); it was not opened"
            )
        return archive.read(entry)
    except (zipfile.BadZipFile, OSError, EOFError) as error:
        raise ChatExportError(f"the .zip cannot be read ({error})") from None


def _conversation_list(document: Any) -> list[Any]:
    if isinstance(document, Mapping) and isinstance(document.get("conversations"), list):
        return list(document["conversations"])
    if not isinstance(document, list):
        raise ChatExportError(
            "unknown format: the file holds a JSON "
            f"{type(document).__name__}, not the list of conversations of a ChatGPT or Claude "
            "export"
        )
    return document


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
