"""One slot per meaning (memoryd.memory.slot_policy): canonical subjects and predicates, the slot a
new
predicate joins, and the re-slot plan for stores keyed before canonical forms."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.memory.slot_policy import (
    SlotPolicy,
    SlottedFact,
    VocabularyEntry,
    canonical_predicate,
    canonical_subject,
    canonical_words,
    names_to_compare,
    plan_reslot,
    plan_slot,
    slot_key,
    wording_verdict,
)

WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=2, max_size=8).filter(
    lambda w: w not in {"the", "an", "is", "am", "are", "my", "his", "her", "its", "our"}
)
WORDS = st.lists(WORD, min_size=1, max_size=4)
SEPARATOR = st.sampled_from([" ", "_", "-", "  ", " - ", "/"])
CASE: st.SearchStrategy[Callable[[str], str]] = st.sampled_from([str.lower, str.title, str.upper])
POLICY = SlotPolicy()
T0 = datetime(2026, 1, 1, tzinfo=UTC)


@given(st.text(max_size=40))
def test_canonical_forms_are_idempotent_and_never_empty_for_text_with_letters(text: str) -> None:
    for canonical in (canonical_subject, canonical_predicate):
        once = canonical(text)
        assert canonical(once) == once
        if any(ch.isalnum() for ch in text):
            assert once.strip()


@given(WORDS, SEPARATOR, st.lists(CASE, min_size=4, max_size=4))
def test_case_and_separators_never_change_a_slot(
    words: list[str], separator: str, cases: list[Callable[[str], str]]
) -> None:
    written = separator.join(case(w) for case, w in zip(cases, words, strict=False))
    camel = words[0] + "".join(w.title() for w in words[1:])
    plain = " ".join(words)

    assert slot_key("owner", written) == slot_key("owner", plain) == slot_key("owner", camel)
    assert slot_key(written, "lives in") == slot_key(plain, "lives in")


@given(WORDS)
def test_articles_and_possessives_never_change_a_subject(words: list[str]) -> None:
    name = " ".join(words)
    assert canonical_subject(f"the {name}") == canonical_subject(name)
    assert canonical_subject(f"The {name}'s") == canonical_subject(name)
    assert canonical_subject(f"my {name}") == canonical_subject(f"the owner's {name}")


def test_the_owner_is_one_subject_however_it_is_named() -> None:
    owners = ["owner", "Owner", "The owner", "the Owner's", "owner's", "OWNER", "I", "me", "my"]
    owners += ["myself", "user", "the user"]
    assert {canonical_subject(s) for s in owners} == {"owner"}
    assert canonical_subject("the owner's sister") == canonical_subject("My sister") == "sister"
    assert canonical_subject("Ana") == canonical_subject("Ana's") == "ana"
    assert canonical_subject("Ana") != canonical_subject("owner")


def test_predicates_that_differ_in_wording_only_share_a_key() -> None:
    same = [
        ["lives in", "lives_in", "lives-in", "livesIn", "Lives In", "LIVES IN", "is lives in"],
        ["favourite colour", "favorite color", "Favourite_Colour", "my favourite colour"],
        ["employer", "the employer", "owner's employer", "The owner's employer", "Employer:"],
        ["allergic to", "is allergic to"],
        ["date of birth", "Date_Of_Birth", "dateOfBirth"],
    ]
    for group in same:
        assert len({canonical_predicate(p) for p in group}) == 1, group
    apart = [("works at", "worked at"), ("lives in", "lived in"), ("owner of", "of")]
    for first, second in apart:
        assert canonical_predicate(first) != canonical_predicate(second)
    # The words written are kept for display; only the key is canonical.
    assert canonical_predicate("is owner of") == "owner of"


@pytest.mark.parametrize(
    ("first", "second", "verdict"),
    [
        ("date of birth", "birth date", True),
        ("commute", "commutes by", True),
        ("timezone", "time zone", True),
        ("mum's name", "mother's name", True),
        ("moved to", "moved from", False),
        ("works at", "works as", False),
        ("works at", "worked at", False),
        ("likes", "dislikes", False),
        ("father", "grandfather", False),
        ("uncle", "aunt", False),
        ("employer", "former employer", False),
        ("brother's name", "sister's name", False),
        ("favourite colour", "eye colour", False),
        ("lives in", "home city", None),
        ("works at", "employer", None),
    ],
)
def test_words_settle_what_similarity_cannot(first: str, second: str, verdict: object) -> None:
    a, b = canonical_predicate(first), canonical_predicate(second)
    assert wording_verdict(a, b) is verdict
    assert wording_verdict(b, a) is verdict


def _entry(
    predicate: str, same_slot_as: str | None = None, subject: str = "owner"
) -> VocabularyEntry:
    slot = slot_key(subject, same_slot_as or predicate)
    return VocabularyEntry(predicate, slot, same_slot_as)


def test_a_new_predicate_joins_the_closest_slot_above_the_threshold_and_says_so() -> None:
    lives = _entry("lives in")
    colour = _entry("favourite colour")
    entries = [lives, colour]

    assert names_to_compare("owner", "home city", entries) == ["favourite colour", "lives in"]
    cosines = {"lives in": 0.73, "favourite colour": 0.2}
    joined = plan_slot("The owner", "home city", entries, cosines, POLICY)
    assert (joined.slot, joined.same_slot_as) == (lives.slot, "lives in")
    assert joined.note() == "treated as the same slot as 'lives in' (predicate similarity 0.73)"

    below = plan_slot("owner", "home city", entries, {"lives in": 0.71}, POLICY)
    assert (below.slot, below.same_slot_as, below.note()) == (
        slot_key("owner", "home city"),
        None,
        None,
    )
    # Whatever the similarity, words that set two predicates apart keep them apart.
    assert plan_slot("owner", "lived in", entries, {"lives in": 0.99}, POLICY).same_slot_as is None
    # The canonical form needs no similarity, and is no mapping.
    assert names_to_compare("owner", "Lives_In", entries) == []
    assert plan_slot("owner", "Lives_In", entries, {}, POLICY).slot == lives.slot
    assert plan_slot("owner", "Lives_In", entries, {}, POLICY).same_slot_as is None
    # Same words in another order: joined, and said so, without a similarity.
    born = plan_slot("owner", "birth date", [_entry("date of birth")], {}, POLICY)
    assert born.note() == "treated as the same slot as 'date of birth' (the same words)"


def test_a_mapped_predicate_keeps_its_slot_and_never_becomes_a_slot_name() -> None:
    lives = _entry("lives in")
    mapped = VocabularyEntry("home city", lives.slot, "lives in")
    # Lisbon was superseded: only the mapped fact is live, the slot still answers to its name.
    again = plan_slot("owner", "home city", [mapped], {}, POLICY)
    assert (again.slot, again.same_slot_as) == (lives.slot, "lives in")
    assert plan_slot("owner", "lives in", [mapped], {}, POLICY).slot == lives.slot
    # Only "lives in" is compared: a slot cannot drift one neighbour at a time.
    assert names_to_compare("owner", "hometown", [lives, mapped]) == ["lives in"]
    # After a split the predicate has its own slot, and later facts go there.
    split = VocabularyEntry("home city", slot_key("owner", "home city"))
    assert plan_slot("owner", "Home City", [lives, split, mapped], {}, POLICY).slot == split.slot


def test_canonical_words_find_a_subject_named_in_text() -> None:
    assert " ana " in f" {canonical_words('Dinner with ANA’s sister, then home.')} "


def _fact(
    ident: str, predicate: str, *, active: bool = True, days: int = 0, subject: str = "owner",
    same_slot_as: str | None = None, slot: str = "slot_legacy",
) -> SlottedFact:  # fmt: skip
    return SlottedFact(
        ident, active, subject, predicate, slot, same_slot_as, T0 + timedelta(days=days)
    )


def test_the_reslot_keeps_the_oldest_active_fact_and_puts_the_others_up_for_review() -> None:
    plan = plan_reslot(
        [
            _fact("b", "lives in", days=2, subject="owner", slot="s2"),
            _fact("a", "lives_in", days=1, subject="The owner", slot="s1"),
            _fact("c", "Lives-In", active=False, days=0, slot="s3"),
            _fact("d", "favourite colour", days=3, slot="s4"),
            _fact("e", "home city", days=4, same_slot_as="lives in", slot="kept"),
        ]
    )

    lives = slot_key("owner", "lives in")
    assert plan.slots == {
        "a": (lives, "owner"),
        "b": (lives, "owner"),
        "c": (lives, "owner"),
        "d": (slot_key("owner", "favourite colour"), "owner"),
        "e": ("kept", "owner"),
    }
    assert [(d.memory_id, d.keeper_id) for d in plan.demotions] == [("b", "a")]


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["owner", "The owner", "my", "Ana", "ana's"]),
            st.sampled_from(["lives in", "lives_in", "LivesIn", "job", "the job", "colour"]),
            st.booleans(),
            st.integers(0, 5),
        ),
        max_size=12,
    )
)
def test_after_a_reslot_each_slot_has_one_active_fact_and_none_is_lost(
    rows: list[tuple[str, str, bool, int]],
) -> None:
    facts = [
        _fact(f"m{i}", predicate, active=active, days=days, subject=subject, slot=f"old{i}")
        for i, (subject, predicate, active, days) in enumerate(rows)
    ]
    plan = plan_reslot(facts)
    demoted = {d.memory_id for d in plan.demotions}
    still_active = [f for f in facts if f.active and f.id not in demoted]

    assert set(plan.slots) == {f.id for f in facts}
    assert len({plan.slots[f.id][0] for f in still_active}) == len(still_active)
    for demotion in plan.demotions:
        keeper = next(f for f in facts if f.id == demotion.keeper_id)
        assert keeper.active and keeper.id not in demoted
        assert plan.slots[keeper.id][0] == plan.slots[demotion.memory_id][0]
    # A second run over the result changes nothing.
    again = plan_reslot(
        [
            SlottedFact(f.id, f.active and f.id not in demoted, f.subject, f.predicate,
                        plan.slots[f.id][0], f.same_slot_as, f.created_at)
            for f in facts
        ]
    )  # fmt: skip
    assert again.demotions == () and again.slots == plan.slots
