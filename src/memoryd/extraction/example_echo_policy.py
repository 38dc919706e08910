"""What a small model copied from a prompt's own worked examples (pure): cues, and whole
proposals.

The cues prompt shows two examples: a memory and the cues it deserves. A small model (SmolLM2,
walked through the daily job) answers for a train timetable with the penicillin example's
cues and "when do I get paid": cues are searched by recall and never asked again, so every
later question about pay found the train. An example's cues are kept only for a memory that
shares a content word with the example's own memory; the example sentence itself the same.

The extraction contract's examples are whole answers ("The owner is allergic to peanuts."); a
mission about a dentist came back with that sentence. A proposal that repeats an example's
content is kept only when the conversation itself holds that example's content words.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from memoryd.memory.model import Proposal
from memoryd.words import query_terms

# `for "MEMORY": "cue", "cue", "cue";` — how the prompt writes each worked example.
# "owner" is in every memory's third-person text: it makes no memory like an example.
_GENERIC = frozenset({"owner", "owner's"})
_EXAMPLE = re.compile(r'for "([^"]+)":((?:\s*"[^"]+",?)+)')
_QUOTED = re.compile(r'"([^"]+)"')
# `"content": "SENTENCE"` inside an example answer of the extraction contract.
_CONTENT = re.compile(r'"content": "([^"]+)"')


@dataclass(frozen=True)
class CueExample:
    """One worked example of the prompt: its memory's content words and the phrases it shows
    (its cues and the memory sentence, case-folded)."""

    words: frozenset[str]
    phrases: frozenset[str]


def _phrase(text: str) -> str:
    return " ".join(text.casefold().split())


@functools.cache
def prompt_examples(prompt: str) -> tuple[CueExample, ...]:
    """The worked examples written in ``prompt`` (none when it has no such lines); read once
    per prompt text (the stage asks one memory at a time)."""
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


@functools.cache
def example_contents(prompt: str) -> tuple[CueExample, ...]:
    """The contents of the example answers written in an extraction ``prompt`` (read once per
    prompt text)."""
    return tuple(
        CueExample(frozenset(query_terms(content)) - _GENERIC, frozenset({_phrase(content)}))
        for content in _CONTENT.findall(prompt)
    )


def echoes_example(proposal: Proposal, conversation: str, examples: Sequence[CueExample]) -> bool:
    """Whether ``proposal`` repeats an example answer's content that ``conversation`` never
    spoke of (none of that example's content words appear in it)."""
    said = set(query_terms(conversation))
    content = _phrase(proposal.content)
    return any(content in e.phrases and not (e.words & said) for e in examples)
