"""Whether a message is about the person who wrote it (SPEC §4), pure: a feature of recall's
relevance score.

A memory layer holds the owner's life, and a person asking about their own life says so: "my"
and "our", "me" and "us", "I" as the subject of what they did, have, like or plan ("When did I
stop smoking?", "Am I protected?", "What do I drive?"), "mum" and "dad" without a "my". The
same words also open questions about nothing personal: "How do I convert Celsius to
Fahrenheit?" asks for a method (anyone's "I"), and "Give me a recipe" asks the assistant to do
something (the "me" of a request). The reading is graded:

- 1.0: a possessive or object form of the first person ("my", "our", "me" outside a request),
  "we", a bare kinship word ("mum", "granny"), or "I" as the subject of a question that is not
  a "how do I …" ("What did I …", "Am I …", "Which … do I …");
- 0.5: "I" only in "can/could/should I …" (a permission or advice asked of the assistant:
  "Can I have a milkshake?" is about the owner, "Can I freeze cooked pasta?" is not);
- 0.0: no first person, or only "how do/can/should I …" and the "me" of a request.

It is a message-level signal, never a word list of topics: the legs still have to find the
memory, and the score still weighs its cosine.

A second, weaker signal is :func:`definite_reference`: a question with no first person that
points at one thing of its writer's world with a bare "the …" ("Where's the hammer?", "Which
school is the boy at?"), not at a fact of the world ("the capital of Mongolia", "the largest
desert", "the Berlin Wall"). It is the relevance's ``definite`` feature, apart from
``personal``: its coefficient is fitted on its own (docs/recall.md, "A bare definite
reference, and a known name").
"""

from __future__ import annotations

import re

# The forms of the first person that say the message is about its writer.
_POSSESSIVE = frozenset({"my", "mine", "myself", "our", "ours", "ourselves", "we", "us"})
# Kinship words used bare, as names ("Is dad still alive?"): the writer's own family.
_KIN = frozenset({"mum", "mom", "mommy", "mummy", "dad", "daddy", "granny", "grandma", "grandpa"})
# A "me" right after these asks the assistant to do something ("give me a recipe").
_REQUEST = frozenset(
    {"give", "tell", "show", "teach", "help", "let", "send", "write", "explain", "find", "get"}
)
# "how do I like …" asks about the writer's habits after all.
_HABIT = frozenset({"like", "prefer", "usually", "normally", "enjoy"})
# "I" after these is a permission or advice asked of the assistant, sometimes about the owner.
_MODAL = frozenset({"can", "could", "should", "may", "must", "might"})
# "how <auxiliary> I …" asks for a method: anyone's "I".
_AUXILIARY = frozenset({"do", "does", "can", "could", "should", "would", "will", "must", "might"})
# "how long / often / much should I …" asks for advice on a measure anyone would follow ("How
# long should I boil an egg?"), as "how should I …" asks for a method; "how much can I …"
# asks what the owner may do ("How much can I spend on food shopping?") and stays 0.5.
_AMOUNT = frozenset({"long", "often", "much", "many", "far", "soon", "early", "late", "hot"})
_WORDS = re.compile(r"[a-z]+(?:'[a-z]+)?")


def about_owner(message: str, how_much_modal: bool = False) -> float:
    """How clearly ``message`` is about its writer's own life: 1, 0.5 or 0 (module doc).
    With ``how_much_modal``, an "I" in "how long / often / much should I …" is anyone's
    too (0), as in "how should I …"."""
    words = _WORDS.findall(message.lower().replace("\u2019", "'"))
    best = 0.0
    for index, word in enumerate(words):
        before = words[index - 1] if index else ""
        if word in _POSSESSIVE or word in _KIN:
            return 1.0
        if word == "me" and before not in _REQUEST:
            return 1.0
        if word in ("i", "i'm", "i've", "i'd", "i'll"):
            best = max(best, _subject(words, index, how_much_modal))
            if best >= 1.0:
                return 1.0
    return best


def _subject(words: list[str], index: int, how_much_modal: bool = False) -> float:
    """What an "I" at ``index`` says: 0 in "how do I …" (1 in "how do I like …") and, with
    ``how_much_modal``, in "how long should I …", 0.5 after a modal, else 1."""
    before = words[index - 1] if index else ""
    after = words[index + 1] if index + 1 < len(words) else ""
    if before in _AUXILIARY and index >= 2 and words[index - 2] == "how":
        return 1.0 if after in _HABIT else 0.0
    if (
        how_much_modal
        and before == "should"
        and index >= 3
        and words[index - 3] == "how"
        and words[index - 2] in _AMOUNT
    ):
        return 0.0
    if before in _MODAL:
        return 0.5
    return 1.0


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
