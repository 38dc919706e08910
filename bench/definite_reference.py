"""A candidate signal for recall's `personal` feature, measured and not shipped: a question
with no first person that points at one thing of its writer's world with a bare "the …"
("Where's the hammer?", "Which school is the boy at?", "When does the landlord get his money?"),
as opposed to a fact of the world ("the capital of Mongolia", "the largest desert", "the Berlin
Wall"). ``fit_recall_score.py --definite-grade G`` counts such a message as personal at grade G
(as a modal "can I …" counts 0.5) and refits; docs/recall.md, "A bare definite reference", gives
what it gained and what it cost.
"""

from __future__ import annotations

import re

# A definite noun phrase followed by one of these (not stranded at the end) is a fact of the
# world ("the capital of Mongolia", "the seasons on Earth").
_COMPLEMENT = frozenset(
    {"of", "in", "on", "between", "for", "from", "at", "to", "by", "with", "about", "than",
     "into", "per", "and", "or", "vs", "versus"}
)  # fmt: skip
# Function words that end a noun phrase (or, right after "the", make none: "the last").
_PHRASE_END = _COMPLEMENT | {
    "is", "are", "was", "were", "do", "does", "did", "be", "have", "has", "had", "a", "an",
    "the", "this", "that", "what", "which", "who", "when", "where", "why", "how", "last",
    "next",
}  # fmt: skip
# Ordinals and superlatives that make "the …" one of a ranked kind ("the first emperor").
_RANKED = frozenset({"most", "least", "first", "second", "third", "only", "same", "main"})
_TOKENS = re.compile(r"[A-Za-z]+(?:[-'][A-Za-z0-9]+)*'?|[^\sA-Za-z]")


def definite_reference(message: str) -> bool:
    """Whether ``message`` points at one thing of its writer's world with a bare "the …"
    ("Where's the hammer?", "Who in the family makes wine?") and at no fact of the world: a
    noun phrase followed by a complement that is not stranded ("the capital of Mongolia", but
    "Which school is the boy at?"), ranked ("the largest desert", "the first emperor") or
    capitalised ("the Berlin Wall") makes the whole message general."""
    tokens = _TOKENS.findall(message.replace("\u2019", "'"))
    lower = [token.lower() for token in tokens]
    found = False
    for index, word in enumerate(lower):
        if word != "the":
            continue
        end = index + 1
        while end < len(tokens) and end - index <= 3 and tokens[end][0].isalpha():
            if lower[end] in _PHRASE_END:
                break
            end += 1
        phrase = tokens[index + 1 : end]
        if not phrase:
            continue
        after = lower[end] if end < len(lower) else ""
        stranded = end + 1 >= len(tokens) or tokens[end + 1] in {"?", ".", "!", ","}
        first = phrase[0].lower()
        if (
            (after in _COMPLEMENT and not stranded)
            or any(token[0].isupper() for token in phrase)
            or first in _RANKED
            or (first.endswith("est") and len(first) > 4)
        ):
            return False
        found = True
    return found
