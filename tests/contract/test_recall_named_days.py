"""A memory whose text names the asked day (SPEC §4's time leg, extended in docs/recall.md,
"Days a memory names"): booked on the 2nd for the 15th, it is in the window "November 15",
ahead of that day's own event and never bounded out, on every storage backend (the text index
finds "november" and "15" in it; the text itself says which day). ``named_day_window_days`` 0
is the time leg as the SPEC first wrote it.
"""

from __future__ import annotations

from zoneinfo import ZoneInfo

from memoryd.memory.model import Kind
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.time_legs import named_day_leg
from memoryd.recall.time_window_policy import find_time_window
from memoryd.service import MemoryService
from memoryd.storage.protocols import PhrasesWritten

from .recall_support import NOW, event, item_ids, november, recall_under, remember

QUESTION = "What did I have on November 15?"


def test_a_memory_naming_the_asked_day_joins_the_time_leg(service: MemoryService) -> None:
    booking = event(
        service, "Booked a check-up with Dr Okafor for the 15th of November", november(2)
    )
    errand = event(service, "Picked up the suits from the dry cleaner", november(15))
    event(service, "Repotted the basil on the balcony", november(16))
    event(service, "Dr Okafor's clinic moved to Rua Augusta in March", november(3))

    result = service.recall(QUESTION, now=NOW)
    as_first_written = recall_under(service, RecallPolicy(named_day_window_days=0), QUESTION)

    assert set(item_ids(result)) == {booking.id, errand.id}
    [first] = [s for s in result.packed.items if s.memory.id == booking.id]
    assert first.ranks.get("time") == 1
    # Without it, the 15th's own event bounds the booking out: it was made on the 2nd.
    assert item_ids(as_first_written) == [errand.id]


def test_the_text_index_finds_words_in_a_row_not_scattered(service: MemoryService) -> None:
    """``TextSearch.holding``: "november 15" is the two words in a row, in either backend."""
    booked = event(service, "Booked the dentist for November 15 at 9 am", november(2))
    event(service, "15 people came to the November market", november(8))
    fact = remember(service, "The car's insurance renews on 15 November every year")

    held = service.store.text.holding(["november 15", "15 november"], 10)
    events_only = service.store.text.holding(["november 15", "15 november"], 10, [Kind.EVENT])

    assert set(held) == {booked.id, fact.id}
    assert events_only == [booked.id]
    assert service.store.text.holding(["november 15"], 0) == []


# Days as a person writes them to an assistant, each memory made on its day of November 2026,
# and the day it names worked out by hand from that day (November 2026: the 2nd is a Monday).
WRITTEN_DAYS = [
    # (text, made on, the day it names)
    ("Dentist on the 15th at 9, Dr Okafor", 2, 15),
    ("Ana's recital is on the 3rd, bring flowers", 20, 33),  # 3 December
    ("Dinner at Rui's place tomorrow at 8", 9, 10),
    ("The plumber comes the day after tomorrow, morning", 16, 18),
    ("Parents' evening at the school tonight", 11, 11),
    ("Call the landlord on Friday about the boiler", 23, 27),
    ("Haircut next Monday at 5 PM", 4, 9),
    ("The sofa is delivered in two days", 19, 21),
    ("Tax office appointment 24/11, bring the forms", 3, 24),
    ("Vet for the cat 11/25 at 10:30", 3, 25),
    ("Renew the passport by 26.11.", 5, 26),
    ("Flight to Porto 2026-11-28 at 7:40", 1, 28),
]


def test_days_written_as_people_write_them_are_found_for_that_day(
    service: MemoryService,
) -> None:
    """Each memory is recalled by the time leg for the day its words name, read from the day
    it was made ("tomorrow" made on the 9th is the 10th), and by no other day (an event made
    on the asked day is in its window as it always was); "5/11"
    (5 November or May 11) and "the 15th floor" name no day."""
    made = {text: event(service, text, november(day)).id for text, day, _ in WRITTEN_DAYS}
    ambiguous = event(service, "Car service 5/11 at the garage", november(1))
    floor = event(service, "Lisbon office moved to the 15th floor", november(4))
    named = {text: named for text, _, named in WRITTEN_DAYS}
    made_on = {text: day for text, day, _ in WRITTEN_DAYS}

    for text, memory_id in made.items():
        window = "December 3" if named[text] == 33 else f"November {named[text]}"
        result = service.recall(f"What's on for {window}?", now=november(1))
        timed = [s.memory.id for s in result.packed.items if s.ranks.get("time")]
        assert memory_id in timed, (text, window)
        others = {made[t] for t in made if named[text] not in (named[t], made_on[t])}
        assert not others & set(timed), (text, window)
    for day in (5, 15):
        result = service.recall(f"What's on for November {day}?", now=november(1))
        assert not {ambiguous.id, floor.id} & {s.memory.id for s in result.packed.items}


def test_weeks_and_weekends_written_in_notes_are_found_for_their_days(
    service: MemoryService,
) -> None:
    """ "Dentist next week" made on Wednesday the 4th is the week of Monday the 9th; "this
    weekend" made on Thursday the 12th is the 14th and 15th; "last weekend" made on Monday
    the 23rd is the 21st and 22nd. Each is in the time leg for its days and for none other,
    after the day's own events, and "What's on next week?" asked on Friday the 6th finds the
    dentist."""
    dentist = event(service, "Dentist next week, Ana drives me there", november(4))
    hiking = event(service, "Hiking with Sam this weekend in Sintra", november(12))
    shed = event(service, "We painted the shed last weekend, two coats", november(23))
    expected = {
        8: set(),
        10: {dentist.id},
        14: {dentist.id, hiking.id},
        16: set(),
        21: {shed.id},
        22: {shed.id},
        28: set(),
    }

    for day, wanted in expected.items():
        result = service.recall(f"What's on for November {day}?", now=november(1))
        timed = {s.memory.id for s in result.packed.items if s.ranks.get("time")}
        assert timed & {dentist.id, hiking.id, shed.id} == wanted, day
    # The day's own event comes first in the time leg: a week names its days less closely.
    glasses = event(service, "Collected the new glasses from the optician", november(14))
    result = service.recall("What's on for November 14?", now=november(1))
    ranks = {s.memory.id: s.ranks.get("time") for s in result.packed.items}
    assert ranks[glasses.id] == 1 and {ranks[dentist.id], ranks[hiking.id]} == {2, 3}
    asked = service.recall("What's on next week?", now=november(6))
    assert asked.window is not None and asked.window.start == november(9, 0)
    assert dentist.id in {s.memory.id for s in asked.packed.items if s.ranks.get("time")}


def test_words_naming_a_day_are_read_only_from_memories_written_near_it(
    service: MemoryService,
) -> None:
    """``TextSearch.holding_written``: "tomorrow" counts only in a memory written in the span
    given (its time, not its text), in either backend."""
    near = event(service, "Pick up the keys tomorrow", november(9))
    event(service, "Pick up the parcel tomorrow", november(20))
    fact = remember(service, "Swimming lesson tomorrow", now=november(9, 18))
    start, end = november(8, 0), november(10, 0)

    held = service.store.text.holding_written([PhrasesWritten(("tomorrow",), start, end)], 10)
    events_only = service.store.text.holding_written(
        [PhrasesWritten(("tomorrow",), start, end)], 10, [Kind.EVENT]
    )
    both = service.store.text.holding_written(
        [
            PhrasesWritten(("keys",), november(1, 0), november(2, 0)),
            PhrasesWritten(("swimming",), start, end),
        ],
        10,
    )

    assert set(held) == {near.id, fact.id}
    assert events_only == [near.id]
    assert both == [fact.id]


def test_a_window_at_the_calendars_end_reads_no_day_beyond_it(service: MemoryService) -> None:
    """The days around a window at the calendar's ends stop at them: recall answers."""
    booked = event(service, "Booked the time capsule opening for 9999-12-28", november(2))

    last = service.recall("What happens on 9999-12-28?", now=november(3))
    first = service.recall("What happened on 0001-01-03?", now=november(3))

    assert item_ids(last) == [booked.id]
    assert first.window is not None and first.window.start.year == 1
    # In an owner's zone either side of UTC too, whose calendar ends are past the stores'.
    for zone in (ZoneInfo("America/New_York"), ZoneInfo("Asia/Tokyo")):
        for message in ("What happens on 9999-12-28?", "What happened on 0001-01-05?"):
            window = find_time_window(message, november(3), zone)
            assert window is not None
            named, weeks, _ = named_day_leg(service.store, window, 50, 7)
            assert weeks == []
            assert named == ([booked.id] if window.start.year == 9999 else [])
