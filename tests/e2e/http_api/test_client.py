"""memoryd.client.Client against the real server (SPEC §7)."""

from __future__ import annotations

import pytest

from memoryd.client import ApiError, Client

from .conftest import ABSENT_ID, Server

# -------------------------------------------------------------- the client


def test_the_client_round_trip(server: Server) -> None:
    path = server.files / "glacier.md"
    path.write_text(
        "# Glacier Almanac\n\nTangerine glaciers whisper folk songs to the shepherds of Ushuaia.\n",
        encoding="utf-8",
    )
    with Client(server.base_url, server.token) as client:
        assert client.health()["status"] == "ok"
        written = client.remember("Diego brews cold-brew coffee with Colombian beans", kind="fact")
        recalled = client.recall("What coffee does Diego brew?")
        searched = client.search_memory("Diego cold-brew coffee", limit=5)
        uploaded = client.kb_upload(path, collection="almanac")
        kb_found = client.kb_search("tangerine glaciers whisper folk songs")
        tool = client.call_tool("search_kb", {"query": "shepherds of Ushuaia glaciers"})
        shown = client.show(written["memory"]["id"])

    assert written["outcome"] == "activated"
    assert "Diego brews cold-brew coffee with Colombian beans" in recalled["text"]
    assert written["memory"]["id"] in {m["id"] for m in searched}
    assert uploaded["outcome"] == "ok"
    assert kb_found["results"][0]["doc"] == uploaded["document"]["id"]
    assert tool["results"][0]["doc"] == uploaded["document"]["id"]
    assert shown["id"] == written["memory"]["id"]


def test_the_client_raises_api_error_for_a_wrong_token(server: Server) -> None:
    with Client(server.base_url, "not-the-token") as client:
        with pytest.raises(ApiError) as raised:
            client.list_memories()
        with pytest.raises(ApiError) as recall:
            client.recall("anything")

    assert raised.value.status == 403
    assert recall.value.status == 403
    assert "wrong token" in raised.value.message


def test_the_client_reports_server_errors_with_their_status(server: Server) -> None:
    with Client(server.base_url, server.token) as client, pytest.raises(ApiError) as missing:
        client.show(ABSENT_ID)

    assert missing.value.status == 404
    assert ABSENT_ID in missing.value.message
