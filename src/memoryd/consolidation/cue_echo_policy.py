"""Cues a small model copied from the cues prompt's own worked examples (pure).

The cues prompt shows two examples: a memory and the cues it deserves. A small model (SmolLM2,
walked through the daily job) answers for a train timetable with the penicillin example's
cues and "when do I get paid": cues are searched by recall and never asked again, so every
later question about pay found the train. An example's cues are kept only for a memory that
shares a content word with the example's own memory; the example sentence itself the same.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memoryd.words import query_terms

# `for "MEMORY": "cue", "cue", "cue";` — how the prompt writes each worked example.
# "owner" is in every memory's third-person text: it makes no memory like an example.
_GENERIC = frozenset({"owner", "owner's"})
_EXAMPLE = re.compile(r'for "([^"]+)":((?:\s*"[^"]+",?)+)')
_QUOTED = re.compile(r'"([^"]+)"')


@dataclass(frozen=True)
class CueExample:
    """One worked example of the prompt: its memory's content words and the phrases it shows
    (its cues and the memory sentence, case-folded)."""

    words: frozenset[str]
    phrases: frozenset[str]


def _phrase(text: str) -> str:
    return " ".join(text.casefold().split())


def prompt_examples(prompt: str) -> tuple[CueExample, ...]:
    """The worked examples written in ``prompt`` (none when it has no such lines)."""
    flat = " ".join(prompt.split())
    return tuple(
        CueExample(
            frozenset(query_terms(memory)) - _GENERIC,
            frozenset({_phrase(memory), *(_phrase(c) for c in _QUOTED.findall(cues))}),
        )
        for memory, cues in _EXAMPLE.findall(flat)
    )


def drop_echoed_cues(
    cues: Sequence[str], content: str, examples: Sequence[CueExample]
) -> tuple[str, ...]:
    """``cues`` without those copied from an example whose memory shares no content word with
    ``content`` (the memory the cues are for)."""
    own = set(query_terms(content))
    foreign = {p for e in examples if not (e.words & own) for p in e.phrases}
    return tuple(c for c in cues if _phrase(c) not in foreign)
