"""PDFs built for the knowledge-base tests, each with a feature real documents have: pages
with running headers and footers, ligatures, a footnote that opens with '#', a financial
statement longer than a chunk; and pages cut from the real SEC filings when they are at hand
(``MEMORYD_FILINGS``, else ``../shared/data/filings`` beside the repository)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILINGS = Path(os.environ.get("MEMORYD_FILINGS") or ROOT.parent / "shared" / "data" / "filings")

RUNNING_HEADER = "Harbour Holdings Inc. — Annual Report 2025"
WORDS = ("anchorage", "breakwater", "capstan", "dredger", "estuary", "foghorn", "gangway")
FOOTNOTE = "# Denotes a variance of 100 percent or more"
LIGATURE_TEXT = "The ﬁnancial team reviewed the ﬂows of the ﬁrst quarter."
LIGATURE_PLAIN = "The financial team reviewed the flows of the first quarter."
YEARS = ("2025", "2024")


def page_sentence(page: int, index: int) -> str:
    """A sentence only page ``page`` holds."""
    word = WORDS[(page + index) % len(WORDS)]
    return f"On page {page} the {word} report adds fact number {page * 10 + index}."


def write_paged(path: Path, pages: int = 5) -> None:
    """Pages with a running header, a page number at the foot, a heading and three
    sentences of their own."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    pdf = canvas.Canvas(str(path), pagesize=A4)
    pdf.setTitle("untitled")
    width, height = A4
    for page in range(1, pages + 1):
        pdf.setFont("Helvetica", 8)
        pdf.drawString(40, height - 30, RUNNING_HEADER)
        pdf.drawCentredString(width / 2, 30, str(page))
        pdf.setFont("Helvetica-Bold", 16)
        pdf.drawString(40, height - 80, f"{WORDS[page].title()} Operations")
        pdf.setFont("Helvetica", 10)
        for index in range(3):
            pdf.drawString(40, height - 120 - 40 * index, page_sentence(page, index))
        pdf.showPage()
    pdf.save()


def write_ligatures(path: Path) -> None:
    """Text drawn with ligature glyphs (U+FB01 ﬁ, U+FB02 ﬂ) in a TrueType font that has
    them."""
    import reportlab
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont
    from reportlab.pdfgen import canvas

    font = Path(reportlab.__file__).parent / "fonts" / "Vera.ttf"
    pdfmetrics.registerFont(TTFont("MemorydVera", str(font)))
    pdf = canvas.Canvas(str(path), pagesize=A4)
    pdf.setFont("MemorydVera", 11)
    pdf.drawString(40, 780, LIGATURE_TEXT)
    pdf.drawString(40, 760, "The ﬁgures were ﬁled by the oﬃcial in charge of the ﬂeet.")
    pdf.showPage()
    pdf.save()


def write_footnote(path: Path) -> None:
    """Prose, then a footnote in small type that opens with '#'."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    pdf = canvas.Canvas(str(path), pagesize=A4)
    pdf.setFont("Helvetica", 10)
    y = 780.0
    for index in range(4):
        pdf.drawString(40, y, page_sentence(1, index))
        y -= 14
    pdf.setFont("Helvetica", 7)
    pdf.drawString(40, y - 20, FOOTNOTE)
    pdf.setFont("Helvetica", 10)
    pdf.drawString(40, y - 60, page_sentence(2, 0))
    pdf.showPage()
    pdf.save()


@dataclass(frozen=True)
class StatementRow:
    label: str
    values: tuple[str, str]


def statement_rows(count: int = 80) -> list[StatementRow]:
    """A balance sheet's rows: a label and a figure for each year, some in dollars or
    negative."""
    rows = []
    for index in range(count):
        word = WORDS[index % len(WORDS)]
        first = f"{(index + 3) * 1_237:,}"
        second = f"{(index + 5) * 981:,}"
        if index % 10 == 0:
            first, second = f"${first}", f"${second}"
        if index % 7 == 3:
            first, second = f"({first})", f"({second})"
        rows.append(StatementRow(f"{word.title()} account number {index}", (first, second)))
    return rows


def write_statement(path: Path, rows: list[StatementRow], scale: float = 1.0) -> None:
    """A consolidated balance sheet as filings set it: a bold title, the years above right-
    aligned figure columns, a '$' set apart from its figure; long enough for several chunks.
    With ``scale`` below 1 every font is set ``1 / scale`` times larger and the page's matrix
    scales it back (some filings set their text at 384 points drawn at 8): the page looks
    the same."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    pdf = canvas.Canvas(str(path), pagesize=A4)
    pdf.scale(scale, scale)

    def font(name: str, size: float) -> None:
        pdf.setFont(name, size / scale)

    def at(x: float, y: float, text: str, right: bool = False) -> None:
        draw = pdf.drawRightString if right else pdf.drawString
        draw(x / scale, y / scale, text)

    font("Helvetica-Bold", 10)
    at(40, 800, "CONSOLIDATED BALANCE SHEETS")
    font("Helvetica", 8)
    at(40, 784, "December 31,")
    at(430, 784, YEARS[0], right=True)
    at(520, 784, YEARS[1], right=True)
    at(40, 772, "(In millions)")
    y = 758.0
    for row in rows:
        at(40, y, row.label)
        for right, value in zip((430, 520), row.values, strict=True):
            if value.startswith("$"):
                at(right - 60, y, "$")
                value = value[1:]
            at(right, y, value, right=True)
        y -= 9
    font("Helvetica", 9)
    at(40, y - 20, "Refer to Notes to Consolidated Financial Statements.")
    pdf.showPage()
    pdf.save()


@dataclass(frozen=True)
class FilingPages:
    """Pages cut from a real filing (or, without the filings, a stand-in), and the company
    its title must name."""

    name: str
    pdf: bytes
    company: str
    real: bool
    # Whether the pages cut hold a financial statement (every line of it must be a row).
    statement: bool = True


# Cover pages, a statement, and pages known to be hard (an exhibit set in bold); of the
# library's filings, covers (their titles were the hard part) and statements set in fonts
# the page's matrix scales down.
FILING_PAGES = {
    "COCACOLA_2016_10K.pdf": ("Coca-Cola", (1, 2, 3, 77, 179, 180, 181)),
    "ORACLE_2023_10K.pdf": ("Oracle", (1, 2, 66, 67)),
    "JPMORGAN_2022Q1_10Q.pdf": ("JPMorgan", (1, 2, 12, 13)),
    # The registrant's name is a logo: the title comes from the company the text names.
    "library/COCACOLA_2015_10K.pdf": ("The Coca-Cola Company", (1, 2, 3)),
    # Rules of underscores on the registrant's line.
    "library/NETFLIX_2022_10K.pdf": ("Netflix, Inc.", (1, 2)),
    # Statements set at 384 points drawn at 8.
    "library/APPLE_2021_10K.pdf": ("Apple Inc.", (1, 32, 34)),
}
# The library's filings whose cut pages hold a statement (the others: covers only).
LIBRARY_STATEMENTS = ("library/APPLE_2021_10K.pdf",)
# The whole title a real filing must carry, where its company alone says too little.
REAL_TITLES = {"library/NETFLIX_2022_10K.pdf": "Netflix, Inc. — Form 10-K 2022"}


def filing_pages(directory: Path) -> list[FilingPages]:
    """A few pages of each real filing; stand-ins when the filings are not at hand."""
    found = []
    for where, (company, pages) in FILING_PAGES.items():
        source = FILINGS / where
        name = source.name
        if source.exists():
            statement = not where.startswith("library/") or where in LIBRARY_STATEMENTS
            title = REAL_TITLES.get(where, company)
            found.append(FilingPages(name, _cut(source, pages), title, True, statement))
        else:
            stand_in = directory / name
            _write_stand_in(stand_in, company)
            found.append(FilingPages(name, stand_in.read_bytes(), company, real=False))
    return found


def _cut(source: Path, pages: tuple[int, ...]) -> bytes:
    import io

    import pypdfium2 as pdfium

    original = pdfium.PdfDocument(source.read_bytes())
    cut = pdfium.PdfDocument.new()
    try:
        cut.import_pages(original, [p - 1 for p in pages])
        out = io.BytesIO()
        cut.save(out)
        return out.getvalue()
    finally:
        cut.close()
        original.close()


def _write_stand_in(path: Path, company: str) -> None:
    """A filing cover page naming ``company``, then a statement."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    pdf = canvas.Canvas(str(path), pagesize=A4)
    pdf.setTitle("0000950170-23-028914")
    lines = [
        "UNITED STATES", "SECURITIES AND EXCHANGE COMMISSION", "Washington, D.C. 20549",
        "FORM 10-K", "For the fiscal year ended December 31, 2025",
        f"{company} Holdings Corporation", "(Exact name of registrant as specified in its charter)",
    ]  # fmt: skip
    y = 800.0
    for text in lines:
        pdf.setFont("Helvetica-Bold" if text.isupper() else "Helvetica", 11)
        pdf.drawCentredString(300, y, text)
        y -= 20
    pdf.showPage()
    pdf.save()
