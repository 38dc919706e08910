"""search_kb over look-alike documents (SPEC §6): a question that names a company and a fiscal
year prefers that filing as evidence in the fusion, says so in ``--explain``, and never hides
the other documents; the store's legs searched within named documents, on both backends."""

from __future__ import annotations

from dataclasses import replace

import pytest

from memoryd.kb.model import Document
from memoryd.service import MemoryService

from .kb_support import NOW, annual_report, only_ok, search_under


def library(service: MemoryService) -> dict[str, Document]:
    made = {
        "acme21": annual_report("Acme Pumps Inc.", 2021, "410", revenue="900"),
        "acme22": annual_report("Acme Pumps Inc.", 2022, "655", revenue="1,020"),
        "borealis22": annual_report("Borealis Valve Corporation", 2022, "77", revenue="310"),
    }
    return {
        name: only_ok(service.kb.ingest_bytes(body, f"{name}.md", now=NOW))
        for name, body in made.items()
    }


def test_a_question_naming_company_and_fiscal_year_prefers_that_filing_and_says_why(
    service: MemoryService,
) -> None:
    documents = library(service)

    result = service.kb.search(
        "What were Acme's FY2022 purchases of property and equipment?", limit=10
    )

    assert result.hits[0].document.id == documents["acme22"].id
    assert "(655)" in result.hits[0].chunk.text
    assert [r.document_id for r in result.routes] == [documents["acme22"].id]
    explained = result.to_json(explain=True)
    assert explained["routed_to"] == [
        {
            "doc": documents["acme22"].id,
            "title": "Acme Pumps Inc. — Form 10-K 2022",
            "because": ["names 'acme'", "fiscal 2022"],
        }
    ]
    routed = explained["results"][0]["explain"]
    assert routed is not None and routed["routed_vector_rank"] is not None
    # Evidence, not a filter: the look-alikes are still in the results.
    assert {h.document.id for h in result.hits} >= {
        documents["acme21"].id,
        documents["borealis22"].id,
    }


def test_the_other_year_and_the_other_company_are_found_by_naming_them(
    service: MemoryService,
) -> None:
    documents = library(service)

    older = service.kb.search("Acme capital expenditures fiscal 2021", limit=5)
    other = service.kb.search("Borealis FY22 capex", limit=5)
    unnamed = service.kb.search("purchases of property and equipment", limit=5)

    assert older.hits[0].document.id == documents["acme21"].id
    assert other.hits[0].document.id == documents["borealis22"].id
    assert unnamed.routes == ()


def test_a_year_that_one_filing_ends_names_it_when_the_question_names_no_company(
    service: MemoryService,
) -> None:
    documents = library(service)

    result = service.kb.search("purchases of property and equipment in fiscal 2021", limit=5)
    unrouted = search_under(service, result.query, route_by_year=False)
    both = service.kb.search("purchases of property and equipment in fiscal 2022", limit=5)

    # One filing of the library ends fiscal 2021: the question names it, and says so.
    assert [r.document_id for r in result.routes] == [documents["acme21"].id]
    assert result.to_json(explain=True)["routed_to"][0]["because"] == ["fiscal 2021 alone"]
    assert result.hits[0].document.id == documents["acme21"].id
    assert unrouted.routes == ()
    # Two filings end 2022 (Acme's and Borealis'): both named, the other year's not.
    assert sorted(r.document_id for r in both.routes) == sorted(
        [documents["acme22"].id, documents["borealis22"].id]
    )


def test_the_legs_search_within_the_named_documents_only(service: MemoryService) -> None:
    documents = library(service)
    kb = service.store.kb
    acme = [documents["acme22"].id]
    vector = service.embedder.embed(["purchases of property and equipment"])[0]

    near = kb.nearest_chunks(vector, 50, documents=acme)
    words = kb.keyword_chunks(["purchases", "property", "equipment"], 50, documents=acme)

    assert near and {key.document_id for key, _ in near} == set(acme)
    assert [cosine for _, cosine in near] == sorted((c for _, c in near), reverse=True)
    # The same cosines as the unrestricted leg gives those chunks.
    overall = dict(kb.nearest_chunks(vector, 100))
    assert all(abs(overall[key] - cosine) < 1e-4 for key, cosine in near if key in overall)
    assert words and {key.document_id for key in words} == set(acme)
    assert kb.nearest_chunks(vector, 5, documents=[]) == []
    assert kb.keyword_chunks(["purchases"], 5, documents=[]) == []
    everywhere = {key.document_id for key in kb.keyword_chunks(["purchases"], 50)}
    assert everywhere == {d.id for d in documents.values()}


def test_table_rows_are_found_alone_and_lead_to_their_chunk(service: MemoryService) -> None:
    documents = library(service)
    kb = service.store.kb
    acme22 = documents["acme22"]

    found = kb.keyword_rows(["purchases", "property", "equipment"], 10)
    within = kb.keyword_rows(["purchases", "property", "equipment"], 10, documents=[acme22.id])

    assert {key.document_id for key in found} == {d.id for d in documents.values()}
    assert len(found) == len(set(found))
    [chunk] = kb.chunks_by_key(within).values()
    assert chunk.document_id == acme22.id and "(655)" in chunk.text
    result = service.kb.search("Acme FY2022 purchases of property and equipment", limit=3)
    assert result.hits[0].chunk.position == chunk.position
    assert result.hits[0].ranked.routed_row_rank == 1
    # A chunk of prose has no rows.
    assert kb.keyword_rows(["castings", "interrupted"], 10) == []


def test_rows_follow_the_chunks_through_rename_reingest_and_delete(
    service: MemoryService,
) -> None:
    documents = library(service)
    kb = service.store.kb
    acme21 = documents["acme21"]

    service.kb.rename(acme21.id, "Zephyr Industrial — Form 10-K 2021")
    assert [k.document_id for k in kb.keyword_rows(["zephyr"], 10)] == [acme21.id]

    again = service.kb.ingest_bytes(
        annual_report("Acme Pumps Inc.", 2021, "999", revenue="900"), "acme21.md", now=NOW
    )
    assert again.outcome == "ok"
    [chunk] = kb.chunks_by_key(kb.keyword_rows(["purchases"], 10, documents=[acme21.id])).values()
    assert "(999)" in chunk.text

    service.kb.delete(acme21.id)
    assert acme21.id not in {k.document_id for k in kb.keyword_rows(["purchases"], 10)}


class CountingLegs:
    """The store's kb part, counting each leg's searches (everything else passes through)."""

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> object:
        found = getattr(self.inner, name)
        if name not in ("nearest_chunks", "keyword_chunks", "keyword_rows", "nearest_rows"):
            return found

        def counted(*args: object, **kwargs: object) -> object:
            self.calls.append(name)
            return found(*args, **kwargs)

        return counted


def test_routing_reads_each_leg_once_and_ranks_the_named_filing_beyond_the_pool(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    documents = library(service)
    legs = CountingLegs(service.store.kb)
    monkeypatch.setattr(service.store, "kb", legs)
    # One candidate per leg for the whole library: the named filing's table is ranked
    # within that filing from the same reads.
    # (The keyword legs searched again within it without its name: the next test.)
    service.kb.search_policy = replace(service.kb.search_policy, pool=1, route_topic_only=False)

    result = service.kb.search("Acme FY2022 purchases of property and equipment", limit=5)

    assert sorted(legs.calls) == [
        "keyword_chunks",
        "keyword_rows",
        "nearest_chunks",
        "nearest_rows",
    ]
    table = next(h for h in result.hits if "(655)" in h.chunk.text)
    assert table.document.id == documents["acme22"].id
    assert table.ranked.routed_keyword_rank is not None
    assert table.ranked.routed_row_rank == 1


def test_the_named_filing_is_searched_again_without_the_name_that_named_it(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    documents = library(service)
    legs = CountingLegs(service.store.kb)
    monkeypatch.setattr(service.store, "kb", legs)

    result = service.kb.search("Acme FY2022 purchases of property and equipment", limit=5)

    # The library's row leg read twice (memoryd.kb.keyword_legs): its best rows, read shallow,
    # hold fewer chunks than the rows that count, so it is read deep; then within the filing.
    assert sorted(legs.calls) == [
        "keyword_chunks",
        "keyword_chunks",
        "keyword_rows",
        "keyword_rows",
        "keyword_rows",
        "nearest_chunks",
        "nearest_rows",
    ]
    table = next(h for h in result.hits if "(655)" in h.chunk.text)
    assert table.document.id == documents["acme22"].id
    assert table.ranked.routed_row_rank == 1


def test_only_the_best_rows_count_as_evidence(service: MemoryService) -> None:
    library(service)
    service.kb.search_policy = replace(service.kb.search_policy, row_pool=1)

    result = service.kb.search("net sales and purchases of property and equipment", limit=10)

    with_rows = [h for h in result.hits if h.ranked.row_rank is not None]
    assert len(with_rows) == 1 and with_rows[0].ranked.row_rank == 1
    assert len({h.document.id for h in result.hits if "Net sales" in h.chunk.text}) == 3
