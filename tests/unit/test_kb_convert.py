"""Knowledge-base intake: type detection, text/Markdown/HTML conversion and URL checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd.kb.convert import (
    SUPPORTED,
    ConversionError,
    DocumentType,
    Limits,
    convert,
    detect_type,
)
from memoryd.kb.fetch import check_url, is_url
from tests.kb_corpus import AD_SENTENCE, HTML_KEY, NAV_WORDS, Sample, write_corpus

PDF_BYTES = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< >>\nendobj\n"
PNG_BYTES = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
JPEG_BYTES = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00"


class StubReader:
    """An image reader that must never be asked: these inputs hold no images."""

    name = "stub"

    def __init__(self) -> None:
        self.calls = 0

    def read(self, image: bytes) -> str:
        self.calls += 1
        return ""


def convert_text(
    data: bytes, name: str, limits: Limits | None = None
) -> tuple[str, str, DocumentType]:
    """(title, Markdown, type) of a document that holds no images."""
    reader = StubReader()
    converted = convert(data, name, reader, limits=limits)
    assert reader.calls == 0
    return converted.title, converted.markdown, converted.document_type


@pytest.fixture(scope="module")
def html_sample(tmp_path_factory: pytest.TempPathFactory) -> Sample:
    return write_corpus(tmp_path_factory.mktemp("kb_corpus"))["html"]


# --- detection --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "data", "expected"),
    [
        ("report.txt", PDF_BYTES, DocumentType.PDF),
        ("report.md", PDF_BYTES, DocumentType.PDF),
        ("scan", PDF_BYTES, DocumentType.PDF),
        ("photo.md", PNG_BYTES, DocumentType.IMAGE),
        ("photo.html", JPEG_BYTES, DocumentType.IMAGE),
    ],
)
def test_magic_bytes_beat_the_extension(name: str, data: bytes, expected: DocumentType) -> None:
    assert detect_type(name, data) is expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("notes.md", DocumentType.MARKDOWN),
        ("notes.markdown", DocumentType.MARKDOWN),
        ("notes.txt", DocumentType.TEXT),
        ("page.html", DocumentType.HTML),
        ("PAGE.HTM", DocumentType.HTML),
        ("deck.pptx", DocumentType.PPTX),
        ("archive/2024/plan.pdf", DocumentType.PDF),
    ],
)
def test_without_magic_bytes_the_extension_decides(name: str, expected: DocumentType) -> None:
    assert detect_type(name, b"plain words") is expected


def test_a_declared_content_type_beats_the_extension_except_plain_text() -> None:
    assert detect_type("page", b"<p>hi</p>", "text/html; charset=utf-8") is DocumentType.HTML
    assert detect_type("notes.txt", b"# hi", "text/markdown") is DocumentType.MARKDOWN
    # Servers call everything text/plain; a .md name is the better witness.
    assert detect_type("notes.md", b"# hi", "text/plain") is DocumentType.MARKDOWN


def test_a_nameless_file_is_told_apart_by_its_content() -> None:
    assert detect_type("page", b"  <!DOCTYPE html><html></html>") is DocumentType.HTML
    assert detect_type("page", b"<html><body>x</body></html>") is DocumentType.HTML
    assert detect_type("README", "plain words, é".encode()) is DocumentType.TEXT
    assert detect_type("blob", b"x", "text/plain") is DocumentType.TEXT


def test_an_unknown_extension_is_refused_naming_it_and_the_supported_types() -> None:
    with pytest.raises(ConversionError) as error:
        detect_type("drawing.xyz", b"plain words")
    message = str(error.value)
    assert ".xyz" in message
    assert SUPPORTED in message
    for kind in ("PDF", "DOCX", "HTML", "Markdown", "plain text"):
        assert kind in message


def test_binary_without_an_extension_is_refused() -> None:
    with pytest.raises(ConversionError, match="no extension"):
        detect_type("blob", b"\x00\x01\x02\xff")
    with pytest.raises(ConversionError, match="no extension"):
        detect_type("blob", b"\xff\xfe\xfa not utf-8")


def test_convert_refuses_an_unknown_extension_too() -> None:
    with pytest.raises(ConversionError, match=r"\.cad"):
        convert(b"words", "model.cad", StubReader())


# --- refusals ---------------------------------------------------------------------------------


def test_a_text_file_holding_nul_bytes_is_refused_as_binary() -> None:
    with pytest.raises(ConversionError, match="binary"):
        convert(b"looks like text\x00\x01\x02", "notes.txt", StubReader())


def test_an_empty_file_is_refused() -> None:
    with pytest.raises(ConversionError, match="empty"):
        convert(b"", "notes.txt", StubReader())


def test_a_file_over_the_size_limit_is_refused_naming_the_limit() -> None:
    limits = Limits(max_bytes=2_000_000)
    with pytest.raises(ConversionError) as error:
        convert(b"a" * 2_000_001, "notes.txt", StubReader(), limits=limits)
    assert "over the 2 MB limit" in str(error.value)
    # At the limit exactly, the file is read.
    assert convert_text(b"a" * 2_000_000, "notes.txt", limits=limits)[2] is DocumentType.TEXT


def test_a_small_size_limit_is_named_as_it_is() -> None:
    with pytest.raises(ConversionError) as error:
        convert(b"a" * 100_001, "notes.txt", StubReader(), limits=Limits(max_bytes=100_000))
    assert " 0 MB" not in str(error.value)


# --- text and Markdown ------------------------------------------------------------------------


def test_plain_text_is_titled_by_its_file_name_and_tidied() -> None:
    data = b"First line   \r\n\r\n\r\n\r\nSecond line\r\n\r\n"
    assert convert_text(data, "field notes.txt") == (
        "field notes",
        "First line\n\nSecond line\n",
        DocumentType.TEXT,
    )


def test_text_that_is_not_utf8_is_read_as_windows_1252() -> None:
    assert convert_text(b"caf\xe9 cr\xe8me \x93quoted\x94", "menu.txt")[1] == (
        "café crème \u201cquoted\u201d\n"
    )


def test_a_utf8_byte_order_mark_is_dropped() -> None:
    assert convert_text(b"\xef\xbb\xbfhello", "greeting.txt")[1] == "hello\n"


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_text_saved_as_utf16_or_utf32_with_its_mark_is_read(encoding: str) -> None:
    """Windows Notepad's "Unicode" is UTF-16 LE with a byte-order mark: its NUL bytes are not
    binary data."""
    text = "Boiler serviced on 3 März by Thermo Ltd. 🔧"
    data = (("\ufeff" if encoding.endswith(("le", "be")) else "") + text).encode(encoding)
    assert convert_text(data, "boiler.txt")[1] == text + "\n"
    assert convert_text(data, "boiler.md")[1] == text + "\n"


def test_a_utf16_file_cut_mid_character_is_refused_by_name() -> None:
    with pytest.raises(ConversionError, match="starts as UTF-16 text but does not decode"):
        convert("hello".encode("utf-16") + b"\x00", "notes.txt", StubReader())


def test_markdown_is_titled_by_its_first_heading() -> None:
    data = b"Intro line.\n\n## Setup Guide ##\n\nSteps.\n\n# Later Heading\n"
    title, markdown, kind = convert_text(data, "guide.md")
    assert title == "Setup Guide"
    assert kind is DocumentType.MARKDOWN
    assert markdown == data.decode()


def test_markdown_without_a_heading_is_titled_by_its_file_name() -> None:
    assert convert_text(b"Just some notes.\n", "loose-notes.md")[0] == "loose-notes"


def test_a_comment_in_a_code_block_is_not_the_markdown_title() -> None:
    data = b"Run this:\n\n```bash\n# install the tools\npip install x\n```\n\n## Usage\n\nGo.\n"
    assert convert_text(data, "setup.md")[0] == "Usage"


# --- HTML -------------------------------------------------------------------------------------


def test_html_keeps_the_article_and_drops_navigation_and_ads(html_sample: Sample) -> None:
    title, markdown, kind = convert_text(html_sample.path.read_bytes(), html_sample.path.name)
    assert kind is DocumentType.HTML
    assert title == html_sample.title
    assert markdown.startswith(f"# {html_sample.title}\n")
    assert HTML_KEY in markdown
    assert f"## {html_sample.headings[-1]}" in markdown
    assert AD_SENTENCE not in markdown
    assert "zeppelin" not in markdown
    for word in NAV_WORDS.split():
        assert word not in markdown


def test_html_found_by_its_content_under_a_wrong_name(html_sample: Sample) -> None:
    title, markdown, kind = convert_text(html_sample.path.read_bytes(), "download")
    assert kind is DocumentType.HTML
    assert title == html_sample.title
    assert HTML_KEY in markdown and AD_SENTENCE not in markdown


def test_html_without_main_content_is_refused() -> None:
    page = b"<html><head><title>Login</title></head><body><script>x()</script></body></html>"
    with pytest.raises(ConversionError, match="no readable main content"):
        convert(page, "login.html", StubReader())


# --- URLs -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "scheme"),
    [
        ("file:///etc/passwd", "file://"),
        ("ftp://example.com/report.pdf", "ftp://"),
        ("FILE:///C:/secret.txt", "file://"),
        ("gopher://example.com/", "gopher://"),
    ],
)
def test_only_http_and_https_urls_are_fetched(url: str, scheme: str) -> None:
    with pytest.raises(ConversionError) as error:
        check_url(url)
    message = str(error.value)
    assert scheme in message
    assert "http and https" in message


@pytest.mark.parametrize("url", ["http:///index.html", "https://", "https://:8080/path"])
def test_a_url_without_a_host_is_refused(url: str) -> None:
    with pytest.raises(ConversionError) as error:
        check_url(url)
    assert "no host" in str(error.value)
    assert url in str(error.value)


@pytest.mark.parametrize(
    "url", ["https://example.com/a.pdf", "http://localhost:8080/x?y=1", "HTTPS://Example.COM"]
)
def test_http_and_https_urls_pass_unchanged(url: str) -> None:
    assert check_url(url) == url


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("https://example.com/page", True),
        ("http://localhost:8080", True),
        ("file:///home/owner/notes.md", True),
        ("ftp://example.com/x", True),
        ("notes.md", False),
        ("/home/owner/report.pdf", False),
        ("C:\\Users\\owner\\report.pdf", False),
        ("C://Users/owner/report.pdf", False),
        ("mailto:owner@example.com", False),
        ("", False),
    ],
)
def test_is_url_means_a_scheme_and_two_slashes(text: str, expected: bool) -> None:
    assert is_url(text) is expected


def test_the_corpus_html_really_has_the_boilerplate(html_sample: Sample) -> None:
    """Guards the HTML test above: the ad and the menu are in the page it converts."""
    page = Path(html_sample.path).read_text(encoding="utf-8")
    assert AD_SENTENCE in page
    assert all(word in page for word in NAV_WORDS.split())
    assert HTML_KEY in page


def test_a_huge_jpeg_is_decoded_scaled_down_and_another_huge_picture_not_at_all() -> None:
    import io

    from PIL import Image

    from memoryd.kb.images import MAX_IMAGE_SIDE, _opened, oversized

    def encoded(mode: str, side: int, kind: str) -> bytes:
        out = io.BytesIO()
        Image.new(mode, (side, side), "white").save(out, kind)
        return out.getvalue()

    jpeg = encoded("RGB", 13_000, "JPEG")
    png = encoded("L", 8_000, "PNG")  # 64 million pixels

    picture = _opened(jpeg)
    assert oversized(jpeg) is None and picture is not None
    assert max(picture.size) == MAX_IMAGE_SIDE
    assert _opened(png) is None
    assert oversized(png) == (
        "the image is 8000×8000 pixels, more than the 40 million memoryd decodes; scale it "
        "down and try again"
    )
    assert _opened(encoded("L", 3_000, "PNG")).size == (MAX_IMAGE_SIDE, MAX_IMAGE_SIDE)


def test_a_picture_pillow_itself_refuses_is_refused_by_name() -> None:
    import struct
    import zlib

    from memoryd.kb.images import _opened, oversized

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    # A PNG header claiming 20,000 × 20,000 pixels (400 million: over twice Pillow's own
    # limit, so Pillow refuses it on opening) and no picture behind it.
    header = struct.pack(">IIBBBBB", 20_000, 20_000, 8, 0, 0, 0, 0)
    claimed = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IEND", b"")

    assert oversized(claimed) == (
        "the image claims more than the 40 million memoryd decodes; scale it down and try again"
    )
    assert _opened(claimed) is None
