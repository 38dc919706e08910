"""A document's title (pure): from its metadata when that says something, else from the
document itself.

Metadata titles are often empty ("untitled"), generic ("Document", "Slide 1", "Microsoft Word -
notes.docx"), an identifier (an SEC accession number "0000950170-23-028914", a UUID, a file or
export name "10Q Doc & Exhibits-2022-05-03-15-15"). A filing names its registrant on the cover:
"Oracle Corporation — Form 10-K 2023". Else the first heading that describes the document: a
cover page opens with boilerplate ("UNITED STATES", "SECURITIES AND EXCHANGE COMMISSION",
"Washington, D.C. 20549", "Table of contents") that names no document. Else the file name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

GENERIC_TITLES = frozenset(
    {
        "document", "untitled", "title", "report", "page", "pdf", "file", "scan", "image",
        "slide", "presentation", "draft", "contents", "table of contents", "untitled document",
        "new document", "microsoft word", "united states", "form", "index", "home", "cover",
        "cover page", "front matter", "confidential", "sheet", "workbook",
        "securities and exchange commission",
    }
)  # fmt: skip
# "Slide 1", "Page 3", "Document1", "Presentation2", "Untitled-4", "Sheet 1", "Book1".
_NUMBERED_GENERIC = re.compile(
    r"^(?:untitled|document|presentation|slide|page|sheet|book|draft|image|scan|file|"
    r"new (?:microsoft )?(?:word |powerpoint |excel )?document)[\s_-]*\d*$",
    re.I,
)
_EXPORTED = re.compile(r"^microsoft (?:word|powerpoint|excel|office)\b", re.I)
_ACCESSION = re.compile(r"^\d{10}-\d{2}-\d{6}$")
_UUID = re.compile(r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}", re.I)
_HEX_DIGEST = re.compile(r"^[0-9a-f]{16,}$", re.I)
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[-_ T]\d{2}")
_FILE_NAME = re.compile(r"\.(?:docx?|pdf|xlsx?|pptx?|html?|txt|rtf|odt|md|csv)$", re.I)
# A name with no space but an underscore, or in lower case with a trailing number, is a file's
# name, not a title: "q3_board_pack", "IMG_2031", "scan-0042".
_SLUG = re.compile(r"^(?:\S*_\S*|[a-z]+(?:-[a-z0-9]+)*-\d+)$")
# Lines on a cover page that name no document: the agency's heading, its address, the form's
# check boxes, the registrant's particulars.
_BOILERPLATE = re.compile(
    r"^(?:(?:(?:the\s+)?united states(?:\s+securities and exchange commission)?|"
    r"securities and exchange commission)(?:\s+washington,?\s+d\.?\s?c\.?(?:\s+\d{5})?)?|"
    r"washington,?\s+d\.?\s?c\.?(?:\s+\d{5})?|"
    r"\(mark one\)|[☒☐]\s?.*|table of contents|contents|index|page \d+(?: of \d+)?|"
    r"(?:annual|quarterly|current|transition) report pursuant to .*|"
    r"pursuant to section .*|commission file (?:number|no)\b.*|"
    r"\(exact name of registrant .*|documents incorporated by reference|"
    r"(?:state|other jurisdiction) of incorporation.*|for the (?:fiscal year|quarterly period)"
    r"(?: ended)?\b.*|confidential(?: treatment requested)?|draft|for immediate release)$",
    re.I,
)
_FORM = re.compile(r"\bFORM\s+(10-K|10-Q|8-K|20-F|40-F|6-K|S-1|DEF 14A)(/A)?\b", re.I)
_FORM_HEADING = re.compile(r"^FORM\s+(10-K|10-Q|8-K|20-F|40-F|6-K|S-1|DEF 14A)(/A)?$", re.I)
_REGISTRANT = re.compile(r"\(exact name of registrant as specified in its charter\)", re.I)
_COMPANY_LINE = re.compile(
    r"^(?:THE\s+)?[A-Z][A-Z0-9&.,'’\- ]+\b(?:COMPANY|CORPORATION|CORP\.?|INC\.?|CO\.|& CO\.?|"
    r"LTD\.?|PLC|GROUP|HOLDINGS|N\.V\.|S\.A\.|AG|LLC|L\.P\.)(?:\s+AND\s+SUBSIDIARIES)?$"
)
# A company's name as a heading sets it, in any case: "Oracle Corporation", "JPMorgan Chase & Co.".
_COMPANY_HEADING = re.compile(
    r"^(?:the\s+)?[A-Z][\w&.,'’\- ]{0,80}\b(?:company|corporation|corp\.?|inc\.?|co\.|"
    r"ltd\.?|plc|group|holdings|n\.v\.|s\.a\.|ag|llc|l\.p\.)(?:\s+and\s+subsidiaries)?$",
    re.I,
)
_FISCAL_YEAR = re.compile(r"fiscal year ended\s+([A-Za-z]+)\s+(\d{1,2}),\s*((?:19|20)\d\d)", re.I)
# A 52/53-week year that ends in the first week of January is the year before's: Johnson &
# Johnson's fiscal 2022 ended on January 1, 2023.
LAST_DAY_OF_SLIPPED_YEAR = 7
# A company named in running text ("The Coca-Cola Company is ..."), for a cover whose name is a
# picture: up to five capitalised words and a corporate suffix.
_NAMED_COMPANY = re.compile(
    r"\b((?:The[ \t]+)?(?:[A-Z][\w&'’.-]*[ \t]+){1,5}(?:Company|Corporation|Incorporated|Inc\.|"
    r"Corp\.|Co\.|plc|PLC|Ltd\.|N\.V\.|S\.A\.|AG|Holdings|Group))"
)
_NOT_A_NAME = frozenset(
    {"the", "registrant", "exchange", "securities", "commission", "annual", "report", "form",
     "our", "this", "each", "such", "any", "a", "an", "parent", "operating", "holding"}
)  # fmt: skip
# A label a filing agent gives an exhibit ("MGM Exhibit 99.1 Q4 2022 ER"), not a title.
_EXHIBIT_LABEL = re.compile(r"\bex(?:hibit|h)?[\s._-]*\d{1,3}(?:\.\d{1,2})?\b", re.I)
# Rules drawn with underscores around a cover's lines.
_RULE = re.compile(r"_{3,}")
_QUARTER = re.compile(r"quarterly period ended\D{0,40}?([A-Z][a-z]+\s+\d{1,2},\s*(?:19|20)\d\d)")
_REPORT_DATE = re.compile(
    r"date of report[^A-Za-z]*(?:\(date of earliest event reported\))?\D{0,20}?"
    r"([A-Z][a-z]+\s+\d{1,2},\s*(?:19|20)\d\d)",
    re.I,
)
# A heading longer than this is a sentence set in bold, not a title.
MAX_HEADING_TITLE = 150


def document_title(
    metadata: str, opening: Sequence[str], headings: Sequence[str], stem: str
) -> str:
    """The best title: a filing's own ("Registrant — Form 10-K 2023"), else usable metadata,
    else the first heading that describes the document, else ``stem``. ``opening`` holds the
    first pages' lines."""
    filing = filing_title(opening)
    if filing:
        return filing
    if usable(metadata) and not _same_name(metadata, stem):
        return " ".join(metadata.split())
    return heading_title(headings) or stem


def usable(title: str) -> bool:
    """Whether a title says something: not empty, generic, boilerplate, a file name or an
    identifier."""
    text = " ".join(title.split())
    if len(text) < 3 or len(text) > 200:
        return False
    folded = text.casefold().strip(" .:-")
    if folded in GENERIC_TITLES or _NUMBERED_GENERIC.match(folded) or _EXPORTED.match(folded):
        return False
    if _BOILERPLATE.match(text):
        return False
    if _ACCESSION.match(text) or _UUID.search(text) or _HEX_DIGEST.match(text):
        return False
    if _TIMESTAMP.search(text) or _FILE_NAME.search(text) or _SLUG.match(text):
        return False
    if _EXHIBIT_LABEL.search(text):
        return False
    letters = sum(c.isalpha() for c in text)
    digits = sum(c.isdigit() for c in text)
    return letters >= 3 and digits <= letters


def heading_title(headings: Sequence[str]) -> str:
    """The first heading that describes the document ('' when none does). A form's name on a
    cover ("FORM 10-K") is joined by the company a later heading names."""
    lines = [" ".join(heading.split()) for heading in headings]
    for index, heading in enumerate(lines):
        form = _FORM_HEADING.match(heading)
        if form is not None:
            kind = form.group(1).upper() + (form.group(2) or "").upper()
            following = lines[index + 1 : index + 12]
            company = next((c for c in following if _COMPANY_HEADING.match(c)), "")
            name = re.sub(r"\s+and\s+subsidiaries$", "", company, flags=re.I)
            name = _tidy_name(name) if name else ""
            return f"{name} — Form {kind}" if name else f"Form {kind}"
        if len(heading) <= MAX_HEADING_TITLE and usable(heading):
            return heading
    return ""


def filing_title(opening: Sequence[str]) -> str:
    """ "Name — Form 10-K 2016" for an SEC filing's cover, else ''."""
    lines = [" ".join(_RULE.sub(" ", line).split()) for line in opening]
    lines = [line for line in lines if line]
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
        ended = _FISCAL_YEAR.search(text)
        when = (
            f" {fiscal_year(ended.group(1), int(ended.group(2)), int(ended.group(3)))}"
            if ended
            else ""
        )
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
                return _tidy_name(candidate, lines)
    for line in lines:
        if _COMPANY_LINE.match(line):
            return _tidy_name(re.sub(r"\s+AND\s+SUBSIDIARIES$", "", line), lines)
    return _named_in_text(lines)


def fiscal_year(month: str, day: int, year: int) -> int:
    """The fiscal year a year ending on ``month`` ``day``, ``year`` is called by: its end's year,
    save a 52/53-week year ending in the first week of January (the year before's)."""
    if month.casefold().startswith("jan") and day <= LAST_DAY_OF_SLIPPED_YEAR:
        return year - 1
    return year


def _named_in_text(lines: list[str]) -> str:
    """The company the opening's running text names most often (at least twice), or ''."""
    counts: dict[str, int] = {}
    for match in _NAMED_COMPANY.finditer("\n".join(lines)):
        name = " ".join(match.group(1).split())
        words = name.split()
        core = [w for w in words[:-1] if w.casefold() not in _NOT_A_NAME]
        if not core:
            continue
        counts[name] = counts.get(name, 0) + 1
    if not counts:
        return ""
    name, seen = max(counts.items(), key=lambda item: item[1])
    return name if seen >= 2 else ""


def _same_name(title: str, stem: str) -> bool:
    """Whether the metadata title only repeats the file's name ("report_v2" for
    report_v2.pdf): then the document's own heading says more."""
    folded = " ".join(title.split()).casefold()
    return bool(stem) and folded == stem.casefold() and " " not in folded


def _tidy_name(name: str, context: Sequence[str] = ()) -> str:
    """A name as it would be written: as the ``context`` lines spell it in mixed case when they
    do ("CVS HEALTH CORPORATION" → "CVS Health Corporation"), else title case when it was set in
    capitals, keeping initialisms ("3M", "MGM") whole."""
    name = " ".join(name.split()).strip(" ,")
    if not name.isupper():
        return name
    pattern = re.compile(r"\s+".join(re.escape(word) for word in name.split()), re.I)
    for line in context:
        for match in pattern.finditer(line):
            spelled = " ".join(match.group().split())
            if not spelled.isupper() and spelled[0].isupper():
                return spelled
    name = " ".join(_word_case(word) for word in name.split())
    name = re.sub(r"\b(And|Of|The)\b(?!$)", lambda m: m.group().lower(), name)
    return name[0].upper() + name[1:]


def _word_case(word: str) -> str:
    """One capitalised word in title case, save an abbreviation ("CO.") or an initialism: a
    word with a digit ("3M") or a short one with no vowel ("CVS", "MGM")."""
    if len(word) <= 3 and "." in word:
        return word
    letters = [c for c in word if c.isalpha()]
    if any(c.isdigit() for c in word) or (
        len(letters) <= 4 and not any(c in "AEIOUY" for c in letters)
    ):
        return word
    return word.title()
