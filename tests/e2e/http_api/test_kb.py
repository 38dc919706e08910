"""The knowledge base over HTTP (SPEC §7): upload, ingest a path, search, read, get, delete."""

from __future__ import annotations

import time

from tests.kb_corpus import filler_paragraph

from .conftest import Server

# ----------------------------------------------------------- knowledge base

ORCHARD = """# Orchard Ledger

## Pears

The quince-scented pears of Lamego ripen beside the granite chapel in late September.
"""
ORCHARD_KEY = "quince-scented pears of Lamego ripen beside the granite chapel"

BOATYARD = """# Boatyard Notes

## Hulls

Cobalt schooners are caulked with hemp and pine tar in the Aveiro boatyard each spring.
"""
BOATYARD_KEY = "Cobalt schooners are caulked with hemp and pine tar"
BOATYARD_NEW_KEY = "Saffron trawlers are repainted with linseed oil in Peniche every autumn"


def test_kb_upload_search_read_get_and_delete(server: Server) -> None:
    document = server.upload("orchard.md", ORCHARD, collection="farm")
    doc_id = document["id"]
    assert document["collection"] == "farm"
    assert document["chunks"] >= 1

    found = server.ok("POST", "/v1/kb/search", json={"query": ORCHARD_KEY})
    top = found["results"][0]
    assert top["doc"] == doc_id
    assert top["content"].startswith("<untrusted_content")
    assert ORCHARD_KEY in top["content"]

    read = server.ok("POST", "/v1/kb/read", json={"doc": doc_id, "chunks": "0"})
    assert read["doc"] == doc_id
    assert read["chunks"] == [0, 0]
    assert read["content"].startswith("<untrusted_content")
    assert ORCHARD_KEY in read["content"]

    listed = server.ok("GET", "/v1/kb/documents")
    assert doc_id in {d["id"] for d in listed}
    in_farm = server.ok("GET", "/v1/kb/documents", params={"collection": "farm"})
    assert [d["id"] for d in in_farm] == [doc_id]
    assert server.ok("GET", f"/v1/kb/documents/{doc_id}")["title"] == "Orchard Ledger"
    renamed = server.ok("PATCH", f"/v1/kb/documents/{doc_id}", json={"title": "Quinta Ledger"})
    assert renamed["title"] == "Quinta Ledger"
    again = server.ok("POST", "/v1/kb/search", json={"query": ORCHARD_KEY})["results"][0]
    assert again["breadcrumb"].startswith("Quinta Ledger")
    no_pages = server.http.post("/v1/kb/read", json={"doc": doc_id, "pages": "1-2"})
    assert no_pages.status_code == 400 and "no pages" in no_pages.json()["error"]
    empty = server.http.patch(f"/v1/kb/documents/{doc_id}", json={"title": "   "})
    assert empty.status_code in (400, 422), empty.text

    # An upload has no file to read again.
    reingest = server.http.post(f"/v1/kb/documents/{doc_id}/reingest")
    assert reingest.status_code == 400, reingest.text
    assert "upload" in reingest.json()["error"]

    # A file memoryd cannot read is reported and leaves no document behind.
    before = server.ok("GET", "/v1/kb/documents")
    mystery = server.ok(
        "POST", "/v1/kb/upload", files={"file": ("mystery.xyz", b"\x8f\x13\xe2\x07" * 64)}
    )
    assert (mystery["outcome"], mystery["document"]) == ("failed", None)
    assert "unsupported file type (.xyz)" in mystery["reason"]
    assert server.ok("GET", "/v1/kb/documents") == before

    deleted = server.ok("DELETE", f"/v1/kb/documents/{doc_id}")
    assert deleted["id"] == doc_id
    assert doc_id not in {d["id"] for d in server.ok("GET", "/v1/kb/documents")}
    gone = server.http.get(f"/v1/kb/documents/{doc_id}")
    assert gone.status_code in (400, 404), gone.text
    after = server.ok("POST", "/v1/kb/search", json={"query": ORCHARD_KEY})
    assert doc_id not in {hit["doc"] for hit in after["results"]}


def test_kb_ingest_a_path_on_disk_and_reingest_it(server: Server) -> None:
    path = server.files / "boatyard.md"
    path.write_text(BOATYARD, encoding="utf-8")

    results = server.ok(
        "POST", "/v1/kb/ingest", json={"sources": [str(path)], "collection": "harbour"}
    )

    assert [r["outcome"] for r in results] == ["ok"], results
    doc_id = results[0]["document"]["id"]
    assert results[0]["document"]["source_uri"].endswith("boatyard.md")
    server.embedded(results[0]["document"])
    found = server.ok("POST", "/v1/kb/search", json={"query": BOATYARD_KEY, "explain": True})
    assert found["results"][0]["doc"] == doc_id
    assert found["results"][0]["explain"] is not None

    path.write_text(BOATYARD.replace(BOATYARD_KEY, BOATYARD_NEW_KEY), encoding="utf-8")
    again = server.ok("POST", f"/v1/kb/documents/{doc_id}/reingest")

    assert again["outcome"] == "ok", again
    read = server.ok("POST", "/v1/kb/read", json={"doc": doc_id})
    assert BOATYARD_NEW_KEY in read["content"]
    assert BOATYARD_KEY not in read["content"]


def test_upload_returns_once_chunks_are_written_and_the_worker_fills_the_vectors(
    server: Server,
) -> None:
    sections = "\n\n".join(
        f"## Season {i}\n\n" + " ".join(filler_paragraph(500 + i * 10 + j) for j in range(6))
        for i in range(12)
    )
    text = f"# Vineyard Almanac\n\n{sections}\n\nThe {ORCHARD_KEY} too.\n"
    result = server.ok(
        "POST",
        "/v1/kb/upload",
        files={"file": ("almanac.md", text.encode(), "text/markdown")},
    )
    assert result["outcome"] == "ok", result
    document = result["document"]
    total = document["chunks"]
    assert total >= 12
    # Written without waiting for the embedder: nothing of it is embedded in the reply.
    assert document["embedded_chunks"] == 0
    assert document["embedding"] == f"embedding 0/{total}"
    assert 0 < result["searchable_seconds"] <= result["seconds"]
    found = server.ok("POST", "/v1/kb/search", json={"query": ORCHARD_KEY})
    assert document["id"] in {hit["doc"] for hit in found["results"]}

    deadline = time.monotonic() + 120
    while True:
        listed = server.ok("GET", f"/v1/kb/documents/{document['id']}")
        if listed["embedded_chunks"] == total:
            break
        assert listed["embedding"] == f"embedding {listed['embedded_chunks']}/{total}"
        assert time.monotonic() < deadline, listed
        time.sleep(0.2)
    assert listed["embedding"] is None
