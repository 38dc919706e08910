"""Reading ChatGPT and Claude exports into dated turns: only the branch the owner saw, no
system, tool or hidden messages, attachments and images left out, and a bad file refused with
what is wrong and where."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from memoryd.extraction.chat_export_file import parse_export
from memoryd.extraction.chat_export_policy import (
    REPLY_CHARS,
    ChatExportError,
    ChatTurn,
    plan_import,
)
from tests.chat_exports import (
    as_json,
    as_zip,
    claude_chat,
    claude_message,
    claude_turns,
    gpt_chat,
    gpt_conversation,
    gpt_node,
)


def at(iso: str) -> datetime:
    return datetime.fromisoformat(iso).astimezone(UTC)


def summary(turns: tuple[ChatTurn, ...]) -> list[tuple[str, str, str, str]]:
    return [(t.message_id, t.at.isoformat(), t.owner, t.reply) for t in turns]


def test_chatgpt_follows_the_shown_branch_and_leaves_out_what_the_owner_never_said() -> None:
    nodes = [
        gpt_node("root", None, None),
        gpt_node("sys", "root", "system", ["You are ChatGPT."]),
        gpt_node("ctx", "sys", "user", ["I am a vegetarian."], content_type="user_editable_context",
                 hidden=True),
        gpt_node("u1", "ctx", "user", ["I adopted a cat called Miso"], "2024-03-01T10:00:00Z"),
        gpt_node("a1", "u1", "assistant", ["Lovely name!"], "2024-03-01T10:00:05Z"),
        # The owner edited their second message: the first version's branch is not shown.
        gpt_node("u2-old", "a1", "user", ["She is two"], "2024-03-01T10:01:00Z"),
        gpt_node("a2-old", "u2-old", "assistant", ["Nice"], "2024-03-01T10:01:05Z"),
        gpt_node("u2", "a1", "user", ["She is three, and shy"], "2024-03-01T10:02:00Z"),
        gpt_node("call", "u2", "assistant", ["search('shy cats')"], "2024-03-01T10:02:01Z",
                 content_type="code", recipient="browser"),
        gpt_node("tool", "call", "tool", ["results…"], "2024-03-01T10:02:02Z"),
        gpt_node("a2", "tool", "assistant", ["Give her ", "a quiet corner."],
                 "2024-03-01T10:02:09Z"),
        gpt_node("img", "a2", "user", [{"content_type": "image_asset_pointer", "asset": "x"},
                 "Été à Zürich — 日本 🎉"], "2024-03-02T08:00:00Z",
                 content_type="multimodal_text"),
        gpt_node("blank", "img", "user", ["", "  "], "2024-03-02T08:01:00Z"),
    ]  # fmt: skip
    older = gpt_chat("c-old", "Older", [("user", "I live in Porto", "2023-12-24T09:00:00Z")])
    export = parse_export(as_json([gpt_conversation("c-cat", "Miso", nodes, "blank"), older]))

    assert export.format == "chatgpt"
    # Oldest conversation first, whatever the file's order.
    assert [c.id for c in export.conversations] == ["c-old", "c-cat"]
    cat = export.conversations[1]
    assert summary(cat.turns) == [
        ("u1", "2024-03-01T10:00:00+00:00", "I adopted a cat called Miso", "Lovely name!"),
        ("u2", "2024-03-01T10:02:00+00:00", "She is three, and shy", "Give her \na quiet corner."),
        ("img", "2024-03-02T08:00:00+00:00", "Été à Zürich — 日本 🎉", ""),
    ]
    assert cat.skipped == 1 and cat.title == "Miso"
    # Without a current_node, the newest child at each fork.
    del nodes[-1]
    for node in nodes:
        node["children"] = []
    newest = parse_export(as_json([gpt_conversation("c", "t", nodes, None)]), "chatgpt")
    assert [t.message_id for t in newest.conversations[0].turns] == ["u1", "u2", "img"]


def test_a_chatgpt_branch_that_comes_round_again_ends_where_it_repeats() -> None:
    # A hand-edited export: following the parents, or the newest children, comes back to a
    # node already read; the walk stops there instead of running forever.
    up = [
        gpt_node("u1", "a1", "user", ["I moved to Braga"], "2024-04-01T09:00:00Z"),
        gpt_node("a1", "u1", "assistant", ["Congratulations"], "2024-04-01T09:00:05Z"),
    ]
    by_parent = parse_export(as_json([gpt_conversation("c-up", "t", up, "a1")]), "chatgpt")
    assert summary(by_parent.conversations[0].turns) == [
        ("u1", "2024-04-01T09:00:00+00:00", "I moved to Braga", "Congratulations"),
    ]
    down = [
        gpt_node("root", None, None),
        gpt_node("u1", "root", "user", ["I moved to Braga"], "2024-04-01T09:00:00Z"),
        gpt_node("a1", "u1", "assistant", ["Congratulations"], "2024-04-01T09:00:05Z"),
    ]
    conversation = gpt_conversation("c-down", "t", down, None)
    conversation["mapping"]["a1"]["children"].append("u1")
    by_child = parse_export(as_json([conversation]), "chatgpt")
    assert [t.message_id for t in by_child.conversations[0].turns] == ["u1"]


def test_claude_reads_text_blocks_on_the_last_branch_without_attachments() -> None:
    attachment = {"file_name": "cv.pdf", "file_size": 10, "file_type": "pdf",
                  "extracted_content": "Curriculum: Ana Silva, Lisbon"}  # fmt: skip
    messages = [
        claude_message("h1", "human", "Help me plan Ana's birthday", "2024-05-01T18:00:00.123Z",
                       attachments=[attachment]),
        claude_message("a1", "assistant", "", "2024-05-01T18:00:09Z", parent="h1", blocks=[
            {"type": "thinking", "thinking": "The user wants a party."},
            {"type": "text", "text": "How old is she turning?"},
            {"type": "tool_use", "name": "web_search", "input": {"q": "cakes"}},
            {"type": "tool_result", "content": [{"type": "text", "text": "cake shops"}]},
            {"type": "text", "text": "And where?"},
        ]),
        claude_message("h2-old", "human", "Thirty", "2024-05-01T18:01:00Z", parent="a1"),
        claude_message("a2-old", "assistant", "Great", "2024-05-01T18:01:05Z", parent="h2-old"),
        claude_message("h2", "human", "Forty, in Sintra", "2024-05-01T18:02:00Z", parent="a1"),
        claude_message("a2", "assistant", "Sintra it is", "2024-05-01T18:02:05Z", parent="h2"),
        claude_message("h3", "human", "", "2024-05-01T18:03:00Z", parent="a2", blocks=[],
                       attachments=[attachment]),
    ]  # fmt: skip
    export = parse_export(as_zip([claude_chat("conv-1", "Birthday", messages)]))

    assert export.format == "claude"
    [conversation] = export.conversations
    assert summary(conversation.turns) == [
        ("h1", "2024-05-01T18:00:00.123000+00:00", "Help me plan Ana's birthday",
         "How old is she turning?\nAnd where?"),
        ("h2", "2024-05-01T18:02:00+00:00", "Forty, in Sintra", "Sintra it is"),
    ]  # fmt: skip
    assert conversation.skipped == 1  # the message that was only an attachment


def test_plan_leaves_out_imported_turns_and_caps_long_replies() -> None:
    export = parse_export(
        as_json(
            [
                claude_turns("k", "Kitchen", [
                    ("human", "We bought an oven", "2024-01-01T10:00:00Z"),
                    ("assistant", "x" * (REPLY_CHARS + 500), "2024-01-01T10:00:01Z"),
                    ("human", "It is a Bosch", "2024-01-02T10:00:00Z"),
                ]),
                claude_turns("q", "Quiet", []),
            ]
        )
    )  # fmt: skip
    first = plan_import(export, frozenset())
    again = plan_import(export, frozenset({("k", "k-0")}))

    assert (first.conversation_count, first.turn_count, first.already_imported) == (2, 2, 0)
    reply = first.conversations[0].turns[0].reply
    assert reply.startswith("x" * REPLY_CHARS) and reply.endswith("[…500 more characters left out]")
    assert [t.owner for c in again.conversations for t in c.turns] == ["It is a Bosch"]
    assert (again.turn_count, again.already_imported) == (1, 1)


@pytest.mark.parametrize(
    ("data", "chosen", "expected"),
    [
        (b'[{"title": "x", "mapping": {', "auto", "the file is not JSON (Expecting"),
        (b"\xff\xfe[]", "auto", "not UTF-8"),
        (b'{"user": "me"}', "auto", "unknown format: the file holds a JSON dict"),
        (b'[{"id": "c1", "messages": []}]', "auto", 'unknown format: no conversation has a "ma'),
        (as_json([gpt_chat("a", "Fine", []), {"title": "Trip", "id": "b"}]), "auto",
         "conversation 1 ('Trip') has no valid \"mapping\" (missing)"),
        (as_json([claude_turns("a", "Ok", []), {"uuid": "b", "name": "N", "chat_messages": [
            {"uuid": "m", "sender": "human", "text": "hi"}]}]), "auto",
         "conversation 1 ('N'), message 0, has no valid \"created_at\" (missing)"),
        (as_json([gpt_chat("a", "Fine", [])]), "claude", "looks like a ChatGPT export, not Claude"),
        (as_json([claude_turns("a", "Ok", []), {"name": "N", "chat_messages": []}]), "auto",
         "conversation 1 ('N') has no valid \"uuid\" (missing); is the export complete?"),
        (b"[]", "auto", "the file holds no conversations"),
        (b"PK\x03\x04 broken", "auto", "the .zip cannot be read"),
        (json.dumps([{"uuid": "u", "chat_messages": [{"uuid": "m", "sender": "human", "text": "hi",
          "created_at": "last tuesday"}]}]).encode(), "auto", "'last tuesday' is not an ISO-8601"),
    ],
)  # fmt: skip
def test_a_bad_file_is_refused_with_what_is_wrong_and_where(
    data: bytes, chosen: str, expected: str
) -> None:
    with pytest.raises(ChatExportError) as refused:
        parse_export(data, chosen)

    assert expected in str(refused.value)
