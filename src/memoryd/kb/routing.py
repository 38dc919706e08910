"""Which documents a question names (pure): its company or registrant, form, fiscal period,
title or file name.

A library of annual reports looks alike: every 10-K has the same items, headings and table
shapes, so the legs alone let another company's filing, or the same company's report of another
year, win. A question that names "Apple" and "fiscal 2022" says which document it is about. That
is evidence for the fusion (:func:`memoryd.kb.search.fuse` adds legs searched within the named
documents), never a filter: a question naming nothing routes nowhere, and a named document's
chunks still have to be found by the legs.

A document's identity comes from its title ("Apple Inc. — Form 10-K 2022", where the year is
the fiscal year) and its file name ("APPLE_2022_10K.pdf"). A question names a document when it
holds a word of the registrant's name (not a corporate suffix, a number or a form), the whole
file name of another document, or most of a plain title's words; when more than three documents
tie, it names none. Its fiscal years ("FY22", "fiscal 2022", "2022") and form ("10-K", "annual
report") then pick among the documents named.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import PurePath

# Words of a company's name that name no company.
_SUFFIXES = frozenset(
    {"inc", "incorporated", "corp", "corporation", "company", "co", "ltd", "limited", "plc",
     "group", "holdings", "holding", "the", "and", "of", "sa", "nv", "ag", "llc", "lp",
     "international", "form", "annual", "report", "quarterly", "quarter", "ended", "pdf"}
)  # fmt: skip
_FORM_IN_TITLE = re.compile(r"\bForm\s+(10-K|10-Q|8-K|20-F|40-F|6-K|S-1|DEF 14A)", re.I)
_FORM_IN_NAME = re.compile(r"(?<![a-z0-9])(10-?k|10-?q|8-?k|20-?f)(?![a-z0-9])", re.I)
_YEAR = re.compile(r"(?<!\d)((?:19|20)\d\d)(?!\d)")
# "FY22", "FY 2022", "fiscal 22", "fiscal year 2022", "F2022".
_FISCAL = re.compile(r"\b(?:fy|fiscal(?:\s+year)?|f)\s*'?(\d{4}|\d{2})\b", re.I)
_QUERY_FORM = {
    "10-K": re.compile(r"\b10-?k\b|\bannual report\b", re.I),
    "10-Q": re.compile(r"\b10-?q\b|\bquarterly report\b", re.I),
}
_WORD = re.compile(r"[a-z0-9]+(?:[-'’][a-z0-9]+)*")
# A plain title is named when the question holds this share of its words (at least two).
TITLE_SHARE = 0.75


@dataclass(frozen=True)
class Identity:
    """What names a document: its name words, title words, form and fiscal years."""

    document_id: str
    title: str
    names: frozenset[str]
    title_words: frozenset[str]
    form: str | None
    years: frozenset[int]
    # A filing is named by any word of its registrant; another document only by its whole
    # file name (every name word of it).
    filing: bool = True


@dataclass(frozen=True)
class Route:
    """A document the question names, and what named it (for ``--explain``)."""

    document_id: str
    title: str
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class QueryNames:
    """What a question names: its words, fiscal years and forms."""

    words: frozenset[str]
    years: frozenset[int]
    forms: frozenset[str]


# Why kept: a search works out the identity of every candidate document (up to 100 on SciFact,
# 1.3 ms a search), and again when the keyword legs add candidates (bench/README.md).
@lru_cache(maxsize=4096)
def identity(document_id: str, title: str, source_uri: str) -> Identity:
    """A document's identity from its title and file name (kept: it depends on them alone)."""
    registrant, _, rest = title.partition(" — ")
    stem = PurePath(_path_of(source_uri)).stem if source_uri else ""
    stem_words = _words(stem.replace("_", " "))
    names = {w for w in _words(registrant) | stem_words if _is_name(w)} if rest else set()
    if not rest:
        names = {w for w in stem_words if _is_name(w)}
    form_match = _FORM_IN_TITLE.search(title) or _FORM_IN_NAME.search(stem.replace("_", " "))
    form = None
    if form_match is not None:
        raw = form_match.group(1).upper()
        form = raw if "-" in raw else f"{raw[:2]}-{raw[2:]}"
    years = {int(y) for y in _YEAR.findall(rest)} if rest else set()
    if not years:
        years = {int(y) for y in _YEAR.findall(stem)}
    return Identity(
        document_id,
        title,
        frozenset(names),
        frozenset(w for w in _words(title) if w not in _SUFFIXES and not w.isdigit()),
        form,
        frozenset(years),
        filing=bool(rest),
    )


def query_names(query: str) -> QueryNames:
    """The words, fiscal years and forms a question names."""
    years = {int(y) for y in _YEAR.findall(query)}
    for short in _FISCAL.findall(query):
        years.add(int(short) if len(short) == 4 else 2000 + int(short))
    forms = {form for form, pattern in _QUERY_FORM.items() if pattern.search(query)}
    return QueryNames(frozenset(_words(query)), frozenset(years), frozenset(forms))


def route(named: QueryNames, identities: Sequence[Identity], most: int = 3) -> list[Route]:
    """The documents the question names best (at most ``most``), each with why; none when the
    question names no document or would name too many to tell apart."""
    if not identities:
        return []
    scored: list[tuple[float, Identity, tuple[str, ...]]] = []
    for ident in identities:
        naming = naming_reason(ident, named)
        if naming is None:
            continue
        reasons: list[str] = [naming]
        score = 2.0
        years = ident.years & named.years
        if years:
            score += 1.0
            reasons.append(f"fiscal {min(years)}")
        if named.forms and ident.form in named.forms:
            score += 0.5
            reasons.append(f"Form {ident.form}")
        scored.append((score, ident, tuple(reasons)))
    if not scored:
        return []
    best = max(score for score, _, _ in scored)
    chosen = [(ident, reasons) for score, ident, reasons in scored if score == best]
    if len(chosen) > most:
        return []
    return [Route(ident.document_id, ident.title, reasons) for ident, reasons in chosen]


def naming_reason(ident: Identity, named: QueryNames) -> str | None:
    """Why the question names the document (its registrant's names or its title), or None: a
    document :func:`route` can choose only if this is not None."""
    shared = sorted(ident.names & named.words)
    if shared and not ident.filing and len(shared) < len(ident.names):
        shared = []
    if shared:
        return "names " + ", ".join(repr(w) for w in shared)
    if _title_named(ident, named):
        return "names its title"
    return None


def identities(documents: Iterable[tuple[str, str, str]]) -> list[Identity]:
    """Identities of (id, title, source URI) triples."""
    return [identity(doc_id, title, uri) for doc_id, title, uri in documents]


def _path_of(source_uri: str) -> str:
    """The path part of a source: a file path, a URL's path, an upload's or a tagged source's
    name ("upload:q3.pdf", "scifact:12")."""
    bare = source_uri.split("?")[0].split("#")[0]
    scheme, colon, rest = bare.partition(":")
    if colon and "/" not in scheme and not rest.startswith("//") and len(scheme) > 1:
        return rest
    return bare


def _title_named(ident: Identity, named: QueryNames) -> bool:
    words = {w for w in ident.title_words if len(w) > 2}
    if len(words) < 2:
        return False
    return len(words & named.words) >= TITLE_SHARE * len(words)


def _is_name(word: str) -> bool:
    """A word that can name a company: not a suffix, a number, a form or a dated part of a
    file name ("2022q1")."""
    return (
        len(word) >= 2
        and word not in _SUFFIXES
        and not _YEAR.match(word)
        and not word.isdigit()
        and not _FORM_IN_NAME.fullmatch(word)
    )


def _words(text: str) -> set[str]:
    """Folded words, with a hyphenated name also as its parts ("coca-cola": coca, cola)."""
    found: set[str] = set()
    for word in _WORD.findall(text.casefold().replace("’", "'")):
        word = word.removesuffix("'s")
        found.add(word)
        if "-" in word:
            found.update(part for part in word.split("-") if part)
    return found


# A word in capitals names the documents whose first page shows it (a ticker on a filing's
# cover) when at most this many do; its first this many keyword hits are looked at.
MAX_SYMBOL_DOCUMENTS = 3
SYMBOL_POOL = 30
_SYMBOL = re.compile(r"(?<![\w&])[A-Z]{2,5}(?![\w&])")


def year_routes(
    named: QueryNames, identities: Sequence[Identity], most: int = MAX_SYMBOL_DOCUMENTS
) -> list[Route]:
    """The filings among ``identities`` (a whole library) of a fiscal year the question names,
    when at most ``most`` are: "KO diluted EPS for 2016" names no registrant ("KO" is on no
    page of Coca-Cola's filings), but one filing of the library ends fiscal 2016. None when
    more end it (a year that many filings share says nothing of which)."""
    held = [i for i in identities if i.filing and i.years & named.years]
    if not held or len(held) > most:
        return []
    return [
        Route(i.document_id, i.title, (f"fiscal {min(i.years & named.years)} alone",)) for i in held
    ]


def symbols(query: str) -> list[str]:
    """The words of 2-5 capital letters in ``query`` ("MSFT", "NFLX"), first seen first."""
    return list(dict.fromkeys(_SYMBOL.findall(query)))


def with_names(named: QueryNames, names: Iterable[str]) -> QueryNames:
    """``named`` as if the question also held ``names``."""
    return QueryNames(named.words | frozenset(names), named.years, named.forms)


def spell_fiscal_years(query: str) -> str:
    """The question with "FY22", "FY2022" or "fiscal 22" written as the year ("2022"), the way
    a filing's tables and text write it."""

    def year(match: re.Match[str]) -> str:
        short = match.group(1)
        return short if len(short) == 4 else str(2000 + int(short))

    return _FISCAL.sub(year, query)
