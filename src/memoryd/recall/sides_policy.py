"""A yes/no question wants both sides (issue 28, pure): "Have I ever completed a first draft of
a screenplay?" is answered by "I've never completed a first draft" *and* by "I felt a
confidence boost when I completed my first draft on April 1". The denial shares the question's
words and meaning and ranks first; the memory that says otherwise shares fewer of both and
falls below the fused ten, behind memories on the same subject that both legs rank middling.

The reading is grammar, not a word list of topics:

- a yes/no question opens with an auxiliary verb and its subject is not "you" ("Have I …?",
  "Did Caroline …?", "Would Melanie …?"; "Can you …?" is a request);
- a memory *denies* the question when a negation ("never", "not", "no", a "…n't") stands at
  most :data:`NEGATION_REACH` words before one of the question's content words ("I've never
  completed a first draft");
- when the fused first ten hold a denial but no memory that states the denied thing without
  denying it (holding more than half of the question's words the denial holds, two at least),
  the best such memory within the first ``other_side_depth`` joins the ten at the tenth's
  place and score (what the relative cut reads); the rest move down one.

Nothing changes for any other message, nor when the ten already hold both sides.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from memoryd.recall.policy import RecallPolicy
from memoryd.words import STOPWORDS

# The auxiliary verbs that open a yes/no question.
_AUXILIARIES = frozenset(
    "am is are was were have has had do does did will would can could shall should may might "
    "must".split()
)
_NEGATIONS = frozenset({"never", "not", "no", "cannot", "nor"})
_TOKEN = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
# How many words after a negation still belong to what it denies ("never actually obtained").
NEGATION_REACH = 3
# The fused places the two sides are looked for in.
FIRST = 10


def _tokens(text: str) -> list[str]:
    return [t.replace("’", "'") for t in _TOKEN.findall(text.casefold())]


def asks_yes_or_no(message: str) -> bool:
    """Whether ``message`` opens as a yes/no question: an auxiliary verb first, its subject
    not "you" (a request to the assistant: "Can you …", "Would you …")."""
    words = _tokens(message)[:2]
    return len(words) == 2 and words[0] in _AUXILIARIES and words[1] != "you"


def question_words(message: str) -> frozenset[str]:
    """The message's content words (stop words and the auxiliary left out)."""
    return frozenset(
        word.split("'")[0]
        for word in _tokens(message)
        if word not in STOPWORDS and len(word) > 1 and word.split("'")[0]
    )


def denied(text: str, words: Iterable[str]) -> frozenset[str]:
    """Those of ``words`` that ``text`` denies: each within :data:`NEGATION_REACH` words after a
    negation."""
    return _read(text, frozenset(words))[0]


def _read(text: str, asked: frozenset[str]) -> tuple[frozenset[str], frozenset[str]]:
    """What ``text`` denies of ``asked``, and which of ``asked`` it holds (one pass)."""
    raw = _tokens(text)
    tokens = [t.split("'")[0] for t in raw]
    negations = [at for at, t in enumerate(raw) if t in _NEGATIONS or t.endswith("n't")]
    found = {
        word
        for at in negations
        for word in tokens[at + 1 : at + 1 + NEGATION_REACH]
        if word in asked
    }
    return frozenset(found), asked.intersection(tokens)


def yes_or_no_words(message: str) -> frozenset[str]:
    """The content words of ``message`` when it asks a yes/no question, else none (what
    :func:`other_side` reads, carried by ``QueryFacts.yes_or_no``)."""
    return question_words(message) if asks_yes_or_no(message) else frozenset()


def other_side(contents: Sequence[str], asked: frozenset[str], policy: RecallPolicy) -> int | None:
    """Of the ranked memories' ``contents`` (best first), the place of the memory that says
    otherwise, to join the first ten, when the yes/no question whose content words are
    ``asked`` (none: not one) has a ten that holds its denial only (module docstring); None
    when nothing is to move."""
    depth = min(policy.other_side_depth, len(contents))
    if depth <= FIRST or not asked:
        return None
    read = [_read(text, asked) for text in contents[:FIRST]]
    first = next((at for at, (denies, _) in enumerate(read) if denies), None)
    if first is None:
        return None
    held = read[first][1]
    needed = max(2, len(held) // 2 + 1)  # a majority of what the denial holds

    def states(denies: frozenset[str], holds: frozenset[str]) -> bool:
        return not denies and len(held & holds) >= needed

    if any(states(*r) for r in read):
        return None
    return next((at for at in range(FIRST, depth) if states(*_read(contents[at], asked))), None)
