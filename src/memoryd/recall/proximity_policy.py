"""Where a memory holds the message's words (SPEC §4), pure: in one passage, or scattered.

A long memory (a pasted page of code, a message of several paragraphs) holds many of a
message's words by chance, one here and one there in unrelated paragraphs; a short one that
holds them all in one sentence is likelier the answer. The text leg's BM25 and the relevance
score's coverage (the share of the message's word weight a memory holds) read the whole
memory. :func:`best_window` finds the run of ``width`` characters of a memory that holds the
most of that weight: the words the text leg says the memory holds (``held``), each found
where a word of the text begins with its light stem (:func:`key`: "allergies" and
"allergic" are one). A memory no longer than ``width`` is its own only window, so a short
turn reads as before.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

from memoryd.recall.evidence_policy import Candidate

# Suffixes taken off before the stem's first letters are compared (as kb/search.stem).
_SUFFIXES = (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", ""), ("s", ""))
# Two words are one when their light stems agree this far.
_STEM = 5


def key(word: str) -> str:
    """``word``'s light stem, at most its first five letters: what a word of the text must
    begin with to count as the query word."""
    for suffix, keep in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: len(word) - len(suffix)] + keep
            break
    return word[:_STEM]


def best_window(
    content: str, held: frozenset[str], weights: Mapping[str, float], width: int
) -> frozenset[str]:
    """Of the query words ``held`` (the text leg's), those in the run of at most ``width``
    characters of ``content`` that holds the most of their ``weights``; all of ``held`` when
    ``content`` is no longer than ``width`` (or ``width`` is 0), none found when no word of
    the text begins with one's stem."""
    if width <= 0 or len(content) <= width or len(held) < 2:
        return held
    by_key: dict[str, list[str]] = {}
    for word in sorted(held):
        by_key.setdefault(key(word), []).append(word)
    keys = sorted(by_key, key=lambda k: (-len(k), k))
    pattern = re.compile(r"(?<![^\W_])(?:" + "|".join(map(re.escape, keys)) + ")", re.IGNORECASE)
    hits = [(m.start(), m.group().casefold()) for m in pattern.finditer(content)]
    return _densest(hits, by_key, weights, width)


def _densest(
    hits: Sequence[tuple[int, str]],
    by_key: Mapping[str, list[str]],
    weights: Mapping[str, float],
    width: int,
) -> frozenset[str]:
    """The words of the window of ``width`` characters whose hits carry the most weight
    (the first such window on a tie)."""
    counts: dict[str, int] = {}
    best: frozenset[str] = frozenset()
    best_weight = 0.0
    start = 0
    for at, found in hits:
        counts[found] = counts.get(found, 0) + 1
        while at - hits[start][0] >= width:
            gone = hits[start][1]
            counts[gone] -= 1
            if not counts[gone]:
                del counts[gone]
            start += 1
        words = frozenset(w for k in counts for w in by_key.get(k, ()))
        weight = math.fsum(weights.get(w, 0.0) for w in words)
        if weight > best_weight:
            best, best_weight = words, weight
    return best


def held_weight(candidate: Candidate, weights: Mapping[str, float], width: int) -> float:
    """The message's word weight ``candidate`` holds in its best run of ``width`` characters
    (0: in its whole text)."""
    words = best_window(candidate.memory.content, candidate.words, weights, width)
    return math.fsum(weights.get(w, 0.0) for w in words)


def text_reranked(
    candidates: Mapping[str, Candidate],
    ranked: Sequence[str],
    weights: Mapping[str, float],
    depth: int,
    width: int,
    scattered: float = 0.0,
) -> dict[str, Candidate]:
    """``candidates`` with the text leg's first ``depth`` (``ranked``, best first) ranked again
    by :func:`held_weight`, the text leg's order breaking ties; each takes one of the places
    they held, the others keep theirs. With ``scattered`` over 0, the text leg's order is kept
    but for the memories whose best passage holds less than that share of the weight their
    whole text holds: they follow the others."""
    first = [(place, i) for place, i in enumerate(ranked[:depth], start=1) if i in candidates]
    if depth <= 0 or len(first) < 2:
        return dict(candidates)
    held = {i: held_weight(candidates[i], weights, width) for _, i in first}
    if scattered > 0:
        whole = {i: held_weight(candidates[i], weights, 0) for _, i in first}
        apart = {i: held[i] < scattered * whole[i] for _, i in first}
        order = sorted(first, key=lambda pair: (apart[pair[1]], pair[0]))
    else:
        order = sorted(first, key=lambda pair: (-held[pair[1]], pair[0]))
    out = dict(candidates)
    for (place, _), (_, memory_id) in zip(first, order, strict=True):
        current = candidates[memory_id]
        out[memory_id] = replace(current, ranks={**current.ranks, "text": place})
    return out


def with_passages(
    candidates: Mapping[str, Candidate], weights: Mapping[str, float], width: int
) -> dict[str, Candidate]:
    """``candidates`` with the query words of their best run of ``width`` characters as the
    words their coverage counts (:attr:`Candidate.passage`)."""
    return {
        i: replace(c, passage=best_window(c.memory.content, c.words, weights, width))
        if c.words
        else c
        for i, c in candidates.items()
    }
