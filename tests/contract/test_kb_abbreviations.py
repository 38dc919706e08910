"""search_kb across the analyst's words (SPEC §6), on both backends: an abbreviation spelled out
from the named documents' own row labels, a ticker on a document's first page naming it, and
the named documents searched without the words that named them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pytest

from memoryd.kb import keyword_legs
from memoryd.kb.keyword_legs import KeywordLegs
from memoryd.kb.model import Document
from memoryd.kb.naming import named_documents
from memoryd.kb.routing import Route
from memoryd.kb.search import KbSearchPolicy
from memoryd.service import MemoryService
from memoryd.storage.kb_protocols import KnowledgeStore

from .kb_support import NOW, annual_report, markdown_doc, only_ok


def library(service: MemoryService) -> dict[str, Document]:
    made = {
        "acme21": annual_report("Acme Pumps Inc.", 2021, "410", capex_label="Capital expenditures"),
        "acme22": annual_report("Acme Pumps Inc.", 2022, "655", capex_label="Capital expenditures"),
        "borealis22": annual_report("Borealis Valve Corporation", 2022, "77"),
    }
    return {
        name: only_ok(service.kb.ingest_bytes(body, f"{name}.md", now=NOW))
        for name, body in made.items()
    }


def test_row_labels_are_each_distinct_label_of_the_documents_asked(
    service: MemoryService,
) -> None:
    documents = library(service)
    kb = service.store.kb

    labels = kb.row_labels([documents["acme22"].id])

    assert sorted(labels) == sorted(set(labels))
    assert any(label.startswith("Capital expenditures") for label in labels)
    assert not any("Purchases of property" in label for label in labels)
    assert kb.row_labels([]) == []


def test_an_abbreviation_reaches_the_row_its_label_spells_out(service: MemoryService) -> None:
    documents = library(service)
    question = "Acme FY2022 capex"

    spelled = service.kb.search(question, limit=5)
    service.kb.search_policy = replace(service.kb.search_policy, expand_labels=False)
    plain = service.kb.search(question, limit=5)

    top = spelled.hits[0]
    assert top.document.id == documents["acme22"].id
    assert "(655)" in top.chunk.text
    before = next((h.ranked.score for h in plain.hits if h.ranked.key == top.ranked.key), 0.0)
    assert top.ranked.score > before
    assert top.ranked.routed_row_rank == 1


def test_a_ticker_on_the_first_page_names_the_document(service: MemoryService) -> None:
    library(service)
    cover = markdown_doc(
        "Borealis Valve Corporation — Form 10-K 2023",
        {
            "Cover": "Trading symbol BRVL on the New York Stock Exchange.",
            "Consolidated Statements of Cash Flows": (
                "| (in millions) | 2023 | 2022 |\n|---|---|---|\n"
                "| Purchases of property and equipment | (91) | (77) |\n"
            ),
        },
    )
    borealis23 = only_ok(service.kb.ingest_bytes(cover.encode(), "borealis23.md", now=NOW))

    result = service.kb.search("BRVL purchases of property and equipment in 2023", limit=5)
    nothing = service.kb.search("QXZW purchases of property and equipment", limit=5)

    assert [r.document_id for r in result.routes] == [borealis23.id]
    assert result.routes[0].reasons[0] == "its first page shows 'BRVL'"
    assert result.hits[0].document.id == borealis23.id
    assert nothing.routes == ()


def test_keyword_legs_read_shallow_give_the_results_of_the_deep_read(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    library(service)
    questions = [
        "Acme FY2022 capex",  # spelled out, a named document
        "Acme capital expenditures in 2022",  # named, searched within without "acme"
        "Acme Pumps",  # named by every word: its candidates come from the deep read
        "capital expenditures and revenue",  # names no document
        "BRVL capex",  # a word in capitals: routed after the keyword legs
    ]
    depths: list[bool] = []
    early: list[bool] = []
    every_deep = False
    read, routes = keyword_legs.read_legs, keyword_legs.routes_before_legs

    def answers() -> list[object]:
        found = [service.kb.search(q, limit=10) for q in questions]
        return [
            (
                [(r.document_id, r.reasons) for r in result.routes],
                [(h.ranked.key.document_id, h.ranked.key.position, h.ranked.score) for h in hits],
            )
            for result, hits in ((r, r.hits) for r in found)
        ]

    def recorded(
        kb: KnowledgeStore, terms: Sequence[str], policy: KbSearchPolicy, deep: int, full: bool
    ) -> KeywordLegs:
        legs = read(kb, terms, policy, deep, full or every_deep)
        depths.append(legs.deep)
        return legs

    def routed(*args: Any) -> list[Route] | None:
        known = routes(*args)
        early.append(known is not None)
        return None if every_deep else known

    monkeypatch.setattr(keyword_legs, "read_legs", recorded)
    monkeypatch.setattr(keyword_legs, "routes_before_legs", routed)
    shallow = answers()
    assert False in depths and True in early and False in early  # both ways were taken
    every_deep = True  # as before: legs read deep, the documents named after them

    assert answers() == shallow


def test_routes_are_known_before_the_keyword_legs_only_when_they_cannot_add_a_named_one(
    service: MemoryService,
) -> None:
    documents = library(service)
    kb, policy = service.store.kb, service.kb.search_policy
    acme = [documents["acme21"], documents["acme22"]]
    every = [*acme, documents["borealis22"]]

    named = keyword_legs.routes_before_legs(kb, "Acme capex in 2022", acme)
    missing = keyword_legs.routes_before_legs(kb, "Acme capex", [documents["acme22"]])
    capitals = keyword_legs.routes_before_legs(kb, "BRVL capex", every)
    nothing = keyword_legs.routes_before_legs(kb, "capex in 2022", every)

    assert named is not None and [r.document_id for r in named] == [documents["acme22"].id]
    assert named == named_documents(kb, "Acme capex in 2022", every, policy)
    assert missing is None  # Acme's 2021 filing is named too but not a candidate yet
    assert capitals is None  # a ticker's look-up weighs every candidate
    assert nothing is None  # nothing named: the legs' first read is the one fused
