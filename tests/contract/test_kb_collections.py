"""Knowledge-base collections (SPEC §6): pinning boosts but never filters, source weights, list
filters and delete.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from memoryd.errors import InvalidInputError
from memoryd.kb.model import SourceType
from memoryd.service import MemoryService
from tests.kb_corpus import filler_paragraph

from .kb_support import NOW, hit_with, markdown_doc, only_ok

# ---------------------------------------------------------------------------------------------
# Collections, pinning, source weights, delete


def test_a_pinned_collection_is_boosted_but_never_a_filter(service: MemoryService) -> None:
    body = (
        f"{filler_paragraph(1100, 30)} The greenhouse irrigation valves open at six and close "
        "at nine during the dry season."
    )
    in_a = only_ok(
        service.kb.ingest_bytes(
            markdown_doc("Greenhouse Care", {"Irrigation": body}).encode(),
            "greenhouse-a.md",
            collection="a",
            now=NOW,
        )
    )
    in_b = only_ok(
        service.kb.ingest_bytes(
            markdown_doc("Greenhouse Care", {"Irrigation": body + " Noted."}).encode(),
            "greenhouse-b.md",
            collection="b",
            now=NOW,
        )
    )
    query = {"query": "when do the greenhouse irrigation valves open"}
    unpinned = service.call_tool("search_kb", query)
    assert {r["doc"] for r in unpinned["results"]} >= {in_a.id, in_b.id}

    for pinned, boosted, other in ((["a"], in_a, in_b), (["b"], in_b, in_a)):
        answer = service.call_tool("search_kb", query, pinned_collections=pinned)
        docs = [r["doc"] for r in answer["results"]]
        assert docs[0] == boosted.id, (pinned, docs)
        assert other.id in docs, (pinned, docs)
        assert answer["results"][0]["collection"] == pinned[0]

    direct = service.kb.search(query["query"], pinned_collections=["a"])
    assert direct.pinned == ("a",)
    assert direct.hits[0].ranked.weight == pytest.approx(1.5)
    # The model cannot choose collections, even spelled as the service's parameter.
    refused = service.call_tool("search_kb", {**query, "collections": ["b"]})
    assert set(refused) == {"error"}


def test_pinned_hint_names_the_tool_and_collections(service: MemoryService) -> None:
    hint = service.kb.pinned_hint(["projects"])
    assert "search_kb" in hint
    assert "projects" in hint
    both = service.kb.pinned_hint(["projects", "recipes"])
    assert "projects" in both and "recipes" in both
    assert service.kb.pinned_hint([]) == ""
    with pytest.raises(InvalidInputError):
        service.kb.pinned_hint(["no spaces allowed"])


def test_list_filters_by_collection_and_delete_removes_everything(
    service: MemoryService,
) -> None:
    kept_sentence = "Indigo tractors plough the terraces of Sapa before the monsoon."
    gone_sentence = "Amber trolleybuses climb the hills of Valparaiso after midnight."
    kept = only_ok(
        service.kb.ingest_bytes(
            markdown_doc("Terrace Farming", {"Season": kept_sentence}).encode(),
            "terraces.md",
            collection="projects",
            now=NOW,
        )
    )
    gone = only_ok(
        service.kb.ingest_bytes(
            markdown_doc("Hill Transit", {"Night Service": gone_sentence}).encode(),
            "transit.md",
            collection="notes",
            now=NOW + timedelta(minutes=1),
        )
    )
    assert [d.id for d in service.kb.list_documents(collection="projects")] == [kept.id]
    assert [d.id for d in service.kb.list_documents(collection="notes")] == [gone.id]
    assert {d.id for d in service.kb.list_documents()} == {kept.id, gone.id}
    assert service.kb.list_documents(collection="nothing-here") == []
    assert hit_with(service.kb.search(gone_sentence).hits, gone_sentence) is not None

    deleted = service.kb.delete(gone.id)
    assert deleted.id == gone.id
    with pytest.raises(InvalidInputError, match="no document"):
        service.kb.get(gone.id)
    assert service.store.kb.chunks(gone.id) == []
    assert all(h.document.id != gone.id for h in service.kb.search(gone_sentence).hits)
    assert [d.id for d in service.kb.list_documents()] == [kept.id]
    assert service.store.kb.chunk_count() == kept.chunk_count
    kept_hit = hit_with(service.kb.search(kept_sentence).hits, kept_sentence)
    assert kept_hit is not None and kept_hit.document.id == kept.id
    with pytest.raises(InvalidInputError, match="no document"):
        service.kb.delete(gone.id)
    assert service.store.integrity_errors() == []


def test_curated_documents_outrank_mission_output_and_web_clips(service: MemoryService) -> None:
    sentence = "Crimson funiculars carry cheese wheels up to the Gruyeres monastery."
    text = markdown_doc("Funicular Freight", {"Cargo": f"{filler_paragraph(1200, 30)} {sentence}"})
    web = only_ok(
        service.kb.ingest_bytes(
            text.encode(),
            "funicular.md",
            source_type=SourceType.WEB,
            source_uri="https://example.org/funicular",
            now=NOW,
        )
    )
    curated = only_ok(service.kb.ingest_bytes(text.encode(), "funicular.md", now=NOW))
    mission = only_ok(
        service.kb.ingest_bytes(
            text.encode(),
            "funicular.md",
            source_type=SourceType.MISSION,
            source_uri="mission:freight-report",
            now=NOW,
        )
    )
    assert len({web.id, curated.id, mission.id}) == 3
    assert curated.source_uri == "upload:funicular.md"
    hits = service.kb.search(sentence).hits
    ranked = list(dict.fromkeys(h.document.id for h in hits))
    assert ranked[:3] == [curated.id, mission.id, web.id], ranked
    weights = {h.document.id: h.ranked.weight for h in hits}
    assert weights[curated.id] == pytest.approx(1.0)
    assert weights[mission.id] == pytest.approx(0.8)
    assert weights[web.id] == pytest.approx(0.6)
