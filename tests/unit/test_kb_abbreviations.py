"""A question's abbreviations spelled out from the documents' own row labels (pure,
kb/abbreviation_policy.py), the capitalised words routing looks up (kb/routing.py) and the
words left out within the named documents (kb/naming.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memoryd.kb.abbreviation_policy import candidates, expand, expanded_terms, label_names
from memoryd.kb.model import Document, DocumentStatus, SourceType
from memoryd.kb.naming import topic_terms
from memoryd.kb.routing import Route, query_names, symbols, with_names

LABELS = [
    "Diluted (Earnings per share:) — CONSOLIDATED STATEMENTS OF OPERATIONS",
    "Basic (Earnings per share:) — CONSOLIDATED STATEMENTS OF OPERATIONS",
    "Capital expenditures (Cash flows from investing activities:) — CONSOLIDATED STATEMENTS",
    "Research and development (Operating expenses:) — Operating expenses for 2022 were as follows",
    "Depreciation and amortization (Operating activities) — CASH FLOWS",
    "Total operating expenses — in millions, except per share amounts",
    "Effective tax rate",
]


def phrases(query: str, labels: list[str] = LABELS) -> dict[str, tuple[str, ...]]:
    return {e.token: e.phrases for e in expand(query, labels)}


@pytest.mark.parametrize(
    ("query", "token", "phrase"),
    [
        ("Apple diluted EPS for fiscal 2022", "EPS", "earnings per share"),
        ("Oracle FY2023 capex", "capex", "capital expenditures"),
        ("Oracle R&D intensity in fiscal 2023", "R&D", "research and development"),
        ("Coca-Cola D&A for fiscal 2015", "D&A", "depreciation and amortization"),
        ("what was opex in 2022", "opex", "operating expenses"),
    ],
)
def test_an_abbreviation_spells_out_a_whole_label_or_group(
    query: str, token: str, phrase: str
) -> None:
    assert phrases(query) == {token: (phrase,)}


def test_words_a_label_uses_and_ordinary_words_are_not_abbreviations() -> None:
    # "rate" is a word of the labels; "eps" in lower case is no initialism; "Apple", "fiscal",
    # "diluted" spell no label; a table's title ("except per share") is not mined.
    assert phrases("Apple diluted eps rate for fiscal 2022") == {}
    assert phrases("EPS", ["Total operating expenses — in millions, except per share"]) == {}
    assert phrases("Oracle EPS", []) == {}


def test_the_labels_most_used_phrases_come_first() -> None:
    labels = ["Earnings per share", "Earnings per share (Diluted)", "Exercise price per share"]

    assert phrases("NFLX EPS", labels) == {
        "EPS": ("earnings per share", "exercise price per share")
    }


def test_label_names_are_the_label_and_group_not_the_title() -> None:
    assert label_names("Diluted (Earnings per share:) — CONSOLIDATED STATEMENTS") == [
        "Diluted",
        "Earnings per share",
    ]
    assert label_names("Effective tax rate") == ["Effective tax rate"]


def test_candidates_read_initials_from_capitals_or_an_ampersand() -> None:
    assert candidates("EPS, R&D and capex of KO in FY22") == [
        ("EPS", True),
        ("R&D", True),
        ("capex", False),
    ]


def test_expanded_terms_leave_out_connectors() -> None:
    spelled = expand("EPS and R&D", LABELS)

    assert expanded_terms(spelled) == ["earnings", "share", "research", "development"]


def test_symbols_are_words_of_two_to_five_capitals() -> None:
    assert symbols("MSFT EPS for FY2022, per MSFT's R&D and NASDAQ100") == ["MSFT", "EPS"]


def test_with_names_adds_words_and_keeps_years_and_forms() -> None:
    named = query_names("MSFT 10-K fiscal 2022")

    widened = with_names(named, {"microsoft"})

    assert "microsoft" in widened.words and named.words <= widened.words
    assert (widened.years, widened.forms) == (named.years, named.forms)


def _filing(doc_id: str, title: str, uri: str) -> Document:
    at = datetime(2026, 12, 2, tzinfo=UTC)
    return Document(
        id=doc_id,
        source_uri=uri,
        collection="filings",
        source_type=SourceType.CURATED,
        title=title,
        status=DocumentStatus.READY,
        created_at=at,
        updated_at=at,
    )


def test_topic_terms_leave_out_the_name_and_ticker_that_named_the_documents() -> None:
    apple = _filing("a22", "Apple Inc. — Form 10-K 2022", "/f/APPLE_2022_10K.pdf")
    routes = [Route("a22", apple.title, ("names 'apple'", "fiscal 2022"))]
    terms = ["apple", "aapl", "revenue", "2022"]

    assert topic_terms(terms, routes, {"a22": apple}, "Apple AAPL revenue 2022") == [
        "revenue",
        "2022",
    ]
    # Nothing else left: the question's words as they were; no route: nothing taken out.
    assert topic_terms(["apple"], routes, {"a22": apple}, "Apple") == ["apple"]
    assert topic_terms(terms, [], {}, "apple aapl revenue 2022") == terms
