"""Words across the gap, learned from the documents' own numbers (pure).

An analyst asks for Apple's "capex"; Apple's cash-flow statement says "Payments for acquisition
of property, plant and equipment" and no page of Apple's filing says "capital expenditures".
Other documents of the library tie the two wordings together with a number: Coca-Cola's
segment table gives "Capital expenditures 2,262" and its cash-flow statement "Purchases of
property, plant and equipment (2,262)"; Costco's prose says "we spent $3,891 on capital
expenditures" and its statement "Additions to property and equipment (3,891)". A number of four
digits or more that only a few rows of one document carry is the same quantity under two names.

So each document yields *ties*: a wording (another row's label, or the words around the number in
a prose sentence) and the row label it names. A question's word that no label of the named
documents uses (or an abbreviation the library's labels spell out, "capex" → "capital
expenditures") finds the ties whose wording holds it, their labels, and the named documents'
labels that share most of those labels' words ("property", "plant", "equipment"). No word list is
typed in: every wording comes from the library.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from functools import cached_property, lru_cache
from itertools import pairwise

from memoryd.kb.abbreviation_policy import CONNECTORS, Expansion, expand_names, label_names
from memoryd.kb.rows import table_rows
from memoryd.kb.search import stem
from memoryd.words import STOPWORDS

# A number is distinctive with at least this many digits ("2,262", "394,328"; not "12" or "3.5").
MIN_DIGITS = 4
# A number carried by more rows than this (of distinct labels) ties nothing: a total repeated
# under many headings, a round figure.
MAX_LABELS_PER_NUMBER = 3
# Words each side of a number in a prose sentence that are its wording.
WINDOW = 5
# A named document's label is reached when it holds at least this share of a tied label's words
# and at least two of them (a one-word label, "Current", "Total", ties too loosely).
MIN_SHARE = 0.6
# A label tied as one of the two rows another row is the difference of is reached only by a
# named label holding this share of its words: "Total current assets", not "Other current
# assets" (the operands are named exactly; a near label is another quantity).
DIFFERENCE_SHARE = 1.0
# Labels of the named documents kept per question word.
MAX_REACHED = 3
# A word whose ties name more distinct labels than this is too common to bridge ("fiscal",
# "year" stand beside every number of the prose).
MAX_TARGETS = 8

# Two values as one key (each below this): a difference of two rows in both columns.
_SPAN = 10**9
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
_DIGIT = re.compile(r"\d")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
_YEAR = re.compile(r"(?:19|20)\d\d")
_LABEL_YEAR = re.compile(r"\b(?:19|20)\d\d\b")


@dataclass(frozen=True)
class Tie:
    """A wording (its words, in order) and the row label (its words, and those of the group
    and table it sits in) a shared number gives it."""

    wording: tuple[str, ...]
    label: tuple[str, ...]
    context: tuple[str, ...] = ()
    # Tied by a difference of two rows (:func:`difference_ties`), not by one shared number.
    by_difference: bool = False

    @cached_property
    def stems(self) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
        """The content stems of its wording, label and context (:func:`content`), computed once:
        a search compares its words with every tie of the library."""
        return content(self.wording), content(self.label), content(self.context)


def number_key(token: str) -> str | None:
    """A distinctive number's digits ("2,262" → "2262"), None for a short one or a year."""
    digits = token.split(".")[0].replace(",", "")
    if len(digits) < MIN_DIGITS or not digits.isdigit():
        return None
    if "," not in token and _YEAR.fullmatch(digits):
        return None
    return digits


def words_of(text: str) -> tuple[str, ...]:
    """The case-folded words of ``text`` (letters only)."""
    return tuple(w.casefold().strip("'’-") for w in _WORD.findall(text))


def content(words: Iterable[str]) -> frozenset[str]:
    """The stems of ``words`` that carry meaning (no stop word, connector or two-letter word)."""
    return _content(tuple(words))


# Why kept: a search compares its words with every tie of the library (about 1,800 for eleven
# filings), and stemming their words again each time doubled search_kb's CPU time.
@lru_cache(maxsize=65536)
def _content(words: tuple[str, ...]) -> frozenset[str]:
    return frozenset(
        stem(w) for w in words if len(w) > 2 and w not in STOPWORDS and w not in CONNECTORS
    )


def document_ties(texts: Sequence[str], differences: bool = True) -> list[Tie]:
    """The ties of one document whose chunks' texts are ``texts``: rows of distinct labels that
    carry one distinctive number, prose sentences that repeat a row's number and, with
    ``differences``, rows whose values are the differences of two nearby rows' values
    (:func:`difference_ties`)."""
    labels_of: dict[str, set[tuple[str, ...]]] = {}
    context: dict[tuple[str, ...], tuple[str, ...]] = {}
    valued: list[list[tuple[tuple[str, ...], tuple[int, int]]]] = []
    for text in texts:
        valued.append([])
        for row in table_rows("", text):
            names = label_names(row.label)
            label = words_of(names[0]) if names else ()
            # A label that names a year ("Fiscal 2024", "Notes due April 2028") is a period or
            # an instrument, not a quantity's name: its words would tie to any figure.
            if not content(label) or _LABEL_YEAR.search(names[0]):
                continue
            context.setdefault(label, words_of(" ".join(names[1:])))
            keys: list[int] = []
            for part in row.text.split(" | ")[1:]:
                value = part.rsplit(": ", 1)[-1]
                for token in _NUMBER.findall(value):
                    key = number_key(token)
                    if key is not None:
                        labels_of.setdefault(key, set()).add(label)
                        keys.append(int(key))
            if len(keys) >= 2 and max(keys[:2]) < _SPAN:
                valued[-1].append((label, (keys[0], keys[1])))
    ties: set[Tie] = set()
    for labels in labels_of.values():
        if not 2 <= len(labels) <= MAX_LABELS_PER_NUMBER:
            continue
        for one in labels:
            for other in labels:
                if content(one) != content(other):
                    ties.add(Tie(one, other, context.get(other, ())))
    # Why only sentences with a digit, and words starting with one: only a number a row
    # carries ties (a row's numbers are ``\d`` digits), and most lines, sentences and words
    # hold none; looking for one first made mining a library's ties, the first search's cost,
    # faster (bench/README.md).
    for text in texts if labels_of else ():
        for sentence in _number_sentences(text):
            tokens = sentence.split()
            for index, token in enumerate(tokens):
                bare = token.strip("$()%,.;:")
                if not bare or not bare[0].isdigit():
                    continue
                key = number_key(bare)
                labels = labels_of.get(key or "", set())
                if not key or not 1 <= len(labels) <= MAX_LABELS_PER_NUMBER:
                    continue
                around = " ".join(tokens[max(0, index - WINDOW) : index + WINDOW + 1])
                wording = tuple(w for w in words_of(around) if not _NUMBER.fullmatch(w))
                for label in labels:
                    if wording and not content(label) <= content(wording):
                        ties.add(Tie(wording, label, context.get(label, ())))
    if differences:
        ties.update(difference_ties(valued, context))
    return sorted(ties, key=lambda t: (t.wording, t.label))


def difference_ties(
    valued: Sequence[Sequence[tuple[tuple[str, ...], tuple[int, int]]]],
    context: dict[tuple[str, ...], tuple[str, ...]],
) -> set[Tie]:
    """Ties of a row to the two rows it is the difference of: ``valued`` holds, chunk by
    chunk, each row's label and its first two distinctive values; a row whose two values are
    both the differences of two rows of one chunk and the next (the same two columns: a
    balance sheet's assets and liabilities may be cut in two) names them both. Oracle's
    "Working capital $12,122 … $31,403" is its "Total current assets" less its "Total current
    liabilities" in both years; a question's "working capital" then reaches another filing's
    current assets and liabilities, which no number of that filing ties to the words. Both
    columns must agree: one difference of four digits or more matches by chance."""
    import numpy as np  # here: a command that never searches the library starts without numpy

    wanted: dict[int, set[tuple[str, ...]]] = {}
    for rows in valued:
        for label, (first, second) in rows:
            wanted.setdefault(first * _SPAN + second, set()).add(label)
    targets = np.fromiter(wanted, dtype=np.int64, count=len(wanted))
    ties: set[Tie] = set()
    for index, rows in enumerate(valued):
        near = [*rows, *(valued[index + 1] if index + 1 < len(valued) else ())]
        if len(rows) < 1 or len(near) < 2:
            continue
        values = np.array([pair for _, pair in near], dtype=np.int64)
        apart = np.abs(values[:, None, :] - values[None, :, :])
        keys = apart[..., 0] * _SPAN + apart[..., 1]
        for one, other in np.argwhere(np.isin(keys, targets)):
            if one >= other:  # the differences are symmetric: each pair once
                continue
            for wording in wanted[int(keys[one, other])]:
                for operand in (near[one][0], near[other][0]):
                    if content(operand) != content(wording):
                        ties.add(Tie(wording, operand, context.get(operand, ()), True))
    return ties


@lru_cache(maxsize=65536)
def label_head(label: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A row's label text ("label (group) — table title") as the label's words and its group's
    (kept: a search reads the named documents' few hundred labels every time)."""
    names = label_names(label)
    return (words_of(names[0]), words_of(" ".join(names[1:]))) if names else ((), ())


def postings(ties: Sequence[Tie]) -> dict[str, list[int]]:
    """Which ties (by position) hold each stem in their wording."""
    found: dict[str, list[int]] = {}
    for index, tie in enumerate(ties):
        for word in tie.stems[0]:
            found.setdefault(word, []).append(index)
    return found


def _number_sentences(text: str) -> list[str]:
    """The prose sentences of a chunk's text (no table line, heading or page mark) that hold a
    digit."""
    prose = [
        line
        for line in text.split("\n")
        if _DIGIT.search(line) and not line.lstrip().startswith(("|", "#", "<!--"))
    ]
    return [s for line in prose for s in re.split(r"(?<=[.;])\s+", line) if s and _DIGIT.search(s)]


def bridge(
    question_words: Sequence[str],
    question: str,
    named_labels: Sequence[tuple[tuple[str, ...], tuple[str, ...]]],
    library_labels: Sequence[list[str]],
    ties: Sequence[Tie],
    own: Sequence[Tie] = (),
    index: dict[str, list[int]] | None = None,
) -> list[Expansion]:
    """The named documents' labels the question's words reach through the library's ties.

    ``question_words`` are the question's topic words (no name, year or stop word);
    ``named_labels`` the row labels of the named documents (each with its group's words),
    ``library_labels`` the ties' wordings (what abbreviations are spelled out from), ``ties``
    the library's ties (``index``: their :func:`postings`, else made here) and ``own`` the
    named documents' own. A word is bridged when it is a
    whole wording (a lone word inside a prose sentence ties too loosely: "add", "pending"
    reached the balance sheet), a pair of the question's adjacent words or a spelled-out
    abbreviation is when a wording holds it. A word or pair any named label already uses is not
    bridged (the keyword legs find it); a spelled-out abbreviation that a named label spells
    is bridged through the named documents' own ties only: Coca-Cola's "Capital expenditures"
    by segment carries the number of its cash-flow row "Purchases of property, plant and
    equipment", while Oracle's cash-flow row is "Capital expenditures" itself."""
    index = postings(ties) if index is None else index
    used = {s for label, _ in named_labels for s in content(label)}
    # (what it is called, its stems, whether a wording must be exactly it, the ties it may use)
    concepts: list[tuple[str, frozenset[str], bool, Sequence[Tie]]] = []
    for first, second in pairwise(question_words):
        stems = content([first, second])
        if len(stems) == 2 and not stems <= used:
            concepts.append((f"{first} {second}", stems, False, ties))
    for word in question_words:
        stems = content([word])
        if stems and not stems & used:
            concepts.append((word, stems, True, ties))
    for spelled in expand_names(question, library_labels):
        for phrase in spelled.phrases:
            stems = content(phrase.split())
            if stems:
                concepts.append((spelled.token, stems, False, ties if stems - used else own))
    found: list[Expansion] = []
    for token, stems, exact, usable in concepts:
        support: Counter[frozenset[str]] = Counter()
        groups: dict[frozenset[str], set[str]] = {}
        if usable is ties:
            lists = [index.get(s, []) for s in stems]
            usable = [ties[i] for i in min(lists, key=len)]
        by_number: set[frozenset[str]] = set()
        for tie in usable:
            wording, target, context = tie.stems
            if (wording == stems if exact else stems <= wording) and not stems <= target:
                support[target] += 1
                groups.setdefault(target, set()).update(context)
                if not tie.by_difference:
                    by_number.add(target)
        if len(support) > MAX_TARGETS:
            continue
        reached = _reach(support, groups, named_labels, stems, set(support) - by_number)
        if reached:
            found.append(Expansion(token, tuple(reached)))
    return found


def _reach(
    support: Counter[frozenset[str]],
    groups: dict[frozenset[str], set[str]],
    named_labels: Sequence[tuple[tuple[str, ...], tuple[str, ...]]],
    stems: frozenset[str],
    operands: AbstractSet[frozenset[str]] = frozenset(),
) -> list[str]:
    """The named labels that hold most of a tied label's words, best first: the most ties,
    then the largest share of the tied label's words, then a group of the same words
    ("Investing activities"), then the fewest words of their own. A label tied only as one
    of two rows a row is the difference of (``operands``) is reached only by a label that
    holds at least ``DIFFERENCE_SHARE`` of its words."""
    scored: dict[str, tuple[int, float]] = {}
    wanted = frozenset().union(*support)
    for label, group in named_labels:
        held = content(label)
        if held.isdisjoint(wanted) or stems <= held:
            continue
        for target, count in support.items():
            target_group = groups[target]
            shared = len(held & target)
            least = DIFFERENCE_SHARE if target in operands else MIN_SHARE
            if shared < 2 or shared / len(target) < least:
                continue
            same_group = len(content(group) & target_group) / max(1, len(target_group))
            own = len(held - target) / len(held)
            score = (count, shared / len(target) + 0.2 * same_group - 0.1 * own)
            name = " ".join(label)
            scored[name] = max(scored.get(name, (0, 0.0)), score)
    ordered = sorted(scored.items(), key=lambda item: (-item[1][0], -item[1][1], item[0]))
    return [name for name, _ in ordered[:MAX_REACHED]]
