"""Table rows found by the meaning of their label (SPEC §6, kb/rows.py): each row's label text
gets a vector after its chunks' vectors, a question near the label reaches the row's chunk with
no word in common, and the vectors follow the rows through rename, re-ingest and delete, on
both backends."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from memoryd.kb.model import Document
from memoryd.service import MemoryService

from .kb_support import NOW, annual_report, only_ok

CAPEX_LABEL = "Purchases of property and equipment"


def label_text(label: str) -> str:
    """What a row's vector embeds: its label and the table's title (the heading above it)."""
    return f"{label} — Consolidated Statements of Cash Flows"


def library(service: MemoryService) -> dict[str, Document]:
    made = {
        "acme22": annual_report("Acme Pumps Inc.", 2022, "655", capex_label=CAPEX_LABEL),
        "borealis22": annual_report(
            "Borealis Valve Corporation", 2022, "77", capex_label=CAPEX_LABEL
        ),
    }
    return {
        name: only_ok(service.kb.ingest_bytes(body, f"{name}.md", now=NOW))
        for name, body in made.items()
    }


def test_every_labelled_row_gets_a_vector_and_is_found_by_meaning(
    service: MemoryService,
) -> None:
    documents = library(service)
    kb = service.store.kb
    acme = documents["acme22"].id

    assert kb.pending_rows(acme, 10) == []
    # No word of the question is in the label: only the label's vector can reach it.
    vector = service.embedder.embed(["capital spending on buildings and machinery"])[0]
    near = kb.nearest_rows(vector, 10)
    within = kb.nearest_rows(vector, 10, documents=[acme])

    assert {key.document_id for key, _ in near} == {d.id for d in documents.values()}
    assert [c for _, c in near] == sorted((c for _, c in near), reverse=True)
    [(key, cosine)] = within
    assert key.document_id == acme and "(655)" in kb.chunks_by_key([key])[key].text
    # The cosine is the one of the row's label (not of the chunk, nor of the row's values).
    label = service.embedder.embed([label_text(CAPEX_LABEL)])[0]
    assert abs(cosine - float(np.dot(label, vector))) < 1e-4
    assert kb.nearest_rows(vector, 10, documents=[]) == []
    assert kb.nearest_rows(np.zeros(7, dtype=np.float32), 10) == []  # another dimension


def test_a_question_near_a_row_label_ranks_its_chunk_and_says_so(
    service: MemoryService,
) -> None:
    documents = library(service)
    service.kb.search_policy = replace(service.kb.search_policy, row_min_cosine=0.0)

    result = service.kb.search("Acme FY2022 capital spending", limit=5)

    table = next(h for h in result.hits if "(655)" in h.chunk.text)
    assert table.document.id == documents["acme22"].id
    assert table.ranked.routed_row_vector_rank == 1
    explained = table.to_json(explain=True)["explain"]
    assert explained is not None
    assert explained["routed_row_vector_rank"] == 1
    # By default labels are compared within the named documents only; over the library too
    # when asked.
    assert explained["row_vector_rank"] is None
    service.kb.search_policy = replace(service.kb.search_policy, row_vectors_everywhere=True)
    everywhere = service.kb.search("Acme FY2022 capital spending", limit=5)
    assert any(h.ranked.row_vector_rank is not None for h in everywhere.hits)
    unnamed = service.kb.search("capital spending on machinery", limit=5)
    assert unnamed.routes == () and any(h.ranked.row_vector_rank for h in unnamed.hits)
    # Off, the leg adds nothing.
    service.kb.search_policy = replace(service.kb.search_policy, row_vector_weight=0.0)
    plain = service.kb.search("Acme FY2022 capital spending", limit=5)
    assert all(h.ranked.row_vector_rank is None for h in plain.hits)


def test_row_vectors_follow_rename_reingest_and_delete(service: MemoryService) -> None:
    documents = library(service)
    kb = service.store.kb
    acme = documents["acme22"].id
    vector = service.embedder.embed([CAPEX_LABEL])[0]
    [(_, before)] = kb.nearest_rows(vector, 10, documents=[acme])

    service.kb.rename(acme, "Zephyr Industrial — Form 10-K 2022")
    assert kb.pending_rows(acme, 10) == []
    [(_, renamed)] = kb.nearest_rows(vector, 10, documents=[acme])
    assert renamed == before

    # A new label alone (every chunk vector reusable but the table's): its row is embedded.
    again = service.kb.ingest_bytes(
        annual_report("Acme Pumps Inc.", 2022, "655", capex_label="Capital expenditures"),
        "acme22.md",
        now=NOW,
    )
    assert again.outcome == "ok"
    assert kb.pending_rows(acme, 10) == []
    [(key, cosine)] = kb.nearest_rows(
        service.embedder.embed([label_text("Capital expenditures")])[0], 1, documents=[acme]
    )
    assert cosine > 0.99 and "Capital expenditures" in kb.chunks_by_key([key])[key].text

    service.kb.delete(acme)
    assert acme not in {key.document_id for key, _ in kb.nearest_rows(vector, 10)}
