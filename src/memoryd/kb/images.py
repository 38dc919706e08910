"""Images become text: a caption from the vision-capable ``caption`` LLM route when one is
configured, else local OCR (rapidocr, models inside the wheel, no network)."""

from __future__ import annotations

import ctypes
import io
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from memoryd.providers.llm import Gateway, LLMConfigError, LLMUnavailableError, Message

log = logging.getLogger(__name__)

# Images smaller than this on either side are icons, bullets or rules: nothing to read.
MIN_IMAGE_SIDE = 32
# Large images are scaled down first: OCR time grows with pixels, and text stays legible.
MAX_IMAGE_SIDE = 2400
# A picture whose header claims more pixels than this is not decoded (a JPEG is decoded scaled
# down first): decoding takes 4 bytes a pixel in the server's own process, whatever the file's
# size. 40 million holds an 8K screenshot (33 million) and most camera photos.
MAX_DECODE_PIXELS = 40_000_000
# Text detection enlarges a picture until its short side is this long (rapidocr's default, 736,
# made a 486×176 chart 2,048×736 and cost seconds). Measured on the six charts in three SEC
# filings: 480 reads them a third faster and as well or better (a rotated axis title kept, a
# chart subtitle read that 736 garbled). Pages rendered for OCR are larger and never enlarged.
DETECTION_SHORT_SIDE = 480
# One text detection call's input holds at most this many pixels. Its working memory grows with
# them and nothing else bounds it: a letter page rendered at 144 dpi (1,224×1,584) took 490 MB
# in one call, a 2,400-pixel picture 575–760 MB, on top of the embedder and the models already
# loaded (bench/README.md). A picture that would hold more is read in horizontal bands, each
# at its own resolution (nothing is scaled down, so small print is read as before), which
# overlap by BAND_OVERLAP rows; each line is kept from the one band that owns its middle.
# Pictures within the cap (the filings' charts, enlarged to DETECTION_SHORT_SIDE) are read in
# one call, as before.
DETECTION_MAX_PIXELS = 960 * 960
# Rows two neighbouring bands share: a line up to this tall is read whole by one of them.
BAND_OVERLAP = 96
# OCR lines read with less confidence than this are noise (textures, photos).
MIN_OCR_SCORE = 0.6

CAPTION_PROMPT = (
    "Transcribe all legible text in this image exactly, in reading order. Then, on a new line "
    "starting with 'Image:', describe in one or two sentences what the image shows. Output "
    "only those two parts."
)


class ImageReader(Protocol):
    """Reads an image (PNG or JPEG bytes) as text; empty when there is nothing to read."""

    @property
    def name(self) -> str:
        """Which reader, for the document's record."""
        ...

    def read(self, image: bytes) -> str:
        """The text in (or a caption of) the image."""
        ...


class LocalOCR:
    """rapidocr on onnxruntime; the engine loads once, on first use, and is shared."""

    name = "ocr:rapidocr"
    _engine: Any = None
    _lock = threading.Lock()

    def read(self, image: bytes) -> str:
        """Recognised lines, top to bottom, joined with spaces within a line's row."""
        picture = _opened(image)
        if picture is None:
            return ""
        width, height = picture.size
        lines: list[tuple[str, Any]] = []
        with LocalOCR._lock:
            if LocalOCR._engine is None:
                LocalOCR._engine = _load_rapidocr()
            engine = LocalOCR._engine
            adjustable = hasattr(getattr(engine, "text_det", None), "limit_side_len")
            whole = detection_limit(width, height)
            if whole is not None:
                lines = _read_lines(engine, picture, whole if adjustable else None)
            elif not adjustable:
                # A rapidocr whose detector cannot be told its input size: the picture itself
                # is scaled into the cap (recognition then reads it smaller too).
                lines = _read_lines(engine, _scaled(picture, DETECTION_MAX_PIXELS), None)
            else:
                for band in detection_bands(width, height):
                    crop = picture.crop((0, band.top, width, band.bottom))
                    native = ("max", max(width, band.bottom - band.top))
                    for text, box in _read_lines(engine, crop, native):
                        if box is None:
                            continue
                        placed = [(float(point[0]), float(point[1]) + band.top) for point in box]
                        ys = [y for _, y in placed]
                        if band.owns((min(ys) + max(ys)) / 2):
                            lines.append((text, placed))
        return _reading_order(lines)


class VisionCaption:
    """The ``caption`` LLM route; falls back to OCR when the route fails."""

    def __init__(self, gateway: Gateway, fallback: ImageReader) -> None:
        self._gateway = gateway
        self._fallback = fallback

    @property
    def name(self) -> str:
        """The route's model."""
        return f"caption:{self._gateway.route('caption').model}"

    def read(self, image: bytes) -> str:
        """The model's transcription and caption, or OCR when the model cannot answer."""
        prepared = _prepared_png(image)
        if prepared is None:
            return ""
        try:
            answer = self._gateway.complete(
                "caption",
                "You read images for a document index.",
                [Message("user", CAPTION_PROMPT, images=(prepared,))],
                json_mode=False,
            )
        except (LLMUnavailableError, LLMConfigError) as error:
            log.warning("caption route failed, reading the image with local OCR: %s", error)
            return self._fallback.read(image)
        return answer.strip()


class TimedReader:
    """An image reader that adds the seconds each read takes to ``spent`` (the sandbox keeps
    that time off the child's clock; :class:`BudgetedReader` stops at a budget of it)."""

    def __init__(self, reader: ImageReader, clock: Callable[[], float] = time.monotonic) -> None:
        self._reader = reader
        self._clock = clock
        self.spent = 0.0

    @property
    def name(self) -> str:
        """The reader it times."""
        return self._reader.name

    def read(self, image: bytes) -> str:
        """The picture's text, its reading time added to ``spent``."""
        started = self._clock()
        try:
            return self._reader.read(image)
        finally:
            self.spent += self._clock() - started


class BudgetedReader(TimedReader):
    """One document's image reader with a time budget: once reading its pictures has taken
    ``seconds``, the rest are left unread (counted in ``skipped``), so a PDF of many small
    pictures costs at most the budget, not minutes. ``clock`` is passed in for tests."""

    def __init__(
        self, reader: ImageReader, seconds: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__(reader, clock)
        self.seconds = seconds
        self.skipped = 0

    def read(self, image: bytes) -> str:
        """The picture's text, or '' once the budget is spent."""
        if self.spent >= self.seconds:
            self.skipped += 1
            return ""
        return super().read(image)


def release_freed_heap() -> None:
    """Give the heap freed by a document's picture reads back to the system (glibc's
    ``malloc_trim``; nothing elsewhere). Each document's pictures are read on a thread of its
    own, and glibc keeps what such a thread freed in that thread's arena: one page's OCR left
    240 MB resident that a trim returned, and over a library of filings the leftovers of
    earlier documents sat beside the next one's embedding."""
    global _trim
    if _trim is None:
        try:
            _trim = ctypes.CDLL(None).malloc_trim
        except (OSError, AttributeError):
            _trim = False
    if _trim:
        _trim(0)


_trim: Any = None


def image_reader(gateway: Gateway) -> ImageReader:
    """The caption route when the owner chose its model (``llm.caption.model``), else local
    OCR. A text-only model set for extraction (``llm.model``) is never sent pictures: it would
    answer with invented text, written into the document."""
    ocr = LocalOCR()
    route = gateway.routes.get("caption")
    if not gateway.configured("caption") or (route is not None and route.inherited_model):
        return ocr
    return VisionCaption(gateway, ocr)


def _load_rapidocr() -> Any:
    from rapidocr import RapidOCR

    # rapidocr logs every model path at INFO on load; keep the owner's terminal quiet.
    logging.getLogger("RapidOCR").setLevel(logging.WARNING)
    return RapidOCR(
        params={"Det.limit_side_len": DETECTION_SHORT_SIDE, "Global.log_level": "warning"}
    )


@dataclass(frozen=True)
class Band:
    """Rows ``top``–``bottom`` of a picture, detected in one call; the lines whose middle lies
    in ``own_top``–``own_bottom`` are this band's (each line is read whole by exactly one
    band when it is at most BAND_OVERLAP pixels tall)."""

    top: int
    bottom: int
    own_top: int
    own_bottom: int

    def owns(self, middle: float) -> bool:
        """Whether a line with this vertical middle is read from this band."""
        return self.own_top <= middle < self.own_bottom


def detection_limit(width: int, height: int) -> tuple[str, int] | None:
    """rapidocr's detection resize for a ``width`` × ``height`` picture read in one call, as
    its (limit type, side): a short side under DETECTION_SHORT_SIDE enlarged to it, as always;
    None when that (or the picture as it is) would hold more than DETECTION_MAX_PIXELS."""
    short, long = max(1, min(width, height)), max(1, width, height)
    enlarge = max(1.0, DETECTION_SHORT_SIDE / short)
    if short * long * enlarge * enlarge > DETECTION_MAX_PIXELS:
        return None
    return ("min", DETECTION_SHORT_SIDE)


def detection_bands(width: int, height: int) -> list[Band]:
    """Horizontal bands of the picture, each at most DETECTION_MAX_PIXELS at its own size,
    overlapping by BAND_OVERLAP rows, that together own every row once."""
    rows = max(2 * BAND_OVERLAP, DETECTION_MAX_PIXELS // max(1, width))
    stride = rows - BAND_OVERLAP
    bands: list[Band] = []
    top = 0
    while True:
        bottom = min(height, top + rows)
        last = bottom >= height
        own_top = 0 if not bands else top + BAND_OVERLAP // 2
        own_bottom = height if last else top + stride + BAND_OVERLAP // 2
        bands.append(Band(top, bottom, own_top, own_bottom))
        if last:
            return bands
        top += stride


def _read_lines(engine: Any, picture: Any, limit: tuple[str, int] | None) -> list[tuple[str, Any]]:
    """The lines the engine reads in ``picture`` with detection resized by ``limit`` (rapidocr
    reads its detector's setting on every call), as (text, box), confident ones only."""
    if limit is not None:
        detector = engine.text_det
        detector.limit_type, detector.limit_side_len = limit
    result = engine(_png(picture))
    texts = getattr(result, "txts", None) or ()
    scores = getattr(result, "scores", None) or ()
    boxes = getattr(result, "boxes", None)
    return [
        (str(text), box)
        for text, score, box in zip(
            texts, scores, boxes if boxes is not None else [None] * len(texts), strict=False
        )
        if score >= MIN_OCR_SCORE and str(text).strip()
    ]


def _prepared_png(image: bytes) -> bytes | None:
    """The image as RGB PNG, scaled into bounds; None for a tiny or unreadable image."""
    picture = _opened(image)
    return _png(picture) if picture is not None else None


def _png(picture: Any) -> bytes:
    out = io.BytesIO()
    picture.save(out, format="PNG")
    return out.getvalue()


def _scaled(picture: Any, pixels: int) -> Any:
    """The picture shrunk to hold at most ``pixels``."""
    width, height = picture.size
    if width * height <= pixels:
        return picture
    scale = math.sqrt(pixels / (width * height))
    return picture.resize((max(1, int(width * scale)), max(1, int(height * scale))))


def oversized(image: bytes) -> str | None:
    """Why ``image`` is not decoded (its header claims more pixels than memoryd decodes in
    its own process), or None. A JPEG is decoded scaled down, so only other formats are."""
    from PIL import Image, UnidentifiedImageError

    limit = f"more than the {MAX_DECODE_PIXELS // 1_000_000} million memoryd decodes"
    try:
        with Image.open(io.BytesIO(image)) as opened:
            width, height = opened.size
            if opened.format == "JPEG" or width * height <= MAX_DECODE_PIXELS:
                return None
    except Image.DecompressionBombError:  # Pillow's own refusal: twice its limit, far over ours
        return f"the image claims {limit}; scale it down and try again"
    except (UnidentifiedImageError, OSError, ValueError):
        return None
    return f"the image is {width}×{height} pixels, {limit}; scale it down and try again"


def _opened(image: bytes) -> Any:
    """The decoded RGB picture, at most MAX_IMAGE_SIDE a side; None for a tiny, unreadable or
    oversized image (decoding is in the server's process: its memory is what the header
    claims, so a 600 KB PNG claiming 13,000 pixels a side needed 1.5 GiB)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(image)) as opened:
            width, height = opened.size
            if width * height > MAX_DECODE_PIXELS and opened.format == "JPEG":
                opened.draft("RGB", (MAX_IMAGE_SIDE, MAX_IMAGE_SIDE))  # decoded scaled down
                width, height = opened.size
            if width * height > MAX_DECODE_PIXELS:
                return None
            opened.load()
            picture = opened.convert("RGB")
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError):
        return None
    if min(picture.size) < MIN_IMAGE_SIDE:
        return None
    if max(picture.size) > MAX_IMAGE_SIDE:
        picture.thumbnail((MAX_IMAGE_SIDE, MAX_IMAGE_SIDE))
    return picture


def _reading_order(lines: list[tuple[str, Any]]) -> str:
    """OCR lines sorted top to bottom, left to right; boxes on one row share a line."""
    if not lines:
        return ""
    placed = []
    for text, box in lines:
        if box is None:
            placed.append((0.0, 0.0, 0.0, str(text)))
            continue
        ys = [float(point[1]) for point in box]
        xs = [float(point[0]) for point in box]
        placed.append((min(ys), max(ys) - min(ys), min(xs), str(text)))
    placed.sort(key=lambda item: (item[0], item[2]))
    rows: list[list[tuple[float, float, float, str]]] = []
    for item in placed:
        if rows and abs(item[0] - rows[-1][0][0]) < max(item[1], rows[-1][0][1]) * 0.5:
            rows[-1].append(item)
        else:
            rows.append([item])
    return "\n".join(" ".join(t for *_, t in sorted(row, key=lambda i: i[2])) for row in rows)
