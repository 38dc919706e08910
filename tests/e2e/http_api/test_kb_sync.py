"""Synced folders over HTTP against the real ``memoryd serve``: registered with
``POST /v1/kb/sync``, then kept current by the server on its own (file-system notifications)
— an edit is searchable, a deletion gone, without any further request."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from .conftest import ABSENT_ID, Server

DEADLINE = 30.0


def _until(check: Callable[[], Any], what: str) -> Any:
    """Poll ``check`` until it returns something true, at most DEADLINE seconds."""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"the server never {what}")


def test_a_synced_folder_stays_current_without_further_requests(server: Server) -> None:
    folder = server.files / "synced-notes"
    (folder / "journal").mkdir(parents=True)
    (folder / "journal" / "lighthouse.md").write_text(
        "---\ntags: [coast]\n---\n# Lighthouse\n\nThe keeper of Berlenga lighthouse trims the "
        "wick at dusk and logs the [[Fog Signals]]. #maritime\n"
    )
    (folder / "notes.tmp").write_text("scratch")
    added = server.ok(
        "POST", "/v1/kb/sync", json={"location": str(folder), "collection": "coast",
                                     "ignore": ["*.tmp"]},
    )  # fmt: skip
    assert added["added"] == 1 and added["error"] is None
    source = added["source"]
    listed = {s["id"]: s for s in server.ok("GET", "/v1/kb/sync")}
    files = {f["path"]: f for f in listed[source["id"]]["files"]}
    assert files["journal/lighthouse.md"]["state"] == "current"
    assert files["notes.tmp"]["state"] == "skipped"
    assert files["notes.tmp"]["reason"] == "matches an ignore pattern"
    assert listed[source["id"]]["last_looked_at"] is not None

    # The note is keyword-searchable from the sync's commit; its vectors follow from the worker.
    # Other tests share this server (another "lighthouse.md" may be there, with its vector), so
    # rank only once the note is searched by both legs.
    synced = files["journal/lighthouse.md"]["document_id"]

    def embedded() -> bool:
        shown = server.ok("GET", f"/v1/kb/documents/{synced}")
        return bool(shown["embedded_chunks"] == shown["chunks"])

    _until(embedded, "embedded the synced note")
    hit = server.ok("POST", "/v1/kb/search", json={"query": "Berlenga lighthouse keeper wick"})
    top = hit["results"][0]
    assert "[[Fog Signals]]" in top["content"] and "#maritime" in top["content"]
    document = server.ok("GET", f"/v1/kb/documents/{top['doc']}")
    assert document["metadata"]["tags"] == ["coast", "maritime"]
    assert document["metadata"]["links"] == ["Fog Signals"]

    # Edited on disk: the server sees it by itself.
    (folder / "journal" / "lighthouse.md").write_text(
        "# Lighthouse\n\nThe keeper of Berlenga lighthouse now runs a solar lamp all night.\n"
    )

    def edited() -> bool:
        found = server.ok("POST", "/v1/kb/search", json={"query": "Berlenga solar lamp"})
        return any("solar lamp" in r["content"] for r in found["results"])

    _until(edited, "re-ingested the edited note")
    assert server.ok("GET", f"/v1/kb/documents/{top['doc']}")["id"] == top["doc"]

    # A new note, then a deletion.
    (folder / "journal" / "ferry.md").write_text("# Ferry\n\nThe Peniche ferry sails at nine.\n")
    _until(lambda: any(f["path"] == "journal/ferry.md" and f["state"] == "current"
                       for s in server.ok("GET", "/v1/kb/sync") for f in s["files"]),
           "ingested the new note")  # fmt: skip
    (folder / "journal" / "lighthouse.md").unlink()
    _until(lambda: server.http.get(f"/v1/kb/documents/{top['doc']}").status_code == 404,
           "removed the deleted note's document")  # fmt: skip

    looked = server.ok("POST", f"/v1/kb/sync/{source['id']}/now")
    assert looked["failed"] == 0 and looked["unchanged"] == 1
    missing = server.http.post(f"/v1/kb/sync/{ABSENT_ID}/now")
    assert missing.status_code == 404 and "kb/sync" in missing.json()["error"]
    refused = server.http.post("/v1/kb/sync", json={"location": str(folder / "nowhere")})
    assert refused.status_code == 400 and "does not exist" in refused.json()["error"]
    removed = server.ok("DELETE", f"/v1/kb/sync/{source['id']}", params={"delete_documents": True})
    assert removed["location"] == str(folder)
    assert all(s["id"] != source["id"] for s in server.ok("GET", "/v1/kb/sync"))
