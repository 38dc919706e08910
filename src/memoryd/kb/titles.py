"""A document's title (pure): from its metadata when that says something, else from the
document itself.

Metadata titles are often empty ("untitled"), generic ("Document") or an identifier (an SEC
accession number "0000950170-23-028914", a file or export name "10Q Doc & Exhibits-2022-05-03-
15-15"). A filing names its registrant on the cover: "Oracle Corporation — Form 10-K 2023". Else
the first real heading; else the file name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

GENERIC_TITLES = frozenset(
    {
        "document", "untitled", "title", "report", "page", "pdf", "file", "scan", "image",
        "slide", "presentation", "draft", "contents", "table of contents", "untitled document",
        "new document", "microsoft word", "united states", "form",
        "securities and exchange commission",
    }
)  # fmt: skip
_ACCESSION = re.compile(r"^\d{10}-\d{2}-\d{6}$")
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[-_ T]\d{2}")
_FILE_NAME = re.compile(r"\.(?:docx?|pdf|xlsx?|pptx?|html?|txt|rtf|odt)$", re.I)
_FORM = re.compile(r"\bFORM\s+(10-K|10-Q|8-K|20-F|40-F|6-K|S-1|DEF 14A)(/A)?\b", re.I)
_REGISTRANT = re.compile(r"\(exact name of registrant as specified in its charter\)", re.I)
_COMPANY_LINE = re.compile(
    r"^(?:THE\s+)?[A-Z][A-Z0-9&.,'’\- ]+\b(?:COMPANY|CORPORATION|CORP\.?|INC\.?|CO\.|& CO\.?|"
    r"LTD\.?|PLC|GROUP|HOLDINGS|N\.V\.|S\.A\.|AG|LLC|L\.P\.)(?:\s+AND\s+SUBSIDIARIES)?$"
)
_FISCAL_YEAR = re.compile(r"fiscal year ended\s+[A-Za-z]+\s+\d{1,2},\s*((?:19|20)\d\d)", re.I)
_QUARTER = re.compile(r"quarterly period ended\D{0,40}?([A-Z][a-z]+\s+\d{1,2},\s*(?:19|20)\d\d)")
_REPORT_DATE = re.compile(
    r"date of report[^A-Za-z]*(?:\(date of earliest event reported\))?\D{0,20}?"
    r"([A-Z][a-z]+\s+\d{1,2},\s*(?:19|20)\d\d)",
    re.I,
)


def document_title(
    metadata: str, opening: Sequence[str], headings: Sequence[str], stem: str
) -> str:
    """The best title: a filing's own ("Registrant — Form 10-K 2023"), else usable metadata,
    else the first real heading, else ``stem``. ``opening`` holds the first pages' lines."""
    filing = filing_title(opening)
    if filing:
        return filing
    if usable(metadata):
        return " ".join(metadata.split())
    for heading in headings:
        if usable(heading):
            return " ".join(heading.split())
    return stem


def usable(title: str) -> bool:
    """Whether a title says something: not empty, generic or an identifier."""
    text = " ".join(title.split())
    if len(text) < 3 or len(text) > 200:
        return False
    folded = text.casefold().strip(" .:-")
    if folded in GENERIC_TITLES or folded.startswith("microsoft word -"):
        return False
    if _ACCESSION.match(text) or _TIMESTAMP.search(text) or _FILE_NAME.search(text):
        return False
    letters = sum(c.isalpha() for c in text)
    digits = sum(c.isdigit() for c in text)
    return letters >= 3 and digits <= letters


def filing_title(opening: Sequence[str]) -> str:
    """ "Name — Form 10-K 2016" for an SEC filing's cover, else ''."""
    lines = [" ".join(line.split()) for line in opening if line.strip()]
    text = "\n".join(lines)
    form = _FORM.search(text)
    if form is None or "securities and exchange commission" not in text.casefold():
        return ""
    name = _registrant(lines)
    if not name:
        return ""
    kind = form.group(1).upper() + (form.group(2) or "").upper()
    when = ""
    if kind.startswith("10-K") or kind.startswith("20-F"):
        year = _FISCAL_YEAR.search(text)
        when = f" {year.group(1)}" if year else ""
    elif kind.startswith("10-Q"):
        quarter = _QUARTER.search(text.replace("\n", " "))
        when = f", quarter ended {quarter.group(1)}" if quarter else ""
    elif kind.startswith("8-K"):
        reported = _REPORT_DATE.search(text.replace("\n", " "))
        when = f", {reported.group(1)}" if reported else ""
    return f"{name} — Form {kind}{when}"


def _registrant(lines: list[str]) -> str:
    """The registrant's name: the line above "(Exact name of registrant …)", else a company
    name set in capitals ("THE COCA-COLA COMPANY AND SUBSIDIARIES")."""
    for index, line in enumerate(lines):
        if _REGISTRANT.search(line):
            before = _REGISTRANT.split(line)[0].strip()
            candidate = before or (lines[index - 1] if index else "")
            if candidate and not re.search(r"\d{3}", candidate) and usable(candidate):
                return _tidy_name(candidate)
    for line in lines:
        if _COMPANY_LINE.match(line):
            return _tidy_name(re.sub(r"\s+AND\s+SUBSIDIARIES$", "", line))
    return ""


def _tidy_name(name: str) -> str:
    """A name as it would be written: title case when it was set in capitals."""
    name = " ".join(name.split()).strip(" ,")
    if name.isupper():
        name = " ".join(
            word if len(word) <= 3 and "." in word else word.title() for word in name.split()
        )
        name = re.sub(r"\b(And|Of|The)\b(?!$)", lambda m: m.group().lower(), name)
        name = name[0].upper() + name[1:]
    return name
