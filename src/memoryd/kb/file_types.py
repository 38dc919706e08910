"""Which kind of document a file is: its magic bytes, its declared type, then its name."""

from __future__ import annotations

import io
import zipfile
from pathlib import PurePath

from memoryd.kb.converted import ConversionError, DocumentType

__all__ = ["READABLE_SUFFIXES", "SUPPORTED", "detect_type"]


SUPPORTED = "PDF, DOCX, PPTX, XLSX, CSV, TSV, HTML, Markdown, plain text, PNG and JPEG"

_EXTENSIONS = {
    ".pdf": DocumentType.PDF,
    ".docx": DocumentType.DOCX,
    ".pptx": DocumentType.PPTX,
    ".xlsx": DocumentType.XLSX,
    ".csv": DocumentType.CSV,
    ".tsv": DocumentType.CSV,
    ".html": DocumentType.HTML,
    ".htm": DocumentType.HTML,
    ".xhtml": DocumentType.HTML,
    ".md": DocumentType.MARKDOWN,
    ".markdown": DocumentType.MARKDOWN,
    ".txt": DocumentType.TEXT,
    ".text": DocumentType.TEXT,
    ".png": DocumentType.IMAGE,
    ".jpg": DocumentType.IMAGE,
    ".jpeg": DocumentType.IMAGE,
}
# The file names a folder sync reads (others are skipped by rule, not failed).
READABLE_SUFFIXES = frozenset(_EXTENSIONS)
_CONTENT_TYPES = {
    "application/pdf": DocumentType.PDF,
    "text/csv": DocumentType.CSV,
    "text/tab-separated-values": DocumentType.CSV,
    "text/html": DocumentType.HTML,
    "application/xhtml+xml": DocumentType.HTML,
    "text/markdown": DocumentType.MARKDOWN,
    "text/plain": DocumentType.TEXT,
    "image/png": DocumentType.IMAGE,
    "image/jpeg": DocumentType.IMAGE,
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": DocumentType.DOCX,
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": (
        DocumentType.PPTX
    ),
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": DocumentType.XLSX,
}
_OFFICE_PARTS = {
    "word/": DocumentType.DOCX,
    "ppt/": DocumentType.PPTX,
    "xl/": DocumentType.XLSX,
}


def detect_type(name: str, data: bytes, content_type: str | None = None) -> DocumentType:
    """The document's type from its magic bytes, then its declared type, then its name."""
    head = data[:1024]
    if head.startswith(b"%PDF"):
        return DocumentType.PDF
    if head.startswith(b"\x89PNG\r\n\x1a\n") or head.startswith(b"\xff\xd8\xff"):
        return DocumentType.IMAGE
    if head.startswith(b"PK\x03\x04"):
        return _office_type(name, data)
    declared = (content_type or "").split(";")[0].strip().lower()
    if declared in _CONTENT_TYPES and _CONTENT_TYPES[declared] is not DocumentType.TEXT:
        return _CONTENT_TYPES[declared]
    suffix = PurePath(name).suffix.lower()
    if suffix in _EXTENSIONS:
        return _EXTENSIONS[suffix]
    lowered = head.lstrip().lower()
    if lowered.startswith((b"<!doctype html", b"<html")):
        return DocumentType.HTML
    if declared == "text/plain" or (not suffix and _looks_like_text(data)):
        return DocumentType.TEXT
    shown = suffix or "no extension"
    raise ConversionError(
        f"unsupported file type ({shown}); memoryd reads {SUPPORTED}: convert it to one of "
        "those first"
    )


def _office_type(name: str, data: bytes) -> DocumentType:
    """DOCX, PPTX or XLSX from the parts inside the zip."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = archive.namelist()
    except zipfile.BadZipFile:
        raise ConversionError(
            "the file is a damaged zip archive (truncated Office file?); re-save it and try again"
        ) from None
    for prefix, kind in _OFFICE_PARTS.items():
        if any(n.startswith(prefix) for n in names):
            return kind
    suffix = PurePath(name).suffix.lower()
    raise ConversionError(
        f"the file is a zip archive ({suffix or 'no extension'}) but not a DOCX, PPTX or XLSX; "
        f"memoryd reads {SUPPORTED}"
    )


def _looks_like_text(data: bytes) -> bool:
    sample = data[:4096]
    if b"\x00" in sample:
        return False
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
