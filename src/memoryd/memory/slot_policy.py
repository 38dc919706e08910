"""Fact slots, one per meaning (pure): canonical subjects and predicates, the slot key, and
which existing slot a new predicate joins.

A fact's slot is where a new value replaces the old one. The model words a predicate
differently each time ("lives in", "lives_in", "livesIn", "home city"), so the slot key is
built from canonical forms, and a predicate that is new for its subject may still join the
slot of an existing predicate whose meaning is the same (by embedding similarity, see
:class:`SlotPolicy`). The text the model or the owner wrote is kept for display; only the key
changes.

Decisions (see also ``tests/data/predicate_pairs.tsv``):

- memoryd has one owner and every conversation is theirs, so a first-person subject ("I",
  "me", "my", "myself") and "user" are the owner; "the owner's sister", "my sister" and
  "sister" are one subject.
- Articles and a leading possessive ("the", "a", "my", "owner's") carry no meaning in a key;
  nor do case, separators (``lives_in``, ``lives-in``, ``livesIn``), a leading "is"/"are" or
  British and American spellings of a word ("favourite colour" / "favorite color").
- Tense does: "worked at" (a former employer) and "works at" are two slots, both true.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

OWNER = "owner"
# Subjects that name the one owner (after articles and possessives are gone).
OWNER_ALIASES = frozenset({"owner", "i", "me", "my", "myself", "mine", "user", "self"})
# Leading words that only point at whose thing it is: "the owner's employer" is "employer".
_ARTICLES = frozenset({"the", "a", "an"})
_PREDICATE_DETERMINERS = frozenset({"his", "her", "their", "our", "your", "its"})
_COPULAS = frozenset({"is", "am", "are"})
# One spelling per word where British and American English differ.
_SPELLINGS: Mapping[str, str] = {
    "colour": "color",
    "colours": "colors",
    "favourite": "favorite",
    "favourites": "favorites",
    "neighbour": "neighbor",
    "neighbours": "neighbors",
    "neighbourhood": "neighborhood",
    "centre": "center",
    "theatre": "theater",
    "organisation": "organization",
    "licence": "license",
    "travelled": "traveled",
    "programme": "program",
    "grey": "gray",
}
_CAMEL_HUMP = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "`": "'"})
_SEPARATORS = re.compile(r"[\s_\-/.:;,!?()\[\]{}\"|+*=#~<>]+")


def _tokens(text: str) -> list[str]:
    """``text`` as lower-case tokens: Unicode compatibility forms folded, camelCase humps and
    separators (spaces, ``_``, ``-``, ``/``, punctuation) split; apostrophes kept."""
    folded = unicodedata.normalize("NFKC", text).translate(_APOSTROPHES)
    spaced = _CAMEL_HUMP.sub(" ", folded).casefold()
    return [raw.lstrip("'") for raw in _SEPARATORS.split(spaced) if raw.strip("'")]


def _bare(token: str) -> str:
    """A token without its possessive ending: "owner's" → "owner", "parents'" → "parents"."""
    while token.endswith("'s") or token.endswith("'"):
        token = token[:-2] if token.endswith("'s") else token[:-1]
    return token


def _is_owners(token: str) -> bool:
    """Whether a token says "the owner's": "my", "owner's", "user's", "mine"."""
    if token in ("my", "mine"):
        return True
    return token != _bare(token) and _bare(token) in ("owner", "owners", "user", "users")


def _words(tokens: list[str]) -> list[str]:
    return [word for word in (_bare(token) for token in tokens) if word]


def canonical_words(text: str) -> str:
    """Any text as the words subject keys are made of, space-separated ("I met Ana's
    sister" → "i met ana sister"): a subject key found in it is a subject it names."""
    return " ".join(_words(_tokens(text)))


def _fallback(text: str) -> str:
    """The key of a text whose every word was dropped ("the", "'s"): its plain folded form."""
    return " ".join(text.casefold().split())


def canonical_subject(subject: str) -> str:
    """The key form of a fact's subject: "The owner", "owner's", "I" and "my" → "owner";
    "the owner's sister" and "my sister" → "sister"; "Ana's" → "ana"."""
    tokens = _tokens(subject)
    while len(tokens) > 1 and tokens[0] in _ARTICLES:
        tokens = tokens[1:]
    if len(tokens) > 1 and _is_owners(tokens[0]):
        tokens = tokens[1:]
    while len(tokens) > 1 and tokens[0] in _ARTICLES:
        tokens = tokens[1:]
    words = _words(tokens)
    if not words:
        return _fallback(subject)
    if len(words) == 1 and words[0] in OWNER_ALIASES:
        return OWNER
    return " ".join(words)


def canonical_predicate(predicate: str) -> str:
    """The key form of a predicate: case, separators, articles, a leading possessive or "is",
    and British/American spellings do not count ("Lives_In", "livesIn", "the owner's
    employer" → "lives in", "employer"); meaning beyond the words is :func:`plan_slot`'s."""
    tokens = _tokens(predicate)
    while len(tokens) > 1 and (
        tokens[0] in _ARTICLES
        or tokens[0] in _PREDICATE_DETERMINERS
        or tokens[0] in _COPULAS
        or _is_owners(tokens[0])
    ):
        tokens = tokens[1:]
    words = [_SPELLINGS.get(word, word) for word in _words(tokens)]
    if not words:
        return _fallback(predicate)
    return " ".join(words)


def slot_key(subject: str, predicate: str) -> str:
    """The deterministic slot id of (subject, predicate), from their canonical forms."""
    key = canonical_subject(subject) + "\x1f" + canonical_predicate(predicate)
    return "slot_" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:20]


# ------------------------------------------------------------ what similarity cannot tell

# Words that relate the others: in a predicate they say how, not what ("lives in").
_FUNCTION_WORDS = frozenset(
    "in at to for by with on from of as about into up off out over under the a an is are am "
    "be and or per".split()
)
# Kin by role: MiniLM puts "brother" and "sister", "mother" and "father" close together, yet a
# brother's name never replaces a sister's. Words of one role are one role ("mum", "mother").
_KIN_ROLES: Mapping[str, str] = {
    **dict.fromkeys(("mother", "mum", "mom", "mummy", "mommy", "mama"), "mother"),
    **dict.fromkeys(("father", "dad", "daddy", "papa"), "father"),
    **dict.fromkeys(("brother", "brothers"), "brother"),
    **dict.fromkeys(("sister", "sisters"), "sister"),
    **dict.fromkeys(("son", "sons"), "son"),
    **dict.fromkeys(("daughter", "daughters"), "daughter"),
    **dict.fromkeys(("uncle", "uncles"), "uncle"),
    **dict.fromkeys(("aunt", "aunts", "auntie"), "aunt"),
    **dict.fromkeys(("nephew", "nephews"), "nephew"),
    **dict.fromkeys(("niece", "nieces"), "niece"),
    **dict.fromkeys(("cousin", "cousins"), "cousin"),
    **dict.fromkeys(("grandmother", "grandma", "granny", "nan", "nana"), "grandmother"),
    **dict.fromkeys(("grandfather", "grandpa", "granddad", "grandad"), "grandfather"),
    **dict.fromkeys(("husband",), "husband"),
    **dict.fromkeys(("wife",), "wife"),
    **dict.fromkeys(("boyfriend",), "boyfriend"),
    **dict.fromkeys(("girlfriend",), "girlfriend"),
}


def _stem(word: str) -> str:
    """A present-tense or plural word's stem ("lives", "living", "live" → "liv"); a past
    form ("lived") keeps its ending, so tense still tells two predicates apart."""
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("ing") and len(word) > 5:
        word = word[:-3]
    elif word.endswith("es") and len(word) > 4 and word[-3] in "sxz":
        word = word[:-2]
    elif word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        word = word[:-1]
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


def _past_of(word: str, other: str) -> bool:
    """Whether ``word`` is the past tense of ``other``'s verb ("worked" / "works")."""
    if not word.endswith("ed") or len(word) < 5:
        return False
    stems = {word[:-2], word[:-1], word[:-3] + "y", word[:-3]}
    return _stem(other) in {_stem(stem) for stem in stems}


def wording_verdict(first: str, second: str) -> bool | None:
    """What the words of two canonical predicates settle before any similarity: True (one
    meaning), False (two), or None (the words cannot tell; similarity decides).

    - The same content words, differing only in order or small words ("date of birth" /
      "birth date", "commute" / "commutes by"): one meaning, unless each side has a small
      word the other lacks ("moved to" / "moved from", "works at" / "works as").
    - Shared content words with others added or swapped ("employer" / "former employer",
      "brother name" / "sister name", "favorite color" / "eye color"): two. What is added or
      swapped is what the predicate is about, and embeddings barely see it.
    - One word inside another ("likes" / "dislikes", "father" / "grandfather"), a tense
      apart ("works at" / "worked at") or another kin role ("uncle" / "aunt"): two.
    """
    if first == second or first.replace(" ", "") == second.replace(" ", ""):
        return True
    # Words of one kin role are one word here ("mum's name" / "mother's name").
    words_a = [_KIN_ROLES.get(w, w) for w in first.split()]
    words_b = [_KIN_ROLES.get(w, w) for w in second.split()]
    content_a = [w for w in words_a if w not in _FUNCTION_WORDS]
    content_b = [w for w in words_b if w not in _FUNCTION_WORDS]
    for a in content_a:
        for b in content_b:
            if _past_of(a, b) or _past_of(b, a):
                return False
    stems_a, stems_b = {_stem(w) for w in content_a}, {_stem(w) for w in content_b}
    for a in stems_a:
        for b in stems_b:
            if a != b and min(len(a), len(b)) >= 3 and (a.endswith(b) or b.endswith(a)):
                return False
    roles_a = {w for w in content_a if w in _KIN_ROLES}
    roles_b = {w for w in content_b if w in _KIN_ROLES}
    if roles_a and roles_b and roles_a != roles_b:
        return False
    if stems_a and stems_a == stems_b:
        small_a = {w for w in words_a if w in _FUNCTION_WORDS} - {"of"}
        small_b = {w for w in words_b if w in _FUNCTION_WORDS} - {"of"}
        return not (small_a - small_b and small_b - small_a)
    if stems_a & stems_b:
        return False
    return None


def similarity_text(predicate: str) -> str:
    """What is embedded to compare two predicates: the canonical predicate read as something
    about a person ("owner lives in", "owner home city"). Why: a bare "home city" and "lives
    in" share no sense for MiniLM (cosine 0.54); said of someone they do (0.73), and the
    hand-labelled pairs rank better overall (bench/bench_slots.py)."""
    return f"{OWNER} {canonical_predicate(predicate)}"


# ------------------------------------------------------------------ the vocabulary


@dataclass(frozen=True)
class SlotPolicy:
    """When a predicate new for its subject joins an existing slot of that subject."""

    # Why 0.72: on the 200 hand-labelled pairs (tests/data/predicate_pairs.tsv, most of the
    # different-meaning ones near misses) it keeps "same slot" precision at 0.88 with recall
    # 0.63, and lets "home city" (0.73) join "lives in"; 0.80 would be 0.98 / 0.46 and miss
    # it (bench/bench_slots.py prints the whole table).
    same_slot_cosine: float = 0.72
    # The embedder the threshold was calibrated with; predicates are always compared with it.
    calibrated_for: str = "all-MiniLM-L6-v2-int8-onnx"


@dataclass(frozen=True)
class VocabularyEntry:
    """One live fact of the subject, as the vocabulary sees it: its predicate as written, the
    slot it is in, and the predicate that slot was named by when this fact joined it through
    the vocabulary (None when the fact's own predicate names its slot)."""

    predicate: str
    slot: str
    same_slot_as: str | None = None


@dataclass(frozen=True)
class SlotChoice:
    """Where a new fact goes: its slot, and when that slot is another predicate's, which one
    and how close the two predicates were (None when their words alone decided)."""

    slot: str
    same_slot_as: str | None = None
    cosine: float | None = None

    def note(self) -> str | None:
        """What the memory records about the choice, or None for its own slot."""
        if self.same_slot_as is None:
            return None
        how = (
            f"predicate similarity {self.cosine:.2f}"
            if self.cosine is not None
            else "the same words"
        )
        return f"treated as the same slot as {self.same_slot_as!r} ({how})"


def slot_names(entries: Sequence[VocabularyEntry]) -> dict[str, str]:
    """Each slot of the vocabulary and the predicate that names it: the predicate of a fact
    that is there under its own wording, else the one its mapped facts name."""
    names: dict[str, str] = {}
    for entry in entries:
        if entry.same_slot_as is None:
            names.setdefault(entry.slot, entry.predicate)
    for entry in entries:
        if entry.same_slot_as is not None:
            names.setdefault(entry.slot, entry.same_slot_as)
    return names


def exact_choice(
    subject: str, predicate: str, entries: Sequence[VocabularyEntry]
) -> SlotChoice | None:
    """The slot a predicate takes on its canonical form alone: its own slot when a live fact
    is there, else the slot of a live fact (or the slot named) with the same canonical
    predicate; None when the predicate is new for the subject."""
    own = slot_key(subject, predicate)
    if any(entry.slot == own for entry in entries):
        return SlotChoice(own)
    wanted = canonical_predicate(predicate)
    names = slot_names(entries)
    for slot, name in sorted(names.items()):
        if canonical_predicate(name) == wanted:
            return SlotChoice(slot, name)
    for entry in entries:
        if canonical_predicate(entry.predicate) == wanted:
            return SlotChoice(entry.slot, names[entry.slot])
    return None


def names_to_compare(subject: str, predicate: str, entries: Sequence[VocabularyEntry]) -> list[str]:
    """The slot names whose similarity to ``predicate`` :func:`plan_slot` needs: none when
    the canonical form or the words already decide."""
    if exact_choice(subject, predicate, entries) is not None:
        return []
    wanted = canonical_predicate(predicate)
    verdicts = {
        name: wording_verdict(wanted, canonical_predicate(name))
        for name in slot_names(entries).values()
    }
    if any(verdict is True for verdict in verdicts.values()):
        return []
    return sorted(name for name, verdict in verdicts.items() if verdict is None)


def plan_slot(
    subject: str,
    predicate: str,
    entries: Sequence[VocabularyEntry],
    cosines: Mapping[str, float],
    policy: SlotPolicy,
) -> SlotChoice:
    """The slot of a new fact (subject, predicate), given the subject's live vocabulary and
    the cosine between the new predicate and each slot name (by name, as written; see
    :func:`names_to_compare`).

    The canonical form wins; then a slot name the words make one meaning with; then the
    closest slot name at or above the policy's threshold that the words do not set apart;
    else the predicate's own slot. Only slot names are compared, never the predicates mapped
    into them, so a slot cannot drift from its meaning one near neighbour at a time."""
    exact = exact_choice(subject, predicate, entries)
    if exact is not None:
        return exact
    wanted = canonical_predicate(predicate)
    best: tuple[float, str, str, bool] | None = None
    for slot, name in sorted(slot_names(entries).items()):
        verdict = wording_verdict(wanted, canonical_predicate(name))
        if verdict is False:
            continue
        score = 1.0 if verdict else cosines.get(name)
        if score is None or (not verdict and score < policy.same_slot_cosine):
            continue
        if best is None or score > best[0]:
            best = (score, slot, name, bool(verdict))
    if best is None:
        return SlotChoice(slot_key(subject, predicate))
    score, slot, name, by_words = best
    return SlotChoice(slot, name, None if by_words else score)


# ----------------------------------------------------------------------- re-slotting


@dataclass(frozen=True)
class SlottedFact:
    """A stored fact with a slot, as the re-slot reads it."""

    id: str
    active: bool
    subject: str | None
    predicate: str | None
    slot: str
    same_slot_as: str | None
    created_at: datetime


@dataclass(frozen=True)
class Demotion:
    """An active fact that now shares its slot with an older active one: it waits for the
    owner as a supersede of ``keeper`` instead of replacing it unasked."""

    memory_id: str
    keeper_id: str


@dataclass(frozen=True)
class ReslotPlan:
    """What re-slotting a store changes: every fact's slot and subject key (memory id →
    (slot, subject key)), and the active facts that step back to pending."""

    slots: Mapping[str, tuple[str, str | None]]
    demotions: tuple[Demotion, ...]


def plan_reslot(facts: Sequence[SlottedFact]) -> ReslotPlan:
    """Re-slot stored facts by today's canonical forms. A fact that joined a slot through the
    vocabulary keeps it (the owner can split it). Where several active facts now share a
    slot, the oldest stays active and each other one becomes pending: nothing is merged
    silently and no value is lost."""
    slots: dict[str, tuple[str, str | None]] = {}
    active_by_slot: dict[str, list[SlottedFact]] = {}
    for fact in facts:
        if fact.subject is None or fact.predicate is None:
            slots[fact.id] = (fact.slot, None)
            continue
        slot = fact.slot if fact.same_slot_as else slot_key(fact.subject, fact.predicate)
        slots[fact.id] = (slot, canonical_subject(fact.subject))
        if fact.active:
            active_by_slot.setdefault(slot, []).append(fact)
    demotions: list[Demotion] = []
    for holders in active_by_slot.values():
        keeper, *others = sorted(holders, key=lambda f: (f.created_at, f.id))
        demotions.extend(Demotion(other.id, keeper.id) for other in others)
    return ReslotPlan(slots, tuple(sorted(demotions, key=lambda d: d.memory_id)))
