"""Chat exports the size of an owner's years of chats, written to disk conversation by
conversation (never held whole): a ChatGPT ``conversations.json`` with the metadata a real one
carries around every message (the model, citations, finish details, tool calls, hidden
context), and a Claude one (content blocks with timestamps, attachments now and then), each
plain and zipped. Seeded: the same size gives the same file.
"""

from __future__ import annotations

import json
import random
import zipfile
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

START = datetime(2022, 12, 1, 8, 0, tzinfo=UTC)
_WORDS = (
    "the trip to Porto we planned with Ana and the kids in spring, the flat in Lisbon, my "
    "sister's wedding, a bike ride along the river, the new job at the harbour office, "
    "quarterly figures, Miso the cat, a recipe for bacalhau, Zürich in winter, 日本の旅, café "
    "with friends, the dentist on Tuesday, my running plan, a book about sailing, the garden"
).split()


def _text(rng: random.Random, low: int, high: int) -> str:
    """Words to about ``rng.randint(low, high)`` characters."""
    size = rng.randint(low, high)
    words: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(_WORDS)
        words.append(word)
        length += len(word) + 1
    return " ".join(words)


def _gpt_message(
    node_id: str, role: str, parts: list[Any], at: float, *, recipient: str = "all",
    content_type: str = "text", hidden: bool = False,
) -> dict[str, Any]:  # fmt: skip
    metadata: dict[str, Any] = {
        "citations": [], "content_references": [], "message_type": None,
        "model_slug": "gpt-4o", "default_model_slug": "gpt-4o", "parent_id": f"p-{node_id}",
        "request_id": f"req-{node_id}", "timestamp_": "absolute",
    }  # fmt: skip
    if role == "assistant":
        metadata["finish_details"] = {"type": "stop", "stop_tokens": [200002]}
        metadata["is_complete"] = True
    if hidden:
        metadata["is_visually_hidden_from_conversation"] = True
    return {
        "id": node_id,
        "author": {"role": role, "name": None, "metadata": {}},
        "create_time": at,
        "update_time": None,
        "content": {"content_type": content_type, "parts": parts},
        "status": "finished_successfully",
        "end_turn": role == "assistant",
        "weight": 1.0,
        "metadata": metadata,
        "recipient": recipient,
        "channel": None,
    }


def gpt_conversation(rng: random.Random, index: int) -> dict[str, Any]:
    """One ChatGPT conversation: a root, a system message, now and then the owner's hidden
    custom instructions and a tool call, then 2-40 owner/assistant pairs."""
    cid = f"gpt-{index:07d}-{rng.randrange(16**8):08x}"
    at = (START + timedelta(hours=5 * index, minutes=rng.randrange(300))).timestamp()
    nodes: list[tuple[str, dict[str, Any] | None]] = [(f"{cid}-root", None)]
    nodes.append((f"{cid}-sys", _gpt_message(f"{cid}-sys", "system", [""], at)))
    if rng.random() < 0.3:
        parts = ["I am a vegetarian and live in Lisbon."]
        nodes.append((f"{cid}-ctx", _gpt_message(f"{cid}-ctx", "user", parts, at,
                      content_type="user_editable_context", hidden=True)))  # fmt: skip
    for turn in range(rng.randint(2, 40)):
        at += rng.randint(20, 600)
        owner = _text(rng, 40, 900)
        nodes.append((f"{cid}-u{turn}", _gpt_message(f"{cid}-u{turn}", "user", [owner], at)))
        if rng.random() < 0.1:
            call = _gpt_message(f"{cid}-c{turn}", "assistant", ["search('porto')"], at + 1,
                                recipient="browser", content_type="code")  # fmt: skip
            nodes.append((f"{cid}-c{turn}", call))
            nodes.append((f"{cid}-t{turn}", _gpt_message(f"{cid}-t{turn}", "tool",
                          [_text(rng, 200, 1500)], at + 2)))  # fmt: skip
        reply = _text(rng, 300, 4000)
        nodes.append((f"{cid}-a{turn}", _gpt_message(f"{cid}-a{turn}", "assistant", [reply],
                      at + 5)))  # fmt: skip
    mapping: dict[str, Any] = {}
    parent = None
    for node_id, message in nodes:
        mapping[node_id] = {"id": node_id, "message": message, "parent": parent, "children": []}
        if parent is not None:
            mapping[parent]["children"].append(node_id)
        parent = node_id
    first = nodes[1][1]["create_time"] if nodes[1][1] else None
    return {
        "title": _text(rng, 10, 40), "create_time": first, "update_time": at, "mapping": mapping,
        "moderation_results": [], "current_node": parent, "plugin_ids": None,
        "conversation_id": cid, "conversation_template_id": None, "gizmo_id": None,
        "is_archived": False, "safe_urls": [], "default_model_slug": "gpt-4o", "id": cid,
    }  # fmt: skip


def claude_conversation(rng: random.Random, index: int) -> dict[str, Any]:
    """One Claude conversation: 2-40 human/assistant pairs, content blocks with timestamps,
    a pasted document's extracted text now and then."""
    cid = f"claude-{index:07d}-{rng.randrange(16**8):08x}"
    at = START + timedelta(hours=5 * index, minutes=rng.randrange(300))
    messages = []
    for turn in range(rng.randint(2, 40)):
        for sender, low, high in (("human", 40, 900), ("assistant", 300, 4000)):
            at += timedelta(seconds=rng.randint(5, 600))
            stamp = at.isoformat().replace("+00:00", "Z")
            text = _text(rng, low, high)
            attachments = []
            if sender == "human" and rng.random() < 0.05:
                attachments.append({"file_name": "notes.txt", "file_size": 4000,
                                    "file_type": "txt",
                                    "extracted_content": _text(rng, 2000, 8000)})  # fmt: skip
            messages.append({
                "uuid": f"{cid}-{sender[0]}{turn}", "text": text,
                "content": [{"start_timestamp": stamp, "stop_timestamp": stamp, "type": "text",
                             "text": text, "citations": []}],
                "sender": sender, "created_at": stamp, "updated_at": stamp,
                "attachments": attachments, "files": [],
            })  # fmt: skip
    created = messages[0]["created_at"]
    return {
        "uuid": cid, "name": _text(rng, 10, 40), "summary": "", "created_at": created,
        "updated_at": messages[-1]["created_at"], "account": {"uuid": "acct-1"},
        "chat_messages": messages,
    }  # fmt: skip


def _conversations(kind: str, megabytes: float) -> Iterator[bytes]:
    """Each conversation's JSON until about ``megabytes`` MB were given."""
    rng = random.Random(f"{kind}-{megabytes}")
    make = gpt_conversation if kind == "chatgpt" else claude_conversation
    written = 0
    index = 0
    while written < megabytes * 1e6:
        chunk = json.dumps(make(rng, index), ensure_ascii=False).encode()
        written += len(chunk) + 2
        index += 1
        yield chunk


def write_export(folder: Path, kind: str, megabytes: float) -> tuple[Path, Path]:
    """``{kind}-{MB}.json`` and ``{kind}-{MB}.zip`` in ``folder`` (made once, then reused)."""
    plain = folder / f"{kind}-{megabytes:g}mb.json"
    packed = folder / f"{kind}-{megabytes:g}mb.zip"
    if not plain.exists():
        partial = plain.with_suffix(".part")
        with partial.open("wb") as out:
            out.write(b"[")
            for number, chunk in enumerate(_conversations(kind, megabytes)):
                out.write(b", " if number else b"")
                out.write(chunk)
            out.write(b"]")
        partial.rename(plain)
    if not packed.exists():
        partial = packed.with_suffix(".zpart")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("user.json", "{}")
            archive.write(plain, "conversations.json")
        partial.rename(packed)
    return plain, packed
