"""``memoryd kb ingest``'s progress on stderr: when a file's chunks are written (pages, chunks,
pages per second: keyword-searchable from then), then its vectors by chunks and pages with the
rate and the time left. On a terminal the embedding line is redrawn in place; elsewhere (``kb
ingest --progress`` into a file or a pipe) each update is a line of its own.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from memoryd.kb.vector_fill import duration, pace
from memoryd.words import visible_controls

if TYPE_CHECKING:
    from memoryd.kb.results import IngestResult
    from memoryd.kb.vector_fill import FillProgress


def written_line(name: str, result: IngestResult) -> str | None:
    """The line for a file whose chunks were just committed (None for other outcomes)."""
    document = result.document
    if result.outcome != "ok" or document is None:
        return None
    seconds = result.searchable_seconds or result.seconds
    pages = ""
    if result.pages:
        rate = f", {result.pages / seconds:.1f} pages/s" if seconds > 0 else ""
        pages = f"{result.pages} pages{rate}, "
    vectors = (
        f"; embedding {document.embedded_chunks}/{document.chunk_count}"
        if document.pending_vectors
        else ""
    )
    return (
        f"{name}: {pages}{document.chunk_count} chunks written in {duration(seconds)}, "
        f"keyword-searchable{vectors}"
    )


def embedding_line(name: str, progress: FillProgress) -> str:
    """ "embedding report.pdf 120/347 chunks, p. 45/131, 5.6 chunks/s, 40 s left"."""
    parts = [f"embedding {name} {progress.done}/{progress.total} chunks"]
    if progress.pages:
        parts.append(f"p. {progress.last_page}/{progress.pages}")
    return ", ".join(parts + pace(progress))


class IngestProgress:
    """Follows an ingest (an :class:`~memoryd.kb.vector_fill.IngestWatcher`); writes and
    embedding may report from two threads (the next file converts while this one embeds)."""

    def __init__(self, out: TextIO, *, redraw: bool) -> None:
        self._out = out
        self._redraw = redraw
        self._names: dict[str, str] = {}
        self._lock = threading.Lock()
        self._open_line = False

    def written(self, result: IngestResult) -> None:
        """A file's chunks are committed (or it was skipped or failed)."""
        name = _name_of(result.source)
        if result.document is not None:
            self._names[result.document.id] = name
        line = written_line(name, result)
        if line is not None:
            self._write(line, final=True)

    def embedding(self, progress: FillProgress) -> None:
        """Another batch of vectors is committed."""
        name = self._names.get(progress.document_id, progress.document_id)
        line = embedding_line(name, progress)
        self._write(line, final=progress.done >= progress.total or not self._redraw)

    def close(self) -> None:
        """End a line still being redrawn."""
        with self._lock:
            if self._open_line:
                self._out.write("\n")
                self._out.flush()
                self._open_line = False

    def _write(self, line: str, *, final: bool) -> None:
        # A file's name is anyone's choice: its escape sequences are shown, never obeyed.
        line = visible_controls(line)
        with self._lock:
            if self._redraw:
                self._out.write("\r\x1b[2K" + line + ("\n" if final else ""))
                self._open_line = not final
            else:
                self._out.write(line + "\n")
            self._out.flush()


def _name_of(source: str) -> str:
    return Path(source).name or source
