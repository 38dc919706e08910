"""Forget over HTTP: the list first (dry run), then one request erases it all."""

from __future__ import annotations

from .conftest import Server


def test_forget_lists_on_a_dry_run_then_erases(server: Server) -> None:
    about = server.remember("Thorvald keeps bees behind the Quillhaven chapel")
    other = server.remember("The Quillhaven ferry leaves at noon on weekdays")
    document = server.upload(
        "thorvald.md", "# Beekeeping\n\nThorvald sells heather honey at the Saturday market.\n"
    )

    plan = server.ok("POST", "/v1/forget", json={"entity": "Thorvald", "dry_run": True})

    assert [m["id"] for m in plan["memories"]] == [about["id"]]
    assert [d["id"] for d in plan["documents"]] == [document["id"]]
    assert (plan["dry_run"], plan["erased"]) == (True, False)
    assert server.show(about["id"])["content"], "a dry run erases nothing"

    done = server.ok("POST", "/v1/forget", json={"entity": "Thorvald"})

    assert done["erased"] and done["summary"] == (
        "forget entity 'Thorvald': 1 memory, 1 chunk in 1 document"
    )
    shown = server.show(about["id"])
    assert (shown["content"], shown["purged"]) == ("", True)
    assert server.show(other["id"])["content"] == other["content"]
    gone = server.http.get(f"/v1/kb/documents/{document['id']}")
    assert gone.status_code == 404
    refused = server.http.post("/v1/forget", json={"entity": "Thorvald", "query": "bees"})
    assert refused.status_code == 400 and "exactly one" in refused.json()["error"]
