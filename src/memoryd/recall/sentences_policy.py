"""A message's sentences, for the vector leg (SPEC §4): pure, no I/O.

A message of several sentences ("I'm adding lazy loading to my image gallery that uses
Bootstrap 5.3.0. How would you ...?") is about several things, and its one embedding, a mean
over all of them, may be close to a memory about none. The vector leg may also embed each
sentence (``RecallPolicy.sentence_vectors``), so a memory about one of them is found by it.

A sentence ends at ".", "!", "?" or "…" followed by a space (not after an initial or a
title's abbreviation: "Dr. Seuss", "C. S. Lewis"), or at a line break. A piece with
fewer than ``min_words`` content words ("Thanks!", "Quick question.") says too little to be
searched alone: it joins the sentence after it (the last one joins the one before). While
there are more than ``most`` sentences, the two neighbours with the fewest content words
between them become one, so the cost stays bounded and a long message keeps its parts in
order. A message of one sentence has none: its own embedding is all the leg needs.
"""

from __future__ import annotations

import re

from memoryd.words import query_terms

_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|\n+")
# A piece ending in an initial or a title's abbreviation ("C.", "Dr.") has not ended a sentence.
_ABBREVIATION = re.compile(r"(?:\b[A-Z]|\b(?:Dr|Mr|Mrs|Ms|Mx|Prof|St|Jr|Sr|vs|etc|e\.g|i\.e))\.$")


def sentences(message: str, most: int, min_words: int) -> tuple[str, ...]:
    """The sentences of ``message`` to embed beside it, at most ``most``; none when it has
    fewer than two (or ``most`` is under two)."""
    if most < 2:
        return ()
    pieces: list[str] = []
    for piece in (p.strip() for p in _SENTENCE_END.split(message)):
        if pieces and _ABBREVIATION.search(pieces[-1]):
            pieces[-1] = f"{pieces[-1]} {piece}".strip()
        elif piece:
            pieces.append(piece)
    counts = [len(query_terms(p)) for p in pieces]
    joined: list[str] = []
    words: list[int] = []
    waiting = ""
    waiting_words = 0
    for piece, count in zip(pieces, counts, strict=True):
        text = f"{waiting} {piece}" if waiting else piece
        total = waiting_words + count
        if total < min_words:
            waiting, waiting_words = text, total
            continue
        joined.append(text)
        words.append(total)
        waiting, waiting_words = "", 0
    if waiting:
        if not joined:
            return ()
        joined[-1] = f"{joined[-1]} {waiting}"
        words[-1] += waiting_words
    while len(joined) > most:
        at = min(range(len(joined) - 1), key=lambda i: words[i] + words[i + 1])
        joined[at : at + 2] = [f"{joined[at]} {joined[at + 1]}"]
        words[at : at + 2] = [words[at] + words[at + 1]]
    return tuple(joined) if len(joined) >= 2 else ()


def sentence_spans(text: str, found: tuple[str, ...]) -> tuple[tuple[int, int], ...] | None:
    """Where each of the sentences ``found`` stands in ``text`` (character ``[start, end)``,
    in order, their words in the same order, any whitespace between them), for pooling them
    from ``text``'s one model run; None when one is not there as it is (a name taken out of
    the message differently than out of the sentence): the caller embeds them alone."""
    spans: list[tuple[int, int]] = []
    at = 0
    for sentence in found:
        words = sentence.split()
        if not words:
            return None
        match = re.compile(r"\s+".join(re.escape(w) for w in words)).search(text, at)
        if match is None:
            return None
        spans.append(match.span())
        at = match.end()
    return tuple(spans)
