"""A long memory's excerpt in the recalled block (SPEC §4), once per storage backend: a long
memory that does not fit whole in the budget is packed as the sentences around the message's
words, marked with its id, and its whole text stays reachable by that id; what fits whole is
packed whole.
"""

from __future__ import annotations

from datetime import timedelta

from memoryd.service import MemoryService

from .recall_support import NOW, event, packed_ids, remember

# A long memory (about 900 characters) whose relevant sentence sits in its middle.
LONG = " ".join(
    [
        "I spent the whole morning sorting out the garden shed and repainting the fence.",
        "The neighbours' cat kept wandering in while I worked on the hedges by the gate.",
        "Later we talked about the weekend, the football results and the new bakery in town.",
        "My passport renewal appointment is on 14 March at the Lisbon consulate, at nine.",
        "After that I cooked a big pot of lentil soup and froze half of it for next week.",
        "In the evening I finally finished the crime novel my sister lent me last summer.",
        "Then I answered emails about the school fundraiser and the choir's spring concert.",
        "We also planned to repaint the kitchen in a pale green once the weather turns warm.",
        "Before bed I watered the tomatoes and wrote a shopping list for the market run.",
        "Tomorrow I want to ring the plumber about the dripping tap in the upstairs bathroom.",
    ]
)
QUESTION = "When is my passport renewal appointment at the consulate?"


def test_a_long_memory_over_the_budget_is_packed_as_its_excerpt_marked_with_its_id(
    service: MemoryService,
) -> None:
    memory = remember(service, LONG)
    whole = service.recall(QUESTION, now=NOW)
    assert packed_ids(whole) == [memory.id]
    assert "excerpt" not in whole.text and "upstairs bathroom" in whole.text

    tight = service.recall(QUESTION, budget=whole.packed.tokens - 60, now=NOW)

    assert packed_ids(tight) == [memory.id]
    assert tight.packed.tokens <= whole.packed.tokens - 60
    assert f"excerpt of memory {memory.id}" in tight.text
    assert "passport renewal appointment is on 14 March at the Lisbon consulate" in tight.text
    # Sentences far from the message's words are left out, and the cut is shown.
    assert "upstairs bathroom" not in tight.text and "garden shed" not in tight.text
    assert "…" in tight.text
    # The whole text is one look-up away, by the id the block names.
    assert service.show(memory.id).memory.content == LONG


def test_short_memories_are_never_excerpted_whatever_the_budget(service: MemoryService) -> None:
    short = remember(service, "My passport renewal appointment is at the Lisbon consulate.")
    roomy = service.recall(QUESTION, now=NOW)
    assert packed_ids(roomy) == [short.id]

    tight = service.recall(QUESTION, budget=roomy.packed.tokens - 1, now=NOW)

    assert packed_ids(tight) == []
    assert "excerpt" not in tight.text


# ---------------------------------------------------------------------------------------------
# The turns around the best match join through the episode leg


def test_the_turns_made_around_the_best_event_join_through_the_episode_leg(
    service: MemoryService,
) -> None:
    day = NOW - timedelta(days=2)
    # The day's other turns are about the zeppelin too: closer in meaning to the question than
    # the reply, which names neither the zeppelin nor the parking.
    fillers = [
        "Ottoline polished the zeppelin's brass propellers",
        "Ottoline checked the zeppelin's gas cells for leaks",
        "Ottoline flew the zeppelin over the vineyards at dawn",
        "Ottoline taught her nephew to steer the zeppelin",
        "Ottoline painted a new name on the zeppelin's gondola",
        "Ottoline refuelled the zeppelin before the storm",
        "Ottoline raced the zeppelin against a hot-air balloon",
        "Ottoline photographed the zeppelin from the hilltop",
        "Ottoline repaired the zeppelin's torn rudder fabric",
        "Ottoline moored the zeppelin's mast rope with a new knot",
    ]
    made = [event(service, text, day + timedelta(minutes=n)) for n, text in enumerate(fillers[:4])]
    asked = event(
        service, "Where did Ottoline park the zeppelin last night?", day + timedelta(hours=1)
    )
    reply = event(
        service,
        "Behind the old lighthouse, next to the fish market.",
        day + timedelta(hours=1, minutes=1),
    )
    made += [
        event(service, text, day + timedelta(hours=2, minutes=n))
        for n, text in enumerate(fillers[4:])
    ]

    found = service.search_memory("Where did Ottoline park the zeppelin?", now=NOW, limit=50)

    ranks = {item.memory.id: dict(item.ranks) for item in found.items}
    assert ranks[asked.id].get("text") == 1
    # One place from the best event: first or second in the episode leg (the turn before it
    # is as near), where ten closer turns of its day would otherwise leave it out.
    assert ranks[reply.id].get("episode") in (1, 2)
    assert len(made) == 10
