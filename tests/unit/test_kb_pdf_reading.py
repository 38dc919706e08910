"""Reading a PDF page: a balance sheet set as filings set it keeps each number on its label's
row, and the image reader is asked exactly where there is something to read (a scanned page,
a picture), never for a blank page that only carries its number."""

from __future__ import annotations

import io
from pathlib import Path

from memoryd.kb.convert import convert

# A balance sheet as a 10-K sets it: a bold title over prose, a caption and the years above
# right-aligned figure columns, "$" set apart from its figure, negatives in parentheses, bold
# totals, a label that runs onto a second line.
BALANCE_SHEET = (
    ("Cash and cash equivalents", "$", "8,555", "$", "7,309"),
    ("Short-term investments", "", "9,595", "", "8,322"),
    ("Trade accounts receivable, less allowances", "", "3,856", "", "3,941"),
    ("Inventories", "", "2,675", "", "2,902"),
    ("Total current assets", "", "34,010", "", "33,395"),
    ("Accumulated depreciation", "", "(8,236)", "", "(7,911)"),
    ("Goodwill", "", "10,629", "", "11,289"),
    ("Total assets", "$", "87,270", "$", "90,093"),
)
TITLE = "CONSOLIDATED BALANCE SHEETS"
PROSE = "The following statements were prepared by management of the registrant for the year."


class CountingReader:
    """An image reader that answers a fixed text and counts what it was asked."""

    name = "counting"

    def __init__(self, answer: str = "READ FROM PICTURE") -> None:
        self.answer = answer
        self.calls = 0

    def read(self, image: bytes) -> str:
        self.calls += 1
        return self.answer


def write_balance_sheet(path: Path) -> None:
    from reportlab.lib.pagesizes import letter
    from reportlab.pdfgen import canvas

    pdf = canvas.Canvas(str(path), pagesize=letter)
    pdf.setFont("Helvetica", 9)
    pdf.drawString(50, 740, PROSE)
    pdf.setFont("Helvetica-Bold", 10)
    pdf.drawString(50, 715, TITLE)
    pdf.setFont("Helvetica", 8)
    pdf.drawString(50, 698, "December 31,")
    pdf.drawRightString(440, 698, "2016")
    pdf.drawRightString(530, 698, "2015")
    pdf.drawString(50, 688, "(In millions)")
    y = 672.0
    for label, dollar_1, first, dollar_2, second in BALANCE_SHEET:
        bold = label.startswith("Total")
        pdf.setFont("Helvetica-Bold" if bold else "Helvetica", 8)
        pdf.drawString(50, y, label)
        for right, dollar, value in ((440, dollar_1, first), (530, dollar_2, second)):
            if dollar:
                pdf.drawString(right - 55, y, dollar)
            pdf.drawRightString(right + (4 if value.endswith(")") else 0), y, value)
        y -= 11
    pdf.showPage()
    pdf.save()


def table_rows(markdown: str) -> dict[str, list[str]]:
    """Each Markdown table row's first cell and the cells after it."""
    rows = {}
    for line in markdown.split("\n"):
        if line.startswith("|") and not line.startswith("|---"):
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            rows[cells[0]] = [cell for cell in cells[1:] if cell]
    return rows


def test_a_balance_sheet_keeps_each_number_on_its_labels_row(tmp_path: Path) -> None:
    path = tmp_path / "balance.pdf"
    write_balance_sheet(path)
    reader = CountingReader()

    converted = convert(path.read_bytes(), path.name, reader)

    assert reader.calls == 0
    assert f"# {TITLE}" in converted.markdown
    assert PROSE in converted.markdown
    rows = table_rows(converted.markdown)
    for label, dollar_1, first, dollar_2, second in BALANCE_SHEET:
        expected = [f"{dollar_1}{first}", f"{dollar_2}{second}"]
        assert rows.get(label) == expected, (label, rows.get(label))
    header = next(cells for label, cells in rows.items() if "2016" in [label, *cells])
    assert "2015" in header


def _picture_png(width: int, height: int) -> bytes:
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (width, height), "white")
    ImageDraw.Draw(image).rectangle((10, 10, width - 10, height - 10), outline="black")
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def write_pages_with_pictures(path: Path) -> None:
    """Page 1: prose and a chart picture; page 2: a scan (a picture, no text); page 3: blank
    but for its page number; page 4: prose and a logo too small to read."""
    from reportlab.lib.pagesizes import letter
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    chart = ImageReader(io.BytesIO(_picture_png(400, 240)))
    pdf = canvas.Canvas(str(path), pagesize=letter)
    pdf.setFont("Helvetica", 10)
    pdf.drawString(50, 740, "Our stock performance over five years is shown in the chart below.")
    pdf.drawImage(chart, 50, 400, width=300, height=180)
    pdf.drawString(50, 380, "The chart assumes dividends were reinvested each quarter.")
    pdf.showPage()
    pdf.drawImage(chart, 0, 0, width=612, height=792)
    pdf.showPage()
    pdf.setFont("Helvetica", 10)
    pdf.drawCentredString(306, 40, "115")
    pdf.showPage()
    pdf.setFont("Helvetica", 10)
    pdf.drawString(50, 740, "Signatures of the officers follow on the next pages of this report.")
    pdf.drawImage(chart, 50, 700, width=20, height=12)
    pdf.showPage()
    pdf.save()


def test_the_reader_reads_pictures_and_scans_but_never_a_blank_page(tmp_path: Path) -> None:
    path = tmp_path / "pictures.pdf"
    write_pages_with_pictures(path)
    reader = CountingReader()

    converted = convert(path.read_bytes(), path.name, reader)

    assert reader.calls == 2, "the chart and the scanned page; not the blank page, not a logo"
    assert converted.images_read == 2
    markdown = converted.markdown
    page_1 = markdown.split("<!-- page 2 -->")[0]
    chart = page_1.index(reader.answer)
    assert page_1.index("stock performance") < chart < page_1.index("dividends were reinvested")
    page_2 = markdown.split("<!-- page 2 -->")[1].split("<!-- page 3 -->")[0]
    assert reader.answer in page_2
    assert converted.pages == 4
