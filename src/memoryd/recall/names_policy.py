"""A name as people write it, read as the store's (pure).

A question says "Mohammed" or "Nathan" where the memories say "Muhhamed" or "Nate". The name
is that person's: recall reads the message with the known spelling in its place, so every leg
searches what the memories hold (the entity leg the person, the text leg the written name, the
vector leg the name the memories were embedded with), and the rule for names no memory
mentions does not silence it. Which written names are read so (``RecallPolicy.name_forms``):
1, a close spelling of a known one-word name (:meth:`EntityMatcher.closest`); 2, also a common
diminutive or full form of one (:mod:`memoryd.memory.name_forms_policy`), when exactly one
known name is. A look-alike name of another person ("Mario" for the store's "Maria") is not
(``RecallPolicy.name_lookalikes``). Costs nothing for a message without a capitalised name: the
names are found by the text alone, the matcher is the one recall builds anyway.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from memoryd.memory.entity_policy import (
    EntityMatcher,
    extract_entities,
    names_within_sentences,
    normalize_name,
    other_ending,
)
from memoryd.memory.name_forms_policy import FULL_NAMES, is_given_name, other_forms
from memoryd.words import query_terms


def known_form(key: str, matcher: EntityMatcher) -> str | None:
    """The one known name that ``key`` (a case-folded one-word name) is another form of: a
    diminutive or full form of it; else, for a short form, another short form of its full
    name ("Bobby" and "Rob", both Robert's), and for a full name, another full name of about
    its length sharing a short form, unless their endings tell a man's from a woman's
    ("Steven" and "Stephen"; not "Josephine" and "Joseph", nor "Alexandra" and "Alexander");
    None when none is known, or more than one is (which is meant is unknown)."""
    direct = other_forms(key)
    full = key in FULL_NAMES
    far = {other for near in direct for other in other_forms(near)} - {key}
    if full:
        far = {
            other
            for other in far
            if other in FULL_NAMES
            and abs(len(other) - len(key)) <= 1
            and not other_ending(other, key)
        }
    for forms in (direct, far):
        known = sorted(form for form in forms if form in matcher.keys)
        if known:
            return known[0] if len(known) == 1 else None
    return None


def read_name(name: str, matcher: EntityMatcher, level: int, lookalikes: bool) -> str | None:
    """The known name (its key) that the written one-word ``name`` is: itself when known;
    else a close spelling of one (level 0, the start's rule, and up); at level 2, a diminutive
    or full form of one. With ``lookalikes``, a name the diminutives table holds is another
    form of a known name or no known name at all ("Stephanie" is not a spelling of Stephen), a
    close spelling with another gendered ending is another person's ("Mario"), and a name
    written in capitals is an acronym, known only as written ("CSS" is not "Cs")."""
    key = normalize_name(name)
    if key in matcher.keys:
        return key
    if lookalikes and is_given_name(key):
        return known_form(key, matcher) if level >= 2 else None
    if lookalikes and _ACRONYM.match(name):
        return None
    known = matcher.closest(key, lookalikes)
    if known is None and level >= 2:
        known = known_form(key, matcher)
    return known


_ACRONYM = re.compile(r"^[A-Z]{2,}(?:['’]s)?$")


def read_as_known(
    message: str,
    matcher: EntityMatcher,
    level: int,
    lookalikes: bool,
    found: Sequence[str] | None = None,
) -> tuple[str, tuple[tuple[str, str], ...]]:
    """``message`` with each name written another way in the known name's place (level 1:
    close spellings; 2: also diminutives and full forms), and the (written, known) pairs.
    ``found``: the message's names (``extract_entities``), when already found."""
    if level <= 0 or not matcher.keys:
        return message, ()
    written = [
        (name, key)
        for name in (extract_entities(message) if found is None else found)
        if (key := normalize_name(name)) and " " not in key and key not in matcher.keys
    ]
    if not written:  # no name, or only known ones: nothing more to read
        return message, ()
    within = {normalize_name(name) for name in names_within_sentences(message)}
    pairs: list[tuple[str, str]] = []
    for name, key in written:
        # A diminutive opening a sentence may be a plain word ("Pat the dough").
        known = read_name(name, matcher, level if key in within else 1, lookalikes)
        if known is not None:
            pairs.append((name, known))
    if not pairs:
        return message, ()
    return _replaced(message, pairs), tuple(pairs)


def _replaced(message: str, pairs: Iterable[tuple[str, str]]) -> str:
    for written, known in pairs:
        shown = " ".join(word[:1].upper() + word[1:] for word in known.split())
        message = re.sub(rf"(?<![\w]){re.escape(written)}(?![\w])", shown, message)
    return message


def unknown_names(
    message: str,
    matcher: EntityMatcher,
    frequency: Mapping[str, int] | None,
    level: int = 0,
    lookalikes: bool = False,
) -> tuple[str, ...]:
    """Names the message mentions that no memory holds: neither a known name or alias (nor a
    name :func:`read_name` reads as one, nor at level 2 a short form of several), nor a word
    of any active memory (``frequency``: the text leg's document frequency of the message's
    words). None are judged without the text leg."""
    if frequency is None:
        return ()
    unknown = []
    for name in names_within_sentences(message):
        key = normalize_name(name)
        if not key or read_name(name, matcher, level, lookalikes) is not None:
            continue
        if level >= 2 and not other_forms(key).isdisjoint(matcher.keys):
            continue  # a short form of several known names: one of them
        words = [w for w in query_terms(key) if w in frequency]
        if words and all(frequency[w] == 0 for w in words):
            unknown.append(name)
    return tuple(unknown)
