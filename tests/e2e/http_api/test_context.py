"""``POST /v1/context`` over a real socket (issue 21 §1)."""

from __future__ import annotations

from memoryd.providers.tokenizer import O200kTokenizer

from .conftest import Server


def test_context_packs_a_memory_and_a_document_chunk(server: Server) -> None:
    fact = server.remember("Ingrid's allotment is plot 42 at the Vesterbro gardens")
    document = server.upload(
        "allotment.md",
        "# Vesterbro allotment rules\n\nEvery allotment at the Vesterbro gardens must be "
        "weeded by May and the plot's hedge kept below 1.8 metres.\n",
    )
    question = "What are the rules for Ingrid's allotment plot at the Vesterbro gardens?"

    pack = server.ok("POST", "/v1/context", json={"message": question, "explain": True})
    small = server.ok("POST", "/v1/context", json={"message": question, "budget": 40})
    empty = server.http.post("/v1/context", json={"message": ""})

    assert pack["text"].startswith('<memory trust="data">')
    assert pack["tokens"] == O200kTokenizer().count(pack["text"])
    ids = {i["id"] for i in pack["items"]}
    assert fact["id"] in ids and f"{document['id']}#0" in ids
    assert all(i["explain"] is not None for i in pack["items"] if i["type"] != "lesson")
    assert small["tokens"] <= 40 and small["budget"] == 40
    assert {d["reason"] for d in small["dropped"]} >= {"over the token budget"}
    assert empty.status_code == 422 and "message" in empty.text
