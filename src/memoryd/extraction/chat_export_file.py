"""A conversation export's file read one conversation at a time: its conversations.json, or the
export's .zip holding it (its declared sizes checked before it is opened), as UTF-8 text whose
top-level JSON list is decoded element by element. What is held at once is one conversation's
text and objects, however large the file.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import ExitStack
from typing import IO, Any

from memoryd.extraction.chat_export_policy import (
    ChatExport,
    ChatExportError,
    by_first_turn,
    read_conversations,
)

# A zip's conversations.json larger than this is refused rather than read (minutes of work for
# a file no export reaches; unzipped, a larger one is read from its path).
MAX_JSON_BYTES = 2 * 1024**3
# Exported JSON packs 5-20x; a member that claims more than this is a bomb (as for Office files).
MAX_ZIP_RATIO = 200.0
# Why 64 Mi characters: a conversation is read whole, and one model's context holds far less
# (a real export's largest, with its metadata and pasted documents' text, is a few MB); a
# conversation longer than this is a broken or hostile file, not a chat.
MAX_CONVERSATION_CHARS = 64 * 1024**2
# Text read at a time; a conversation longer than what is in hand reads half as much again.
CHUNK_CHARS = 1024**2
_SPACE = re.compile(r"[ \t\n\r]*")
# A decoding error this near the end of the text in hand may be the text being cut there.
_NEAR_END = 16
_GIVE = "give the conversations.json of a ChatGPT or Claude export, or its .zip"


class ExportFile:
    """The conversations of an export file's binary stream (seekable: a file, a spooled
    upload, bytes), read lazily; ``share_read`` says how far into the stream it is."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self._closing = ExitStack()
        self._total = max(1, stream.seek(0, io.SEEK_END))
        stream.seek(0)
        zipped = stream.read(4) == b"PK\x03\x04"
        stream.seek(0)
        self._what = "the .zip" if zipped else "the file"
        member = self._zip_member(stream) if zipped else stream
        self._text = _Text(io.TextIOWrapper(member, encoding="utf-8-sig", newline=""), self._what)

    def __enter__(self) -> ExportFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Let go of the zip member (the caller's stream stays open)."""
        self._text.source.detach()
        self._closing.close()

    @property
    def share_read(self) -> float:
        """How much of the file (the .zip as stored) has been read, 0 to 1."""
        try:
            return min(1.0, self._stream.tell() / self._total)
        except (OSError, ValueError):
            return 0.0

    def conversations(self) -> Iterator[Any]:
        """Each element of the file's list of conversations (or of the ``conversations`` list of
        a JSON object), decoded only when reached."""
        text = self._text
        first = text.next_char()
        if first == "[":
            yield from _elements(text)
        elif first == "{":
            yield from _member_list(text)
        else:
            found = text.value("")
            raise ChatExportError(_not_a_list(type(found).__name__))
        if text.next_char():
            text.fail("Extra data", "after the list of conversations")

    def _zip_member(self, stream: IO[bytes]) -> IO[bytes]:
        try:
            stream.seek(0)
            archive = self._closing.enter_context(zipfile.ZipFile(stream))
            names = [
                i
                for i in archive.infolist()
                if i.filename.rsplit("/", 1)[-1] == "conversations.json"
            ]
            if not names:
                raise ChatExportError(
                    "the .zip holds no conversations.json; is it a ChatGPT or Claude data export?"
                )
            entry = min(names, key=lambda i: i.filename.count("/"))
            if entry.file_size > MAX_JSON_BYTES:
                raise ChatExportError(
                    f"the .zip's {entry.filename} is {entry.file_size} bytes, over the "
                    f"{MAX_JSON_BYTES} memoryd reads from a .zip; unzip it and import its "
                    "conversations.json"
                )
            if entry.file_size > MAX_ZIP_RATIO * max(1, entry.compress_size):
                # zipfile stops a member at its declared size, so the declared one is what counts.
                raise ChatExportError(
                    f"the .zip's {entry.filename} would inflate {entry.file_size} bytes from "
                    f"{entry.compress_size} (more than {MAX_ZIP_RATIO:g}x: a zip bomb, not an "
                    "export); it was not opened"
                )
            return self._closing.enter_context(archive.open(entry))
        except (zipfile.BadZipFile, OSError, EOFError) as error:
            self._closing.close()
            raise ChatExportError(f"the .zip cannot be read ({error})") from None
        except BaseException:
            self._closing.close()
            raise


def parse_export(data: bytes, chosen: str = "auto") -> ChatExport:
    """The conversations in an export file's bytes (``conversations.json``, or the export's
    .zip holding it), oldest first; ``chosen`` is ``chatgpt``, ``claude`` or ``auto``
    (recognised by shape). Raises :class:`ChatExportError` naming what is wrong."""
    with ExportFile(io.BytesIO(data)) as export:
        found, conversations = read_conversations(export.conversations(), chosen)
        return ChatExport(found, tuple(sorted(conversations, key=by_first_turn)))


def _not_a_list(kind: str) -> str:
    return (
        f"unknown format: the file holds a JSON {kind}, not the list of conversations of a "
        "ChatGPT or Claude export"
    )


def _elements(text: _Text) -> Iterator[Any]:
    """The elements of the list whose ``[`` is next, one at a time."""
    text.skip(1)
    if text.next_char() == "]":
        text.skip(1)
        return
    index = 0
    while True:
        yield text.value(f"conversation {index}")
        index += 1
        after = text.next_char()
        if after == "]":
            text.skip(1)
            return
        if not after:
            text.fail(
                "Expecting ',' delimiter",
                f"the file ends after conversation {index - 1}; is it cut short?",
            )
        if after != ",":
            text.fail("Expecting ',' delimiter", f"after conversation {index - 1}")
        text.skip(1)


def _member_list(text: _Text) -> Iterator[Any]:
    """The ``conversations`` list of the object whose ``{`` is next (its other members read
    and dropped one at a time)."""
    text.skip(1)
    found = False
    where = "in the file's object"
    while text.next_char() != "}":
        if text.next_char() != '"':
            text.fail("Expecting property name enclosed in double quotes", where)
        key = text.value("the file's object")
        if text.next_char() != ":":
            text.fail("Expecting ':' delimiter", where)
        text.skip(1)
        if key == "conversations" and not found and text.next_char() == "[":
            found = True
            yield from _elements(text)
        else:
            text.value("the file's object")
        if text.next_char() == ",":
            text.skip(1)
            if text.next_char() == "}":
                text.fail("Expecting property name enclosed in double quotes", where)
        elif text.next_char() != "}":
            text.fail("Expecting ',' delimiter", where)
    text.skip(1)
    if not found:
        raise ChatExportError(_not_a_list("dict"))


def _maybe_cut(error: json.JSONDecodeError, buffer: str) -> bool:
    """Whether the decoder stopped because the text in hand ends (more may complete it)."""
    return error.msg.startswith("Unterminated string") or error.pos >= len(buffer) - _NEAR_END


class _Text:
    """Decoded text in hand, read from ``source`` as needed, with the place in the whole file
    of what is in hand (for errors: line and column as ``json`` counts them)."""

    def __init__(self, source: io.TextIOWrapper, what: str) -> None:
        self.source, self.what = source, what
        self.buffer = ""
        self.at = 0  # next unread character of buffer
        self.base = 0  # characters before buffer[0]
        self.lines = 0  # newlines before buffer[0]
        self.line_start = 0  # where the line holding buffer[0] begins
        self.ended = False

    @property
    def offset(self) -> int:
        """The place of the next unread character in the whole text."""
        return self.base + self.at

    def where(self, offset: int) -> str:
        """``line L column C`` of a place in the whole text (in hand)."""
        pos = offset - self.base
        newline = self.buffer.rfind("\n", 0, pos)
        line = self.lines + self.buffer.count("\n", 0, pos) + 1
        column = pos - newline if newline >= 0 else offset - self.line_start + 1
        return f"line {line} column {column}"

    def next_char(self) -> str:
        """The next character after white space ('' at the end), left unread."""
        while True:
            space = _SPACE.match(self.buffer, self.at)
            self.at = space.end() if space else self.at
            if self.at < len(self.buffer):
                return self.buffer[self.at]
            if not self._more(CHUNK_CHARS):
                return ""

    def skip(self, count: int) -> None:
        """Pass over characters already seen."""
        self.at += count

    def fail(self, message: str, context: str) -> None:
        """Refuse the file: ``message`` at the next unread character."""
        raise ChatExportError(
            f"the file is not JSON ({message} at {self.where(self.offset)}, {context}); {_GIVE}"
        )

    def value(self, context: str) -> Any:
        """The JSON value that starts at the next character, decoded once all of it is in hand
        (more is read until it is, up to :data:`MAX_CONVERSATION_CHARS`)."""
        self.next_char()
        while True:
            start = self.at
            try:
                value, end = _DECODER.raw_decode(self.buffer, start)
            except RecursionError:
                raise ChatExportError(
                    f"the file's JSON is nested too deeply to be an export ({context or 'its JSON'}"
                    f", from {self.where(self.base + start)})"
                ) from None
            except json.JSONDecodeError as error:
                if self.ended or not _maybe_cut(error, self.buffer):
                    self._refuse(error, context, start)
            else:
                # A value ending near where the text in hand ends may go on ("1" of "1e-7").
                if end < len(self.buffer) - _NEAR_END or self.ended:
                    self.at = end
                    return value
            self._grow(context)

    def _refuse(self, error: json.JSONDecodeError, context: str, start: int) -> None:
        where = self.where(self.base + error.pos)
        rest = self.buffer[error.pos :].strip(" \t\n\r")
        # Cut short: the decoder wanted more at the end, or stopped in a last word or string.
        if error.msg.startswith("Unterminated") or not rest or (len(rest) < 6 and rest.isalnum()):
            begun = self.where(self.base + start)
            raise ChatExportError(
                f"the file is not JSON ({error.msg} at {where}: the file ends inside "
                f"{context or 'its JSON'}, begun at {begun}; is it cut short?); {_GIVE}"
            )
        within = f", in {context}" if context else ""
        raise ChatExportError(f"the file is not JSON ({error.msg} at {where}{within}); {_GIVE}")

    def _grow(self, context: str) -> None:
        """Read half as much again as the unfinished value holds (at least a chunk)."""
        pending = len(self.buffer) - self.at
        if pending > MAX_CONVERSATION_CHARS:
            raise ChatExportError(
                f"{context or 'the file'} (from {self.where(self.offset)}) runs past "
                f"{MAX_CONVERSATION_CHARS} characters; memoryd reads a conversation whole "
                "and does not read one this long"
            )
        # Why half: the value in hand, what is read and the two joined are held at once
        # (3x the value, not the 4x of doubling); the decoder re-reads it 3x in all.
        self._more(max(CHUNK_CHARS, pending // 2))

    def _more(self, size: int) -> bool:
        """Drop what was read, add up to ``size`` characters; False at the end of the file."""
        if self.ended:
            return False
        if self.at:
            dropped = self.buffer.count("\n", 0, self.at)
            if dropped:
                self.lines += dropped
                self.line_start = self.base + self.buffer.rfind("\n", 0, self.at) + 1
            self.base += self.at
            self.buffer = self.buffer[self.at :]
            self.at = 0
        pieces: list[str] = []
        while size > 0:
            # A chunk at a time: the bytes and their decoding in hand stay a chunk's.
            piece = self._read(min(size, CHUNK_CHARS))
            if not piece:
                self.ended = True
                break
            pieces.append(piece)
            size -= len(piece)
        if not pieces:
            return False
        self.buffer = "".join([self.buffer, *pieces])
        return True

    def _read(self, size: int) -> str:
        try:
            return self.source.read(size)
        except UnicodeDecodeError:
            raise ChatExportError(f"the file is not JSON (not UTF-8 text); {_GIVE}") from None
        except (zipfile.BadZipFile, zlib.error, EOFError) as error:
            raise ChatExportError(f"{self.what} cannot be read ({error})") from None
        except OSError as error:
            raise ChatExportError(
                f"{self.what} cannot be read ({error.strerror or error})"
            ) from None


_DECODER = json.JSONDecoder()
