"""Questions with their people's names written as people write them (``bench_beam.py
--respell``): misspelt ("Carolyn" for Caroline), by a nickname or full form ("Nathan" for Nate,
"Deb" for Deborah), or as a look-alike DIFFERENT name ("Joan" for Jon; controls: recall must
not take them for the stored person). The table, ``bench/data/respelled_names.json``, was
written from common usage before measuring, without looking at what memoryd matches.

Each question that names a tabled person is asked once per kind, the name replaced by one of
its variants chosen by the question's text (the same on every run); "none" asks it as written,
so the rows compare the same questions. Questions naming no tabled person are left out.
"""

from __future__ import annotations

import json
import re
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any

from devsets import Conversation, Question

TABLE = Path(__file__).resolve().parent / "data" / "respelled_names.json"
KINDS = ("none", "misspell", "nickname", "lookalike")
# Whether a kind's variants are the same person (the matcher should take them for the name).
SAME_PERSON = {"misspell": True, "nickname": True, "lookalike": False}
SEPARATOR = "|"


def load_table(path: Path = TABLE) -> dict[str, dict[str, list[str]]]:
    """Name → kind → its variants."""
    names: dict[str, dict[str, list[str]]] = json.loads(path.read_text())["names"]
    for name, kinds in names.items():
        unknown = set(kinds) - set(SAME_PERSON)
        if unknown:
            raise ValueError(f"{path}: {name}: unknown kinds {sorted(unknown)}")
    return names


def _pattern(names: dict[str, Any]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"\b({alternatives})\b")


def respell(
    text: str, table: dict[str, dict[str, list[str]]], kind: str
) -> tuple[str, list[tuple[str, str]]]:
    """``text`` with each tabled name replaced by one of its ``kind`` variants (chosen by the
    text and the name), and the (name, variant) pairs replaced."""
    pairs: list[tuple[str, str]] = []

    def swap(match: re.Match[str]) -> str:
        name = match.group(1)
        variants = table[name].get(kind, []) if kind != "none" else [name]
        if not variants:
            return name
        chosen = variants[zlib.crc32(f"{text}|{name}".encode()) % len(variants)]
        if (name, chosen) not in pairs:
            pairs.append((name, chosen))
        return chosen

    return _pattern(table).sub(swap, text), pairs


def respelled(
    conversations: list[Conversation], table: dict[str, dict[str, list[str]]], kinds: list[str]
) -> tuple[list[Conversation], dict[str, list[tuple[str, str, str]]]]:
    """Each conversation with only its questions that name a tabled person, each asked once per
    kind (its category "kind|category"); and per conversation the (kind, name, variant) asked."""
    for kind in kinds:
        if kind not in KINDS:
            raise ValueError(f"--respell: unknown kind {kind!r} (one of {', '.join(KINDS)})")
    pattern = _pattern(table)
    out = []
    asked: dict[str, list[tuple[str, str, str]]] = {}
    for conversation in conversations:
        questions: list[Question] = []
        seen: list[tuple[str, str, str]] = []
        for question in conversation.questions:
            if not pattern.search(question.text):
                continue
            for kind in kinds:
                text, pairs = respell(question.text, table, kind)
                if kind != "none" and text == question.text:
                    continue  # no variant of this kind for its names
                category = f"{kind}{SEPARATOR}{question.category}"
                questions.append(replace(question, text=text, category=category))
                seen += [(kind, name, variant) for name, variant in pairs if kind != "none"]
        out.append(replace(conversation, questions=tuple(questions)))
        asked[conversation.name] = list(dict.fromkeys(seen))
    return out, asked


def by_kind(outcomes: list[Any]) -> dict[str, list[Any]]:
    """Outcomes split by the kind their category carries, the category restored."""
    split: dict[str, list[Any]] = {}
    for outcome in outcomes:
        kind, _, category = outcome.category.partition(SEPARATOR)
        split.setdefault(kind, []).append(replace(outcome, category=category))
    return split


def taken_for(matcher: Any, asked: list[tuple[str, str, str]]) -> dict[str, list[int]]:
    """Per kind, [variants asked whose name the store knows, those the start's matcher takes
    for that name (a close spelling), those names_policy reads as it (a close spelling with
    the same ending, or a diminutive or full form)]: the same person's (misspell, nickname)
    should be taken; a look-alike's should not."""
    from memoryd.recall.names_policy import read_name

    counts: dict[str, list[int]] = {}
    for kind, name, variant in asked:
        wanted = name.casefold()
        if wanted not in matcher.keys:
            continue
        new = read_name(variant, matcher, 2, True)
        row = counts.setdefault(kind, [0, 0, 0])
        row[0] += 1
        row[1] += int(matcher.spelt_like(variant) == matcher.keys[wanted])
        row[2] += int(new is not None and matcher.keys[new] == matcher.keys[wanted])
    return counts


def name_matrix(table: dict[str, dict[str, list[str]]], names: list[str]) -> list[list[Any]]:
    """Per kind, of the variants of ``names``: how many a store that knows only the name
    itself takes for it under the start's rule and under names_policy's (level 2, look-alikes
    told apart), and the variants each gets wrong."""
    from memoryd.memory.entity_policy import EntityMatcher
    from memoryd.recall.names_policy import read_name

    rows = []
    for kind, same in SAME_PERSON.items():
        start: list[str] = []
        new: list[str] = []
        count = 0
        for name in names:
            matcher = EntityMatcher.build([(name, 1)])
            for variant in table[name].get(kind, []):
                count += 1
                if (matcher.spelt_like(variant) == 1) != same:
                    start.append(f"{variant}/{name}")
                if (read_name(variant, matcher, 2, True) is not None) != same:
                    new.append(f"{variant}/{name}")
        rows.append([kind, same, count, count - len(start), count - len(new), " ".join(new)])
    return rows


def main() -> None:
    """The name-level table, LoCoMo's names and BEAM's apart (python bench/respell.py)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from devsets import beam, locomo
    from report import print_table

    table = load_table()
    pattern = _pattern(table)
    for label, sets in (("LoCoMo", locomo()), ("BEAM", beam())):
        named = {m for c in sets for q in c.questions for m in pattern.findall(q.text)}
        print(f"\n{label}'s names ({len(named)}):\n")
        headers = ("kind", "same person", "variants", "right, start", "right, new", "wrong, new")
        print_table(headers, name_matrix(table, sorted(named)))


if __name__ == "__main__":
    main()
