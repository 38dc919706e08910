"""A short block is not cut short (SPEC §4): below the relative cut, recall goes on packing
while its memories hold at most ``cut_floor_chars`` characters. A paraphrase ("What should I
leave off Lucia's plate?" of "The owner's daughter hates mushrooms") ranks below the memory
that names Lucia and far below its score; the few characters it costs keep it in the block.
Once per storage backend.
"""

from __future__ import annotations

from memoryd.recall.policy import RecallPolicy
from memoryd.service import MemoryService

from .recall_support import NOW, recall_under, remember

FAMILY = (
    "The owner meditates for ten minutes before bed",
    "The owner is afraid of needles and faints during blood draws",
    "The owner's daughter Lucia was born on 3 June 2015",
    "The owner's partner Ines is vegetarian",
    "The owner's mother lives in Coimbra and calls every Sunday",
    "The owner's brother Tiago works as a firefighter in Braga",
    "The owner's father passed away in 2019",
    "The owner's son Mateus is learning the violin",
    "The owner's niece Sofia is getting married in September",
    "The owner's grandmother turns 90 on 12 April",
    "The owner's in-laws live in Lyon",
    "The owner's daughter is allergic to cats",
    "The owner's sister Marta has two children, Rui and Bea",
    "The owner and Ines got married on 20 August 2012",
    "The owner's son goes to Escola Básica do Areeiro",
    "The owner's cousin Pedro owes them 300 euros",
    "The owner's dog Pimenta is a greyhound",
    "The owner's daughter hates mushrooms",
    "The owner's mother-in-law prefers white roses",
    "The owner's twins are called Ana and Rita",
    "The owner's uncle runs a vineyard in the Douro valley",
    "The owner's son wears size 34 shoes",
    "The owner's brother-in-law is a pilot for TAP",
    "The owner works as a backend engineer at Nordlys, a logistics startup",
    "The owner's salary arrives on the 23rd of each month",
)
QUESTION = "What should I leave off Lucia's plate?"
ANSWER = "The owner's daughter hates mushrooms"


def _recalled(service: MemoryService, policy: RecallPolicy) -> list[str]:
    result = recall_under(service, policy, QUESTION)
    return [item.memory.content for item in result.packed.items]


def test_a_paraphrase_below_the_cut_joins_a_short_block(service: MemoryService) -> None:
    for content in FAMILY:
        remember(service, content)

    shipped = [item.memory.content for item in service.recall(QUESTION, now=NOW).packed.items]
    cut_alone = _recalled(service, RecallPolicy(cut_floor_chars=0))

    assert ANSWER in shipped
    # The cut alone keeps the memory that names Lucia, and the answer is left out.
    assert cut_alone == ["The owner's daughter Lucia was born on 3 June 2015"]
    # The floor only adds to what the cut kept, best first, within its characters.
    assert set(cut_alone) <= set(shipped)
    assert sum(map(len, shipped)) <= RecallPolicy().cut_floor_chars


def test_a_message_about_nothing_stored_stays_silent(service: MemoryService) -> None:
    for content in FAMILY:
        remember(service, content)

    result = service.recall("What is the capital of Mongolia?", now=NOW)

    assert result.packed.items == ()
