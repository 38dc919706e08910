"""An ingest's memory stays bounded whatever the document: the two native working sets that
set its peak (OCR text detection over a picture, the embedder's arena over a batch of windows)
are held to fixed sizes. Each real measurement runs in a fresh interpreter, so its peak
resident set (``VmHWM``) belongs to that one call."""

from __future__ import annotations

import io
import itertools
import json
import subprocess
import sys
import textwrap

import pytest

from memoryd.kb.images import (
    BAND_OVERLAP,
    DETECTION_MAX_PIXELS,
    DETECTION_SHORT_SIDE,
    LocalOCR,
    detection_bands,
    detection_limit,
)

MB = 1024 * 1024


def test_pictures_within_the_cap_are_detected_in_one_call_as_before() -> None:
    # A filing's chart: enlarged so that its short side is DETECTION_SHORT_SIDE, as before.
    assert detection_limit(486, 176) == ("min", DETECTION_SHORT_SIDE)
    assert detection_limit(700, 600) == ("min", DETECTION_SHORT_SIDE)


def test_larger_pictures_are_read_in_bands_within_the_cap() -> None:
    for width, height in [(1224, 1584), (2400, 2400), (2400, 300), (40, 2400), (960, 961)]:
        assert detection_limit(width, height) is None, (width, height)
        bands = detection_bands(width, height)
        for band in bands:
            assert width * (band.bottom - band.top) <= DETECTION_MAX_PIXELS, (width, band)
        # Every row is owned by exactly one band, and a band owns only rows it sees with
        # BAND_OVERLAP / 2 of margin (the first and last band reach the picture's edges).
        assert bands[0].own_top == 0 and bands[-1].own_bottom == height
        for before, after in itertools.pairwise(bands):
            assert before.own_bottom == after.own_top
            assert after.top + BAND_OVERLAP == before.bottom
            assert before.own_bottom <= before.bottom - BAND_OVERLAP // 2
            assert after.own_top >= after.top + BAND_OVERLAP // 2


class FakeEngine:
    """rapidocr's shape: a detector whose resize is read per call, and lines with boxes."""

    def __init__(self, rows: list[tuple[int, int]]) -> None:
        self.text_det = type("Detector", (), {"limit_type": "min", "limit_side_len": 480})()
        self.rows = rows  # (top, bottom) of text lines in the whole picture
        self.calls: list[tuple[int, int, str, int]] = []
        self.offset = 0  # where the band being read starts in the whole picture

    def __call__(self, png: bytes) -> object:
        from PIL import Image

        with Image.open(io.BytesIO(png)) as picture:
            width, height = picture.size
        detector = self.text_det
        self.calls.append((width, height, detector.limit_type, detector.limit_side_len))
        offset = self.offset
        self.offset += height - BAND_OVERLAP
        texts, boxes = [], []
        for number, (top, bottom) in enumerate(self.rows):
            top, bottom = top - offset, bottom - offset
            if top >= 0 and bottom <= height:  # a line wholly inside this picture
                texts.append(f"line {number}")
                boxes.append([[0, top], [50, top], [50, bottom], [0, bottom]])
        return type("Result", (), {"txts": texts, "scores": [0.9] * len(texts), "boxes": boxes})


def test_a_large_picture_reads_every_line_once_in_bands(monkeypatch: pytest.MonkeyPatch) -> None:
    from PIL import Image

    rows = [(top, top + 30) for top in range(10, 2350, 37)]
    engine = FakeEngine(rows)
    monkeypatch.setattr(LocalOCR, "_engine", engine)
    out = io.BytesIO()
    Image.new("RGB", (2400, 2400), "white").save(out, format="PNG")

    text = LocalOCR().read(out.getvalue())

    assert text.split("\n") == [f"line {n}" for n in range(len(rows))]
    assert len(engine.calls) > 1
    for width, height, kind, side in engine.calls:
        assert width * height <= DETECTION_MAX_PIXELS
        assert (kind, side) == ("max", max(width, height))  # at its own size, never shrunk


def _peak_growth(code: str) -> dict[str, float]:
    """Run ``code`` in a fresh interpreter; it prints JSON with what it measured."""
    preamble = textwrap.dedent(
        """
        import json

        def rss():
            with open("/proc/self/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) * 1024

        def hwm():
            # VmHWM is this interpreter's own peak. ru_maxrss is not: Linux carries the peak
            # of the process that started it across exec (a large test worker's, here).
            with open("/proc/self/status") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) * 1024
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", preamble + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_reading_a_large_picture_holds_detection_to_its_cap() -> None:
    # A 2,400-pixel picture full of small text lines took 760 MB above the loaded engine when
    # detection ran on all of it; read in bands it takes about 245 MB, and reads as much.
    measured = _peak_growth(
        """
        import io
        from PIL import Image, ImageDraw
        from memoryd.kb.images import LocalOCR

        def picture(side):
            image = Image.new("RGB", (side, side), "white")
            draw = ImageDraw.Draw(image)
            for row in range(40, side - 40, 60):
                draw.text((40, row), "Net sales 2022 $ 394,328 and 2021 $ 365,817", fill="black")
            out = io.BytesIO()
            image.save(out, format="PNG")
            return out.getvalue()

        ocr = LocalOCR()
        ocr.read(picture(200))
        before = rss()
        text = ocr.read(picture(2400))
        print(json.dumps({"growth": hwm() - before, "read": len(text)}))
        """
    )
    assert measured["read"] > 1500  # 1,676 characters read in bands, 1,678 in one call
    assert measured["growth"] < 400 * MB, measured


def test_embedding_full_windows_keeps_the_arena_small() -> None:
    # Eight full windows a model call grew onnxruntime's arena (kept for the life of the
    # process) by 145 MB here; two a call by 69 MB.
    measured = _peak_growth(
        """
        from memoryd.providers.embedder import LocalMiniLM

        model = LocalMiniLM()
        model.embed(["warm the model up"])
        before = rss()
        text = " ".join(f"item{i} revenue {i * 7}" for i in range(200))
        vectors = model.embed([text] * 3)
        print(json.dumps({"growth": hwm() - before, "rows": len(vectors)}))
        """
    )
    assert measured["rows"] == 3
    assert measured["growth"] < 110 * MB, measured


def test_the_heap_of_a_documents_picture_reads_is_given_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import time

    from PIL import Image

    import memoryd.kb.convert as convert_module

    released: list[int] = []
    monkeypatch.setattr(convert_module, "release_freed_heap", lambda: released.append(1))

    class Reader:
        name = "fake"

        def read(self, image: bytes) -> str:
            time.sleep(0.001)
            return "Net sales 394,328"

    out = io.BytesIO()
    Image.new("RGB", (200, 100), "white").save(out, format="PNG")
    convert_module.convert(b"# Notes\n\nNo pictures here.\n", "notes.md", Reader())
    assert released == []
    convert_module.convert(out.getvalue(), "chart.png", Reader())
    assert released == [1]
