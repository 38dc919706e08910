"""Entities: names found in text, and a matcher that spots known names and aliases in a message.

Pure: the matcher is built from plain (alias, entity id) pairs and looks names up by word n-grams,
so thousands of names cost one dictionary probe per n-gram of the message.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from memoryd.words import STOPWORDS

_WORD = re.compile(r"[\w][\w'’\-.]*", re.UNICODE)
_NAME_TOKEN = re.compile(r"^[A-Z][\w'’\-]*$|^[A-Z]{2,}$")
# Capitalised words that are not names: pronouns, determiners, greetings, days and months are
# still useful as time words but would flood the entity leg.
_NOT_NAMES = frozenset(
    """
    i i'm i've i'll i'd me my mine we our us you your he him his she her they them their it its
    the a an this that these those there here what when where why how who whom which whose
    and or but if so because also then than yes no not ok okay hi hey hello thanks thank
    wow oh ah well sure great good nice cool awesome love like just really very maybe
    monday tuesday wednesday thursday friday saturday sunday today tomorrow yesterday
    january february march april may june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec mon tue tues wed thu thur thurs fri sat sun
    mr mrs ms dr do does did is are was were be been am have has had can could will would
    shall should may might must let lets let's please sorry congrats congratulations
    now ever forever never always again henceforth hereafter fyi ps btw nb
    """.split()
)
# Words that open sentences ("Went climbing with Marco", "Tell Ana the plan", "Whenever I ask")
# but are not names there: past-tense verbs of a diary, the imperatives of standing rules, and
# discourse words ("Instead", "Reminder:"). Verbs that are also first names (Mark, Bill, Sue,
# Pat, Rob, Drew, Grant, Chase, Will, May) stay out: a sentence may open with the person.
_SENTENCE_STARTERS = frozenset(
    """
    went had got made took saw met bought visited played watched cooked talked told said asked
    started finished tried learned felt thought loved liked enjoyed decided planned need needs
    want wants wanted remember remembered always never sometimes often usually tonight last
    next after before during while since still probably definitely actually anyway btw lol haha
    omg yeah yep nope absolutely exactly totally honestly amazing perfect glad happy excited
    prefers prefer lives live works work uses use keep send sent call called check make take
    give gave find found spent spend moved move booked book ordered order finally recently
    please also from going moving whenever every instead otherwise however meanwhile besides
    furthermore moreover additionally regarding note notes reminder important tip warning
    update correction dear tell ask answer reply respond write speak talk say show ensure try
    avoid stop start mention include add format translate summarize summarise explain list
    put save store forget ignore skip remind greet address refer spell sign share schedule
    cancel confirm email text message help bring buy pay read listen wake pick be dont don't
    """.split()
)
MAX_NAME_WORDS = 5


def normalize_name(name: str) -> str:
    """The key names and aliases are matched by: case-folded words joined by one space."""
    words = (_strip_possessive(word.strip(".'’-")) for word in _WORD.findall(name.casefold()))
    return " ".join(word for word in words if word)


def _strip_possessive(word: str) -> str:
    """ "Ana's" → "Ana" (either apostrophe)."""
    if len(word) > 2 and word[-2:].lower() in ("'s", "’s"):
        return word[:-2]
    return word


def extract_entities(text: str) -> tuple[str, ...]:
    """Capitalised names in ``text`` ("Ana", "Taberna Sal Grosso", "NASA"), first seen first."""
    return tuple(name for name, _ in _names(text))


def names_within_sentences(text: str) -> tuple[str, ...]:
    """The names of :func:`extract_entities` less one-word names seen only at the start of a
    sentence, where a capital letter proves nothing ("Recommend a novel", "Long time no see")."""
    return tuple(name for name, opener in _names(text) if not opener or " " in name)


def _names(text: str) -> list[tuple[str, bool]]:
    """(name, whether its first mention opens a sentence), first seen first."""
    found: dict[str, tuple[str, bool]] = {}
    current: list[str] = []
    opener = False

    def flush() -> None:
        if current:
            name = " ".join(current)
            key = normalize_name(name)
            if key and key not in found:
                found[key] = (name, opener)
            elif key in found and found[key][1] and not opener:
                found[key] = (found[key][0], False)
            current.clear()

    joinable = False  # whether the next name word may extend the current name
    # Whether the words so far in this sentence were all openers ("Please note", "Never ever"):
    # then the next word still stands where a capital letter proves nothing.
    leading = False
    for match in _WORD.finditer(text):
        raw = match.group()
        word = _strip_possessive(raw.rstrip(".'’-"))
        opens_sentence = _opens_sentence(text, match.start())
        lead = opens_sentence or (leading and text[match.start() - 1 : match.start()] == " ")
        starter = lead and _ordinary_starter(word)
        leading = starter or (lead and is_common_word(word))
        if _NAME_TOKEN.match(word) and not is_common_word(word) and len(word) > 1 and not starter:
            if not joinable:
                flush()
            if not current:
                opener = opens_sentence
            current.append(word)
            if len(current) == MAX_NAME_WORDS:
                flush()
            # A name continues only across a single space: "Ana, Bruno" and "Ana. Bruno" are
            # two names, and so is "Ana's Bruno".
            after = text[match.end() : match.end() + 2]
            joinable = raw == word and after[:1] == " " and after[1:2] not in (" ", "")
        else:
            flush()
            joinable = False
    flush()
    return list(found.values())


def is_common_word(word: str) -> bool:
    """Pronouns, greetings, calendar words and stop words ("Of", "In", "For" open sentences
    often) are never names."""
    folded = word.casefold()
    return folded in _NOT_NAMES or folded in STOPWORDS


def _opens_sentence(text: str, start: int) -> bool:
    before = text[:start].rstrip()
    return not before or before[-1] in '.!?:;\n"“(' or before.endswith("- ")


def _ordinary_starter(word: str) -> bool:
    """A capitalised word at a sentence start that is most likely just a word."""
    lowered = word.casefold()
    return lowered in _SENTENCE_STARTERS or (word[1:].islower() and lowered.endswith(("ing", "ly")))


# A name shorter than this is matched only as written: "Al" and "Ali", "Ana" and "Ann" are
# different people far more often than they are one person spelt two ways.
MIN_FUZZY_LETTERS = 4
# Two spellings of one name share a sound key and differ by at most this share of the longer
# one's letters ("Muhammad" ~ "Muhhamed": 3 of 8; "Faheem" ~ "Fahim": 2 of 6).
FUZZY_SHARE = 0.4
_SOUND_RULES = (
    ("ph", "f"), ("ck", "k"), ("q", "k"), ("x", "ks"), ("z", "s"), ("w", "v"), ("y", "i"),
)  # fmt: skip


def _letters(word: str) -> str:
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    return "".join(c for c in decomposed if c.isalpha() and c.isascii())


def sound_key(word: str) -> str:
    """A rough phonetic key of one name: its first letter, then its consonants as they sound
    (c before a/o/u and q are k; ph is f; z is s), h dropped and doubles collapsed.
    "Muhammad", "Mohammed" and "Muhhamed" → "md"; "Nicolas" and "Nikolas" → "nkls"."""
    letters = _letters(word)
    if not letters:
        return ""
    for written, sounded in _SOUND_RULES:
        letters = letters.replace(written, sounded)
    letters = re.sub(r"c(?=[aoukrl]|$)", "k", letters).replace("c", "s")
    key = letters[0]
    for letter in letters[1:]:
        if letter in "aeiouh" or letter == key[-1]:
            continue
        key += letter
    return key


def edit_distance(a: str, b: str, swaps: bool = False) -> int:
    """Levenshtein distance between two short strings; with ``swaps``, two neighbouring
    letters written the other way round are one edit ("Jhon" is one from "John", the typo
    people make most; optimal string alignment)."""
    if len(a) < len(b):
        a, b = b, a
    before: list[int] = []
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, start=1):
        current = [i]
        for j, y in enumerate(b, start=1):
            cost = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y))
            if swaps and i > 1 and j > 1 and x == b[j - 2] and a[i - 2] == y and x != y:
                cost = min(cost, before[j - 2] + 1)
            current.append(cost)
        before, previous = previous, current
    return previous[-1]


def same_name(a: str, b: str, refined: bool = False) -> bool:
    """Whether two one-word names are one name spelt two ways: the same sound key and few
    letters apart (names of ``MIN_FUZZY_LETTERS`` letters or more; shorter ones only as
    written). ``refined``: a doubled letter is one ("Timm" is Tim, "Ana" Anna, at any
    length), and a name with another gendered ending is another name (:func:`other_ending`)."""
    x, y = _letters(a), _letters(b)
    if x == y:
        return bool(x)
    if refined and _undoubled(x) == _undoubled(y):
        return True
    if min(len(x), len(y)) < MIN_FUZZY_LETTERS or sound_key(x) != sound_key(y):
        return False
    if refined and other_ending(x, y):
        return False
    return edit_distance(x, y, refined) <= max(1, round(FUZZY_SHARE * max(len(x), len(y))))


def other_ending(a: str, b: str) -> bool:
    """Whether two names end as a man's and a woman's name do: one in "a" and the other in
    "o" or a consonant ("Maria" and "Mario", "Roberta" and "Robert", "Carla" and "Carl"); in
    most European languages a final "a" makes a woman's name of a man's. Not one in "a" and
    one in "e", "i" or "y" ("Eliza" and "Elise": both a woman's). A silent "h" after a final
    vowel is no ending ("Sarah", "Hannah")."""
    x, y = _unvoiced_h(_letters(a)), _unvoiced_h(_letters(b))
    if x[-1:] == y[-1:] or "a" not in (x[-1:], y[-1:]):
        return False
    other = y[-1:] if x[-1:] == "a" else x[-1:]
    return other not in "eiy"


# A "name" that is a contraction opening a sentence ("It'll", "We're", "Don't"), kept by
# stores written before such words were refused: no name is spelt like it.
_CONTRACTION = re.compile(r"(?:['’](?:ll|re|ve|d|m|t)|n['’]t)$")


def _undoubled(letters: str) -> str:
    return re.sub(r"(.)\1+", r"\1", letters)


def _unvoiced_h(letters: str) -> str:
    if len(letters) > 2 and letters.endswith("h") and letters[-2] in "aeiouy":
        return letters[:-1]
    return letters


@dataclass(frozen=True)
class EntityMatcher:
    """Known names and aliases → entity ids, looked up by word n-grams of a message; a
    one-word name written another way is found by its sound key (:func:`same_name`)."""

    keys: dict[str, int]
    longest: int
    # Sound key → the one-word known names with that key.
    sounds: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def build(cls, aliases: Iterable[tuple[str, int]]) -> EntityMatcher:
        """From (alias or name, entity id) pairs."""
        keys: dict[str, int] = {}
        sounds: dict[str, list[str]] = {}
        longest = 1
        for alias, entity_id in aliases:
            key = normalize_name(alias)
            # Stores written before stop words were refused as names may hold "Of" or "In".
            if key and not is_common_word(key):
                keys[key] = entity_id
                longest = max(longest, len(key.split()))
                if " " not in key:  # short ones only for a refined match ("Timm": Tim)
                    sounds.setdefault(sound_key(key), []).append(key)
        return cls(
            keys=keys,
            longest=min(longest, MAX_NAME_WORDS),
            sounds={k: tuple(v) for k, v in sounds.items()},
        )

    def spelt_like(self, name: str, refined: bool = False) -> int | None:
        """The entity a name refers to: the known name or alias as written, else the one
        known one-word name spelt closest to it (``same_name``); None when none is close."""
        key = self.closest(name, refined)
        return None if key is None else self.keys[key]

    def closest(self, name: str, refined: bool = False) -> str | None:
        """The known name or alias ``name`` is (its key): itself as written, else the known
        one-word name spelt closest to it (``same_name``, ``refined`` or not); None when none
        is close."""
        key = normalize_name(name)
        if key in self.keys:
            return key
        if " " in key or (len(key) < MIN_FUZZY_LETTERS and not refined):
            return None
        sounds = self.sounds.get(sound_key(key), ())
        close = [
            k
            for k in sounds
            if same_name(k, key, refined) and not (refined and _CONTRACTION.search(k))
        ]
        return min(close, key=lambda k: (edit_distance(k, key, refined), k)) if close else None

    def find(self, message: str) -> set[int]:
        """Ids of the entities the message mentions (case-insensitive, whole words)."""
        return {mention.entity_id for mention in self.mentions(normalize_name(message).split())}

    def mentions(self, words: list[str]) -> list[Mention]:
        """Every known name among normalised ``words``, longest match first at each position."""
        found: list[Mention] = []
        for start in range(len(words)):
            for size in range(min(self.longest, len(words) - start), 0, -1):
                entity_id = self.keys.get(" ".join(words[start : start + size]))
                if entity_id is not None:
                    found.append(Mention(entity_id, start, start + size))
                    break
        return found


@dataclass(frozen=True)
class Mention:
    """A known name found at words[start:end] of a normalised message."""

    entity_id: int
    start: int
    end: int


def without_names(message: str, matcher: EntityMatcher, names: set[int]) -> str:
    """The message as normalised words with the given entities' names removed; the message
    itself when nothing would be left.

    Why: a name that tags most memories (the owner, a constant companion) says nothing about
    which of them is relevant, yet it pulls the embedding toward every memory that mentions it.
    """
    if not names:
        return message
    words = normalize_name(message).split()
    drop: set[int] = set()
    for mention in matcher.mentions(words):
        if mention.entity_id in names:
            drop.update(range(mention.start, mention.end))
    kept = [word for index, word in enumerate(words) if index not in drop]
    return " ".join(kept) if kept else message
