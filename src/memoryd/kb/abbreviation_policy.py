"""A question's abbreviations spelled out from the documents' own row labels (pure).

An analyst writes "EPS", "R&D", "D&A" or "capex"; a filing writes "earnings per share",
"research and development", "depreciation and amortization", "capital expenditures". No word
list is typed in here: a query token is matched against the phrases of the labels the documents
themselves use, as the initials of consecutive words (written in capitals or with "&": "EPS",
"R&D") or as a contraction of their beginnings, two letters or more of each word ("capex" from
"cap|ital ex|penditures", "opex" from "op|erating ex|penses"). A token the labels already use
as a word is not an abbreviation of them and is left alone.

The phrases found are added to the question's words; nothing is taken away, so a question with
no abbreviation is searched exactly as before.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# Words an abbreviation may skip ("R&D" for "research and development") or use as an initial
# ("EPS" for "earnings per share"), never spell out as a contraction.
CONNECTORS = frozenset({"and", "of", "per", "the", "for", "in", "on", "to", "from", "by"})
# A phrase spelled out has at least two and at most this many words that are not connectors.
MAX_PHRASE_WORDS = 4
# Phrases kept per abbreviation (the ones the labels use most).
MAX_PHRASES = 2
# A contraction spells each word with at least this many of its first letters.
MIN_PIECE = 2

_TOKEN = re.compile(r"[A-Za-z]+(?:&[A-Za-z]+)*")
_WORD = re.compile(r"[A-Za-z]+")


@dataclass(frozen=True)
class Expansion:
    """An abbreviation of the question and the label phrases it stands for, most used first."""

    token: str
    phrases: tuple[str, ...]


def candidates(query: str) -> list[tuple[str, bool]]:
    """The question's tokens that may abbreviate a phrase, each with whether it reads as
    initials (two or more capitals, or an "&": "EPS", "R&D") rather than a contraction."""
    found: dict[str, bool] = {}
    for match in _TOKEN.finditer(query):
        token = match.group()
        letters = token.replace("&", "")
        initials = "&" in token or sum(c.isupper() for c in token) >= 2
        if (initials and (len(letters) >= 3 or "&" in token)) or len(letters) >= 2 * MIN_PIECE:
            found.setdefault(token, initials)
    return list(found.items())


def expand(query: str, labels: Iterable[str]) -> list[Expansion]:
    """The abbreviations of ``query`` that spell out a whole row label or label group of
    ``labels`` (the row label texts of the documents searched), with those phrases."""
    return expand_names(query, label_words(labels))


def label_words(labels: Iterable[str]) -> list[list[str]]:
    """The names of ``labels`` (:func:`label_names`), each as its case-folded words: what
    :func:`expand_names` reads, so a caller can keep it per document."""
    return [_words(name) for label in labels for name in label_names(label)]


def expand_names(query: str, names: Sequence[list[str]]) -> list[Expansion]:
    """:func:`expand` over names already split into words."""
    tokens = candidates(query)
    if not tokens:
        return []
    known = {w for words in names for w in words}
    found: list[Expansion] = []
    for token, initials in tokens:
        key = token.replace("&", "").casefold()
        if key in known:
            continue
        counts = Counter(
            " ".join(words)
            for words in names
            if words
            and words[0][0] == key[0]
            and _spells(key, words, initials)
            and 2 <= sum(w not in CONNECTORS for w in words) <= MAX_PHRASE_WORDS
        )
        if counts:
            best = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:MAX_PHRASES]
            found.append(Expansion(token, tuple(phrase for phrase, _ in best)))
    return found


def label_names(label: str) -> list[str]:
    """The names in a row's label text ("label (group) — table title"): the label and the
    group, each piece outside and inside its parentheses; not the table's title, a sentence
    whose initials would spell anything."""
    head = label.split(" — ", 1)[0]
    return [piece.strip(" :") for piece in re.split(r"[()]", head) if piece.strip(" :")]


def _words(name: str) -> list[str]:
    return [w.casefold() for w in _WORD.findall(name)]


def _spells(key: str, words: list[str], initials: bool) -> bool:
    """Whether ``key`` spells all of ``words``: each word that is not a connector gives its
    first letter (initials) or its first two or more letters (a contraction); a connector
    gives its first letter or nothing."""
    # (letters of key spelled, words used); depth-first, bounded by the key's length.
    stack = [(0, 0)]
    while stack:
        done, index = stack.pop()
        if index == len(words):
            if done == len(key):
                return True
            continue
        if done == len(key):
            continue
        word, rest = words[index], key[done:]
        if word in CONNECTORS:
            stack.append((done, index + 1))
            if word[0] == rest[0]:
                stack.append((done + 1, index + 1))
        elif initials:
            if word[0] == rest[0]:
                stack.append((done + 1, index + 1))
        else:
            for size in range(MIN_PIECE, min(len(word), len(rest)) + 1):
                if word[:size] != rest[:size]:
                    break
                stack.append((done + size, index + 1))
    return False


def expanded_terms(expansions: Iterable[Expansion]) -> list[str]:
    """The words the phrases add to a question (connectors left out), first seen first."""
    seen: dict[str, None] = {}
    for expansion in expansions:
        for phrase in expansion.phrases:
            for word in phrase.split():
                if word not in CONNECTORS:
                    seen.setdefault(word, None)
    return list(seen)
