"""Recall's gates (SPEC §4), pure: which legs' evidence for a candidate counts, read against
the message's words (how selective each is, how much of the message's weight it carries).

Each leg that found a candidate passes it through its own gate: a vector match needs a
cosine, a text match selective words and a meaning that does not contradict them, a selective
name and an explicit time window are gates of their own, and an event dated outside the
message's window is admitted by none (unless its text names a day inside it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from memoryd.recall.evidence_policy import Candidate, QueryFacts
from memoryd.recall.policy import RecallPolicy

# The legs that join a ranking already opened (from its best items): they never open one.
LATE_LEGS = ("episode", "feedback")


@dataclass(frozen=True)
class Gate:
    """Which legs' gates a candidate passed, and which stopped it and why. ``doubtful``: the
    admitted legs whose evidence the meaning doubts (a text match whose cosine is between
    ``text_doubt_cosine`` and ``text_min_cosine``): they rank the candidate, but like the
    episode leg's they never open the block nor move what the others are measured against."""

    admitted: tuple[str, ...]
    stopped: Mapping[str, str]
    doubtful: tuple[str, ...] = ()

    @property
    def opens(self) -> bool:
        """Whether a leg passed that may open the block: the episode leg joins an open block,
        and what it alone or a doubtful match alone brings never opens one."""
        return any(leg not in LATE_LEGS and leg not in self.doubtful for leg in self.admitted)


def selective_words(
    facts: QueryFacts, policy: RecallPolicy, share: float | None = None
) -> frozenset[str]:
    """Query words held by at most ``share`` (default ``word_max_share``) of the active
    memories (every word, in a small store)."""
    limit = most_holding(facts, policy, share)
    return frozenset(w for w in facts.words if facts.word_frequency.get(w, 0) <= limit)


def most_holding(facts: QueryFacts, policy: RecallPolicy, share: float | None = None) -> float:
    """How many active memories a selective word may be held by: ``share`` (default
    ``word_max_share``) of them, at least one; no limit in a small store."""
    if facts.memory_count < policy.min_memories_for_shares:
        return math.inf
    return max(1.0, (policy.word_max_share if share is None else share) * facts.memory_count)


def word_weight(word: str, facts: QueryFacts) -> float:
    """The BM25 inverse document frequency of a query word: rare words weigh more."""
    n = facts.word_frequency.get(word, 0)
    total = max(facts.memory_count, n)
    return math.log(1.0 + (total - n + 0.5) / (n + 0.5))


def unseen_share(facts: QueryFacts) -> float:
    """The share of the query words' weight carried by words no active memory holds."""
    whole = sum(word_weight(w, facts) for w in facts.words)
    unseen = sum(word_weight(w, facts) for w in facts.words if not facts.word_frequency.get(w))
    return unseen / whole if whole and facts.word_frequency else 0.0


# Words that count or measure: a text match on them alone says the message and the memory share
# a quantity, not a subject ("What is 17 times 23?" meets a memory that mentions 23; "How many
# seconds are in a week?" one that says "next week").
QUANTITY_WORDS = frozenset(
    """
    times percent per cent many much number numbers half dozen hundred thousand million billion
    second seconds minute minutes hour hours day days week weeks fortnight month months year
    years decade decades century centuries
    """.split()
)


def is_quantity(word: str) -> bool:
    """A bare number ("17", "2023", "3rd") or a word of :data:`QUANTITY_WORDS`."""
    return word in QUANTITY_WORDS or word[:1].isdigit()


def text_coverage(words: frozenset[str], facts: QueryFacts) -> float:
    """The share of the query words' weight that ``words`` carry."""
    whole = sum(word_weight(w, facts) for w in facts.words)
    # fsum: a set's order follows string hashing, which differs from process to process, and a
    # plain float sum in another order can differ in its last bit (and so cross a threshold).
    return math.fsum(word_weight(w, facts) for w in words) / whole if whole else 0.0


@dataclass(frozen=True)
class Reading:
    """What the policy makes of the message, worked out once per ranking: its selective
    words, the words the text gate admits on, and each word's weight."""

    selective: frozenset[str]
    weights: Mapping[str, float]
    whole: float
    admissible: frozenset[str] = frozenset()
    # The message's numbers and units (:func:`is_quantity`), when a match on them alone does
    # not count (``RecallPolicy.quantities_cover`` false).
    quantities: frozenset[str] = frozenset()

    def coverage(self, words: frozenset[str]) -> float:
        """The share of the query's weight that ``words`` carry (none when they are only
        numbers and units)."""
        if not self.whole or (self.quantities and words <= self.quantities):
            return 0.0
        # fsum, as in text_coverage: the same share whatever order the set iterates in.
        return math.fsum(self.weights.get(w, 0.0) for w in words) / self.whole


def read_query(facts: QueryFacts, policy: RecallPolicy) -> Reading:
    """The :class:`Reading` of a message."""
    weights = {w: word_weight(w, facts) for w in facts.words}
    return Reading(
        selective_words(facts, policy),
        weights,
        sum(weights.values()),
        selective_words(facts, policy, policy.text_gate_word_share),
        frozenset()
        if policy.quantities_cover
        else frozenset(w for w in facts.words if is_quantity(w)),
    )


def gate(
    candidate: Candidate, facts: QueryFacts, policy: RecallPolicy, reading: Reading | None = None
) -> Gate:
    """Pass each leg that found the candidate through its gate (SPEC §4). ``reading`` is
    :func:`read_query` of the same facts and policy, when the caller has it already."""
    reading = reading or read_query(facts, policy)
    cosine = candidate.cosine if facts.embedded else None
    admitted: list[str] = []
    stopped: dict[str, str] = {}
    doubtful: tuple[str, ...] = ()
    ranks = candidate.ranks
    when = candidate.memory.occurred_at
    window = facts.window
    if (
        policy.window_bounds_events
        and window is not None
        and facts.window_events >= max(1, policy.window_min_events)
        and when is not None
        and not window.contains(when)
        and candidate.memory.id not in facts.window_named
    ):
        outside = f"happened {when.date().isoformat()}, outside the time window {window.phrase!r}"
        return Gate((), MappingProxyType(dict.fromkeys(ranks, outside)))
    if "vector" in ranks:
        assert candidate.cosine is not None or not facts.embedded
        value = candidate.cosine if candidate.cosine is not None else -1.0
        if value >= policy.vector_gate:
            admitted.append("vector")
        else:
            stopped["vector"] = f"cosine {value:.2f} < {policy.vector_gate:.2f}"
    if "text" in ranks:
        matched = candidate.words & (reading.admissible | reading.selective)
        if not matched:
            common = ", ".join(sorted(candidate.words)) or "none"
            stopped["text"] = f"matched only common words ({common})"
        elif cosine is not None and cosine < policy.text_min_cosine:
            floor = min(policy.text_doubt_cosine, policy.text_min_cosine)
            if cosine >= floor:
                admitted.append("text")
                doubtful = ("text",)
            else:
                stopped["text"] = (
                    f"the words match ({', '.join(sorted(matched))}) but the meaning does not "
                    f"(cosine {cosine:.2f} < {floor:.2f})"
                )
        else:
            admitted.append("text")
    # A selective name and an explicit time window are gates of their own.
    admitted.extend(leg for leg in ("entity", "time") if leg in ranks)
    if "episode" in ranks:
        if cosine is None or cosine >= policy.episode_min_cosine:
            admitted.append("episode")
        else:
            stopped["episode"] = f"cosine {cosine:.2f} < {policy.episode_min_cosine:.2f}"
    if "feedback" in ranks:
        if cosine is None or cosine >= policy.feedback_min_cosine:
            admitted.append("feedback")
        else:
            stopped["feedback"] = f"cosine {cosine:.2f} < {policy.feedback_min_cosine:.2f}"
    return Gate(tuple(admitted), MappingProxyType(stopped), doubtful)
