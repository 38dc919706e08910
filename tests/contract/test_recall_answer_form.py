"""A question that ends by saying how its answer should look ("Mention ONLY and ONLY five
items."; RecallPolicy.answer_form_out, recall/answer_form_policy.py; bench/README.md, "Asked
for a history, told how to answer"): that sentence is left out of what the legs search, so
the owner's mentions of the topic, across several conversations, fill the block, not the
memories about items and lists its words match. Once per storage backend.
"""

from __future__ import annotations

from dataclasses import replace

from memoryd.recall.policy import RecallPolicy
from memoryd.service import MemoryService, RecallResult

from .recall_support import event, november, recall_under

# The owner's garden project, brought up in four conversations.
GARDEN = (
    (2, "I'm planning raised beds for the vegetable garden behind the house"),
    (9, "I moved the tomato seedlings in my vegetable garden to a sunnier bed"),
    (16, "I'm putting drip irrigation on the raised beds in the vegetable garden"),
    (23, "Slugs are eating the lettuce in my vegetable garden, how do I stop them?"),
)
# What the instruction's words match: items, lists, mentions, fives.
ITEMS = (
    "I need to mention five items to the landlord: the boiler, the window, two taps and a lock",
    "Only five items fit in my carry-on bag",
    "I mentioned five items for the charity box",
    "The shop refunded five items from the delivery",
    "I must mention the five items missing from the parcel",
    "Five items in the fridge are past their date",
)
QUESTION = (
    "Can you list the order in which I brought up the different parts of my vegetable garden "
    "throughout our conversations? Mention ONLY and ONLY five items."
)
SHIPPED = RecallPolicy()
KEPT_IN = replace(SHIPPED, answer_form_out=False)


def test_the_history_asked_for_scores_first(service: MemoryService) -> None:
    garden = {event(service, text, november(day)).id for day, text in GARDEN}
    items = {event(service, text, november(day + 1)).id for day, text in enumerate(ITEMS, 3)}

    left_out = recall_under(service, SHIPPED, QUESTION)
    kept_in = recall_under(service, KEPT_IN, QUESTION)

    first = _best(left_out, len(GARDEN))
    assert first == garden  # all four conversations' mentions score first
    read = left_out.read
    assert read is not None and read.question is not None and "Mention" not in read.question
    # Read whole, the instruction's words score memories about items above them.
    assert items & _best(kept_in, len(GARDEN))


def _best(result: RecallResult, count: int) -> set[str]:
    """The ids of the block's ``count`` best-scored memories."""
    items = sorted(result.packed.items, key=lambda s: -s.score)
    return {s.memory.id for s in items[:count]}
