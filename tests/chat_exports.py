"""Generated conversation exports in the shapes ChatGPT and Claude write them (only the fields
memoryd reads, plus the ones around them that it must pass over)."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any


def epoch(iso: str) -> float:
    """ChatGPT's create_time for an ISO time."""
    return datetime.fromisoformat(iso).astimezone(UTC).timestamp()


def gpt_node(
    node_id: str,
    parent: str | None,
    role: str | None,
    parts: Sequence[Any] = (),
    at: str | None = None,
    *,
    content_type: str = "text",
    recipient: str = "all",
    hidden: bool = False,
) -> dict[str, Any]:
    """One ``mapping`` node (``role`` None: the empty root node)."""
    message: dict[str, Any] | None = None
    if role is not None:
        message = {
            "id": node_id,
            "author": {"role": role, "name": None, "metadata": {}},
            "create_time": epoch(at) if at else None,
            "update_time": None,
            "content": {"content_type": content_type, "parts": list(parts)},
            "status": "finished_successfully",
            "end_turn": True,
            "weight": 1.0,
            "metadata": {"is_visually_hidden_from_conversation": True} if hidden else {},
            "recipient": recipient,
        }
    return {"id": node_id, "message": message, "parent": parent, "children": []}


def gpt_conversation(
    conversation_id: str, title: str, nodes: Sequence[dict[str, Any]], current: str | None
) -> dict[str, Any]:
    """A ChatGPT conversation over ``nodes`` (children filled in from the parents)."""
    mapping = {node["id"]: node for node in nodes}
    for node in nodes:
        if node["parent"] is not None:
            mapping[node["parent"]]["children"].append(node["id"])
    first = min((n["message"]["create_time"] for n in nodes if n["message"]
                 and n["message"]["create_time"]), default=None)  # fmt: skip
    return {
        "title": title,
        "create_time": first,
        "update_time": first,
        "mapping": mapping,
        "moderation_results": [],
        "current_node": current,
        "conversation_id": conversation_id,
        "id": conversation_id,
    }


def gpt_chat(
    conversation_id: str, title: str, turns: Sequence[tuple[str, str, str]]
) -> dict[str, Any]:
    """A ChatGPT conversation without forks: a system message, then ``(role, text, at)``."""
    nodes = [gpt_node("root-" + conversation_id, None, None)]
    nodes.append(gpt_node(f"{conversation_id}-sys", nodes[-1]["id"], "system", [""]))
    for index, (role, text, at) in enumerate(turns):
        nodes.append(gpt_node(f"{conversation_id}-{index}", nodes[-1]["id"], role, [text], at))
    return gpt_conversation(conversation_id, title, nodes, nodes[-1]["id"])


def claude_message(
    uuid: str,
    sender: str,
    text: str,
    at: str,
    *,
    parent: str | None = None,
    blocks: Sequence[dict[str, Any]] | None = None,
    attachments: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """One Claude chat message (``blocks``: its content blocks, default one text block)."""
    message: dict[str, Any] = {
        "uuid": uuid,
        "text": text,
        "content": list(blocks) if blocks is not None else [{"type": "text", "text": text}],
        "sender": sender,
        "created_at": at,
        "updated_at": at,
        "attachments": list(attachments),
        "files": [],
    }
    if parent is not None:
        message["parent_message_uuid"] = parent
    return message


def claude_chat(
    uuid: str, name: str, messages: Sequence[dict[str, Any]], at: str | None = None
) -> dict[str, Any]:
    """A Claude conversation."""
    created = at or (messages[0]["created_at"] if messages else "2024-01-01T00:00:00Z")
    return {
        "uuid": uuid,
        "name": name,
        "created_at": created,
        "updated_at": created,
        "account": {"uuid": "acct-1"},
        "chat_messages": list(messages),
    }


def claude_turns(uuid: str, name: str, turns: Sequence[tuple[str, str, str]]) -> dict[str, Any]:
    """A Claude conversation of ``(sender, text, at)`` messages, ids ``{uuid}-{index}``."""
    return claude_chat(
        uuid,
        name,
        [claude_message(f"{uuid}-{i}", s, text, at) for i, (s, text, at) in enumerate(turns)],
    )


def as_json(conversations: Sequence[dict[str, Any]]) -> bytes:
    """The export's conversations.json."""
    return json.dumps(list(conversations), ensure_ascii=False).encode("utf-8")


def as_zip(conversations: Sequence[dict[str, Any]]) -> bytes:
    """The export's .zip, conversations.json among the other files."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("users.json", "[]")
        archive.writestr("conversations.json", as_json(conversations))
    return buffer.getvalue()
