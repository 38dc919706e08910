"""A memory whose text names the asked day (SPEC §4's time leg, extended in docs/recall.md,
"Days a memory names"): booked on the 2nd for the 15th, it is in the window "November 15",
ahead of that day's own event and never bounded out, on every storage backend (the text index
finds "november" and "15" in it; the text itself says which day). ``named_day_window_days`` 0
is the time leg as the SPEC first wrote it.
"""

from __future__ import annotations

from memoryd.memory.model import Kind
from memoryd.recall.policy import RecallPolicy
from memoryd.service import MemoryService

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
