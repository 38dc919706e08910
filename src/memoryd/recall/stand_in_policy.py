"""The store's word for an everyday word no memory holds (pure).

An owner asks in everyday words and writes notes in others: "What's my boss called?" of
"Performance review with my manager Sofia", "What do I drive?" of "Our car is a 2017 grey
Renault Clio", "Who fixes my sink?" of "The plumber, Sr. Armando, comes on Tuesday". MiniLM
places such a note below others that share a looser sense (the plumber above the manager, the
work laptop above the car), and the text leg, searching the message's own words, finds
nothing. When a word of the message is held by no active memory, the text leg searches in its
place the first of its stand-ins that some memory holds: :data:`PEOPLE` (people by role and
kinship) and, at the second level, :data:`THINGS` (things owned, everyday matters); a word any
memory holds is never replaced. Measured in bench/README.md, "The owner's own questions".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

# Everyday word → the words a note may say instead, closest first. Keys and stand-ins are as
# ``memoryd.words.query_terms`` gives them (lower case, a possessive's "'s" cut); the text
# index stems (porter), so "drive" also finds "driving". Written from common usage, not from
# any dev set's notes; only words for the same person or thing, or the trade that fixes it
# (not a related activity: "job" is not "work", a "holiday" is not a "trip").
# People by role and by kinship: the owner's "who is my …" questions.
PEOPLE: Mapping[str, tuple[str, ...]] = {
    "boss": ("manager", "supervisor"),
    "supervisor": ("manager", "boss"),
    "manager": ("boss", "supervisor"),
    "doctor": ("gp", "physician"),
    "gp": ("doctor",),
    "physician": ("doctor", "gp"),
    "teeth": ("dentist",),
    "tooth": ("dentist",),
    "sink": ("plumber",),
    "tap": ("plumber",),
    "pipe": ("plumber",),
    "toilet": ("plumber",),
    "drain": ("plumber",),
    "lawyer": ("solicitor", "attorney"),
    "solicitor": ("lawyer", "attorney"),
    "attorney": ("lawyer", "solicitor"),
    "taxes": ("accountant",),
    "garage": ("mechanic",),
    "mechanic": ("garage",),
    "vet": ("veterinarian", "vets"),
    "veterinarian": ("vet",),
    "haircut": ("hairdresser", "barber"),
    "hairdresser": ("barber",),
    "barber": ("hairdresser",),
    "therapist": ("counsellor", "counselor", "psychologist"),
    "landlady": ("landlord",),
    "landlord": ("landlady",),
    "wife": ("partner", "spouse"),
    "husband": ("partner", "spouse"),
    "spouse": ("wife", "husband", "partner"),
    "partner": ("wife", "husband", "girlfriend", "boyfriend"),
    "girlfriend": ("partner",),
    "boyfriend": ("partner",),
    "mum": ("mother", "mom"),
    "mom": ("mother", "mum"),
    "mother": ("mum", "mom"),
    "dad": ("father",),
    "father": ("dad",),
    "kids": ("children",),
    "children": ("kids",),
}
# Things owned and everyday matters.
THINGS: Mapping[str, tuple[str, ...]] = {
    "drive": ("car",),
    "car": ("drive",),
    "bicycle": ("bike",),
    "bike": ("bicycle",),
    "mobile": ("phone",),
    "cellphone": ("phone",),
    "flat": ("apartment",),
    "apartment": ("flat",),
    "salary": ("wage", "wages"),
    "wage": ("salary",),
    "internet": ("broadband", "wifi"),
    "broadband": ("internet", "wifi"),
    "wifi": ("broadband", "internet"),
    "holiday": ("vacation",),
    "vacation": ("holiday",),
    "medicine": ("medication",),
    "medication": ("medicine",),
}
STAND_INS: Mapping[str, tuple[str, ...]] = {**PEOPLE, **THINGS}


def table(level: int) -> Mapping[str, tuple[str, ...]]:
    """The stand-ins in use at ``level``: 0 none, 1 people by role and kinship, 2 also things."""
    return {} if level <= 0 else PEOPLE if level == 1 else STAND_INS


def stand_in_words(
    words: Sequence[str],
    frequency: Mapping[str, int],
    held: Mapping[str, int],
    stand_ins: Mapping[str, tuple[str, ...]] = STAND_INS,
) -> tuple[str, ...] | None:
    """``words`` with each one no memory holds (``frequency`` 0) replaced by its first
    stand-in some memory holds (``held``: how many active memories hold each stand-in),
    a stand-in the message already has left out; None when no word is replaced."""
    out: list[str] = []
    replaced = False
    for word in words:
        stand_in = None
        if frequency.get(word, 0) == 0:
            stand_in = next(
                (s for s in stand_ins.get(word, ()) if held.get(s, 0) > 0 and s not in words),
                None,
            )
        if stand_in is not None and stand_in not in out:
            out.append(stand_in)
            replaced = True
        elif stand_in is None:
            out.append(word)
    return tuple(out) if replaced else None


def stand_ins_to_look_up(
    words: Sequence[str],
    frequency: Mapping[str, int],
    stand_ins: Mapping[str, tuple[str, ...]] = STAND_INS,
) -> list[str]:
    """The stand-ins of the words no memory holds, to count in the store (first seen first)."""
    wanted: dict[str, None] = {}
    for word in words:
        if frequency.get(word, 0) == 0:
            wanted.update(dict.fromkeys(s for s in stand_ins.get(word, ()) if s not in words))
    return list(wanted)


def stood_in_for(
    searched: Sequence[str],
    asked: Sequence[str],
    stand_ins: Mapping[str, tuple[str, ...]] = STAND_INS,
) -> dict[str, str]:
    """For each word of ``searched`` that ``asked`` (the message's words) does not hold, the
    asked word it stands in for ("manager": "boss"), as ``recall --explain`` shows it."""
    return {
        word: asked_word
        for word in searched
        if word not in asked
        for asked_word in asked
        if asked_word not in searched and word in stand_ins.get(asked_word, ())
    }
