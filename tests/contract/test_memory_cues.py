"""Cues, the words a later question would use, on both backends: kept beside the memory as the
extraction model wrote them, found by the text and vector legs, never shown as content, gone
with a purge."""

from __future__ import annotations

from typing import Any

from memoryd.memory.model import Source, Status
from memoryd.service import MemoryService
from memoryd.words import query_terms

from .conftest import Backend

ALLERGY = "The owner is allergic to penicillin."
CUES = ["medication", "medicines to avoid", "antibiotics"]


def _proposal(content: str, cues: list[str] | None) -> dict[str, Any]:
    return {
        "kind": "fact",
        "content": content,
        "confidence": 0.95,
        "changes_behavior": False,
        "cues": cues,
    }


def test_cues_are_stored_searched_by_both_legs_and_never_shown_as_content(
    service: MemoryService,
) -> None:
    results = service.propose(
        {"memories": [_proposal(ALLERGY, CUES), _proposal("The owner drives a red car.", None)]},
        source=Source.TURN,
    )
    # A fact from a turn waits for the owner; the owner confirms both.
    allergy, car = (service.confirm(r.memory.id) for r in results if r.memory is not None)
    assert (allergy.cues, car.cues) == (tuple(CUES), ())
    assert service.get(allergy.id).cues == tuple(CUES)
    assert allergy.content == ALLERGY and service.get(allergy.id).to_json()["content"] == ALLERGY

    # The text leg: "medicines" is in no memory's content, only in the allergy's cues.
    found = service.store.text.search(query_terms("which medicines should I avoid?"), 10)
    assert [hit.memory_id for hit in found.hits] == [allergy.id]

    # The vector leg: the stored vector is the content's with its cues, closer to the question.
    question = service.embedder.embed(["which medicines should I avoid?"])[0]
    plain = service.embedder.embed([ALLERGY])[0]
    hits = {
        h.memory_id: h.cosine for h in service.store.vectors.nearest(question, [Status.ACTIVE], 5)
    }
    assert hits[allergy.id] > float(question @ plain) + 0.1

    recalled = service.recall("which medicines should I avoid?", stamp=False)
    assert ALLERGY in recalled.text
    assert not any(cue in recalled.text for cue in CUES)


def test_a_purge_removes_the_cues_from_the_row_and_the_index(backend: Backend) -> None:
    service = backend.open_fresh()
    (result,) = service.propose(
        {"memories": [_proposal(ALLERGY, ["zyxwvutsrq cue"])]}, source=Source.TURN
    )
    assert result.memory is not None
    service.confirm(result.memory.id)
    service.purge(result.memory.id)
    assert service.get(result.memory.id).cues == ()
    assert service.store.text.search(["zyxwvutsrq"], 10).hits == ()
    service.close()
    assert b"zyxwvutsrq" not in backend.persisted_bytes()
