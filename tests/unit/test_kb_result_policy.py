"""search_kb's results merged by page (pure): a result on a page of a better result of the same
document joins it; pageless chunks and other documents' pages stay places of their own."""

from __future__ import annotations

from dataclasses import replace

import pytest

from memoryd.kb.model import Chunk, ChunkKey
from memoryd.kb.result_policy import (
    loose_stem,
    merge_pages,
    row_evidence,
    row_evidence_first,
    sources_first,
    year_rows,
)
from memoryd.kb.search import KbSearchPolicy, RankedChunk


def ranked(document: str, position: int, score: float) -> RankedChunk:
    return RankedChunk(ChunkKey(document, position), score, None, None, None, 0, 1.0)


def positions(places: list[tuple[RankedChunk, tuple[ChunkKey, ...]]]) -> list[tuple[int, ...]]:
    return [(lead.key.position, *(k.position for k in more)) for lead, more in places]


def test_a_result_on_a_better_results_page_joins_it_and_the_next_place_moves_up() -> None:
    results = [ranked("a", 1, 0.9), ranked("a", 2, 0.8), ranked("a", 7, 0.7), ranked("b", 1, 0.6)]
    pages = {
        ChunkKey("a", 1): (10, 10),
        ChunkKey("a", 2): (10, 11),
        ChunkKey("a", 7): (30, 30),
        ChunkKey("b", 1): (10, 10),
    }

    assert positions(merge_pages(results, pages, 3)) == [(1, 2), (7,), (1,)]


def test_only_the_leading_chunks_pages_gather_others() -> None:
    # 2 joins 1 (page 11); 3 shares page 12 with 2 only, so it is a place of its own.
    results = [ranked("a", 1, 0.9), ranked("a", 2, 0.8), ranked("a", 3, 0.7)]
    pages = {ChunkKey("a", 1): (10, 11), ChunkKey("a", 2): (11, 12), ChunkKey("a", 3): (12, 12)}

    assert positions(merge_pages(results, pages, 5)) == [(1, 2), (3,)]


def test_chunks_without_pages_are_never_merged() -> None:
    results = [ranked("a", 1, 0.9), ranked("a", 2, 0.8)]

    assert positions(merge_pages(results, {}, 5)) == [(1,), (2,)]


def test_a_later_chunk_of_a_kept_page_still_joins_once_the_places_are_full() -> None:
    results = [ranked("a", 1, 0.9), ranked("b", 1, 0.8), ranked("a", 2, 0.7), ranked("c", 1, 0.6)]
    pages = {ChunkKey("a", 1): (4, 4), ChunkKey("a", 2): (4, 4)}

    assert positions(merge_pages(results, pages, 2)) == [(1, 2), (1,)]
    assert merge_pages(results, pages, 0) == []


def test_a_place_shows_at_most_the_chunks_asked_and_leaves_the_rest_out() -> None:
    results = [ranked("a", n, 1.0 - n / 10) for n in range(1, 5)] + [ranked("b", 1, 0.1)]
    pages = {ChunkKey("a", n): (7, 7) for n in range(1, 5)}

    assert positions(merge_pages(results, pages, 5, most=2)) == [(1, 2), (1,)]
    assert positions(merge_pages(results, pages, 5)) == [(1, 2, 3, 4), (1,)]


def a_chunk(position: int, text: str, breadcrumb: str = "Filing") -> Chunk:
    return Chunk("a", position, (), breadcrumb, text, 10)


STATEMENT_ROWS = (
    "|  | 2022 | 2021 |\n|---|---|---|\n"
    "| Purchases of property and equipment | (10,708) | (11,085) |\n"
)
PROSE = "Purchases of property and equipment rose in 2022, the MD&A says, as in 2021."


def test_a_row_naming_the_line_item_under_the_years_column_goes_ahead_of_prose() -> None:
    results = [ranked("a", 1, 0.05), ranked("a", 2, 0.04)]
    chunks = {ChunkKey("a", 1): a_chunk(1, PROSE), ChunkKey("a", 2): a_chunk(2, STATEMENT_ROWS)}
    policy = replace(KbSearchPolicy(), row_evidence_weight=1.0)
    terms = ["purchases", "property", "equipment", "2022"]

    first = row_evidence_first(
        results, chunks, "purchases of property and equipment 2022", terms, policy
    )

    assert [r.key.position for r in first] == [2, 1]
    assert first[0].row_evidence_rank == 1 and first[1].row_evidence_rank is None
    # A year no column names, no year at all, or the weight at 0: the order stays.
    for question, used in (
        ("... in 2019", policy),
        ("... lately", policy),
        ("2022", replace(KbSearchPolicy(), row_evidence_weight=0.0)),
    ):
        kept = row_evidence_first(results, chunks, question, terms, used)
        assert [r.key.position for r in kept] == [1, 2]


def test_a_rows_cover_is_the_share_of_its_label_or_of_the_questions_words() -> None:
    chunk = a_chunk(1, STATEMENT_ROWS)
    words = frozenset({"purchas", "property", "revenue", "total"})

    # The label's words: purchases, property, equipment; two of them are the question's.
    assert row_evidence(chunk, words, frozenset({"2022"}), "label")[0] == pytest.approx(2 / 3)
    assert row_evidence(chunk, words, frozenset({"2022"}), "question")[0] == pytest.approx(2 / 4)
    assert row_evidence(chunk, words, frozenset({"2022"}), "both")[0] == pytest.approx(1 / 3)
    assert row_evidence(chunk, words, frozenset({"2020"}), "label") == (0.0, 0)
    # And how many of the chunk's rows have a value under the year (the table's one row).
    assert row_evidence(chunk, words, frozenset({"2022"}), "label")[1] == 1


COPY = (
    "|  | 2022 | 2021 |\n|---|---|---|\n| Purchases of property and equipment | 10,708 | 11,085 |\n"
)
FULL = (
    "|  | 2022 | 2021 |\n|---|---|---|\n"
    "| Net income | 99,803 | 94,680 |\n"
    "| Purchases of property and equipment | (10,708) | (11,085) |\n"
    "| Payments for dividends | (14,841) | (14,467) |\n"
)


def test_a_copy_of_a_rows_figure_goes_after_the_fuller_table_it_is_copied_from() -> None:
    results = [ranked("a", 1, 0.05), ranked("b", 2, 0.045), ranked("a", 2, 0.04)]
    chunks = {
        ChunkKey("a", 1): a_chunk(1, COPY),
        ChunkKey("b", 2): Chunk("b", 2, (), "Filing", FULL, 10),
        ChunkKey("a", 2): a_chunk(2, FULL),
    }
    terms = ["purchases", "property", "equipment", "2022"]
    year = frozenset({"2022"})

    moved = sources_first(results, chunks, year, terms, KbSearchPolicy())

    # The statement of the same document goes ahead of its copy and takes its score; the
    # other document's statement, with the same figure, stays where it was.
    assert [(r.key.document_id, r.key.position) for r in moved] == [("a", 2), ("a", 1), ("b", 2)]
    assert moved[0].score == 0.05
    # Off, without a year the columns name, or with the copy's figure not the statement's.
    other = {**chunks, ChunkKey("a", 1): a_chunk(1, COPY.replace("10,708", "10,709"))}
    for used_chunks, years, policy in (
        (chunks, year, replace(KbSearchPolicy(), row_sources_first=False)),
        (chunks, frozenset({"2020"}), KbSearchPolicy()),
        (chunks, frozenset(), KbSearchPolicy()),
        (other, year, KbSearchPolicy()),
    ):
        kept = sources_first(results, used_chunks, years, terms, policy)
        assert [r.key.position for r in kept] == [1, 2, 2]


def test_a_rows_figures_are_those_of_its_best_covering_rows_singular_or_plural() -> None:
    chunk = a_chunk(1, FULL.replace("Net income", "Revenues"))
    years = frozenset({"2022"})

    # "revenue" and "Revenues" are one word loosely stemmed, not by the keyword stem.
    assert year_rows(chunk, frozenset({"revenu"}), years, "question", loose_stem)[2] == {"99,803"}
    assert year_rows(chunk, frozenset({"revenue"}), years, "question")[2] == frozenset()
    # Of two rows sharing words, the figures of the one covering more of the question's.
    words = frozenset({"purchas", "property", "equipment"})
    assert year_rows(chunk, words, years, "question")[2] == {"10,708"}


def test_only_the_fullest_table_showing_the_figure_moves_not_a_fuller_copy() -> None:
    # The MD&A's two-row copy is fuller than the note's one row, but the statement is fuller
    # still: the statement goes first, the two copies keep their order.
    middle = COPY + "| Payments for dividends | (14,841) | (14,467) |\n"
    results = [ranked("a", 1, 0.05), ranked("a", 2, 0.045), ranked("a", 3, 0.04)]
    chunks = {
        ChunkKey("a", 1): a_chunk(1, COPY),
        ChunkKey("a", 2): a_chunk(2, middle),
        ChunkKey("a", 3): a_chunk(3, FULL),
    }
    terms = ["purchases", "property", "equipment", "2022"]

    moved = sources_first(results, chunks, frozenset({"2022"}), terms, KbSearchPolicy())

    assert [r.key.position for r in moved] == [3, 1, 2]


def test_the_questions_words_the_tables_heading_holds_count_for_its_rows() -> None:
    heading = "Filing › Consolidated Statements of Cash Flows"
    chunk = a_chunk(1, STATEMENT_ROWS, heading)
    # "cash flow statement" names the table; "purchases", "property" name the row.
    words = frozenset({"cash", "flow", "statement", "purchas", "property", "much", "add"})
    year = frozenset({"2022"})

    assert row_evidence(chunk, words, year, "question")[0] == pytest.approx(2 / 7)
    assert row_evidence(chunk, words, year, "question, heading")[0] == pytest.approx(5 / 7)
    # The heading's words alone make no row evidence: the label must hold one of the words.
    assert row_evidence(chunk, words - {"purchas", "property"}, year, "question, heading") == (
        0.0,
        1,
    )
    # Under another heading (a note's), only the label's words count.
    note = a_chunk(1, STATEMENT_ROWS, "Filing › Note 7: Property and Equipment")
    assert row_evidence(note, words, year, "question, heading")[0] == pytest.approx(2 / 7)
    # The label's share and the product are the label's alone.
    assert row_evidence(chunk, words, year, "label")[0] == pytest.approx(2 / 3)
