"""A relative asked about comes first (pure).

"When is my brother's flight?" of a store that notes the owner's own flight and "My brother
Joaquim lives in Toronto" put the owner's flight first: it holds "flight" and sits close in
meaning, and a model reads the first item as the answer. "What does my wife drive?" put the
owner's car above "Aisha has a red Toyota Yaris" ("My wife Aisha works as a pharmacist" says
who Aisha is). When the message asks about the owner's relative ("my brother", "our
daughter's", not "my brother-in-law"), the best-ranked memory that mentions that relative, by
the kinship word or by a name the store gives it ("my brother Joaquim", "our daughter
Leila's teacher"), takes first place when it is in the first few; the rest keep their order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from memoryd.recall.stand_in_policy import STAND_INS

# Kinship words a person says of their own family ("my sister", "our son").
KIN = frozenset(
    {"brother", "sister", "wife", "husband", "partner", "son", "daughter", "mum", "mom",
     "mother", "dad", "father", "grandma", "grandmother", "grandpa", "grandfather", "granny",
     "aunt", "uncle", "cousin", "niece", "nephew", "girlfriend", "boyfriend", "fiance",
     "fiancee", "stepson", "stepdaughter", "kids", "children", "parents"}
)  # fmt: skip
_WORDS = re.compile(r"[a-z]+(?:'[a-z]+)?")


def asked_relatives(message: str) -> tuple[str, ...]:
    """The kinship words the message puts after "my" or "our" ("my brother's flight" →
    brother), first seen first; an in-law ("my brother-in-law") is not one."""
    words = _WORDS.findall(message.lower().replace("\u2019", "'").replace("-", " "))
    found: dict[str, None] = {}
    for index, word in enumerate(words[1:], start=1):
        kin = word.removesuffix("'s").removesuffix("'")
        if words[index - 1] not in ("my", "our") or kin not in KIN:
            continue
        if [w.removesuffix("'s") for w in words[index + 1 : index + 3]] == ["in", "law"]:
            continue
        found.setdefault(kin, None)
    return tuple(found)


def kin_names(relatives: Sequence[str], texts: Iterable[str]) -> frozenset[str]:
    """The names the texts give the relatives: the capitalised word right after "my/our
    <kin>" ("My brother Joaquim lives …" → joaquim; "Our daughter Leila's teacher" → leila),
    lower-cased."""
    kin = "|".join(re.escape(k) for k in _spellings(relatives))
    if not kin:
        return frozenset()
    pattern = re.compile(rf"\b(?:my|our)\s+(?:{kin}),?\s+([A-Z][^\W\d_]+)", re.IGNORECASE)
    names = set()
    for text in texts:
        for match in pattern.finditer(text.replace("\u2019", "'")):
            if match.group(1)[0].isupper():
                names.add(match.group(1).lower())
    return frozenset(names)


def mentions(text: str, relatives: Sequence[str], names: Iterable[str]) -> bool:
    """Whether ``text`` names one of the relatives: by a kinship word (or its stand-in:
    "partner" for a wife) or by one of their ``names``."""
    words = {w.removesuffix("'s").removesuffix("'") for w in _WORDS.findall(text.lower())}
    return bool(words & (_spellings(relatives) | set(names)))


def relative_first(
    texts: Sequence[str], relatives: Sequence[str], names: Iterable[str], depth: int
) -> int | None:
    """The place (0-based) among the first ``depth`` of ``texts`` (ranked best first) of the
    best one that mentions a relative, when the first does not; None when it does, or none
    does."""
    if not relatives or not texts:
        return None
    named = frozenset(names)
    if mentions(texts[0], relatives, named):
        return None
    return next(
        (at for at, text in enumerate(texts[:depth]) if mentions(text, relatives, named)), None
    )


def _spellings(relatives: Sequence[str]) -> set[str]:
    """The kinship words and their stand-ins ("wife" and "partner"), with plurals."""
    words = {w for kin in relatives for w in (kin, *STAND_INS.get(kin, ()))}
    return words | {f"{w}s" for w in words}
