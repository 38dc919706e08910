"""What the legs hand on to the gates (SPEC §4), pure: each candidate with the evidence for
it, and what recall knows about the message itself."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from memoryd.memory.model import Memory
from memoryd.recall.time_window_policy import TimeWindow


@dataclass(frozen=True)
class QueryFacts:
    """What recall knows about the message itself."""

    # The content words the text leg searched, and how many active memories hold each.
    words: tuple[str, ...] = ()
    word_frequency: Mapping[str, int] = field(default_factory=dict)
    memory_count: int = 0
    # Names in the message that no memory holds.
    unknown_names: tuple[str, ...] = ()
    window: TimeWindow | None = None
    # How many events the time leg found inside the window (a memory that only names one of
    # its days is not one).
    window_events: int = 0
    # The memories whose text names a day inside the window (time_legs.named_day_leg): no window
    # bounds them out, whenever they happened.
    window_named: frozenset[str] = frozenset()
    # Whether cosines could be measured (the embedding route answered).
    embedded: bool = True
    # How clearly the message is about its writer's own life (recall/address_policy.py).
    personal: float = 0.0
    # Whether the message names someone or something the store knows (a known name or alias,
    # or a close spelling of one; not a plain word of the store).
    named: bool = False
    # Whether it points at one thing of its writer's world with a bare "the …" ("Where's the
    # hammer?"; recall/address_policy.py).
    definite: bool = False
    # The content words of a yes/no question ("Have I ever …?", "Did Caroline …?"), none for
    # any other message (recall/sides_policy.py: its ten should hold both sides).
    yes_or_no: frozenset[str] = frozenset()
    # The owner's relatives the message asks about ("my brother's flight": brother;
    # recall/kin_policy.py).
    relatives: tuple[str, ...] = ()


@dataclass(frozen=True)
class Candidate:
    """A memory some leg found, with the evidence for it."""

    memory: Memory
    ranks: Mapping[str, int]
    cosine: float | None = None
    # The query words it holds (text leg).
    words: frozenset[str] = frozenset()
    # Those of them in its best passage, when the relevance reads coverage there
    # (RecallPolicy.coverage_window_chars; recall/proximity_policy.py); None: all of them.
    passage: frozenset[str] | None = None

    @property
    def covering(self) -> frozenset[str]:
        """The query words whose weight its coverage counts."""
        return self.words if self.passage is None else self.passage


def handed_on(
    rankings: Mapping[str, Sequence[str]], bounds: Mapping[str, int]
) -> dict[str, list[str]]:
    """Each leg's ranking as it is handed on: a leg with a bound in ``bounds`` keeps its first
    that many, and below them only the memories another leg found too (two legs agreeing
    are evidence whatever the rank; a name that tags hundreds of memories, or a month's
    worth of events, is not)."""
    kept: dict[str, list[str]] = {}
    for leg, ranked in rankings.items():
        bound = bounds.get(leg)
        if bound is None or len(ranked) <= bound:
            kept[leg] = list(ranked)
            continue
        others = {i for other, found in rankings.items() if other != leg for i in found}
        kept[leg] = [*ranked[:bound], *(i for i in ranked[bound:] if i in others)]
    return kept
