"""Recall's first stage: read the message (SPEC §4). The part of a long message that is read
(:mod:`memoryd.recall.bounds_policy`), the time window it names
(:mod:`memoryd.recall.time_window_policy`), the known names it mentions and how selective each
is (the entity index is the only part of the store this stage reads), its content words, and
what the legs need of the policy. The result, a :class:`Query`, is all the legs are given."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, tzinfo

from memoryd.memory.entity_policy import (
    EntityMatcher,
    extract_entities,
    names_within_sentences,
    normalize_name,
    without_names,
)
from memoryd.memory.model import Kind
from memoryd.recall.answer_form_policy import without_answer_form
from memoryd.recall.bounds_policy import BoundedQuery, bound_query
from memoryd.recall.history_policy import asks_for_history, topic_words
from memoryd.recall.kin_policy import asked_relatives
from memoryd.recall.names_policy import read_as_known, read_name
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.sentences_policy import sentences
from memoryd.recall.time_window_policy import TimeWindow, find_time_window
from memoryd.storage.protocols import Store
from memoryd.words import query_terms

log = logging.getLogger("memoryd")


@dataclass(frozen=True)
class LegPlan:
    """What the legs take from the policy: how many candidates each leg reads (the text leg
    its own number) and hands on, when a one-word name is a plain word of the store, and which
    kinds of memory are searched (all: none)."""

    depth: int
    plain_word_ratio: float
    kinds: tuple[Kind, ...] = ()
    text_depth: int | None = None
    # How many of its memories the entity and the time leg each hands on without another
    # leg finding them too (evidence_policy.handed_on); None: all it reads.
    entity_bound: int | None = None
    time_bound: int | None = None
    # The longest window whose days the time leg looks for in memories' text (0: none).
    named_day_window_days: int = 0
    # The sentences of a message the vector leg embeds beside it (sentences_policy; 0: none),
    # the fewest content words of one, how each one's ranking weighs in the leg's (0: by the
    # best cosine), and whether a candidate's cosine is the best of theirs.
    sentence_vectors: int = 0
    sentence_min_words: int = 4
    sentence_weight: float = 0.0
    sentence_cosine: bool = False
    sentence_late: bool = False
    # Which stand-ins a word no memory holds gives way to (recall/stand_in_policy.py; 0: none).
    stand_ins: int = 0
    # Whether "how long should I …" is read as anyone's "I" (recall/address_policy.py).
    how_much_modal: bool = False
    # Which names written another way are read as a known one, and whether a look-alike
    # name is kept apart as another person's (recall/names_policy.py).
    name_forms: int = 0
    name_lookalikes: bool = False

    @property
    def bounds(self) -> dict[str, int]:
        """The legs' bounds by leg, for :func:`~memoryd.recall.evidence_policy.handed_on`."""
        return {
            leg: bound
            for leg, bound in (("entity", self.entity_bound), ("time", self.time_bound))
            if bound is not None
        }

    @classmethod
    def of(cls, policy: RecallPolicy, kinds: Sequence[Kind] = ()) -> LegPlan:
        """The plan ``policy`` sets for the legs."""
        return cls(
            policy.leg_depth,
            policy.plain_word_ratio,
            tuple(kinds),
            min(policy.leg_depth, policy.text_leg_depth),
            policy.entity_leg_depth,
            policy.time_leg_depth,
            policy.named_day_window_days,
            policy.sentence_vectors,
            policy.sentence_min_words,
            policy.sentence_weight,
            policy.sentence_cosine,
            policy.sentence_late,
            policy.stand_in_words,
            policy.how_much_modal,
            policy.name_forms,
            policy.name_lookalikes,
        )


@dataclass(frozen=True)
class NameContext:
    """The known names a message mentions, split by how selective each is, the message with
    the unselective ones taken out (the query the text leg uses), and the message with only
    the names that tag most memories taken out (the one the vector leg embeds)."""

    counts: Mapping[int, int]
    selective: frozenset[int]
    common: frozenset[int]
    query: str
    # The words each mentioned entity was found by ("ana" for Ana), for telling a one-word
    # name from a plain word.
    keys: Mapping[int, str]
    # The message without the names that tag more than ``vector_name_max_share`` of the
    # memories: what the vector leg embeds.
    vector_query: str
    # The entities taken out of it.
    ambient: frozenset[int] = frozenset()


@dataclass(frozen=True)
class Query:
    """The message as recall reads it: when it is asked, the part read, its time window, the
    known names in it (None when the entity index failed: ``names_failed`` says why), the
    words the legs search, and the legs' plan."""

    at: datetime
    read: BoundedQuery
    window: TimeWindow | None
    names: NameContext | None
    known: EntityMatcher | None
    plan: LegPlan
    names_failed: str | None = None
    # A question asking for a history (history_policy): 1, its words about the asking are
    # left out of ``words``; 2, also its other words embedded as one more sentence; 0, neither.
    history_frame_out: int = 0

    @property
    def message(self) -> str:
        """The part of the message recall reads."""
        return self.read.query

    @property
    def text(self) -> str:
        """What the text leg searches: the message without its unselective names."""
        return self.names.query if self.names is not None else self.read.query

    @property
    def vector_text(self) -> str:
        """What the vector leg embeds: the message without the names that tag most memories."""
        return self.names.vector_query if self.names is not None else self.read.query

    @property
    def sentences(self) -> tuple[str, ...]:
        """The sentences of the message, each embedded beside it without the names the vector
        leg leaves out (none for a message of one sentence, or with ``sentence_vectors`` off)."""
        plan = self.plan
        found = sentences(self.read.query, plan.sentence_vectors, plan.sentence_min_words)
        if self.history_frame_out > 1 and asks_for_history(self.message):
            words = tuple(query_terms(self.vector_text))
            topic = topic_words(words, self.message)
            if topic != words:  # the topic's words alone, embedded as one more sentence
                found = (*found, " ".join(topic))
        names, known = self.names, self.known
        if not found or names is None or known is None or not names.ambient:
            return found
        return tuple(without_names(s, known, set(names.ambient)) for s in found)

    @property
    def relatives(self) -> tuple[str, ...]:
        """The owner's relatives the message asks about (recall/kin_policy.py)."""
        return asked_relatives(self.message)

    @property
    def words(self) -> tuple[str, ...]:
        """The content words the text leg searches."""
        words = tuple(query_terms(self.text))
        return topic_words(words, self.message) if self.history_frame_out else words


def bounded(message: str, policy: RecallPolicy) -> BoundedQuery:
    """The part of ``message`` recall and search read (a long one's start and end)."""
    return bound_query(message, policy.message_head_chars, policy.message_tail_chars)


def read_message(
    store: Store,
    matcher: Callable[[], EntityMatcher],
    message: str,
    at: datetime,
    zone: tzinfo,
    policy: RecallPolicy,
    kinds: Sequence[Kind] = (),
    window: TimeWindow | None = None,
) -> Query:
    """Read ``message`` asked at ``at``: its time window (``window`` when given, an explicit
    range, else the one it names in the owner's ``zone``) and its names. The entity index
    failing costs the names only: the legs still answer."""
    read = bounded(message, policy)
    if policy.answer_form_out:
        searched = without_answer_form(read.query)
        if searched != read.query:
            read = replace(read, question=searched)
    if window is None:
        window = find_time_window(read.query, at, zone)
    plan = LegPlan.of(policy, kinds)
    try:
        known = matcher()
        found = extract_entities(read.query)
        as_known, respelled = read_as_known(
            read.query, known, policy.name_forms, policy.name_lookalikes, found
        )
        if respelled:
            read = replace(read, question=as_known)
        names = name_context(store, known, read.query, policy, None if respelled else found)
    except Exception as error:  # the entity index failing must not stop the other legs
        log.warning("recall: entity lookup failed: %s", error, exc_info=True)
        failed = f"failed: {error}"
        return Query(at, read, window, None, None, plan, failed, policy.history_frame_out)
    return Query(at, read, window, names, known, plan, None, policy.history_frame_out)


def split_by_selectivity(
    counts: Mapping[int, int], total: int, policy: RecallPolicy
) -> tuple[frozenset[int], frozenset[int]]:
    """(selective, common) entity ids: common ones tag more than ``entity_max_share`` of the
    ``total`` memories (only once the store holds ``min_memories_for_shares`` of them)."""
    if total < policy.min_memories_for_shares:
        return frozenset(counts), frozenset()
    limit = max(1.0, policy.entity_max_share * total)
    selective = frozenset(e for e, n in counts.items() if n <= limit)
    return selective, frozenset(counts) - selective


def name_context(
    store: Store,
    matcher: EntityMatcher,
    message: str,
    policy: RecallPolicy,
    found: Sequence[str] | None = None,
) -> NameContext:
    """Find the names in ``message`` and how many active memories each tags (``found``: its
    names by ``extract_entities``, when already found)."""
    words = normalize_name(message).split()
    keys = {m.entity_id: " ".join(words[m.start : m.end]) for m in matcher.mentions(words)}
    # A name written another way ("Mohammed" for the store's "Muhhamed") is that name; a
    # diminutive opening a sentence may be a plain word ("Pat the dough").
    unknown = [
        (name, key)
        for name in (extract_entities(message) if found is None else found)
        if (key := normalize_name(name)) not in matcher.keys and " " not in key
    ]
    within = {normalize_name(n) for n in names_within_sentences(message)} if unknown else set()
    for name, written in unknown:
        level = policy.name_forms if written in within else min(policy.name_forms, 1)
        known = read_name(name, matcher, level, policy.name_lookalikes)
        if known is not None:
            keys.setdefault(matcher.keys[known], written)
    if not keys:
        return NameContext({}, frozenset(), frozenset(), message, {}, message)
    # Shares over all memories, not only active ones: close enough for telling a name that
    # tags everything from a rare one, and an index-only count.
    counts = store.entities.mention_counts(sorted(keys))
    total = store.memories.count()
    selective, common = split_by_selectivity(counts, total, policy)
    query = without_names(message, matcher, set(common))
    ambient = set(common)
    if policy.vector_name_max_share > policy.entity_max_share:
        limit = max(1.0, policy.vector_name_max_share * total)
        ambient = {entity for entity in common if counts[entity] > limit}
    vector_query = query if ambient == common else without_names(message, matcher, ambient)
    return NameContext(counts, selective, common, query, keys, vector_query, frozenset(ambient))
