"""Recall and search over HTTP (SPEC §7)."""

from __future__ import annotations

from .conftest import Server

# ------------------------------------------------------------------ reading


def test_recall_returns_the_fenced_block_with_a_remembered_fact(server: Server) -> None:
    fact = server.remember("Beatriz keeps three beehives on her terrace in Sintra")

    recalled = server.ok("POST", "/v1/recall", json={"message": "Who keeps beehives in Sintra?"})

    assert recalled["text"].startswith("<memory")
    assert recalled["text"].rstrip().endswith("</memory>")
    assert "Beatriz keeps three beehives on her terrace in Sintra" in recalled["text"]
    assert fact["id"] in {item["id"] for item in recalled["items"]}
    assert recalled["tokens"] > 0
    [item] = [i for i in recalled["items"] if i["id"] == fact["id"]]
    assert 0.5 < item["relevance"] <= 1.0 and item["contributions"]["cosine"] > 0


def test_search_ranks_a_remembered_fact(server: Server) -> None:
    fact = server.remember("Tomasz collects vintage Soviet film cameras")
    event = server.remember("Tomasz bought a Zenit camera at the Krakow flea market", kind="event")

    found = server.ok("POST", "/v1/search", json={"query": "Tomasz film cameras"})
    events = server.ok("POST", "/v1/search", json={"query": "Tomasz camera", "kind": "event"})

    assert fact["id"] in {m["id"] for m in found}
    assert all(isinstance(m["score"], float) for m in found)
    assert event["id"] in {m["id"] for m in events}
    assert {m["kind"] for m in events} == {"event"}
