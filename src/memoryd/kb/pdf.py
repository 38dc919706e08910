"""PDF to Markdown with headings, tables and the text of images, on permissive licences:
pdfplumber/pdfminer.six (MIT) for text with font sizes and tables, pypdfium2 (Apache-2.0 /
BSD-3) to render scanned pages and picture regions for the image reader.

Headings are lines set larger than the body text (the most common size, weighted by
characters): each larger size is one heading level, the largest first.
"""

from __future__ import annotations

import io
import statistics
import threading
from collections import Counter
from dataclasses import dataclass
from typing import Any

from .convert import ConversionError, Converted, DocumentType, Limits
from .images import ImageReader

# A line at least this much larger than the body text is a heading.
HEADING_RATIO = 1.15
# Longer lines are prose set large (a pull quote), not headings.
MAX_HEADING_CHARS = 150
# Pictures smaller than this (points, either side) are logos and rules.
MIN_PICTURE_POINTS = 40.0
# Render scale for reading: 2 × 72 dpi = 144 dpi is enough for OCR of body text.
RENDER_SCALE = 2.0

# pdfium is not thread-safe; one document is rendered at a time in the process.
_PDFIUM_LOCK = threading.Lock()


@dataclass(frozen=True)
class _Item:
    """Something placed on a page: a text line, a table or a picture's text."""

    top: float
    kind: str  # "line", "table", "picture"
    text: str
    size: float = 0.0
    bottom: float = 0.0


def pdf_to_markdown(data: bytes, stem: str, reader: ImageReader, limits: Limits) -> Converted:
    """The whole PDF as Markdown; scanned pages and pictures are read by ``reader``."""
    import pdfplumber
    import pypdfium2 as pdfium

    if b"%%EOF" not in data[-2048:]:
        raise ConversionError(
            "the PDF is truncated (it has no end-of-file marker); download or export it again"
        )
    with _PDFIUM_LOCK:
        try:
            rendered = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as error:
            message = str(error).lower()
            if "password" in message:
                raise ConversionError(
                    "the PDF is encrypted with a password; save an unprotected copy and ingest that"
                ) from None
            raise ConversionError(f"the PDF is damaged and cannot be read ({error})") from None
        try:
            if len(rendered) > limits.max_pages:
                raise ConversionError(
                    f"the PDF has {len(rendered)} pages, over the {limits.max_pages}-page limit"
                )
            with pdfplumber.open(io.BytesIO(data)) as document:
                metadata_title = str((document.metadata or {}).get("Title") or "").strip()
                pages = [_page_items(page) for page in document.pages]
                body = _body_size([item for page in pages for item in page])
                read = 0
                for number, page in enumerate(document.pages):
                    extra, count = _read_images(
                        page, rendered[number], pages[number], reader, limits
                    )
                    pages[number] = sorted(pages[number] + extra, key=lambda i: i.top)
                    read += count
        except ConversionError:
            raise
        except Exception as error:  # pdfminer raises many unrelated types on damaged files
            raise ConversionError(
                f"the PDF is damaged and cannot be read ({type(error).__name__})"
            ) from None
        finally:
            rendered.close()
    levels = _heading_levels([item for page in pages for item in page], body)
    markdown = _markdown(pages, levels)
    if not markdown.strip():
        raise ConversionError(
            "no text could be read from the PDF (no text layer and nothing legible in its images)"
        )
    first_heading = next((item.text for page in pages for item in page if _level(item, levels)), "")
    title = metadata_title or first_heading or stem
    return Converted(title, markdown, DocumentType.PDF, images_read=read, pages=len(pages))


def _page_items(page: Any) -> list[_Item]:
    """Text lines (outside tables) and tables of one page, top to bottom."""
    tables = page.find_tables()
    boxes = [table.bbox for table in tables]

    def outside_tables(obj: dict[str, Any]) -> bool:
        if obj.get("object_type") != "char":
            return True
        x = (obj["x0"] + obj["x1"]) / 2
        y = (obj["top"] + obj["bottom"]) / 2
        return not any(b[0] <= x <= b[2] and b[1] <= y <= b[3] for b in boxes)

    items: list[_Item] = []
    for line in page.filter(outside_tables).extract_text_lines(strip=True, return_chars=True):
        text = " ".join(str(line["text"]).split())
        if not text:
            continue
        sizes = [round(float(c["size"]), 1) for c in line["chars"] if str(c["text"]).strip()]
        size = statistics.median(sizes) if sizes else 0.0
        items.append(_Item(float(line["top"]), "line", text, size, float(line["bottom"])))
    for table in tables:
        rows = [row for row in table.extract() if any(cell for cell in row)]
        if rows:
            items.append(_Item(float(table.bbox[1]), "table", _table_markdown(rows)))
    return sorted(items, key=lambda item: item.top)


def _read_images(
    page: Any, rendered: Any, items: list[_Item], reader: ImageReader, limits: Limits
) -> tuple[list[_Item], int]:
    """A scanned page read whole; otherwise each sizeable picture read from its region."""
    text_chars = sum(len(item.text) for item in items)
    if text_chars < limits.scan_text_chars:
        text = reader.read(_render(rendered, None))
        return ([_Item(0.0, "picture", text)] if text.strip() else []), 1
    extra: list[_Item] = []
    count = 0
    width, height = float(page.width), float(page.height)
    for image in page.images:
        x0, top = max(0.0, float(image["x0"])), max(0.0, float(image["top"]))
        x1, bottom = min(width, float(image["x1"])), min(height, float(image["bottom"]))
        if x1 - x0 < MIN_PICTURE_POINTS or bottom - top < MIN_PICTURE_POINTS:
            continue
        crop = (x0, height - bottom, width - x1, top)
        text = reader.read(_render(rendered, crop))
        count += 1
        if text.strip():
            extra.append(_Item(top, "picture", text))
    return extra, count


def _render(page: Any, crop: tuple[float, float, float, float] | None) -> bytes:
    """A page (or a region: left, bottom, right, top margins in points) as PNG bytes."""
    bitmap = page.render(scale=RENDER_SCALE, crop=crop or (0, 0, 0, 0))
    image = bitmap.to_pil()
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def _body_size(items: list[_Item]) -> float:
    """The font size most characters are set in."""
    weights: Counter[float] = Counter()
    for item in items:
        if item.kind == "line":
            weights[item.size] += len(item.text)
    return weights.most_common(1)[0][0] if weights else 0.0


def _heading_levels(items: list[_Item], body: float) -> dict[float, int]:
    """Each size clearly larger than the body, largest first, mapped to heading levels 1–6."""
    sizes = sorted(
        {
            item.size
            for item in items
            if item.kind == "line"
            and body
            and item.size >= body * HEADING_RATIO
            and len(item.text) <= MAX_HEADING_CHARS
        },
        reverse=True,
    )
    return {size: min(index + 1, 6) for index, size in enumerate(sizes)}


def _level(item: _Item, levels: dict[float, int]) -> int:
    if item.kind != "line" or len(item.text) > MAX_HEADING_CHARS:
        return 0
    return levels.get(item.size, 0)


def _markdown(pages: list[list[_Item]], levels: dict[float, int]) -> str:
    """Pages as Markdown: headings, paragraphs (lines joined until a gap), tables, pictures."""
    out: list[str] = []
    paragraph: list[str] = []
    last: _Item | None = None

    def flush() -> None:
        if paragraph:
            out.append(_join_lines(paragraph))
            paragraph.clear()

    for page in pages:
        last = None
        for item in page:
            level = _level(item, levels)
            if level:
                flush()
                if (
                    out
                    and out[-1].startswith("#" * level + " ")
                    and last is not None
                    and (last.kind == "line" and _level(last, levels) == level)
                ):
                    out[-1] += " " + item.text  # a heading wrapped over two lines
                else:
                    out.append("#" * level + " " + item.text)
            elif item.kind == "line":
                gap = item.top - last.bottom if last is not None and last.kind == "line" else 0.0
                if paragraph and (
                    gap > max(item.size, 1.0) * 0.9 or (last is not None and last.size != item.size)
                ):
                    flush()
                paragraph.append(item.text)
            else:
                flush()
                out.append(item.text.strip())
            last = item
        flush()
    return "\n\n".join(part for part in out if part.strip()) + "\n"


def _join_lines(lines: list[str]) -> str:
    """Lines of one paragraph as one, mending words hyphenated at a line end."""
    text = ""
    for line in lines:
        if text.endswith("-") and line[:1].islower():
            text = text[:-1] + line
        else:
            text = f"{text} {line}" if text else line
    return text


def _table_markdown(rows: list[list[Any]]) -> str:
    """A Markdown table; the first row is the header."""
    width = max(len(row) for row in rows)
    cells = [
        [" ".join(str(cell or "").split()).replace("|", "\\|") for cell in row]
        + [""] * (width - len(row))
        for row in rows
    ]
    lines = ["| " + " | ".join(cells[0]) + " |", "|" + "---|" * width]
    lines += ["| " + " | ".join(row) + " |" for row in cells[1:]]
    return "\n".join(lines)
