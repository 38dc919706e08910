"""How the web page words what it shows: leg ranks, entities and other field values as text
(never a Python repr), why a pending memory waits, read from its audit trail, and which slot
a fact joined."""

from __future__ import annotations

from datetime import UTC, datetime

from memoryd.http.web_html import PendingView, memory_html, ranks_text, review_html, value_text
from memoryd.memory.model import Actor, AuditEntry, Kind, Memory, Source, Status
from memoryd.memory.review_policy import reason_entry

AT = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def _entry(
    memory_id: str, action: str, to: Status, reason: str, was: Status | None = None
) -> AuditEntry:
    return AuditEntry(memory_id, AT, Actor.POLICY, action, was, to, reason)


def test_values_read_as_words() -> None:
    assert ranks_text({"vector": 1, "text": 3}) == "vector #1, text #3"
    assert ranks_text({}) == ""
    assert value_text(["Ana", "Taberna"]) == "Ana, Taberna"
    assert value_text(("Ana",)) == "Ana"
    assert value_text({"vector": 1, "legs": ["a", "b"]}) == "vector: 1, legs: a, b"
    assert (value_text(True), value_text(False), value_text(None)) == ("yes", "no", "")
    assert value_text(0.9) == "0.9"


def _why(audit: list[AuditEntry], memory_id: str) -> str | None:
    entry = reason_entry(audit, memory_id)
    return entry.reason if entry is not None else None


def test_why_pending_is_the_reason_recorded_when_it_was_proposed() -> None:
    audit = [
        _entry("old", "create", Status.ACTIVE, "the owner asked to remember this"),
        _entry("new", "create", Status.PENDING, "waits for the owner: a fact never activates"),
        _entry("new", "reinforce", Status.PENDING, "seen again", was=Status.PENDING),
    ]
    assert _why(audit, "new") == "waits for the owner: a fact never activates"
    assert reason_entry(audit, "absent") is None
    # No create entry (an import): the latest entry that moved it to pending; a vouch that
    # left it pending is not why it waits.
    moved = [
        _entry("m", "import", Status.PENDING, "imported from backup.json"),
        _entry("m", "reinforce", Status.PENDING, "seen again", was=Status.PENDING),
    ]
    assert _why(moved, "m") == "imported from backup.json"


def test_a_fact_in_another_predicates_slot_says_so_and_offers_a_split() -> None:
    def fact(status: Status, same_slot_as: str | None) -> Memory:
        return Memory("m1", Kind.FACT, status, "Home city is Porto", Source.TURN, AT, AT,
                      subject="owner", predicate="home <city>", object="Porto",
                      slot="slot_x", same_slot_as=same_slot_as)  # fmt: skip

    mapped = fact(Status.PENDING, "lives <in>")
    page = review_html([PendingView(mapped, "waits for the owner: a fact", None)], "tok")
    assert "Treated as the same slot as</b> &ldquo;lives &lt;in&gt;&rdquo;" in page
    assert "its own predicate: &ldquo;home &lt;city&gt;&rdquo;" in page
    assert 'action="/memories/m1/split"' in page

    shown = memory_html(fact(Status.ACTIVE, "lives in"), [], [], "tok")
    assert 'action="/memories/m1/split"' in shown and "same slot as" in shown
    for unsplittable in (fact(Status.ACTIVE, None), fact(Status.ARCHIVED, "lives in")):
        assert "/split" not in memory_html(unsplittable, [], [], "tok")
    assert "/split" not in review_html([PendingView(fact(Status.PENDING, None), "r", None)], "t")
