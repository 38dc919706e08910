"""What a conversion yields and what it may cost: the types :mod:`memoryd.kb.convert` and
:mod:`memoryd.kb.pdf.reader` share (so neither imports the other for them)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from memoryd.config.settings import SettingValues, parse_value
from memoryd.errors import MemorydError


class ConversionError(MemorydError):
    """A document that cannot be read: permanent, reported per file with its reason."""


class DocumentType(StrEnum):
    """What a source is, decided from its bytes first and its name second."""

    PDF = "pdf"
    DOCX = "docx"
    PPTX = "pptx"
    XLSX = "xlsx"
    CSV = "csv"
    HTML = "html"
    MARKDOWN = "markdown"
    TEXT = "text"
    IMAGE = "image"


@dataclass(frozen=True)
class Limits:
    """What a single document may cost before it is refused."""

    # Why these: a 50 MB file is a book-sized PDF; an Office file that inflates past 250 MB
    # or more than 200x is a zip bomb, not a document; 2,000 pages covers any real report.
    max_bytes: int = 50_000_000
    max_unzipped_bytes: int = 250 * 1024 * 1024
    max_zip_ratio: float = 200.0
    max_pages: int = 2000
    # A PDF page with fewer characters than this in its text layer is a scan: render and read.
    scan_text_chars: int = 20
    # Seconds and bytes for a URL.
    fetch_timeout: float = 20.0
    # What parsing one PDF, Office file or web page may use, whatever it claims (kb/sandbox.py).
    # Why 1 GiB and 120 s: a 50 MB real report converts in well under a tenth of either.
    convert_memory_bytes: int = 1024 * 1024 * 1024
    convert_seconds: float = 120.0
    # A PDF's deadline grows by this for each page it has (at most max_pages): real filings
    # convert at 30-40 pages/s idle and were seen at 2.9 on a loaded shared 2-core machine;
    # a 2,000-page PDF read at 4 pages/s fits (620 s). Only pages really read count, so a
    # file claiming 2,000 pages but stuck on its first gets 120 s.
    convert_seconds_per_page: float = 0.25
    # Seconds of OCR and captioning for one document; past it, pictures are left unread.
    image_seconds: float = 60.0


@dataclass(frozen=True)
class Converted:
    """A document as Markdown, with the title found in it and how many images were read."""

    title: str
    markdown: str
    document_type: DocumentType
    images_read: int = 0
    pages: int | None = None
    # What the document says about itself (a note's front matter, tags and links).
    metadata: dict[str, Any] = field(default_factory=dict)
    # Pictures left unread because the document's image budget was spent.
    images_skipped: int = 0


def limits_of(values: SettingValues, base: Limits | None = None) -> Limits:
    """``base`` (the defaults) with the owner's ``kb.convert_seconds`` and
    ``kb.convert_memory_mb``; a malformed value raises a SettingsError naming its source."""
    limits = base or Limits()
    seconds, memory = values.setting("kb.convert_seconds"), values.setting("kb.convert_memory_mb")
    if seconds is not None:
        limits = replace(
            limits, convert_seconds=float(parse_value(seconds.key, seconds.value, seconds.source()))
        )
    if memory is not None:
        mib = int(parse_value(memory.key, memory.value, memory.source()))
        limits = replace(limits, convert_memory_bytes=mib * 1024 * 1024)
    return limits
