"""``memoryd serve`` over real sockets (SPEC §7): the real executable in a subprocess, reached
with httpx and with :class:`memoryd.client.Client`.

One server runs for the whole module (the embedder takes seconds to load), so every test writes
its own distinct content and never relies on what another test left behind. The tests about
start-up and shutdown run servers of their own.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from memoryd.client import ApiError, Client
from memoryd.http.server import free_port

from .conftest import MEMORYD, Cli

HEALTH = "/v1/health"
START_TIMEOUT = 60.0
ABSENT_ID = "01ABSENTABSENTABSENTABSENT"


# ------------------------------------------------------------------ helpers


def _no_traceback(response: httpx.Response) -> None:
    """Response hook: no answer, error or not, ever carries a stack trace."""
    response.read()
    body = response.text
    assert "Traceback" not in body, body[:2000]
    assert 'File "' not in body, body[:2000]


def _http(base_url: str, token: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return httpx.Client(
        base_url=base_url,
        headers=headers,
        timeout=60.0,
        event_hooks={"response": [_no_traceback]},
    )


def _start(env: dict[str, str], log: Path, *args: str) -> subprocess.Popen[bytes]:
    with log.open("wb") as sink:
        return subprocess.Popen(
            [str(MEMORYD), "serve", *args],
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            cwd=log.parent,
        )


def _wait_healthy(base_url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"memoryd serve exited with {process.returncode}:\n{log.read_text()}")
        try:
            if httpx.get(base_url + HEALTH, timeout=2.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    pytest.fail(f"memoryd serve not healthy after {START_TIMEOUT:.0f} s:\n{log.read_text()}")


def _stop(process: subprocess.Popen[bytes]) -> int:
    """SIGTERM, then wait; kill if it hangs. Returns the exit status."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
    assert process.poll() is not None, "memoryd serve did not exit"
    return process.returncode


def _env(root: Path) -> dict[str, str]:
    """What the ``cli`` fixture builds, for a module-scoped store."""
    home = root / "home"
    home.mkdir()
    (root / "store").mkdir()
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LC_ALL": "C.UTF-8",
        "LANG": "C.UTF-8",
        "PYTHONIOENCODING": "utf-8",
        "MEMORYD_HOME": str(root / "memoryd-home"),
        "MEMORYD_DB": str(root / "store" / "memoryd.db"),
    }


@dataclass
class Server:
    """A running ``memoryd serve`` and clients for it."""

    base_url: str
    token: str
    home: Path
    files: Path  # a scratch folder for documents to upload or ingest
    http: httpx.Client  # sends the right token
    anon: httpx.Client  # sends no token

    def ok(self, method: str, path: str, **kwargs: Any) -> Any:
        """A request that must answer 200; the decoded JSON."""
        response = self.http.request(method, path, **kwargs)
        assert response.status_code == 200, (method, path, response.status_code, response.text)
        return response.json()

    def remember(self, content: str, **fields: Any) -> dict[str, Any]:
        """An owner remember that must activate; the memory."""
        result = self.ok("POST", "/v1/memories", json={"content": content, **fields})
        assert result["outcome"] == "activated", result
        memory: dict[str, Any] = result["memory"]
        assert memory["status"] == "active"
        return memory

    def show(self, memory_id: str) -> dict[str, Any]:
        shown: dict[str, Any] = self.ok("GET", f"/v1/memories/{memory_id}")
        return shown

    def upload(self, name: str, text: str, **form: str) -> dict[str, Any]:
        """Upload a Markdown document; the ready document."""
        response = self.http.post(
            "/v1/kb/upload",
            files={"file": (name, text.encode(), "text/markdown")},
            data=form,
        )
        assert response.status_code == 200, response.text
        result = response.json()
        assert result["outcome"] == "ok", result
        document: dict[str, Any] = result["document"]
        assert document["status"] == "ready", document
        return document


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("http-api")
    env = _env(root)
    Cli(env=env, cwd=root).ok("init")
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    log = root / "serve.log"
    process = _start(env, log, "--port", str(port))
    try:
        _wait_healthy(base_url, process, log)
        home = Path(env["MEMORYD_HOME"])
        token = (home / "token").read_text(encoding="ascii").strip()
        files = root / "files"
        files.mkdir()
        with _http(base_url, token) as http, _http(base_url, None) as anon:
            yield Server(base_url, token, home, files, http, anon)
    finally:
        _stop(process)
    assert process.returncode is not None


def _routes(server: Server) -> list[tuple[str, str]]:
    spec = server.anon.get("/openapi.json")
    assert spec.status_code == 200
    routes = [
        (method.upper(), path.replace("{memory_id}", ABSENT_ID).replace("{document_id}", "d1"))
        for path, methods in spec.json()["paths"].items()
        for method in methods
        if path != HEALTH
    ]
    return routes


# --------------------------------------------------------------------- auth


def test_health_needs_no_token(server: Server) -> None:
    response = server.anon.get(HEALTH)

    assert response.status_code == 200
    assert response.json()["status"] == "ok"
    assert response.json()["version"]


def test_the_token_file_is_readable_by_its_owner_only(server: Server) -> None:
    mode = os.stat(server.home / "token").st_mode & 0o777

    assert mode == 0o600, oct(mode)


def test_every_route_but_health_needs_a_token(server: Server) -> None:
    routes = _routes(server)
    assert len(routes) >= 28, routes
    for method, path in routes:
        response = server.anon.request(method, path)

        assert response.status_code == 401, (method, path, response.status_code, response.text)
        assert set(response.json()) == {"error"}, (method, path, response.text)
        assert "bearer" in response.json()["error"].lower()
        assert response.headers.get("www-authenticate") == "Bearer", (method, path)


def test_every_route_but_health_refuses_a_wrong_token(server: Server) -> None:
    with _http(server.base_url, server.token + "x") as wrong:
        for method, path in _routes(server):
            response = wrong.request(method, path)

            assert response.status_code == 403, (method, path, response.status_code, response.text)
            assert set(response.json()) == {"error"}, (method, path, response.text)
            assert "www-authenticate" not in response.headers


@pytest.mark.parametrize(
    "header",
    ["Basic dXNlcjpwYXNz", "Bearer", "Token abc"],
    ids=["basic", "bearer-alone", "other-scheme"],
)
def test_a_header_without_a_bearer_token_is_401(server: Server, header: str) -> None:
    response = server.anon.get("/v1/memories", headers={"Authorization": header})

    assert response.status_code == 401, response.text
    assert response.headers.get("www-authenticate") == "Bearer"


def test_the_scheme_is_case_insensitive_and_a_stray_cookie_is_no_login(server: Server) -> None:
    lower = server.anon.get("/v1/memories", headers={"Authorization": f"bearer {server.token}"})
    cookie = server.anon.get("/v1/memories", headers={"Cookie": "memoryd_session=forged"})

    assert lower.status_code == 200, lower.text
    assert cookie.status_code == 401, cookie.text


def test_credentials_are_checked_before_the_body_is_parsed(server: Server) -> None:
    """Without a token, a malformed body must still be a 401 (403 with a wrong one): the
    server should not parse, or judge, anything a stranger sends."""
    json_body = {"content": b'{"message": ', "headers": {"content-type": "application/json"}}
    form_body = {"content": b"garbage", "headers": {"content-type": "multipart/form-data"}}
    with _http(server.base_url, "wrong-token") as wrong:
        statuses = {
            "json, no token": server.anon.post("/v1/recall", **json_body).status_code,
            "json, wrong token": wrong.post("/v1/recall", **json_body).status_code,
            "upload, no token": server.anon.post("/v1/kb/upload", **form_body).status_code,
            "upload, wrong token": wrong.post("/v1/kb/upload", **form_body).status_code,
        }

    assert statuses == {
        "json, no token": 401,
        "json, wrong token": 403,
        "upload, no token": 401,
        "upload, wrong token": 403,
    }


# ----------------------------------------------------------------- memories


def test_remember_then_show_it_with_its_chain_and_audit(server: Server) -> None:
    memory = server.remember("Ana cooks seafood paella every Sunday in Setubal")

    shown = server.show(memory["id"])

    assert shown["id"] == memory["id"]
    assert shown["content"] == "Ana cooks seafood paella every Sunday in Setubal"
    assert shown["source"] == "owner"
    assert [m["id"] for m in shown["chain"]] == [memory["id"]]
    assert [(a["action"], a["to_status"]) for a in shown["audit"]] == [("create", "active")]


def test_list_memories_filters_by_status_kind_and_limit(server: Server) -> None:
    event = server.remember("Joaquim repaired the blue kayak at the Douro marina", kind="event")
    fact = server.remember("Joaquim's kayak club meets on the Douro riverbank")
    pending = server.ok(
        "POST",
        "/v1/propose",
        json={
            "memories": [
                {
                    "kind": "fact",
                    "content": "Joaquim might move his kayak to a storage shed in Gaia",
                    "confidence": 0.4,
                    "changes_behavior": False,
                }
            ]
        },
    )[0]["memory"]

    events = server.ok("GET", "/v1/memories", params={"kind": "event"})
    waiting = server.ok("GET", "/v1/memories", params={"status": "pending"})
    active_facts = server.ok("GET", "/v1/memories", params={"status": "active", "kind": "fact"})
    one = server.ok("GET", "/v1/memories", params={"limit": 1})

    assert event["id"] in {m["id"] for m in events}
    assert {m["kind"] for m in events} == {"event"}
    assert pending["id"] in {m["id"] for m in waiting}
    assert {m["status"] for m in waiting} == {"pending"}
    assert fact["id"] in {m["id"] for m in active_facts}
    assert event["id"] not in {m["id"] for m in active_facts}
    assert {(m["status"], m["kind"]) for m in active_facts} == {("active", "fact")}
    assert len(one) == 1


def test_a_behaviour_changing_proposal_waits_for_review_then_confirm_activates_it(
    server: Server,
) -> None:
    results = server.ok(
        "POST",
        "/v1/propose",
        json={
            "memories": [
                {
                    "kind": "lesson",
                    "content": "Always answer in French",
                    "confidence": 0.9,
                    "changes_behavior": True,
                    "importance": "high",
                }
            ]
        },
    )
    assert len(results) == 1
    assert results[0]["outcome"] == "pending", results
    pending = results[0]["memory"]
    assert pending["status"] == "pending"

    queue = server.ok("GET", "/v1/review")
    assert pending["id"] in {item["pending"]["id"] for item in queue}

    confirmed = server.ok("POST", f"/v1/memories/{pending['id']}/confirm", json={})

    assert confirmed["status"] == "active"
    assert pending["id"] not in {item["pending"]["id"] for item in server.ok("GET", "/v1/review")}
    audit = server.show(pending["id"])["audit"]
    assert [a["action"] for a in audit][-1] == "confirm"
    assert audit[-1]["actor"] == "owner"


def test_reject_a_pending_proposal(server: Server) -> None:
    result = server.ok(
        "POST",
        "/v1/propose",
        json={
            "memories": [
                {
                    "kind": "lesson",
                    "content": "Format every reply to Ingrid as a numbered checklist",
                    "confidence": 0.85,
                    "changes_behavior": True,
                }
            ],
            "source": "turn",
            "source_ref": "conversation-4711",
        },
    )[0]
    assert result["outcome"] == "pending", result
    memory_id = result["memory"]["id"]
    assert result["memory"]["source_ref"] == "conversation-4711"

    rejected = server.ok("POST", f"/v1/memories/{memory_id}/reject")

    assert rejected["status"] == "rejected"
    assert memory_id not in {item["pending"]["id"] for item in server.ok("GET", "/v1/review")}


def test_edit_supersedes_an_active_fact(server: Server) -> None:
    old = server.remember("Marta's commuter bicycle is a green Brompton")

    new = server.ok(
        "POST",
        f"/v1/memories/{old['id']}/edit",
        json={"content": "Marta's commuter bicycle is a red Brompton"},
    )

    assert new["id"] != old["id"]
    assert new["status"] == "active"
    assert new["content"] == "Marta's commuter bicycle is a red Brompton"
    shown = server.show(new["id"])
    assert [m["id"] for m in shown["chain"]] == [old["id"], new["id"]]
    before = server.show(old["id"])
    assert before["status"] == "archived"
    assert before["superseded_by"] == new["id"]
    assert shown["supersedes"] == old["id"]


def test_archive_purge_and_reconfirm(server: Server) -> None:
    to_archive = server.remember("Priya keeps her sourdough starter in a blue jar")
    to_purge = server.remember("Kofi's landlord in Accra is called Mensah")
    to_reconfirm = server.remember("Yuki practises the cello every Thursday evening")

    archived = server.ok("POST", f"/v1/memories/{to_archive['id']}/archive", json={})
    purged = server.ok("POST", f"/v1/memories/{to_purge['id']}/purge", json={})
    reconfirmed = server.ok("POST", f"/v1/memories/{to_reconfirm['id']}/reconfirm", json={})

    assert archived["status"] == "archived"
    assert purged["purged"] is True
    assert purged["purged_at"]
    assert purged["status"] == "archived"
    assert "Mensah" not in purged["content"]
    assert "Mensah" not in json.dumps(server.show(to_purge["id"]))
    assert reconfirmed["status"] == "active"
    assert reconfirmed["last_confirmed_at"] >= to_reconfirm["last_confirmed_at"]
    assert server.show(to_reconfirm["id"])["audit"][-1]["action"] == "reconfirm"
    # Reconfirming applies to active memories only.
    again = server.http.post(f"/v1/memories/{to_archive['id']}/reconfirm", json={})
    assert again.status_code == 409, again.text


def test_consolidate_dry_run_plans_then_a_real_run_queues_for_reconfirmation(
    server: Server,
) -> None:
    # Only this fact is old enough to decay, so other tests' memories are left alone.
    old = server.remember(
        "Lars rents a rowing boat shed beside Lake Bled", now="2024-01-15T10:00:00+00:00"
    )

    plan = server.ok("POST", "/v1/consolidate", json={"dry_run": True})

    assert plan["dry_run"] is True
    assert "decay-semantic" in plan["stages"]
    assert "skipped" in plan["stages"]["merge-near-duplicates"]
    assert ("decay-semantic", old["id"]) in {(s["stage"], s["memory_id"]) for s in plan["steps"]}
    assert server.show(old["id"])["status"] == "active"

    done = server.ok("POST", "/v1/consolidate", json={"dry_run": False})

    assert done["dry_run"] is False
    assert ("decay-semantic", old["id"]) in {(s["stage"], s["memory_id"]) for s in done["steps"]}
    before = server.show(old["id"])
    assert before["status"] == "archived"
    successor = before["superseded_by"]
    queue = server.ok("GET", "/v1/reconfirmation")
    assert successor in {m["id"] for m in queue}
    assert server.show(successor)["confidence"] == pytest.approx(0.8)

    server.ok("POST", f"/v1/memories/{successor}/reconfirm")

    assert successor not in {m["id"] for m in server.ok("GET", "/v1/reconfirmation")}


# ------------------------------------------------------------ extraction off


def test_the_extraction_triggers_say_extraction_is_off(server: Server) -> None:
    answers = [
        server.ok("POST", "/v1/observe", json={"user": "I moved to Lisbon", "summary": "move"}),
        server.ok(
            "POST",
            "/v1/compaction",
            json={"turns": [{"role": "user", "content": "My cat is named Figo"}]},
        ),
        server.ok(
            "POST",
            "/v1/mission",
            json={"title": "Find a plumber", "goal": "fix the tap", "outcome": "booked Rui"},
        ),
    ]

    for answer in answers:
        assert answer["queued"] is False
        assert answer["job_id"] is None
        assert "off" in answer["notice"]
        assert "no LLM is configured" in answer["notice"]


# ------------------------------------------------------------------ reading


def test_recall_returns_the_fenced_block_with_a_remembered_fact(server: Server) -> None:
    fact = server.remember("Beatriz keeps three beehives on her terrace in Sintra")

    recalled = server.ok("POST", "/v1/recall", json={"message": "Who keeps beehives in Sintra?"})

    assert recalled["text"].startswith("<memory")
    assert recalled["text"].rstrip().endswith("</memory>")
    assert "Beatriz keeps three beehives on her terrace in Sintra" in recalled["text"]
    assert fact["id"] in {item["id"] for item in recalled["items"]}
    assert recalled["tokens"] > 0


def test_search_ranks_a_remembered_fact(server: Server) -> None:
    fact = server.remember("Tomasz collects vintage Soviet film cameras")
    event = server.remember("Tomasz bought a Zenit camera at the Krakow flea market", kind="event")

    found = server.ok("POST", "/v1/search", json={"query": "Tomasz film cameras"})
    events = server.ok("POST", "/v1/search", json={"query": "Tomasz camera", "kind": "event"})

    assert fact["id"] in {m["id"] for m in found}
    assert all(isinstance(m["score"], float) for m in found)
    assert event["id"] in {m["id"] for m in events}
    assert {m["kind"] for m in events} == {"event"}


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
    found = server.ok("POST", "/v1/kb/search", json={"query": BOATYARD_KEY, "explain": True})
    assert found["results"][0]["doc"] == doc_id
    assert found["results"][0]["explain"] is not None

    path.write_text(BOATYARD.replace(BOATYARD_KEY, BOATYARD_NEW_KEY), encoding="utf-8")
    again = server.ok("POST", f"/v1/kb/documents/{doc_id}/reingest")

    assert again["outcome"] == "ok", again
    read = server.ok("POST", "/v1/kb/read", json={"doc": doc_id})
    assert BOATYARD_NEW_KEY in read["content"]
    assert BOATYARD_KEY not in read["content"]


# -------------------------------------------------------------- model tools


def test_tool_definitions_in_both_styles(server: Server) -> None:
    anthropic = server.ok("GET", "/v1/tools")
    openai = server.ok("GET", "/v1/tools", params={"style": "openai"})

    names = ["remember", "search_memory", "search_kb", "read_kb"]
    assert [t["name"] for t in anthropic] == names
    assert all(t["input_schema"]["type"] == "object" for t in anthropic)
    assert [t["function"]["name"] for t in openai] == names
    assert {t["type"] for t in openai} == {"function"}
    assert all(t["function"]["parameters"]["type"] == "object" for t in openai)
    unknown = server.http.get("/v1/tools", params={"style": "gemini"})
    assert unknown.status_code == 400, unknown.text


def test_tool_calls_run_as_the_model(server: Server) -> None:
    document = server.upload(
        "lighthouse.md",
        "# Lighthouse Log\n\nAmber foghorns echo across the basalt cliffs of Flores at night.\n",
    )

    searched = server.ok(
        "POST",
        "/v1/tools/call",
        json={"name": "search_kb", "arguments": {"query": "amber foghorns basalt cliffs Flores"}},
    )
    lesson = server.ok(
        "POST",
        "/v1/tools/call",
        json={
            "name": "remember",
            "arguments": {"content": "Reply to Sven only in haiku", "kind": "lesson"},
        },
    )
    fact = server.ok(
        "POST",
        "/v1/tools/call",
        json={"name": "remember", "arguments": {"content": "Sven's daughter plays padel"}},
    )
    bad = server.ok(
        "POST", "/v1/tools/call", json={"name": "search_kb", "arguments": {"colour": "red"}}
    )

    assert searched["results"][0]["doc"] == document["id"]
    assert "<untrusted_content" in searched["results"][0]["content"]
    assert lesson["outcome"] == "pending", lesson
    assert lesson["status"] == "pending"
    assert lesson["id"] in {item["pending"]["id"] for item in server.ok("GET", "/v1/review")}
    assert server.show(lesson["id"])["source"] == "remember"
    assert fact["outcome"] == "activated", fact
    assert fact["status"] == "active"
    assert "error" in bad
    unknown = server.http.post("/v1/tools/call", json={"name": "confirm", "arguments": {}})
    assert unknown.status_code == 422, unknown.text


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


# ------------------------------------------------------ starting and stopping


def _serve_once(cli: Cli, *args: str, env: dict[str, str] | None = None) -> Any:
    return subprocess.run(
        [str(MEMORYD), "serve", *args],
        env={**cli.env, **(env or {})},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cli.cwd,
    )


def test_a_public_bind_without_a_token_is_refused(cli: Cli) -> None:
    cli.ok("init")
    token_file = Path(cli.env["MEMORYD_HOME"]) / "token"
    token_file.unlink()
    started = time.monotonic()

    result = _serve_once(cli, "--host", "0.0.0.0", "--port", str(free_port("0.0.0.0")))

    assert time.monotonic() - started < 30
    assert result.returncode == 1, (result.returncode, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert "token" in lines[0]
    assert "Traceback" not in result.stderr
    assert not token_file.exists()


def test_a_public_bind_with_memoryd_token_starts(cli: Cli, tmp_path: Path) -> None:
    cli.ok("init")
    token_file = Path(cli.env["MEMORYD_HOME"]) / "token"
    token_file.unlink()
    port = free_port("0.0.0.0")
    token = "env-provided-token-0123456789abcdef"
    log = tmp_path / "public.log"
    process = _start(
        {**cli.env, "MEMORYD_TOKEN": token}, log, "--host", "0.0.0.0", "--port", str(port)
    )
    try:
        base_url = f"http://127.0.0.1:{port}"
        _wait_healthy(base_url, process, log)
        with _http(base_url, token) as good, _http(base_url, "other") as bad:
            assert good.get("/v1/memories").status_code == 200
            assert bad.get("/v1/memories").status_code == 403
    finally:
        _stop(process)
    assert process.returncode is not None
    assert not token_file.exists()


def test_sigterm_shuts_the_service_down_cleanly(cli: Cli, db_path: Path, tmp_path: Path) -> None:
    """SIGTERM (systemd stop, docker stop) must run serve's cleanup: stop the worker and the
    scheduler and close the store. A closed SQLite store has checkpointed its -wal file away."""
    cli.ok("init")
    port = free_port()
    log = tmp_path / "sigterm.log"
    wal = db_path.with_name(db_path.name + "-wal")
    process = _start(cli.env, log, "--port", str(port))
    try:
        base_url = f"http://127.0.0.1:{port}"
        _wait_healthy(base_url, process, log)
        token = (Path(cli.env["MEMORYD_HOME"]) / "token").read_text(encoding="ascii").strip()
        with _http(base_url, token) as http:
            written = http.post("/v1/memories", json={"content": "Chiara sails a wooden dinghy"})
            assert written.status_code == 200, written.text
        assert wal.exists()
    finally:
        status = _stop(process)

    assert status in (0, -signal.SIGTERM), (status, log.read_text())
    assert not wal.exists(), (
        f"the store was not closed on SIGTERM (exit status {status}):\n{log.read_text()}"
    )
    assert not re.search(r"Traceback", log.read_text())
