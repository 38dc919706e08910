"""An export file read a conversation at a time: the first conversation comes before the rest of
the file is read, the conversations decoded are json's own wherever the reads cut the text,
and a file cut short, broken in the middle, not a list, too deep or with a conversation too
long to read whole is refused with what is wrong and where."""

from __future__ import annotations

import io
import json
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.extraction import chat_export_file
from memoryd.extraction.chat_export_file import ExportFile, parse_export
from memoryd.extraction.chat_export_policy import ChatExportError, read_conversations
from tests.chat_exports import as_json, as_zip, claude_turns, gpt_chat


class CountingReader(io.BytesIO):
    """The file's bytes, counting how many were read (a zip's index, at its end, too)."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.read_bytes = 0

    def read(self, size: int | None = -1) -> bytes:
        chunk = super().read(size)
        self.read_bytes += len(chunk)
        return chunk

    def read1(self, size: int | None = -1) -> bytes:
        chunk = super().read1(size)
        self.read_bytes += len(chunk)
        return chunk


def long_chats(count: int) -> list[dict[str, Any]]:
    """Conversations of a few KB each, of words in a seeded order (a zip packs them ~5x)."""
    rng = random.Random(7)
    words = "we planned the trip to Porto with Ana and the kids flat in Lisbon cat bike".split()

    def text() -> str:
        return " ".join(rng.choice(words) for _ in range(400))

    return [
        gpt_chat(f"c{n}", f"Chat {n}", [
            ("user", text(), f"2024-01-{1 + n % 28:02d}T10:00:00Z"),
            ("assistant", text(), f"2024-01-{1 + n % 28:02d}T10:00:05Z"),
        ])
        for n in range(count)
    ]  # fmt: skip


@pytest.mark.parametrize("packed", [as_json, as_zip])
def test_the_first_conversation_comes_before_the_rest_of_the_file_is_read(
    packed: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Text is read 64 K characters at a time here (a zip member's reads take as many packed
    # bytes, which this export's .zip, 1.6 MB, would hold whole at the usual 1 M).
    monkeypatch.setattr(chat_export_file, "CHUNK_CHARS", 64 * 1024)
    chats = long_chats(2_000)  # about 12 MB of JSON
    data = packed(chats)
    stream = CountingReader(data)

    with ExportFile(stream) as export:
        found, conversations = read_conversations(export.conversations())
        first = next(conversations)
        read_by_then = stream.read_bytes
        rest = list(conversations)

    assert found == "chatgpt" and first.id == "c0" and len(rest) == 1_999
    assert read_by_then < len(data) / 4, (read_by_then, len(data))
    assert [c.id for c in rest[-2:]] == ["c1998", "c1999"]


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.sampled_from('[]{},:"\\ \n\tab\u00e9\u65e5\U0001f389\u2028')),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(
    elements=st.lists(JSON, max_size=5),
    chunk=st.integers(1, 40),
    indent=st.sampled_from([None, 1, "\t"]),
    ascii_only=st.booleans(),
    bom=st.booleans(),
    wrapped=st.booleans(),
)
def test_the_elements_are_jsons_own_wherever_the_reads_cut_the_text(
    elements: list[Any], chunk: int, indent: Any, ascii_only: bool, bom: bool, wrapped: bool
) -> None:
    document: Any = {"a": ["]", "{"], "conversations": elements, "z": {"[": 1}}
    text = json.dumps(document if wrapped else elements, indent=indent, ensure_ascii=ascii_only)
    data = ("\ufeff" if bom else "").encode() + f" \r\n{text}\n ".encode()
    original = chat_export_file.CHUNK_CHARS
    chat_export_file.CHUNK_CHARS = chunk
    try:
        with ExportFile(io.BytesIO(data)) as export:
            read = list(export.conversations())
    finally:
        chat_export_file.CHUNK_CHARS = original

    decoded = json.loads(text)
    assert read == (decoded["conversations"] if wrapped else decoded)


def test_an_object_holding_the_list_is_read_as_before() -> None:
    chats = [gpt_chat("w1", "Wrapped", [("user", "I live in Braga", "2024-02-01T09:00:00Z")])]
    data = json.dumps({"user": {"id": "me"}, "conversations": chats}).encode()

    export = parse_export(data)

    assert [t.owner for c in export.conversations for t in c.turns] == ["I live in Braga"]


CLAUDE = [
    claude_turns(f"k{n}", f"Kitchen {n}", [("human", "We bought an oven", "2024-01-01T10:00:00Z")])
    for n in range(3)
]


def _cut(data: bytes, marker: bytes) -> bytes:
    return data[: data.index(marker)]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        # Cut short inside the third conversation: where it began, and that the file ends.
        (_cut(as_json(CLAUDE), b'"k2-0", "text"'),
         "the file ends inside conversation 2, begun at line 1 column "),
        (as_json(CLAUDE)[:-1], "the file ends after conversation 2; is it cut short?"),
        # A broken second conversation: the place and the conversation are named.
        (as_json(CLAUDE).replace(b'"name": "Kitchen 1",', b'"name": "Kitchen 1" "x": 1,'),
         "the file is not JSON (Expecting ',' delimiter at line 1 column "),
        (as_json(CLAUDE).replace(b'"name": "Kitchen 1",', b'"name": "Kitchen 1" "x": 1,'),
         ", in conversation 1); give the conversations.json"),
        (as_json(CLAUDE).replace(b'}, {"uuid": "k2"', b'} {"uuid": "k2"'),
         "Expecting ',' delimiter at line 1 column "),
        (as_json(CLAUDE) + b" []", "the file is not JSON (Extra data at line 1 column"),
        (b'"conversations"', "unknown format: the file holds a JSON str, not the list"),
        (b'{"conversations": {"a": 1}}', "unknown format: the file holds a JSON dict"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply to be an export (conversation 0"),
        (b'[{"uuid": "a", "chat_messages": []},\n {"uuid": "b" "x"}]',
         "(Expecting ',' delimiter at line 2 column 15, in conversation 1)"),
    ],
)  # fmt: skip
def test_a_broken_file_is_refused_with_what_is_wrong_and_where(data: bytes, expected: str) -> None:
    with pytest.raises(ChatExportError) as refused:
        parse_export(data)

    assert expected in str(refused.value)


def test_a_conversation_too_long_to_read_whole_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chat_export_file, "MAX_CONVERSATION_CHARS", 50_000)
    monkeypatch.setattr(chat_export_file, "CHUNK_CHARS", 4_096)
    huge = claude_turns("big", "Big", [("human", "x" * 80_000, "2024-01-01T10:00:00Z")])
    data = as_json([*CLAUDE, huge])

    with pytest.raises(ChatExportError) as refused:
        parse_export(data)

    begins = data.index(b'{"uuid": "big"') + 1
    assert str(refused.value).startswith(
        f"conversation 3 (from line 1 column {begins}) runs past 50000 characters"
    )
