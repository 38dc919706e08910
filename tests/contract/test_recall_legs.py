"""Recall's legs (SPEC §4), once per storage backend: dates written in the message, the episode
leg, the time leg, the entity leg, and each leg failing alone.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from memoryd.memory.model import Memory
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.run import Retriever
from memoryd.service import MemoryService

from .recall_support import (
    FOODS,
    NOW,
    BrokenEmbedder,
    days_ago,
    event,
    item_ids,
    november,
    remember,
)

# ---------------------------------------------------------------------------------------------
# Dates written in the message, days in the owner's zone


@pytest.mark.parametrize(
    "now", [NOW, datetime(2023, 4, 11, 9, 0, tzinfo=UTC), NOW + timedelta(days=3000)]
)
def test_the_weekend_before_a_date_is_that_weekend_whatever_now_is(
    service: MemoryService, now: datetime
) -> None:
    saturday = event(service, "Went sailing off Cascais", datetime(2023, 4, 8, 15, tzinfo=UTC))
    event(service, "Went sailing off Sesimbra", datetime(2023, 4, 1, 15, tzinfo=UTC))

    result = service.recall("What did I do the weekend before April 10, 2023?", now=now)

    assert result.window is not None
    assert (result.window.start.date(), result.window.end.date()) == (
        datetime(2023, 4, 8).date(),
        datetime(2023, 4, 10).date(),
    )
    assert item_ids(result)[0] == saturday.id
    assert result.legs["time"] == "ok"


# ---------------------------------------------------------------------------------------------
# The episode leg: what happened together is recalled together


def test_the_other_events_of_the_best_events_day_come_along(service: MemoryService) -> None:
    day = datetime(2026, 10, 3, 18, 0, tzinfo=UTC)
    wedding = event(service, "Went to Joana's wedding at the quinta near Sintra", day)
    toast = event(service, "Gave a toast that made the bride's grandmother cry", day)
    event(service, "Went to a wedding fair in Lisbon", datetime(2026, 6, 1, tzinfo=UTC))
    for minute, food in enumerate(FOODS[:10]):
        event(service, f"Cooked {food} for dinner", days_ago(3) - timedelta(minutes=minute))

    result = service.recall("How was Joana's wedding?", now=NOW)

    assert item_ids(result)[0] == wedding.id
    [came_along] = [s for s in result.packed.items if s.memory.id == toast.id]
    assert "episode" in came_along.gates
    assert result.legs["episode"] == "ok"


# ---------------------------------------------------------------------------------------------
# Each leg may fail alone


def test_with_the_embedder_down_full_text_and_entity_still_answer(service: MemoryService) -> None:
    risotto = remember(service, "Ana loves cooking mushroom risotto", entities=["Ana"])
    remember(service, "The dentist appointment is on Fridays")
    remember(service, "Bruno plays the cello", entities=["Bruno"])
    service.use_embedder(BrokenEmbedder())

    result = service.recall("Is Ana still cooking risotto?", now=NOW)
    found = service.search_memory("risotto", now=NOW)

    assert result.legs["vector"].startswith("failed")
    assert result.legs["text"] == "ok"
    assert result.legs["entity"] == "ok"
    [item] = [s for s in result.packed.items if s.memory.id == risotto.id]
    assert set(item.ranks) == {"text", "entity"}
    assert "Ana loves cooking mushroom risotto" in result.text
    assert found.legs["vector"].startswith("failed")
    assert [s.memory.id for s in found.items] == [risotto.id]


# ---------------------------------------------------------------------------------------------
# The time leg


def test_what_did_i_do_last_week_recalls_last_weeks_events_not_older_ones(
    service: MemoryService,
) -> None:
    last_week = [
        event(service, "Went hiking in the Sintra hills with Bruno", november(17, 9)),
        event(service, "Had dinner with colleagues at a ramen bar", november(19, 20)),
        event(service, "Visited the dentist for a cleaning", november(22, 23)),
    ]
    # Three weeks ago, worded alike: only time tells them apart.
    older = [
        event(service, "Went hiking in the Arrabida hills with Bruno", november(3, 9)),
        event(service, "Had dinner with colleagues at a sushi bar", november(5, 20)),
        event(service, "Visited the dentist for a filling", november(8, 11)),
    ]
    this_week = event(service, "Went hiking in the Sintra hills again", days_ago(1))

    result = service.recall("What did I do last week?", now=NOW)
    ranked, _ = service.leg_rankings("What did I do last week?", now=NOW)

    assert result.window is not None and result.window.phrase == "last week"
    assert result.legs["time"] == "ok"
    assert set(ranked["time"]) == {m.id for m in last_week}
    assert this_week.id not in ranked["time"]
    scores = {s.memory.id: s.score for s in result.packed.items}
    assert {m.id for m in last_week} <= set(scores)
    for memory in last_week:
        assert memory.content in result.text
    weakest_of_last_week = min(scores[m.id] for m in last_week)
    for memory in older:
        assert scores.get(memory.id, 0.0) < weakest_of_last_week


def test_a_message_without_a_time_runs_no_time_leg(service: MemoryService) -> None:
    event(service, "Went hiking in the Sintra hills with Bruno", days_ago(3))

    result = service.recall("Where do I like hiking?", now=NOW)

    assert result.window is None
    assert "time" not in result.legs
    assert result.to_json()["time_window"] is None


# ---------------------------------------------------------------------------------------------
# The entity leg


def test_every_person_in_a_list_of_names_is_found_by_the_entity_leg(
    service: MemoryService,
) -> None:
    lunch = remember(service, "Lunch with Ana, Bruno and Carla at the harbour")

    for name in ("Ana", "Bruno", "Carla"):
        ranked, _ = service.leg_rankings(f"What did {name} say?", now=NOW)
        assert lunch.id in ranked.get("entity", []), name


def test_each_leg_reads_as_deep_as_the_recall_policy_says(service: MemoryService) -> None:
    for dish in ("risotto", "risotto with peas", "paella", "gnocchi", "a curry", "ramen"):
        remember(service, f"Ana cooked {dish} for {dish.split()[-1]} night", entities=["Ana"])
    retriever = Retriever(
        store=service.store,
        embedder=service.embedder,
        tokenizer=service.tokenizer,
        policy=replace(RecallPolicy(), leg_depth=2),
        clock=lambda: NOW,
        zone=service.zone,
    )

    found = retriever.evidence("Did Ana cook risotto?", NOW)
    rankings, legs = found.rankings, found.legs

    assert {leg: legs[leg] for leg in ("vector", "text", "entity")} == dict.fromkeys(
        ("vector", "text", "entity"), "ok"
    )
    assert {leg: len(rankings[leg]) for leg in ("vector", "text", "entity")} == dict.fromkeys(
        ("vector", "text", "entity"), 2
    )


def _bounded_time_leg(service: MemoryService, bound: int) -> Retriever:
    """A retriever whose time leg hands on ``bound`` events alone, the embedding route down
    (so the vector leg finds nothing to agree with)."""
    return Retriever(
        store=service.store,
        embedder=BrokenEmbedder(),
        tokenizer=service.tokenizer,
        policy=replace(RecallPolicy(), time_leg_depth=bound),
        clock=lambda: NOW,
        zone=service.zone,
    )


def _last_week(service: MemoryService) -> list[Memory]:
    """Five events of last week (Monday 16 to Sunday 22 November), no two as far from the
    week's middle."""
    times = ((16, 9), (18, 7), (19, 15), (21, 6), (22, 20))
    return [
        event(service, f"Went to the market on the {day}th", november(day, hour))
        for day, hour in times
    ]


def test_the_time_leg_hands_on_the_events_closest_to_the_windows_middle(
    service: MemoryService,
) -> None:
    events = _last_week(service)

    found = _bounded_time_leg(service, 2).evidence("What did I do last week?", NOW)
    shipped, _ = service.leg_rankings("What did I do last week?", now=NOW)

    assert found.facts.window is not None
    middle = found.facts.window.middle
    closest = sorted(events, key=lambda m: abs((m.occurred_at or NOW) - middle))
    assert found.rankings["time"] == [m.id for m in closest[:2]]
    assert set(found.candidates) == {m.id for m in closest[:2]}
    assert found.facts.window_events == 5
    assert set(shipped["time"]) == {m.id for m in events}


def test_an_event_below_the_time_legs_bound_stays_when_another_leg_finds_it(
    service: MemoryService,
) -> None:
    events = _last_week(service)
    dentist = event(service, "Had a filling at the dentist", november(16, 7))

    found = _bounded_time_leg(service, 2).evidence("Did I see the dentist last week?", NOW)
    shipped, _ = service.leg_rankings("Did I see the dentist last week?", now=NOW)
    result = _bounded_time_leg(service, 2).recall("Did I see the dentist last week?", None, NOW)

    assert found.rankings["time"][2:] == [dentist.id]
    # Its rank is where the time leg read it, as when nothing is bounded.
    rank = shipped["time"].index(dentist.id) + 1
    assert rank > 2 and found.candidates[dentist.id].ranks["time"] == rank
    assert "text" in found.candidates[dentist.id].ranks
    assert len(found.candidates) == 3
    assert {m.id for m in events} & set(found.candidates)
    assert dentist.id in item_ids(result)


def test_an_event_held_back_by_the_time_leg_joins_its_days_episode_as_if_handed_on(
    service: MemoryService,
) -> None:
    _last_week(service)
    dentist = event(service, "Had a filling at the dentist", november(16, 7))
    drive = event(service, "Drove to the clinic in the rain and waited an hour", november(16, 6))
    message = "Did I see the dentist last week?"

    found = _bounded_time_leg(service, 2).evidence(message, NOW)
    held = _bounded_time_leg(service, 2).recall(message, None, NOW, stamp=False)
    shipped = _bounded_time_leg(service, 100).recall(message, None, NOW, stamp=False)
    shipped_ranks, _ = service.leg_rankings(message, now=NOW)

    assert drive.id not in found.candidates and drive.id in found.held_back
    assert item_ids(held)[0] == item_ids(shipped)[0] == dentist.id
    # It regains the time leg's rank: the same score as when every event is handed on.
    joined = {s.memory.id: s for s in held.packed.items}[drive.id]
    same = {s.memory.id: s for s in shipped.packed.items}[drive.id]
    assert (
        dict(joined.ranks)
        == dict(same.ranks)
        == {
            "time": shipped_ranks["time"].index(drive.id) + 1,
            "episode": 1,
        }
    )
    assert joined.score == same.score


# ---------------------------------------------------------------------------------------------
# Names the vector leg keeps: a project's name is its subject, the owner's is everyone's


def _project_store(service: MemoryService) -> tuple[str, str]:
    """45 memories: 10 about the Quillon app (22 % of them, an unselective name), a look-alike
    about another app, and unrelated dinners; (the Quillon memory asked about, the look-alike)."""
    notes = [
        "Quillon app: the login screen now uses passkeys",
        "Quillon app: fixed the crash on the settings page",
        "Quillon app: moved the database to Postgres",
        "Quillon app: the dark theme ships next sprint",
        "Quillon app: onboarding has three steps now",
        "Quillon app: push notifications go out at nine",
        "Quillon app: the search box finds tags too",
        "Quillon app: invoices are numbered by year",
        "Quillon app: the beta has forty testers",
    ]
    for note in notes:
        remember(service, note, entities=["Quillon"])
    asked = remember(
        service, "In Quillon the sync button uploads drafts to the cloud", entities=["Quillon"]
    )
    other = remember(service, "The sync button uploads drafts every hour")
    for food in FOODS[:34]:
        remember(service, f"Cooked {food} for dinner on a weeknight")
    return asked.id, other.id


@pytest.mark.parametrize(("share", "first"), [(RecallPolicy().vector_name_max_share, 0), (0.05, 1)])
def test_the_vector_leg_keeps_a_name_that_tags_a_fifth_of_the_memories(
    service: MemoryService, share: float, first: int
) -> None:
    ids = _project_store(service)
    retriever = Retriever(
        store=service.store,
        embedder=service.embedder,
        tokenizer=service.tokenizer,
        policy=replace(RecallPolicy(), vector_name_max_share=share),
        clock=lambda: NOW,
        zone=service.zone,
    )

    asked = "What does the sync button do in Quillon?"
    found = retriever.evidence(asked, NOW)
    recalled = retriever.recall(asked, None, NOW, stamp=False)

    assert found.rankings["vector"][0] == ids[first]
    assert item_ids(recalled)[0] == ids[first]
