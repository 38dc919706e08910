"""A knowledge-base test corpus that the tests generate at run time.

Every document here is written fresh into a directory the test owns; nothing is checked in.
Each good sample carries one distinctive key sentence built from rare words, so a search for it
finds exactly that document, plus the title and heading path a converter should recover.

The bad inputs exercise the ingestion guards: a cut-off PDF, a password-protected PDF, a DOCX
whose single part inflates to hundreds of megabytes, an oversized text file, an unknown binary
type and a binary file that claims to be text.
"""

from __future__ import annotations

import io
import math
import random
import zipfile
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

# The advertisement and navigation text of the HTML sample: boilerplate that must not be indexed.
AD_SENTENCE = "Buy discount zeppelin insurance today"
NAV_WORDS = "Subscribe Horoscopes Crosswords"

# Key sentences. The ones that only exist inside an image stay ASCII and under 60 characters so
# OCR reads them and they fit the image width.
PDF_KEY = "The lighthouse keeper on Vardo feeds eleven tabby cats every morning."
SCANNED_PDF_KEY = "Quartz pelicans guard the Ulaanbaatar bakery"
DOCX_KEY = "Copper beehives hum beside the frozen Lake Tekapo observatory."
DOCX_IMAGE_KEY = "Saffron gondolas drift past the Tromso ice museum"
PPTX_KEY = "Velvet armadillos rehearse opera inside the abandoned Brno tram depot."
XLSX_KEY = "Walnut harpsichords arrived crated from Zanzibar in February."
HTML_KEY = "Marmalade submarines patrol the quiet harbour of Reykjavik at dusk."
PNG_KEY = "Purple walruses juggle lanterns near Kyoto"
MARKDOWN_KEY = "Tangerine glaciers whisper folk songs to the shepherds of Ushuaia."
TEXT_KEY = "Obsidian kites circle the salt flats of Uyuni every equinox."

ZIP_BOMB_UNCOMPRESSED = 300 * 1024 * 1024
OVERSIZED_TXT_BYTES = 3 * 1024 * 1024

_FILLER_WORDS = (
    "the", "committee", "reviewed", "annual", "budget", "for", "road", "maintenance", "and",
    "agreed", "that", "new", "gravel", "would", "be", "ordered", "before", "winter", "while",
    "volunteers", "repaired", "fences", "along", "northern", "meadow", "path", "several",
    "residents", "asked", "about", "library", "opening", "hours", "school", "bus", "timetable",
    "council", "promised", "report", "next", "month", "weather", "station", "recorded", "mild",
    "temperatures", "with", "light", "rain", "most", "afternoons", "market", "stalls", "sold",
    "apples", "bread", "cheese", "wool", "to", "visitors", "from", "nearby", "villages",
)  # fmt: skip


@dataclass(frozen=True)
class Sample:
    """One generated document and what a converter should find in it."""

    path: Path  # the written file
    key_sentence: str  # a distinctive sentence in the document's body text (searchable)
    title: str  # the document title a converter should find (or the file stem for PNG/plain)
    headings: tuple[str, ...]  # heading path (top-down) that contains the key sentence


def filler_paragraph(seed: int, words: int = 60) -> str:
    """A deterministic paragraph of ordinary words, no rare ones, ending with a full stop."""
    rng = random.Random(seed)
    text = " ".join(rng.choice(_FILLER_WORDS) for _ in range(words))
    return text[0].upper() + text[1:] + "."


def text_image(text: str, width: int = 1200, height: int = 160) -> bytes:
    """PNG bytes: black text on white in a 40 px font, large enough for OCR.

    The image grows wider than `width` when the text would not fit with a margin.
    """
    font = ImageFont.load_default(size=40)
    left, top, right, bottom = font.getbbox(text)
    margin = 40
    # Pillow types the box as floats (whole numbers for this font); the image wants ints.
    width = max(width, math.ceil(right - left) + 2 * margin)
    height = max(height, math.ceil(bottom - top) + 2 * margin)
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    draw.text((margin - left, (height - (bottom - top)) // 2 - top), text, fill="black", font=font)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


# --- good samples -------------------------------------------------------------------------------


def _write_pdf(path: Path) -> Sample:
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

    title = "Coastal Lighthouses Annual Survey"
    h1 = "Northern Stations"
    h2 = "Keeper Routines"
    base = getSampleStyleSheet()
    title_style = ParagraphStyle("KbTitle", parent=base["Title"], fontSize=24, leading=30)
    h1_style = ParagraphStyle("KbH1", parent=base["Heading1"], fontSize=18, leading=22)
    h2_style = ParagraphStyle("KbH2", parent=base["Heading2"], fontSize=14, leading=18)
    body = ParagraphStyle("KbBody", parent=base["BodyText"], fontSize=10, leading=13)

    story: list[object] = [Paragraph(title, title_style), Spacer(1, 12)]
    story.append(Paragraph("Overview", h1_style))
    story += [Paragraph(filler_paragraph(100 + i, 110), body) for i in range(3)]
    story.append(Paragraph(h1, h1_style))
    story.append(Paragraph("Station Buildings", h2_style))
    story += [Paragraph(filler_paragraph(110 + i, 110), body) for i in range(3)]
    story.append(Paragraph(h2, h2_style))
    story.append(Paragraph(filler_paragraph(120, 50) + " " + PDF_KEY, body))
    story += [Paragraph(filler_paragraph(121 + i, 110), body) for i in range(2)]
    story.append(Paragraph("Harbour Towns", h1_style))
    story.append(Paragraph(filler_paragraph(130, 60), body))
    table = Table(
        [
            ["City", "Population", "Founded"],
            ["Vardo", "2100", "1789"],
            ["Hammerfest", "11400", "1789"],
            ["Honningsvag", "2400", "1996"],
        ]
    )
    table.setStyle(
        TableStyle(
            [
                ("GRID", (0, 0), (-1, -1), 0.75, colors.black),
                ("BACKGROUND", (0, 0), (-1, 0), colors.lightgrey),
                ("FONTNAME", (0, 0), (-1, 0), "Helvetica-Bold"),
            ]
        )
    )
    story += [Spacer(1, 8), table, Spacer(1, 8)]
    story += [Paragraph(filler_paragraph(140 + i, 110), body) for i in range(3)]

    doc = SimpleDocTemplate(str(path), pagesize=A4, title=title, author="memoryd tests")
    doc.build(story)
    return Sample(path, PDF_KEY, title, (h1, h2))


def _write_scanned_pdf(path: Path) -> Sample:
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    png = text_image(SCANNED_PDF_KEY)
    with Image.open(io.BytesIO(png)) as image:
        px_width, px_height = image.size
    page_width, page_height = A4
    draw_width = page_width - 72
    draw_height = draw_width * px_height / px_width
    pdf = canvas.Canvas(str(path), pagesize=A4)
    # A scanner writes no meaningful title; the stem stands in for it either way.
    pdf.setTitle(path.stem)
    pdf.drawImage(
        ImageReader(io.BytesIO(png)), 36, page_height - 72 - draw_height, draw_width, draw_height
    )
    pdf.showPage()
    pdf.save()
    return Sample(path, SCANNED_PDF_KEY, path.stem, ())


def _write_docx(path: Path) -> Sample:
    import docx

    title = "Alpine Apiary Field Notes"
    h1, h2, h3 = "Southern Island Sites", "Canterbury Region", "Observatory Hives"
    doc = docx.Document()
    doc.core_properties.title = title
    doc.add_heading("Introduction", level=1)
    doc.add_paragraph(filler_paragraph(200, 70))
    doc.add_paragraph("Equipment checked before each visit:")
    for item in ("smoker and fuel", "hive tool", "veil and gloves", "sugar syrup"):
        doc.add_paragraph(item, style="List Bullet")
    doc.add_heading(h1, level=1)
    doc.add_paragraph(filler_paragraph(201, 70))
    doc.add_heading(h2, level=2)
    doc.add_paragraph(filler_paragraph(202, 70))
    doc.add_heading(h3, level=3)
    doc.add_paragraph(filler_paragraph(203, 30) + " " + DOCX_KEY)
    doc.add_paragraph(filler_paragraph(204, 70))
    doc.add_heading("Harvest Totals", level=1)
    rows = [("Site", "Hives", "Honey kg"), ("Tekapo", "12", "240"), ("Twizel", "8", "150")]
    table = doc.add_table(rows=len(rows), cols=3)
    table.style = "Table Grid"
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    doc.add_paragraph(filler_paragraph(205, 70))
    doc.save(str(path))
    return Sample(path, DOCX_KEY, title, (h1, h2, h3))


def _write_docx_image(path: Path) -> Sample:
    import docx
    from docx.shared import Inches

    title = "Museum Signage Photographs"
    heading = "Photographed Canal Notice"
    doc = docx.Document()
    doc.core_properties.title = title
    doc.add_heading(heading, level=1)
    doc.add_picture(io.BytesIO(text_image(DOCX_IMAGE_KEY)), width=Inches(6))
    doc.save(str(path))
    return Sample(path, DOCX_IMAGE_KEY, title, (heading,))


def _write_pptx(path: Path) -> Sample:
    from pptx import Presentation

    title = "Moravian Theatre Venues"
    slides = (
        ("Season Overview", ["Twelve productions planned", "Rehearsals start in March"]),
        ("Unusual Rehearsal Spaces", [PPTX_KEY, "Heating is switched on at six"]),
        ("Ticket Sales", ["Box office opens weekdays", "Student discounts remain"]),
    )
    prs = Presentation()
    prs.core_properties.title = title
    layout = prs.slide_layouts[1]  # Title and Content
    for slide_title, bullets in slides:
        slide = prs.slides.add_slide(layout)
        slide.shapes.title.text = slide_title
        frame = slide.placeholders[1].text_frame
        frame.text = bullets[0]
        for bullet in bullets[1:]:
            frame.add_paragraph().text = bullet
    prs.save(str(path))
    return Sample(path, PPTX_KEY, title, (slides[1][0],))


def _write_xlsx(path: Path) -> Sample:
    from openpyxl import Workbook

    title = "Instrument Workshop Stock"
    sheet_name = "Inventory"
    wb = Workbook()
    wb.properties.title = title
    ws = wb.active
    ws.title = sheet_name
    ws.append(["Item", "Quantity", "Location", "Notes"])
    ws.append(["Violin strings", 140, "Shelf A", "Reorder in spring"])
    ws.append(["Harpsichord", 3, "Hall B", XLSX_KEY])
    ws.append(["Tuning forks", 25, "Drawer C", "Calibrated last year"])
    ws.append(["Rosin", 60, "Shelf A", "Two brands"])
    wb.create_sheet("Suppliers").append(["Name", "Country"])
    wb.save(str(path))
    return Sample(path, XLSX_KEY, title, (sheet_name,))


def _write_html(path: Path) -> Sample:
    title = "Harbour Patrols Return to Reykjavik"
    h2 = "Evening Routes Along the Old Pier"
    paragraphs = [filler_paragraph(300 + i, 60) for i in range(6)]
    paragraphs[3] = paragraphs[3] + " " + HTML_KEY
    before = "\n".join(f"      <p>{p}</p>" for p in paragraphs[:2])
    after = "\n".join(f"      <p>{p}</p>" for p in paragraphs[2:])
    nav = "\n".join(
        f'        <li><a href="/{word.lower()}">{word}</a></li>' for word in NAV_WORDS.split()
    )
    html = f"""<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>{title}</title>
  <meta property="og:title" content="{title}">
  <meta name="author" content="Gudrun Haraldsdottir">
</head>
<body>
  <header class="site-header">
    <div class="logo">The Northern Gazette</div>
    <nav class="main-menu">
      <ul>
{nav}
      </ul>
    </nav>
  </header>
  <main>
    <article>
      <h1>{title}</h1>
      <p class="byline">By Gudrun Haraldsdottir, 4 March 2024</p>
{before}
      <h2>{h2}</h2>
{after}
    </article>
    <aside class="ad">
      <p>{AD_SENTENCE}</p>
    </aside>
    <div class="advertisement">
      <p>{AD_SENTENCE} and save on every flight.</p>
    </div>
  </main>
  <footer>
    <p>We use cookies to improve your experience. Accept all cookies to continue reading.</p>
    <p>Copyright The Northern Gazette. All rights reserved.</p>
  </footer>
</body>
</html>
"""
    path.write_text(html, encoding="utf-8")
    return Sample(path, HTML_KEY, title, (title, h2))


def _write_png(path: Path) -> Sample:
    path.write_bytes(text_image(PNG_KEY))
    return Sample(path, PNG_KEY, path.stem, ())


def _write_markdown(path: Path) -> Sample:
    title = "Patagonian Glacier Songs"
    h2 = "Shepherd Traditions"
    text = (
        f"# {title}\n\n{filler_paragraph(400, 50)}\n\n"
        f"## Valley Weather\n\n{filler_paragraph(401, 50)}\n\n"
        f"## {h2}\n\n{filler_paragraph(402, 30)} {MARKDOWN_KEY}\n\n{filler_paragraph(403, 50)}\n"
    )
    path.write_text(text, encoding="utf-8")
    return Sample(path, MARKDOWN_KEY, title, (title, h2))


def _write_text(path: Path) -> Sample:
    text = (
        f"{filler_paragraph(500, 50)}\n\n{filler_paragraph(501, 30)} {TEXT_KEY}\n\n"
        f"{filler_paragraph(502, 50)}\n"
    )
    path.write_text(text, encoding="utf-8")
    return Sample(path, TEXT_KEY, path.stem, ())


def write_corpus(directory: Path) -> dict[str, Sample]:
    """Write every good sample.

    Keys: 'pdf', 'scanned_pdf', 'docx', 'docx_image', 'pptx', 'xlsx', 'html', 'png',
    'markdown', 'text'.
    """
    directory.mkdir(parents=True, exist_ok=True)
    return {
        "pdf": _write_pdf(directory / "lighthouse_survey.pdf"),
        "scanned_pdf": _write_scanned_pdf(directory / "scanned_bakery_notice.pdf"),
        "docx": _write_docx(directory / "apiary_notes.docx"),
        "docx_image": _write_docx_image(directory / "signage_photos.docx"),
        "pptx": _write_pptx(directory / "theatre_venues.pptx"),
        "xlsx": _write_xlsx(directory / "workshop_stock.xlsx"),
        "html": _write_html(directory / "harbour_patrols.html"),
        "png": _write_png(directory / "walrus_poster.png"),
        "markdown": _write_markdown(directory / "glacier_songs.md"),
        "text": _write_text(directory / "salt_flat_kites.txt"),
    }


# --- bad inputs ---------------------------------------------------------------------------------


def _multipage_pdf_bytes(encrypt: object | None = None) -> bytes:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    out = io.BytesIO()
    pdf = canvas.Canvas(out, pagesize=A4, encrypt=encrypt)
    pdf.setTitle("Multipage Filler")
    for page in range(6):
        y = 800
        for line in range(40):
            pdf.drawString(40, y, filler_paragraph(600 + page * 100 + line, 14))
            y -= 18
        pdf.showPage()
    pdf.save()
    return out.getvalue()


def _write_zip_bomb_docx(path: Path) -> None:
    content_types = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" '
        'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/word/document.xml" ContentType="application/'
        'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
        "</Types>"
    )
    rels = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
        'relationships/officeDocument" Target="word/document.xml"/>'
        "</Relationships>"
    )
    head = (
        b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
        b"<w:body><w:p><w:r><w:t>"
    )
    tail = b"</w:t></w:r></w:p></w:body></w:document>"
    block = b"A" * (1024 * 1024)
    # Level 4 is the fastest level that reaches deflate's ~1000:1 ceiling on a run of one byte
    # (levels 1-3 stop near 230:1); 300 MB takes about 1.6 s and stays near 300 KB on disk.
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=4) as zf:
        zf.writestr("[Content_Types].xml", content_types)
        zf.writestr("_rels/.rels", rels)
        with zf.open("word/document.xml", "w", force_zip64=True) as part:
            part.write(head)
            for _ in range(ZIP_BOMB_UNCOMPRESSED // len(block)):
                part.write(block)
            part.write(tail)


def _write_oversized_txt(path: Path) -> None:
    lines: list[str] = []
    size = 0
    seed = 0
    while size < OVERSIZED_TXT_BYTES:
        line = filler_paragraph(10_000 + seed, 20) + "\n"
        lines.append(line)
        size += len(line)
        seed += 1
    path.write_text("".join(lines), encoding="ascii")


def write_bad_inputs(directory: Path) -> dict[str, Path]:
    """Write the inputs ingestion must refuse or survive.

    Keys: 'truncated_pdf', 'encrypted_pdf', 'zip_bomb_docx', 'oversized_txt' (about 3 MB of
    text), 'unknown_type' (a .xyz file of random-looking bytes), 'binary_as_txt' (a .txt file
    that is binary with NULs).
    """
    from reportlab.lib.pdfencrypt import StandardEncryption

    directory.mkdir(parents=True, exist_ok=True)
    paths = {
        "truncated_pdf": directory / "truncated.pdf",
        "encrypted_pdf": directory / "encrypted.pdf",
        "zip_bomb_docx": directory / "zip_bomb.docx",
        "oversized_txt": directory / "oversized.txt",
        "unknown_type": directory / "mystery.xyz",
        "binary_as_txt": directory / "binary_as.txt",
    }
    whole = _multipage_pdf_bytes()
    paths["truncated_pdf"].write_bytes(whole[: len(whole) * 2 // 5])
    encryption = StandardEncryption("userpass", ownerPassword="ownerpass", strength=128)
    paths["encrypted_pdf"].write_bytes(_multipage_pdf_bytes(encrypt=encryption))
    _write_zip_bomb_docx(paths["zip_bomb_docx"])
    _write_oversized_txt(paths["oversized_txt"])
    rng = random.Random(4242)
    paths["unknown_type"].write_bytes(b"\x8f\x13\xe2\x07" + rng.randbytes(8192))
    binary = bytearray(rng.randbytes(4096))
    binary[::7] = b"\x00" * len(binary[::7])
    paths["binary_as_txt"].write_bytes(b"plain words then\x00\x00\x00" + bytes(binary))
    return paths
