"""A message of several sentences (RecallPolicy.sentence_vectors; bench/README.md, "A message
of several sentences, asked sentence by sentence"): the vector leg also embeds each sentence,
so a memory about one of them is found though the message's one vector, a mean over all of
them, is about the other. Once per storage backend.
"""

from __future__ import annotations

from dataclasses import replace

from memoryd.recall.policy import RecallPolicy
from memoryd.service import MemoryService, RecallResult

from .recall_support import recall_under, remember

PROJECT = (
    "The owner's Flask app stores its users in a PostgreSQL database",
    "The owner added a login page with Flask-Login to the budgeting app",
    "The owner's Flask app sends a weekly expense report by email",
    "The owner deploys the Flask budgeting app on a small VPS with gunicorn",
    "The owner wrote unit tests for the Flask app's income and expense routes",
    "The owner's budgeting app draws its charts with Chart.js",
    "The owner moved the Flask app's settings into environment variables",
    "The owner's Flask app has a REST API for the mobile client",
)
ASIDE = "The owner's dog Pimenta is a greyhound"
# The second sentence shares no word with its memory: only its meaning finds it.
MESSAGE = (
    "Between the Flask app and its charts, my evenings are gone. "
    "What breed of pet did I adopt last year?"
)
SHIPPED = RecallPolicy()
WHOLE = replace(SHIPPED, sentence_vectors=0)
# A shallow vector leg, as in a store of thousands: the project memories fill it when the
# message is read whole.
SHALLOW = replace(SHIPPED, leg_depth=4, text_leg_depth=4)


def _store(service: MemoryService) -> str:
    for content in PROJECT:
        remember(service, content)
    return remember(service, ASIDE).id


def test_the_second_sentence_finds_its_memory(service: MemoryService) -> None:
    aside = _store(service)

    whole = recall_under(service, replace(SHALLOW, sentence_vectors=0), MESSAGE)
    each = recall_under(service, SHALLOW, MESSAGE)

    assert aside not in [item.memory.id for item in whole.packed.items]
    found = {item.memory.id: item for item in each.packed.items}
    assert found[aside].ranks == {"vector": 1}
    # The first sentence's memories are still there.
    assert len(found) > 1


def test_the_vector_leg_ranks_it_by_its_sentence(service: MemoryService) -> None:
    aside = _store(service)

    whole = recall_under(service, WHOLE, MESSAGE)
    each = recall_under(service, SHIPPED, MESSAGE)

    def vector_rank(result: RecallResult) -> int:
        kept = {item.memory.id: item.ranks for item in result.packed.items}
        return kept.get(aside, {}).get("vector", 99)

    assert vector_rank(each) == 1
    assert vector_rank(whole) > 4


def test_one_sentence_reads_as_before(service: MemoryService) -> None:
    _store(service)
    message = "How do I add income and expense charts to my Flask budgeting app?"

    whole = recall_under(service, WHOLE, message)
    each = recall_under(service, SHIPPED, message)

    assert [i.memory.id for i in each.packed.items] == [i.memory.id for i in whole.packed.items]
    assert each.legs == whole.legs
