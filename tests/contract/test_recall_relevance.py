"""Which memories a message recalls (SPEC §4), once per storage backend: recency breaks ties
but never hides a relevant memory, and the relevance gates give a block only when something
is relevant.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.memory.model import Importance, Kind
from memoryd.memory.promotion_policy import Outcome
from memoryd.recall.pack_policy import LESSONS_HEADING, MEMORIES_HEADING
from memoryd.recall.policy import RecallPolicy
from memoryd.service import MemoryService

from .conftest import Backend
from .recall_support import FOODS, NOW, days_ago, event, item_ids, remember

# ---------------------------------------------------------------------------------------------
# Recency breaks ties; it never hides a relevant memory


def test_a_year_old_event_both_legs_rank_first_is_recalled(service: MemoryService) -> None:
    for minute, food in enumerate(FOODS[:20]):
        event(service, f"Cooked {food} for dinner", days_ago(3) - timedelta(minutes=minute))
    kayak = event(service, "Rented a red kayak on Lake Bled with Marta", days_ago(365))
    message = "When did I rent the kayak on Lake Bled?"

    ranked, _ = service.leg_rankings(message, now=NOW)
    result = service.recall(message, now=NOW)

    assert ranked["vector"][0] == kayak.id and ranked["text"][0] == kayak.id
    assert item_ids(result)[0] == kayak.id
    [item] = [s for s in result.packed.items if s.memory.id == kayak.id]
    assert 0.9 <= item.recency < 0.95
    assert "vector" in item.gates and "text" in item.gates


def test_memories_are_recalled_after_a_year_of_silence(service: MemoryService) -> None:
    kayak = event(service, "Rented a red kayak on Lake Bled with Marta", days_ago(400))
    sister = remember(service, "Owner's sister Marta lives in Porto", now=days_ago(400))
    remember(service, "Owner is allergic to peanuts", now=days_ago(390))

    later = NOW + timedelta(days=300)
    kayak_block = service.recall("Tell me about that kayak trip", now=later)
    sister_block = service.recall("Where does my sister live?", now=later)

    assert item_ids(kayak_block)[0] == kayak.id
    assert item_ids(sister_block)[0] == sister.id


def test_reinforcing_a_memory_lifts_it_over_an_equal_but_staler_one(
    service: MemoryService,
) -> None:
    green = remember(service, "Owner's bicycle is painted green", now=days_ago(200))
    blue = remember(service, "Owner's scooter is painted blue", now=days_ago(100))
    message = "What colour is it painted?"
    before = service.recall(message, now=NOW)

    again = service.remember("Owner's bicycle is painted green", now=days_ago(1))
    after = service.recall(message, now=NOW)

    assert {green.id, blue.id} <= set(item_ids(before))
    assert again.outcome is Outcome.REINFORCED
    scores_before = {s.memory.id: s.score for s in before.packed.items}
    scores_after = {s.memory.id: s.score for s in after.packed.items}
    assert scores_after[green.id] > scores_before[green.id]
    assert scores_after[blue.id] == pytest.approx(scores_before[blue.id])


# ---------------------------------------------------------------------------------------------
# Relevance gates: a block only when something is relevant

OWNER_FACTS = (
    "Owner's sister Marta lives in Porto",
    "Owner works as a structural engineer at a bridge consultancy",
    "Owner is allergic to peanuts",
    "Owner's dog is a greyhound called Pimenta",
    "Owner plays the cello in an amateur orchestra on Thursdays",
    "Owner's favourite beer is a Belgian tripel",
    "Owner drives a 2015 Toyota Yaris hybrid",
    "Owner's partner Ines teaches chemistry at a secondary school",
    "Owner was born in Coimbra in 1988",
    "Owner prefers window seats on planes",
    "Owner runs 10 km every Saturday morning along the river",
    "Owner's mother Rosa has a vegetable garden in Tomar",
    "Owner is learning Japanese on a language app",
    "Owner takes the 7:40 train to work",
    "Owner's flat is on the fourth floor with no lift",
    "Owner supports Academica football club",
    "Owner hates coriander",
    "Owner's best friend Duarte lives in Berlin",
    "Owner has a mortgage with a fixed rate until 2031",
    "Owner keeps sourdough starter in the fridge and bakes on Sundays",
    "Owner's dentist is Dr. Salgado in Rua Augusta",
    "Owner wears contact lenses for short sight",
    "Owner's nephew Tomas turns seven in March",
    "Owner volunteers at the food bank once a month",
    "Owner reads crime novels before sleeping",
    "Owner's laptop is a ThinkPad X1 Carbon",
    "Owner is saving for a trip to Patagonia",
    "Owner drinks two espressos a day, never after 4 pm",
    "Owner's grandmother's ring is kept in the blue box",
    "Owner's gym membership renews every January",
    "Owner grows basil and mint on the balcony",
    "Owner's passport expires in 2029",
    "Owner likes hiking in the Geres mountains",
    "Owner's cat Miso is afraid of the vacuum cleaner",
    "Owner's company Christmas party is usually at a seafood restaurant",
    "Owner is colour blind for red and green",
    "Owner listens to jazz radio while cooking",
    "Owner's bank account is with a local credit union",
    "Owner plans to repaint the living room sage green",
    "Owner's car insurance is due every October",
    "Owner sings in the shower but never in public",
    "Owner's brother Rui is a pilot for a cargo airline",
    "Owner collects vintage fountain pens",
    "Owner's father had heart surgery in 2022",
    "Owner prefers tea over coffee in the evening",
    "Owner's neighbour complains about the cello practice",
    "Owner learned to swim only at 25",
    "Owner's wedding anniversary is on 14 June",
    "Owner uses a standing desk at home",
    "Owner does not eat red meat",
)
UNRELATED = (
    "What is the capital of Mongolia?",
    "quantum chromodynamics",
    "How do I reverse a linked list in Python?",
    "What is 17 times 23?",
)


@pytest.mark.parametrize("question", UNRELATED)
def test_an_unrelated_question_recalls_no_memories_but_keeps_the_lessons(
    service: MemoryService, question: str
) -> None:
    for content in OWNER_FACTS:
        remember(service, content)
    lesson = remember(
        service, "Answer in British English", kind=Kind.LESSON, importance=Importance.HIGH
    )

    result = service.recall(question, now=NOW)
    found = service.search_memory(question, now=NOW)

    assert result.packed.items == ()
    assert [m.id for m in result.packed.lessons] == [lesson.id]
    assert MEMORIES_HEADING not in result.text and LESSONS_HEADING in result.text
    assert result.silence is not None and result.silence.startswith("no strong evidence")
    assert found.items == (), "search_memory agrees with recall about what exists"


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("Where does my sister live?", "Owner's sister Marta lives in Porto"),
        ("What food am I allergic to?", "Owner is allergic to peanuts"),
        ("What is my dog called?", "Owner's dog is a greyhound called Pimenta"),
        (
            "Which instrument do I play?",
            "Owner plays the cello in an amateur orchestra on Thursdays",
        ),
        (
            "What does Ines do for a living?",
            "Owner's partner Ines teaches chemistry at a secondary school",
        ),
    ],
)
def test_a_related_question_still_finds_its_fact(
    service: MemoryService, question: str, expected: str
) -> None:
    for content in OWNER_FACTS:
        remember(service, content)

    result = service.recall(question, now=NOW)

    contents = [s.memory.content for s in result.packed.items]
    assert expected in contents[:3], contents
    assert result.silence is None
    assert result.packed.tokens < 1500 / 2, "a sharp question gets a short block"


def test_a_question_in_the_words_of_a_facts_slot_finds_the_fact(service: MemoryService) -> None:
    """MiniLM puts "What is my job?" at cosine 0.19 from "works as a tram driver": the fact's
    predicate is what the question says."""
    for content in OWNER_FACTS:
        remember(service, content)
    job = remember(
        service,
        "The owner works as a tram driver on the number 28 line",
        subject="owner",
        predicate="job",
        object="tram driver",
    )

    result = service.recall("What is my job?", now=NOW)

    assert item_ids(result)[0] == job.id
    assert "text" in result.packed.items[0].gates


def test_a_question_about_someone_the_store_never_heard_of_recalls_nothing(
    service: MemoryService,
) -> None:
    for content in OWNER_FACTS:
        remember(service, content)

    result = service.recall("When did Caroline go to the LGBTQ support group?", now=NOW)

    assert result.packed.items == ()
    assert "Caroline" in result.facts.unknown_names
    assert result.silence is not None and "Caroline" in result.silence


def test_explain_says_which_gate_let_each_item_in_and_what_stopped_the_others(
    service: MemoryService,
) -> None:
    for content in OWNER_FACTS:
        remember(service, content)

    result = service.recall("Which instrument do I play in the orchestra?", now=NOW)
    as_json = result.to_json()

    cello = next(i for i in as_json["items"] if "cello" in i["content"])
    assert cello["cosine"] is not None and cello["recency"] is not None
    assert "vector" in cello["gates"] and cello["cosine"] > 0.35
    assert 0.9 <= cello["recency"] <= 1.0
    assert as_json["query"]["words"]["orchestra"] == 1
    reasons = [d["reason"] for d in as_json["dropped"]]
    assert any(r.startswith("no gate passed (vector: cosine") for r in reasons)


CELLO = (
    "Owner plays the cello in an amateur orchestra on Thursdays",
    "Owner's neighbour complains about the cello practice",
    "Owner bought a new cello bow in Lisbon",
)
CELLO_QUESTIONS = ("Tell me about my cello", "Who complains about my practice?")


@settings(
    max_examples=6,
    deadline=None,
    database=None,
    # Each example opens a store of its own from the backend.
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    data=st.data(),
    others=st.lists(
        st.sampled_from([c for c in OWNER_FACTS if "cello" not in c]),
        min_size=1,
        max_size=30,
        unique=True,
    ),
)
def test_adding_an_unrelated_memory_never_removes_a_relevant_one(
    backend: Backend, data: st.DataObject, others: list[str]
) -> None:
    """The property, on a growing store: after each memory on another topic is added, every
    memory that answered the question before still does."""
    service = backend.open_fresh()
    question = data.draw(st.sampled_from(CELLO_QUESTIONS))
    try:
        for content in CELLO:
            remember(service, content)
        relevant = set(item_ids(service.recall(question, now=NOW)))
        assert relevant
        for content in others:
            remember(service, content)
            now_packed = set(item_ids(service.recall(question, now=NOW)))
            assert relevant <= now_packed, (content, relevant - now_packed)
    finally:
        service.close()  # each example's store holds connections of its own


# ---------------------------------------------------------------------------------------------
# Names as people write them


@pytest.mark.parametrize(
    ("question", "stored"),
    [
        ("When did Mohammed start the new job?", "Muhhamed"),
        ("What did Faheem say about the trip?", "Fahim"),
        ("Is Nikolas coming to the dinner?", "Nicolas"),
    ],
)
def test_a_name_spelt_another_way_is_no_unknown_name(
    service: MemoryService, question: str, stored: str
) -> None:
    """A chat says "Muhhamed", the question "Mohammed": the same person, so the question is
    not about someone the store never heard of, and the name's memories are recalled."""
    for content in OWNER_FACTS[:20]:
        remember(service, content)
    about = {
        "Muhhamed": "Muhhamed started his new job at the harbour authority in May",
        "Fahim": "Fahim said the trip to Sintra was too expensive",
        "Nicolas": "Nicolas confirmed he is coming to the dinner on Friday",
    }[stored]
    memory = remember(service, about, entities=[stored])

    result = service.recall(question, now=NOW)

    assert result.facts.unknown_names == ()
    assert memory.id in item_ids(result)
    assert "entity" in next(s for s in result.packed.items if s.memory.id == memory.id).gates


def test_an_unknown_name_with_nothing_else_strong_recalls_nothing(service: MemoryService) -> None:
    for content in OWNER_FACTS:
        remember(service, content)
    remember(
        service, "Muhhamed started his new job at the harbour authority", entities=["Muhhamed"]
    )

    result = service.recall("What does Bartholomew think of the harbour?", now=NOW)

    assert result.facts.unknown_names == ("Bartholomew",)
    assert result.packed.items == () and result.silence is not None


def test_a_question_naming_someone_the_store_knows_reads_as_named_a_general_one_does_not(
    service: MemoryService,
) -> None:
    """The relevance's `named` feature is read from the store's names: "Fahim" (or a close
    spelling, "Faheem") is known once a memory is tagged with it; a general question names
    nothing the store holds. The same reading carries into the item's relevance."""
    for content in OWNER_FACTS[:20]:
        remember(service, content)
    memory = remember(
        service, "Fahim said the trip to Sintra was too expensive", entities=["Fahim"]
    )

    asked = service.recall("What did Faheem say about the trip?", now=NOW)
    general = service.recall("What is the capital of Mongolia?", now=NOW)

    assert asked.facts.named and not general.facts.named
    item = next(s for s in asked.packed.items if s.memory.id == memory.id)
    assert item.contributions["named"] == RecallPolicy().score_weights["named"] > 0


def test_a_bare_the_of_the_owners_world_reads_as_definite_a_fact_of_the_world_does_not(
    service: MemoryService,
) -> None:
    """ "Where's the hammer?" points at one thing of its writer's world; "the capital of
    Mongolia" at a fact of the world: the relevance's `definite` feature tells them apart."""
    for content in OWNER_FACTS[:20]:
        remember(service, content)

    assert service.recall("Where's the hammer?", now=NOW).facts.definite
    assert not service.recall("What is the capital of Mongolia?", now=NOW).facts.definite
