"""Memories over HTTP (SPEC §7): remember, list, review, edit, archive, purge, consolidate, and
the extraction triggers with no LLM configured.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from memoryd.client import Client

from ..server import MEMORYD, login_env
from .conftest import ABSENT_ID, Server

# ----------------------------------------------------------------- memories


def test_remember_then_show_it_with_its_chain_and_audit(server: Server) -> None:
    memory = server.remember("Ana cooks seafood paella every Sunday in Setubal")

    shown = server.show(memory["id"])

    assert shown["id"] == memory["id"]
    assert shown["content"] == "Ana cooks seafood paella every Sunday in Setubal"
    assert shown["source"] == "owner"
    assert [m["id"] for m in shown["chain"]] == [memory["id"]]
    assert [(a["action"], a["to_status"]) for a in shown["audit"]] == [("create", "active")]
    # The API takes whole ids only: a shortened one could name another memory some day.
    assert server.http.get(f"/v1/memories/{memory['id'][:12]}").status_code == 404


def test_a_new_fact_value_says_what_it_replaced(server: Server) -> None:
    slot = {"subject": "Rui", "predicate": "lives in"}
    braga = server.ok(
        "POST", "/v1/memories", json={"content": "Rui lives in Braga", "object": "Braga", **slot}
    )
    faro = server.ok(
        "POST", "/v1/memories", json={"content": "Rui lives in Faro", "object": "Faro", **slot}
    )

    assert braga["replaced"] == []
    assert [(m["id"], m["status"]) for m in faro["replaced"]] == [
        (braga["memory"]["id"], "archived")
    ]


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
    [item] = [item for item in queue if item["pending"]["id"] == pending["id"]]
    assert item["rule"] == "needs-owner"
    assert "a lesson never activates alone" in item["reason"]
    assert "contains the sensitive phrase 'always'" in item["reason"]
    assert item["would_replace"] is None

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
    # Only this fact is old enough to decay, so other tests' memories are left alone. An HTTP
    # body never dates a write (the server's clock does): the CLI's --now writes it, into the
    # store the server has open.
    old = _remembered_back_then(
        server, "Lars rents a rowing boat shed beside Lake Bled", "2024-01-15T10:00:00+00:00"
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


def _remembered_back_then(server: Server, content: str, when: str) -> dict[str, Any]:
    env = {
        **login_env(server.home.parent / "home"),
        "MEMORYD_HOME": str(server.home),
        "MEMORYD_DB": str(server.home.parent / "store" / "memoryd.db"),
    }
    done = subprocess.run(
        [str(MEMORYD), "remember", content, "--now", when, "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    memory: dict[str, Any] = json.loads(done.stdout)
    return memory


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


def test_split_gives_a_fact_its_own_slot_and_restores_what_it_replaced(server: Server) -> None:
    lisbon = server.remember(
        "Marta lives in Lisbon", subject="Marta", predicate="lives in", object="Lisbon"
    )
    porto = server.remember(
        "Marta's home city is Porto", subject="Marta's", predicate="home city", object="Porto"
    )
    assert (porto["same_slot_as"], porto["supersedes"]) == ("lives in", lisbon["id"])
    assert server.show(porto["id"])["same_slot_as"] == "lives in"

    with Client(server.base_url, server.token) as client:
        split = client.split(porto["id"])

    assert split["was_same_slot_as"] == "lives in"
    assert (split["memory"]["id"], split["memory"]["same_slot_as"]) == (porto["id"], None)
    assert (split["restored"]["id"], split["restored"]["status"]) == (lisbon["id"], "active")
    again = server.http.post(f"/v1/memories/{porto['id']}/split")
    assert again.status_code == 409
    assert "already in its own slot" in again.json()["error"]
    missing = server.http.post(f"/v1/memories/{ABSENT_ID}/split")
    assert missing.status_code == 404
