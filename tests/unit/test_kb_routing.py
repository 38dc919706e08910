"""Routing by what a question names (pure, kb/routing.py) and the routed legs in the fusion:
evidence for the documents a question names, never a filter."""

from __future__ import annotations

import pytest

from memoryd.kb.model import ChunkKey, SourceType
from memoryd.kb.routing import (
    identities,
    identity,
    query_names,
    route,
    spell_fiscal_years,
    year_routes,
)
from memoryd.kb.search import DocumentWeighting, KbSearchPolicy, fuse

LIBRARY = identities(
    [
        ("apple22", "Apple Inc. — Form 10-K 2022", "/f/APPLE_2022_10K.pdf"),
        ("apple21", "Apple Inc. — Form 10-K 2021", "/f/APPLE_2021_10K.pdf"),
        ("ko16", "The Coca-Cola Company — Form 10-K 2016", "/f/COCACOLA_2016_10K.pdf"),
        ("ko15", "The Coca-Cola Company — Form 10-K 2015", "/f/library/COCACOLA_2015_10K.pdf"),
        ("msft", "Microsoft Corporation — Form 10-K 2022", "/f/MICROSOFT_2022_10K.pdf"),
        (
            "jpm",
            "JPMorgan Chase & Co. — Form 10-Q, quarter ended March 31, 2022",
            "/f/JPMORGAN_2022Q1_10Q.pdf",
        ),
        ("notes", "Harbour Ferry Timetables", "/f/ferry_timetables.md"),
    ]
)


def routed(question: str) -> list[str]:
    return [r.document_id for r in route(query_names(question), LIBRARY)]


@pytest.mark.parametrize(
    ("question", "documents"),
    [
        ("What was Apple's FY2022 capex?", ["apple22"]),
        ("Apple FY21 EPS (diluted)", ["apple21"]),
        ("apple capital expenditures in fiscal 2021", ["apple21"]),
        ("Coca-Cola capex in 2015", ["ko15"]),
        ("coca cola dividends 2016", ["ko16"]),
        ("Apple gross margin", ["apple22", "apple21"]),
        ("Microsoft 10-K revenue", ["msft"]),
        ("JPMorgan net interest income Q1 2022", ["jpm"]),
        ("harbour ferry timetables winter sailings", ["notes"]),
    ],
)
def test_a_question_naming_a_company_and_a_fiscal_year_routes_to_that_filing(
    question: str, documents: list[str]
) -> None:
    assert sorted(routed(question)) == sorted(documents)


@pytest.mark.parametrize(
    "question",
    [
        "what was capex in fiscal 2022?",  # a year alone names five filings
        "diluted earnings per share",
        "ferry",  # one word of a plain title is not its title
        "Form 10-K annual report",
    ],
)
def test_a_question_that_names_no_document_routes_nowhere(question: str) -> None:
    assert routed(question) == []


@pytest.mark.parametrize(
    ("question", "documents", "year"),
    [
        ("KO diluted EPS for 2016", ["ko16"], 2016),  # one filing of the library ends 2016
        ("Coke operating margin in FY15", ["ko15"], 2015),
        ("gross margin in fiscal 2021", ["apple21"], 2021),
        ("what was capex in fiscal 2022?", ["apple22", "jpm", "msft"], 2022),  # three: all
        ("diluted earnings per share", [], None),  # no year at all
        ("capex in 2019", [], None),  # no filing of that year
    ],
)
def test_a_year_alone_names_the_filings_that_end_it_when_few_do(
    question: str, documents: list[str], year: int | None
) -> None:
    found = year_routes(query_names(question), LIBRARY)

    assert sorted(r.document_id for r in found) == documents
    assert all(r.reasons == (f"fiscal {year} alone",) for r in found)


def test_a_year_that_many_filings_end_names_none() -> None:
    costco = identity("costco", "Costco Wholesale Corporation — Form 10-K 2022", "/f/COSTCO.pdf")

    assert year_routes(query_names("capex in fiscal 2022"), [*LIBRARY, costco]) == []
    assert len(year_routes(query_names("capex in fiscal 2022"), LIBRARY)) == 3


def test_the_route_says_why() -> None:
    [only] = route(query_names("Microsoft FY22 10-K capex"), LIBRARY)
    assert only.reasons == ("names 'microsoft'", "fiscal 2022", "Form 10-K")


def test_fiscal_years_are_the_titles_years_and_forms_come_from_title_or_file_name() -> None:
    apple = identity("a", "Apple Inc. — Form 10-K 2022", "/f/APPLE_2022_10K.pdf")
    assert apple.years == {2022} and apple.form == "10-K" and apple.names == {"apple"}
    bare = identity("b", "Annual numbers", "/f/acme_2019_10k.pdf")
    assert bare.years == {2019} and bare.form == "10-K" and bare.names == {"acme"}
    assert identity("c", "Claim 12", "scifact:12").names == frozenset()


@pytest.mark.parametrize(
    ("question", "spelled"),
    [
        ("Apple FY2022 capex", "Apple 2022 capex"),
        ("fy22 eps", "2022 eps"),
        ("fiscal 21 revenue", "2021 revenue"),
        ("fiscal year 2023 R&D", "2023 R&D"),
        ("Q1 2022 revenue", "Q1 2022 revenue"),
        ("FYI the fifty cents", "FYI the fifty cents"),
    ],
)
def test_fiscal_years_are_written_as_the_filings_write_them(question: str, spelled: str) -> None:
    assert spell_fiscal_years(question) == spelled


def k(document: str, position: int = 0) -> ChunkKey:
    return ChunkKey(document, position)


CURATED = DocumentWeighting(SourceType.CURATED, "main")
DOCS = {"apple22": CURATED, "apple21": CURATED, "msft": CURATED}


def test_routed_legs_lift_the_named_documents_chunk_above_a_look_alike() -> None:
    # Globally the 2021 report's row ranks first; within the named 2022 report, its row first.
    vector = [(k("apple21", 5), 0.8), (k("msft", 3), 0.7), (k("apple22", 5), 0.6)]
    keyword = [k("apple21", 5), k("msft", 3), k("apple22", 5)]
    shared = {key: 3 for key in keyword}
    plain = fuse(vector, keyword, shared, DOCS, frozenset(), KbSearchPolicy(), 3)
    assert plain[0].key == k("apple21", 5)

    fused = fuse(
        vector,
        keyword,
        shared,
        DOCS,
        frozenset(),
        KbSearchPolicy(),
        3,
        routed_vector_hits=[(k("apple22", 5), 0.6)],
        routed_keyword_hits=[k("apple22", 5)],
    )
    assert fused[0].key == k("apple22", 5)
    assert (fused[0].routed_vector_rank, fused[0].routed_keyword_rank) == (1, 1)
    # Evidence, not a filter: the other documents' chunks are still there.
    assert {r.key for r in fused} == {k("apple21", 5), k("msft", 3), k("apple22", 5)}


def test_routed_legs_keep_the_gates_and_weigh_nothing_at_route_weight_zero() -> None:
    vector = [(k("apple21", 5), 0.8)]
    routed_vector = [(k("apple22", 1), 0.2), (k("apple22", 2), 0.5)]
    fused = fuse(
        vector,
        [],
        {},
        DOCS,
        frozenset(),
        KbSearchPolicy(),
        5,
        routed_vector_hits=routed_vector,
        routed_keyword_hits=[k("apple22", 3)],
    )
    # Cosine 0.2 is under the floor; a keyword hit sharing no words is under its gate.
    assert {r.key for r in fused} == {k("apple21", 5), k("apple22", 2)}
    off = fuse(
        vector,
        [],
        {},
        DOCS,
        frozenset(),
        KbSearchPolicy(route_weight=0.0),
        5,
        routed_vector_hits=routed_vector,
    )
    assert [r.key for r in off] == [k("apple21", 5)]
