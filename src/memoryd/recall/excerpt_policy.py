"""A long memory's excerpt for the block (SPEC §4), pure: the sentences around the message's
words instead of the whole text, so a long memory costs the budget what its relevant part costs.

The excerpt is a run of whole sentences: the one carrying most of the message's word weight
(each word weighs its IDF among the active memories, as the text leg weighs it), grown by its
neighbours while it fits in ``excerpt_chars``. A memory that holds none of the message's words
(the vector leg found it by meaning) is excerpted from its start. The block marks the line as an
excerpt and names the memory, whose whole text stays one ``memoryd show`` away.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from memoryd.recall.evidence_policy import QueryFacts
from memoryd.recall.policy import RecallPolicy
from memoryd.words import word_set

# Sentence ends: ., ! or ? before a space, and line breaks (lists, code, paragraphs).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\s*\n\s*")
# Two words are one when their first letters agree this far ("allergy", "allergic"), as a
# light stem: the text leg's words are the message's own.
_STEM = 5
ELLIPSIS = "…"


@dataclass(frozen=True)
class Focus:
    """What a long memory is excerpted for: the message's words and their weights, and the
    policy's sizes (either 0: never excerpt)."""

    weights: Mapping[str, float] = field(default_factory=dict)
    over_chars: int = 0
    chars: int = 0
    # Excerpt only what does not fit whole (else every long memory).
    only_over_budget: bool = True

    @classmethod
    def of(cls, facts: QueryFacts, policy: RecallPolicy) -> Focus:
        """The focus of a message recall read (its words, their IDF among the memories)."""
        count = max(facts.memory_count, 1)
        weights = {
            word: math.log(1.0 + count / (1 + facts.word_frequency.get(word, 0)))
            for word in facts.words
        }
        return cls(
            weights,
            policy.excerpt_over_chars,
            policy.excerpt_chars,
            policy.excerpt_only_over_budget,
        )


def _stem(word: str) -> str:
    return word[:_STEM] if len(word) > _STEM else word


def excerpt(content: str, focus: Focus | None) -> str | None:
    """The excerpt to pack for ``content`` (whitespace collapsed, "…" where text was left
    out), or None when the memory is packed whole (short enough, or no focus)."""
    if focus is None or min(focus.over_chars, focus.chars) <= 0:
        return None
    if len(content) <= focus.over_chars:
        return None
    sentences = [" ".join(s.split()) for s in _SENTENCE_END.split(content)]
    sentences = [s for s in sentences if s]
    if not sentences:
        return None
    stems: dict[str, float] = {}
    for word, weight in focus.weights.items():
        stems[_stem(word)] = max(stems.get(_stem(word), 0.0), weight)
    # fsum: a set iterates in an order that differs between processes (string hashing).
    scores = [math.fsum(stems.get(_stem(w), 0.0) for w in word_set(s)) for s in sentences]
    best = max(range(len(sentences)), key=lambda i: (scores[i], -i))
    limit = focus.chars
    start = end = best
    if len(sentences[best]) > limit:
        text, before, after = _window(sentences[best], stems, limit)
    else:
        size = len(sentences[best])
        while True:
            later = end + 1 < len(sentences) and size + 1 + len(sentences[end + 1]) <= limit
            earlier = start > 0 and size + 1 + len(sentences[start - 1]) <= limit
            if not later and not earlier:
                break
            # The neighbour carrying more of the message's words first; the next one on a tie.
            if later and (not earlier or scores[end + 1] >= scores[start - 1]):
                end += 1
                size += 1 + len(sentences[end])
            else:
                start -= 1
                size += 1 + len(sentences[start])
        text, before, after = " ".join(sentences[start : end + 1]), False, False
    before = before or start > 0
    after = after or end < len(sentences) - 1
    if not before and not after:
        return None
    return (ELLIPSIS + " ") * before + text + (" " + ELLIPSIS) * after


def _window(sentence: str, stems: Mapping[str, float], limit: int) -> tuple[str, bool, bool]:
    """``limit`` characters of one long sentence, from a little before its first matched word,
    cut at spaces; and whether text was left out before it and after it."""
    words = sentence.split(" ")
    first = next((i for i, w in enumerate(words) if stems.get(_stem_of(w))), 0)
    start = max(first - 3, 0)
    kept: list[str] = []
    size = 0
    for word in words[start:]:
        if kept and size + 1 + len(word) > limit:
            break
        kept.append(word[:limit])
        size += len(kept[-1]) + (1 if len(kept) > 1 else 0)
    text = " ".join(kept)
    return text, start > 0, len(text) < len(" ".join(words[start:]))


def _stem_of(token: str) -> str:
    found = word_set(token)
    # The token's first word ("e-mail": "e"), not whichever the set yields first: a set's order
    # follows string hashing, which differs from process to process.
    lowered = token.lower()
    return _stem(min(found, key=lambda w: (lowered.find(w), w))) if found else ""
