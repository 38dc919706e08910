"""Bad input over HTTP (SPEC §7): malformed JSON, unknown fields, wrong types, unknown ids,
conflicts, bad filters and bodies over one megabyte; never a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from .conftest import ABSENT_ID, Server

# ---------------------------------------------------------------- bad input


def test_malformed_json_is_400(server: Server) -> None:
    response = server.http.post(
        "/v1/recall", content=b'{"message": ', headers={"content-type": "application/json"}
    )

    assert response.status_code == 400
    assert response.json()["error"].endswith("not valid JSON")


def test_an_unknown_field_is_422_naming_it(server: Server) -> None:
    response = server.http.post("/v1/memories", json={"content": "a blue door", "colour": "blue"})

    assert response.status_code == 422, response.text
    body = response.json()
    assert "colour" in body["error"]
    assert [d["field"] for d in body["details"]] == ["colour"]


def test_wrong_types_are_422(server: Server) -> None:
    search = server.http.post("/v1/search", json={"query": ["a"], "limit": "many"})
    consolidate = server.http.post("/v1/consolidate", json={"dry_run": "perhaps"})
    listing = server.http.get("/v1/memories", params={"limit": "lots"})
    not_an_object = server.http.post("/v1/recall", json=["hello"])

    assert search.status_code == 422, search.text
    assert {d["field"] for d in search.json()["details"]} == {"query", "limit"}
    assert consolidate.status_code == 422, consolidate.text
    assert "dry_run" in consolidate.json()["error"]
    assert listing.status_code == 422, listing.text
    assert not_an_object.status_code == 422, not_an_object.text


def test_an_unknown_memory_is_404(server: Server) -> None:
    shown = server.http.get(f"/v1/memories/{ABSENT_ID}")
    confirmed = server.http.post(f"/v1/memories/{ABSENT_ID}/confirm")
    edited = server.http.post(f"/v1/memories/{ABSENT_ID}/edit", json={"content": "x"})

    for response in (shown, confirmed, edited):
        assert response.status_code == 404, response.text
        assert ABSENT_ID in response.json()["error"]


def test_confirming_an_active_memory_is_409(server: Server) -> None:
    memory = server.remember("Amara's greenhouse grows Scotch bonnet peppers")

    response = server.http.post(f"/v1/memories/{memory['id']}/confirm", json={})

    assert response.status_code == 409, response.text
    assert "active" in response.json()["error"]


def test_unknown_filters_are_400(server: Server) -> None:
    kind = server.http.get("/v1/memories", params={"kind": "rumour"})
    status = server.http.get("/v1/memories", params={"status": "maybe"})
    limit = server.http.get("/v1/memories", params={"limit": 0})

    assert kind.status_code == 400, kind.text
    assert "rumour" in kind.json()["error"]
    assert status.status_code == 400, status.text
    assert limit.status_code == 400, limit.text


def _oversized_recall() -> bytes:
    return json.dumps({"message": "x" * 1_500_000}).encode()


def test_a_body_over_one_megabyte_is_413(server: Server) -> None:
    response = server.http.post(
        "/v1/recall", content=_oversized_recall(), headers={"content-type": "application/json"}
    )

    assert response.status_code == 413, response.text[:300]
    assert "error" in response.json()


def test_a_chunked_body_over_one_megabyte_is_413(server: Server) -> None:
    payload = _oversized_recall()

    def pieces() -> Iterator[bytes]:
        for start in range(0, len(payload), 64 * 1024):
            yield payload[start : start + 64 * 1024]

    response = server.http.post(
        "/v1/recall", content=pieces(), headers={"content-type": "application/json"}
    )

    assert response.request.headers.get("transfer-encoding") == "chunked"
    assert "content-length" not in response.request.headers
    assert response.status_code == 413, (response.status_code, response.text[:300])
    assert "error" in response.json()


def test_a_small_chunked_body_is_accepted(server: Server) -> None:
    def pieces() -> Iterator[bytes]:
        yield b'{"message": "who grows'
        yield b' Scotch bonnet peppers?"}'

    response = server.http.post(
        "/v1/recall", content=pieces(), headers={"content-type": "application/json"}
    )

    assert response.status_code == 200, response.text


def test_errors_name_fields_and_routes_never_cli_options(server: Server) -> None:
    half_slot = server.http.post(
        "/v1/memories", json={"content": "the owner's desk is oak", "subject": "desk"}
    )
    unknown = server.http.get(f"/v1/memories/{ABSENT_ID}")

    assert half_slot.status_code == 400, half_slot.text
    assert half_slot.json() == {
        "error": "a fact slot needs both a subject and a predicate, or neither",
        "fields": ["subject", "predicate"],
    }
    assert unknown.status_code == 404, unknown.text
    assert unknown.json()["error"] == (
        f"no memory with id '{ABSENT_ID}'; GET /v1/memories lists the ids"
    )
    assert "--" not in half_slot.text + unknown.text


def test_a_bad_turn_time_is_400_naming_it_and_a_good_one_is_taken(server: Server) -> None:
    observe = server.http.post("/v1/observe", json={"user": "Dinner with Ana", "at": "yesterday"})
    compaction = server.http.post(
        "/v1/compaction", json={"turns": [{"role": "user", "content": "hi", "at": "soon"}]}
    )
    mission = server.http.post(
        "/v1/mission", json={"title": "T", "outcome": "O", "finished_at": "2026-02-30"}
    )
    dated = server.ok("POST", "/v1/observe", json={"user": "Dinner", "at": "2026-11-30T18:05"})

    assert observe.status_code == 400, observe.text
    assert "at 'yesterday' is not an ISO-8601 date or time" in observe.json()["error"]
    assert compaction.status_code == 400, compaction.text
    assert "turn 0's \"at\" 'soon'" in compaction.json()["error"]
    assert mission.status_code == 400, mission.text
    assert "finished_at '2026-02-30'" in mission.json()["error"]
    # This server has no LLM: a well-formed time passes, and extraction says it is off.
    assert dated["queued"] is False and "off" in dated["notice"]
