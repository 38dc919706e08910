"""PDF to Markdown with headings, tables, pages and the text of images, on a permissive licence:
pypdfium2 (Apache-2.0 / BSD-3) reads each character with its position, size and weight, and
renders scanned pages and picture regions for the image reader. :mod:`memoryd.kb.pdf.layout` turns
the lines into Markdown; :mod:`memoryd.kb.titles` picks the title.

Pages are read one at a time and closed: only their lines are kept, never a page's objects.
"""

from __future__ import annotations

import ctypes
import functools
import io
import statistics
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memoryd.kb.converted import ConversionError, Converted, DocumentType, Limits
from memoryd.kb.hygiene import clean_char, repair_unknown_glyphs
from memoryd.kb.images import ImageReader
from memoryd.kb.pdf.layout import layout_markdown
from memoryd.kb.pdf.pages import Line, OutlineEntry, Page, Span
from memoryd.kb.pdf.picture_reads import PictureReads
from memoryd.kb.sandbox import MAX_RENDER_SIDE
from memoryd.kb.titles import document_title

# Pictures smaller than this (points, either side) are logos and rules.
MIN_PICTURE_POINTS = 40.0
# A page without text or images is read by OCR only when it draws at least this many paths:
# text converted to outlines takes a path per glyph; a blank page's rules take a handful.
MIN_DRAWN_TEXT_PATHS = 50
# Render scale for reading: 2 × 72 dpi = 144 dpi is enough for OCR of body text.
RENDER_SCALE = 2.0
# Characters further apart than this many font sizes are in different cells or columns.
SPAN_GAP = 0.8
# A character this much lower than the line's first starts a new line (points).
LINE_DROP = 0.6

# pdfium is not thread-safe; one document is read at a time in the process.
_PDFIUM_LOCK = threading.Lock()


@dataclass(frozen=True)
class PdfText:
    """What reading a PDF yields before layout: its pages, bookmarks, metadata title and how
    many pictures were read."""

    pages: tuple[Page, ...]
    outline: tuple[OutlineEntry, ...]
    metadata_title: str
    images_read: int


def pdf_to_markdown(
    data: bytes,
    stem: str,
    reader: ImageReader,
    limits: Limits,
    on_page: Callable[[int], None] | None = None,
) -> Converted:
    """The whole PDF as Markdown with page marks; scanned pages and pictures are read by
    ``reader``; ``on_page`` hears how many pages have been read after each one. Untrusted bytes go
    through :func:`memoryd.kb.convert.convert`, which runs this in a bounded child."""
    read = read_pdf(data, reader, limits, on_page)
    pages = list(read.pages)
    laid = layout_markdown(pages, list(read.outline))
    markdown = repair_unknown_glyphs(laid.markdown)
    if not any(c.isalnum() for c in markdown.replace("<!-- page", "")):
        raise ConversionError(
            "no text could be read from the PDF (no text layer and nothing legible in its images)"
        )
    opening = [line.text for page in pages[:3] for line in page.lines]
    title = document_title(read.metadata_title, opening, laid.headings, stem)
    return Converted(
        title, markdown, DocumentType.PDF, images_read=read.images_read, pages=len(pages)
    )


def read_pdf(
    data: bytes,
    reader: ImageReader,
    limits: Limits,
    on_page: Callable[[int], None] | None = None,
) -> PdfText:
    """The PDF's pages as positioned lines (pictures and scanned pages read by ``reader``), or
    a :class:`ConversionError` naming why it cannot be read."""
    import pypdfium2 as pdfium

    if b"%%EOF" not in data[-2048:]:
        raise ConversionError(
            "the PDF is truncated (it has no end-of-file marker); download or export it again"
        )
    with _PDFIUM_LOCK:
        try:
            document = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as error:
            message = str(error).lower()
            if "password" in message:
                raise ConversionError(
                    "the PDF is encrypted with a password; save an unprotected copy and ingest that"
                ) from None
            raise ConversionError(f"the PDF is damaged and cannot be read ({error})") from None
        try:
            if len(document) > limits.max_pages:
                raise ConversionError(
                    f"the PDF has {len(document)} pages, over the {limits.max_pages}-page limit"
                )
            metadata_title = str(document.get_metadata_value("Title") or "").strip()
            outline = _outline(document)
            texts: list[tuple[tuple[Line, ...], float]] = []
            with PictureReads(reader) as reads:
                for index in range(len(document)):
                    page = document[index]
                    try:
                        height = float(page.get_height())
                        lines = _page_lines(page)
                        _read_images(page, index + 1, lines, reads, limits)
                    finally:
                        page.close()
                    texts.append((tuple(lines), height))
                    if on_page is not None:
                        on_page(index + 1)
                pictures = reads.pictures()
                read = reads.count
            pages = [
                Page(number, lines, pictures.get(number, ()), height)
                for number, (lines, height) in enumerate(texts, start=1)
            ]
        except ConversionError:
            raise
        except Exception as error:  # pdfium raises on damaged objects in many ways
            raise ConversionError(
                f"the PDF is damaged and cannot be read ({type(error).__name__})"
            ) from None
        finally:
            document.close()
    return PdfText(tuple(pages), tuple(outline), metadata_title, read)


def _outline(document: Any) -> list[OutlineEntry]:
    """The bookmarks that point at a page."""
    entries: list[OutlineEntry] = []
    try:
        for bookmark in document.get_toc():
            destination = bookmark.get_dest()
            index = destination.get_index() if destination is not None else None
            title = (bookmark.get_title() or "").strip()
            if index is not None and title:
                entries.append(OutlineEntry(title, index + 1, bookmark.level + 1))
    except Exception:  # a broken outline is no reason to refuse the document
        return []
    return entries


# char, x0, x1, y0, y1, size as drawn, weight, size as set
_Glyph = tuple[str, float, float, float, float, float, float, float]


def _page_lines(page: Any) -> list[Line]:
    """The page's text lines in reading (content) order, each cut into spans at wide gaps."""
    import pypdfium2.raw as pdfium_c

    get_unicode, get_box = pdfium_c.FPDFText_GetUnicode, pdfium_c.FPDFText_GetCharBox
    text_object = _text_object_function()
    textpage = page.get_textpage()
    try:
        height = float(page.get_height())
        count = pdfium_c.FPDFText_CountChars(textpage)
        left, right = ctypes.c_double(), ctypes.c_double()
        bottom, top = ctypes.c_double(), ctypes.c_double()
        lines: list[Line] = []
        glyphs: list[_Glyph] = []
        # Every character of a text object shares its font, size and weight: ask once per
        # object, not once per character (two ctypes calls a character were a third of the time).
        styles: dict[int, tuple[float, float, float]] = {}
        for index in range(count):
            code = get_unicode(textpage, index)
            char = chr(code) if code else "\x00"
            if char in "\r\n":
                _close_line(glyphs, height, lines)
                continue
            # A character pdfium generated (a space or line break it inferred) has no text
            # object: the same test as FPDFText_IsGenerated, one call fewer.
            owner = text_object(textpage, index)
            if char.isspace() or not owner:
                if glyphs and glyphs[-1][0] != " ":
                    last = glyphs[-1]
                    glyphs.append((" ", last[2], last[2], *last[3:]))
                continue
            cleaned = _clean(char)
            if not cleaned:
                continue
            get_box(textpage, index, left, right, bottom, top)
            style = styles.get(owner)
            if style is None:
                style = styles[owner] = _char_style(textpage, index)
            size = style[0] * style[2]
            if glyphs:
                last = glyphs[-1]
                if abs(bottom.value - last[3]) > LINE_DROP * max(size, 1.0) and (
                    left.value < last[1]
                ):
                    # pdfium put no break between two lines: a new line starts here.
                    _close_line(glyphs, height, lines)
            glyphs.append(
                (
                    cleaned,
                    left.value,
                    right.value,
                    bottom.value,
                    top.value,
                    size,
                    style[1],
                    style[0],
                )
            )
        _close_line(glyphs, height, lines)
    finally:
        textpage.close()
    # Content order, not top-to-bottom: it keeps the columns of a two-column page apart.
    return _same_baseline_joined(lines)


@functools.cache
def _text_object_function() -> Any:
    """FPDFText_GetTextObject answering the object's address (an int, usable as a key)."""
    import pypdfium2.raw as pdfium_c

    prototype = ctypes.CFUNCTYPE(ctypes.c_void_p, pdfium_c.FPDF_TEXTPAGE, ctypes.c_int)
    return prototype(ctypes.cast(pdfium_c.FPDFText_GetTextObject, ctypes.c_void_p).value or 0)


@functools.lru_cache(maxsize=8192)
def _clean(char: str) -> str:
    """:func:`clean_char`, remembered: a document repeats a few hundred distinct characters."""
    return clean_char(char)


def _char_style(textpage: Any, index: int) -> tuple[float, float, float]:
    """The font size as set, the weight and the scale the character's matrix draws the size
    at, of the character at ``index``."""
    import pypdfium2.raw as pdfium_c

    size = float(pdfium_c.FPDFText_GetFontSize(textpage, index))
    # A filing may set its text at 384 points and scale it by 0.021 (drawn at 8): the gaps
    # between a table's columns and the drop to the next line are measured against the size
    # as drawn. (The lines keep the size as set: the layout compares sizes with each other.)
    matrix = pdfium_c.FS_MATRIX()
    scale = 1.0
    if pdfium_c.FPDFText_GetMatrix(textpage, index, matrix):
        scale = abs(matrix.a * matrix.d - matrix.b * matrix.c) ** 0.5 or 1.0
    weight = float(pdfium_c.FPDFText_GetFontWeight(textpage, index))
    if weight <= 0:  # the standard fonts give none: the font's name says it
        weight = _named_weight(textpage, index)
    return size, weight, scale


_HEAVY = (b"bold", b"black", b"heavy", b"semibold", b"demi")


def _named_weight(textpage: Any, index: int) -> float:
    """700 for a font named bold (or black, heavy, semibold), else 400."""
    import pypdfium2.raw as pdfium_c

    name, flags = ctypes.create_string_buffer(128), ctypes.c_int()
    size = pdfium_c.FPDFText_GetFontInfo(textpage, index, name, len(name), flags)
    font = bytes(name.raw[: max(0, min(size, len(name)) - 1)]).lower()
    return 700.0 if any(word in font for word in _HEAVY) else 400.0


def _same_baseline_joined(lines: list[Line]) -> list[Line]:
    """Consecutive pieces pdfium reports as lines but that sit on one baseline, each to the
    right of the one before ("Cash" then "$" then "8,555", drawn as separate text objects),
    joined into one line of spans."""
    joined: list[Line] = []
    for line in lines:
        if joined:
            last = joined[-1]
            same_row = abs(line.top - last.top) <= 0.3 * max(line.size, last.size, 1.0)
            if same_row and line.spans and last.spans and line.spans[0].x0 >= last.spans[-1].x1:
                joined[-1] = Line(last.top, last.spans + line.spans, last.size, last.weight)
                continue
        joined.append(line)
    return joined


def _close_line(glyphs: list[_Glyph], height: float, lines: list[Line]) -> None:
    """Turn the gathered glyphs into a line (spans at wide gaps) and start afresh."""
    marks = [g for g in glyphs if g[0] != " "]
    if not marks:
        glyphs.clear()
        return
    size = statistics.median(g[5] for g in marks)
    set_size = statistics.median(g[7] for g in marks)
    weights: Counter[float] = Counter(g[6] for g in marks if g[0].isalpha())
    weight = weights.most_common(1)[0][0] if weights else 0.0
    spans: list[Span] = []
    text = ""
    x0 = x1 = marks[0][1]
    last_right: float | None = None
    for char, left, right, *_ in glyphs:
        if char == " ":
            if text:
                text += " "
            continue
        if last_right is not None and left - last_right > SPAN_GAP * max(size, 1.0):
            if text.strip():
                spans.append(Span(" ".join(text.split()), x0, x1))
            text = ""
        if not text.strip():
            x0 = left
        text += char
        x1 = right
        last_right = right
    if text.strip():
        spans.append(Span(" ".join(text.split()), x0, x1))
    line_top = height - max(g[4] for g in marks)
    lines.append(Line(line_top, tuple(spans), round(set_size, 1), weight))
    glyphs.clear()


def _read_images(
    page: Any, number: int, lines: list[Line], reads: PictureReads, limits: Limits
) -> None:
    """A scanned page read whole; otherwise each sizeable picture read from its region."""
    text_chars = sum(len(line.text) for line in lines)
    images, paths = _drawn_objects(page)
    if text_chars < limits.scan_text_chars:
        if images or paths >= MIN_DRAWN_TEXT_PATHS:
            reads.submit(number, 0.0, _render(page, None))
        # else nothing on the page an image reader could read: a blank page with its number
        # (OCR of a full page costs seconds).
        return
    width, height = float(page.get_width()), float(page.get_height())
    for x0, bottom, x1, top in images:
        x0, x1 = max(0.0, x0), min(width, x1)
        bottom, top = max(0.0, bottom), min(height, top)
        if x1 - x0 < MIN_PICTURE_POINTS or top - bottom < MIN_PICTURE_POINTS:
            continue
        reads.submit(number, height - top, _render(page, (x0, bottom, width - x1, height - top)))


def _drawn_objects(page: Any) -> tuple[list[tuple[float, float, float, float]], int]:
    """Left, bottom, right, top of the page's images (and of those one form deep) in content
    order, and how many paths it draws. Raw pdfium calls: a filing page holds thousands of
    text and path objects, and wrapping each in a Python object only to skip it cost a third
    of the conversion."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as pdfium_c

    left, bottom = ctypes.c_float(), ctypes.c_float()
    right, top = ctypes.c_float(), ctypes.c_float()
    images: list[tuple[float, float, float, float]] = []
    paths = 0

    def visit(objects: list[Any], inside_form: bool) -> None:
        nonlocal paths
        for obj in objects:
            kind = pdfium_c.FPDFPageObj_GetType(obj)
            if kind == pdfium_c.FPDF_PAGEOBJ_IMAGE:
                if not pdfium_c.FPDFPageObj_GetBounds(obj, left, bottom, right, top):
                    raise pdfium.PdfiumError("Failed to locate pageobject.")
                images.append((left.value, bottom.value, right.value, top.value))
            elif kind == pdfium_c.FPDF_PAGEOBJ_PATH:
                paths += 1
            elif kind == pdfium_c.FPDF_PAGEOBJ_FORM and not inside_form:
                count = pdfium_c.FPDFFormObj_CountObjects(obj)
                visit([pdfium_c.FPDFFormObj_GetObject(obj, i) for i in range(count)], True)

    count = pdfium_c.FPDFPage_CountObjects(page.raw)
    visit([pdfium_c.FPDFPage_GetObject(page.raw, i) for i in range(count)], False)
    return images, paths


def _render(page: Any, crop: tuple[float, float, float, float] | None) -> bytes:
    """A page (or a region: left, bottom, right, top margins in points) as PNG bytes, at most
    MAX_RENDER_SIDE pixels a side: a page that claims to be metres wide is not drawn at full
    size (the reader would scale it down anyway)."""
    left, bottom, right, top = crop or (0.0, 0.0, 0.0, 0.0)
    width = float(page.get_width()) - left - right
    height = float(page.get_height()) - bottom - top
    # Two pixels short of the bound: pdfium rounds the bitmap's sides up.
    scale = min(RENDER_SCALE, (MAX_RENDER_SIDE - 2) / max(width, height, 1.0))
    bitmap = page.render(scale=scale, crop=crop or (0, 0, 0, 0))
    image = bitmap.to_pil()
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()
