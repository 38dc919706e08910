"""One route from any supported document to Markdown that keeps headings, lists and tables.

PDF goes through :mod:`memoryd.kb.pdf.reader` (font sizes become headings); DOCX, PPTX and XLSX
through markitdown; HTML through trafilatura (main content only); images through the image
reader. PDF, Office and HTML parsing runs in a bounded child process (:mod:`memoryd.kb.sandbox`).
Every refusal is a :class:`ConversionError` that names the problem and what to do.
"""

from __future__ import annotations

import base64
import codecs
import io
import re
import zipfile
from collections.abc import Mapping
from dataclasses import replace
from pathlib import PurePath
from typing import Any

from memoryd.errors import MemorydError
from memoryd.kb.blocks import parse_blocks
from memoryd.kb.converted import ConversionError, Converted, DocumentType, Limits
from memoryd.kb.csv_tables import csv_markdown
from memoryd.kb.file_types import READABLE_SUFFIXES, SUPPORTED, detect_type
from memoryd.kb.images import BudgetedReader, ImageReader, oversized, release_freed_heap
from memoryd.kb.notes import read_note
from memoryd.kb.pdf.reader import pdf_to_markdown
from memoryd.kb.sandbox import Bounds, ChildServer, Task, run_bounded, serve_task
from memoryd.kb.titles import document_title, usable

__all__ = [
    "READABLE_SUFFIXES",
    "SUPPORTED",
    "ConversionError",
    "Converted",
    "DocumentType",
    "Limits",
    "convert",
    "detect_type",
]


# The module the sandbox child runs (this one: its ``__main__`` serves TASKS).
SANDBOX_MODULE = "memoryd.kb.convert"
_DATA_IMAGE = re.compile(r"!\[([^\]]*)\]\(data:image/[a-zA-Z+.-]+;base64,([A-Za-z0-9+/=\s]+)\)")
_BLANK_RUNS = re.compile(r"\n{3,}")


def convert(
    data: bytes,
    name: str,
    reader: ImageReader,
    *,
    limits: Limits | None = None,
    content_type: str | None = None,
) -> Converted:
    """``data`` (named ``name``) as Markdown; raises :class:`ConversionError` when it cannot,
    whatever went wrong inside a parser (a damaged file is one file's failure, never a crash
    of the ingest or a server error)."""
    limits = limits or Limits()
    budgeted = BudgetedReader(reader, limits.image_seconds)
    try:
        converted = _convert(data, name, budgeted, limits, content_type)
        if budgeted.spent > 0:
            release_freed_heap()
        return replace(converted, images_skipped=budgeted.skipped)
    except MemorydError:
        raise
    except Exception as error:
        kind = PurePath(name).suffix.lstrip(".").upper() or "file"
        raise ConversionError(
            f"cannot read the {kind} ({type(error).__name__}: {str(error)[:200]}); it may be "
            "damaged or truncated: re-save it and try again"
        ) from None


def _convert(
    data: bytes, name: str, reader: ImageReader, limits: Limits, content_type: str | None
) -> Converted:
    if len(data) > limits.max_bytes:
        raise ConversionError(
            f"the file is {len(data) / 1e6:.1f} MB, over the {_mb(limits.max_bytes)} MB limit; "
            "split it or raise the limit"
        )
    if not data:
        raise ConversionError("the file is empty")
    kind = detect_type(name, data, content_type)
    stem = PurePath(name).stem or name
    if kind is DocumentType.PDF:
        return pdf_converted(data, stem, reader, limits)
    if kind is DocumentType.IMAGE:
        too_large = oversized(data)
        if too_large is not None:
            raise ConversionError(too_large)
        text = reader.read(data)
        if not text.strip():
            raise ConversionError(
                "no text could be read from the image (OCR found nothing legible); configure "
                "a vision model on the caption route to describe pictures"
            )
        return Converted(stem, f"# {stem}\n\n{text.strip()}\n", kind, images_read=1)
    if kind in (DocumentType.DOCX, DocumentType.PPTX, DocumentType.XLSX):
        _check_zip(data, limits)
        return _office(data, kind, stem, reader, limits)
    text = _decode_text(data)
    if kind is DocumentType.CSV:
        tabs = PurePath(name).suffix.lower() == ".tsv" or _declared(content_type) == _TSV
        return Converted(stem, csv_markdown(text, stem, "\t" if tabs else None), kind)
    if kind is DocumentType.HTML:
        answer = run_bounded(SANDBOX_MODULE, "html", data, _bounds(limits), params={"stem": stem})
        return Converted(str(answer["title"]), str(answer["markdown"]), DocumentType.HTML)
    if kind is DocumentType.MARKDOWN:
        note = read_note(text)
        title = note.title or document_title("", (), _headings(note.markdown), stem)
        return Converted(title, _tidy(note.markdown), kind, metadata=note.metadata)
    return Converted(stem, _tidy(text), DocumentType.TEXT)


_TSV = "text/tab-separated-values"


def _declared(content_type: str | None) -> str:
    return (content_type or "").split(";")[0].strip().lower()


def _check_zip(data: bytes, limits: Limits) -> None:
    """Refuse archives that would inflate past the limits (zip bombs) before a parser opens
    them. The sizes the index declares are checked first, then every member is inflated here,
    a block at a time, counting the bytes that really come out: an index that lies (a member
    larger, or different, than it says) is refused, and so is one past the limits."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
            _refuse_inflation(sum(i.file_size for i in infos), infos, data, limits)
            inflated = 0
            for info in infos:
                with archive.open(info) as member:
                    while block := member.read(1 << 20):
                        inflated += len(block)
                        _refuse_inflation(inflated, infos, data, limits)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError) as error:
        # zipfile stops a member at its declared size and checks its CRC: a lie ends here.
        raise ConversionError(
            f"the archive is damaged or its index lies about its contents ({error}); it was "
            "not opened: re-save the file and try again"
        ) from None
    except NotImplementedError:
        raise ConversionError(
            "the archive uses a compression or encryption memoryd cannot read (password-"
            "protected?); re-save it unprotected and try again"
        ) from None


def _refuse_inflation(
    inflated: int, infos: list[zipfile.ZipInfo], data: bytes, limits: Limits
) -> None:
    packed = max(1, sum(info.compress_size for info in infos))
    if inflated > limits.max_unzipped_bytes or inflated / packed > limits.max_zip_ratio:
        raise ConversionError(
            f"the archive would inflate to more than {inflated / 1e6:.0f} MB from "
            f"{len(data) / 1e6:.1f} MB (a zip bomb, or far larger than any document); it was "
            "not opened"
        )


def _office(
    data: bytes, kind: DocumentType, stem: str, reader: ImageReader, limits: Limits
) -> Converted:
    """DOCX, PPTX and XLSX through markitdown (in a bounded child process); embedded pictures
    become their text here."""
    answer = run_bounded(SANDBOX_MODULE, kind.value, data, _bounds(limits))
    read = 0

    def picture(match: re.Match[str]) -> str:
        nonlocal read
        try:
            image = base64.b64decode(re.sub(r"\s", "", match.group(2)), validate=False)
        except ValueError:
            return ""
        text = reader.read(image).strip()
        if not text:
            return ""
        read += 1
        return "\n\n" + text + "\n\n"

    markdown = _DATA_IMAGE.sub(picture, str(answer["markdown"]))
    if kind is DocumentType.XLSX:
        markdown = re.sub(r"^## ", "# ", markdown, flags=re.MULTILINE)
    metadata = next((t for t in (str(answer["title"]), _core_title(data)) if usable(t)), "")
    title = document_title(metadata, (), _headings(markdown), stem)
    return Converted(title, _tidy(markdown), kind, images_read=read)


def pdf_converted(data: bytes, stem: str, reader: ImageReader, limits: Limits) -> Converted:
    """A PDF converted in a bounded child (its pictures read here by ``reader``); the
    deadline grows with the pages, up to the page limit, so a long real report fits."""
    bounds = replace(
        _bounds(limits),
        seconds_per_page=limits.convert_seconds_per_page,
        max_pages=limits.max_pages,
    )
    params = {
        "stem": stem,
        "max_pages": limits.max_pages,
        "scan_text_chars": limits.scan_text_chars,
    }
    answer = run_bounded(SANDBOX_MODULE, "pdf", data, bounds, params=params, reader=reader)
    return Converted(
        str(answer["title"]),
        str(answer["markdown"]),
        DocumentType.PDF,
        images_read=int(answer["images_read"]),
        pages=int(answer["pages"]),
    )


def _pdf_markdown(data: bytes, params: Mapping[str, Any], server: ChildServer) -> dict[str, Any]:
    """A PDF's Markdown (run in the sandbox child; its pictures are read by the server)."""
    limits = Limits(
        max_pages=int(params["max_pages"]), scan_text_chars=int(params["scan_text_chars"])
    )
    converted = pdf_to_markdown(data, str(params["stem"]), server, limits, on_page=server.pages)
    return {
        "title": converted.title,
        "markdown": converted.markdown,
        "images_read": converted.images_read,
        "pages": converted.pages or 0,
    }


def _office_markdown(data: bytes, kind: DocumentType) -> dict[str, Any]:
    """markitdown's Markdown and title for an Office file (run in the sandbox child)."""
    from markitdown import MarkItDown, StreamInfo

    converter = MarkItDown(enable_plugins=False)
    try:
        result = converter.convert_stream(
            io.BytesIO(data),
            stream_info=StreamInfo(extension="." + kind.value),
            keep_data_uris=True,
        )
    except MemoryError:
        raise
    except Exception as error:  # markitdown wraps every parser's failure differently
        if _ran_out_of_memory(error):
            raise MemoryError from None  # the sandbox names the bound that was hit
        raise ConversionError(
            f"cannot read the {kind.value.upper()} file ({type(error).__name__}); it may be "
            "damaged or password-protected: re-save it unprotected and try again"
        ) from None
    return {"markdown": result.markdown or "", "title": result.title or ""}


def _ran_out_of_memory(error: BaseException) -> bool:
    """Whether a MemoryError lies under ``error``: in its chain, or in one of markitdown's
    conversion attempts."""
    seen: set[int] = set()
    pending: list[BaseException] = [error]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, MemoryError):
            return True
        pending += [e for e in (current.__cause__, current.__context__) if e is not None]
        for attempt in getattr(current, "attempts", None) or ():
            info = getattr(attempt, "exc_info", None)
            if info and isinstance(info[1], BaseException):
                pending.append(info[1])
    return False


def _bounds(limits: Limits) -> Bounds:
    return Bounds(limits.convert_memory_bytes, limits.convert_seconds)


def _mb(size: int) -> str:
    """Bytes as megabytes for a message: 50 → '50', 0.1 → '0.1'."""
    return f"{size / 1e6:g}"


def _core_title(data: bytes) -> str:
    """The title in an Office file's core properties (docProps/core.xml), if set."""
    from xml.etree import ElementTree

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            if "docProps/core.xml" not in archive.namelist():
                return ""
            info = archive.getinfo("docProps/core.xml")
            if info.file_size > 1_000_000:
                return ""
            root = ElementTree.fromstring(archive.read(info))
    except (zipfile.BadZipFile, ElementTree.ParseError, KeyError):
        return ""
    title = root.find("{http://purl.org/dc/elements/1.1/}title")
    return (title.text or "").strip() if title is not None else ""


def _html_markdown(data: bytes, params: Mapping[str, Any], server: ChildServer) -> dict[str, Any]:
    """An HTML page's title and main content as Markdown (run in the sandbox child); the
    page is titled by its name's stem when it has no title."""
    converted = _html(_decode_text(data), str(params["stem"]))
    return {"markdown": converted.markdown, "title": converted.title}


def _html(text: str, stem: str) -> Converted:
    """The page's main content (no navigation, ads or footers) as Markdown."""
    import trafilatura

    markdown = trafilatura.extract(
        text,
        output_format="markdown",
        include_tables=True,
        include_formatting=True,
        include_links=False,
        include_images=False,
        include_comments=False,
        with_metadata=False,
    )
    metadata = trafilatura.extract_metadata(text)
    title = (getattr(metadata, "title", None) or "").strip() if metadata else ""
    if not markdown or not markdown.strip():
        raise ConversionError(
            "no readable main content in the page (empty, script-only, or a login wall)"
        )
    title = document_title(title, (), _headings(markdown), stem)
    if not _headings(markdown):
        markdown = f"# {title}\n\n{markdown}"
    return Converted(title, _tidy(markdown), DocumentType.HTML)


# Byte-order marks of the wide encodings (Windows Notepad saves "Unicode" as UTF-16 LE with its
# mark); UTF-32's first, as its little-endian mark starts like UTF-16's.
_WIDE_MARKS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def _decode_text(data: bytes) -> str:
    """UTF-8 (with or without BOM), UTF-16 or UTF-32 with their byte-order mark, else
    Windows-1252; binary data is refused."""
    for mark, encoding in _WIDE_MARKS:
        if data.startswith(mark):
            try:
                return data.decode(encoding)
            except UnicodeDecodeError:
                raise ConversionError(
                    f"the file starts as {encoding.upper()} text but does not decode as it "
                    "(cut short, or not text); save it again as UTF-8"
                ) from None
    if b"\x00" in data[:8192]:
        raise ConversionError(
            "the file holds binary data, not text (its name says text); check the file type"
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def _headings(markdown: str, most: int = 40) -> list[str]:
    """The first ``most`` headings outside code blocks, in order."""
    found: list[str] = []
    for block in parse_blocks(markdown):
        if block.kind == "heading":
            found.append(block.text)
            if len(found) == most:
                break
    return found


def _tidy(markdown: str) -> str:
    """Normalised newlines, no runs of blank lines, no trailing spaces."""
    text = markdown.replace("\r\n", "\n").replace("\r", "\n")
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    return _BLANK_RUNS.sub("\n\n", text).strip() + "\n"


# What the sandbox child may be asked to do (kb/sandbox.py runs one per file).
TASKS: dict[str, Task] = {
    "docx": lambda data, params, server: _office_markdown(data, DocumentType.DOCX),
    "pptx": lambda data, params, server: _office_markdown(data, DocumentType.PPTX),
    "xlsx": lambda data, params, server: _office_markdown(data, DocumentType.XLSX),
    "html": _html_markdown,
    "pdf": _pdf_markdown,
}


def _warm(task: str) -> None:
    """Load the task's libraries before the memory cap (kb/sandbox.py says why)."""
    if task == "pdf":
        import PIL.Image
        import pypdfium2

        PIL.Image.init()
        del pypdfium2
    elif task == "html":
        import trafilatura

        del trafilatura
    else:
        from markitdown import MarkItDown

        MarkItDown(enable_plugins=False)


if __name__ == "__main__":
    serve_task(TASKS, _warm)
