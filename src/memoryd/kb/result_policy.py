"""What search_kb's results point at (pure): one place a person would read per result.

Fusion ranks chunks, but a reader goes to a page. Two or three chunks of one page (a statement
cut in two, a heading chunk and its table) often took three of the first five places, so the
first five named fewer than five places. Here a result whose pages overlap the pages of a
better result of the same document joins that result instead of taking a place of its own:
the place shows both chunks' text and cites the pages of both.

Before that, a result holding a table row that names the question's line item under the year
it names gains on one that shares the words in prose only (:func:`row_evidence_first`): the
statement's row, not the MD&A's sentence, is the evidence. And a result whose matched row
prints the same figure under that year as a better result's matched row, in a table of more
rows under the year, goes ahead of it (:func:`sources_first`): a figure printed twice is read
where it is stated whole (the statement), not in its copy (a note, the MD&A, a segment table).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from memoryd.kb.model import Chunk, ChunkKey
from memoryd.kb.rows import YEAR, headed_values
from memoryd.kb.search import KbSearchPolicy, RankedChunk, stem
from memoryd.words import word_set


def merge_pages(
    ranked: Sequence[RankedChunk],
    pages: Mapping[ChunkKey, tuple[int, int] | None],
    limit: int,
    most: int | None = None,
) -> list[tuple[RankedChunk, tuple[ChunkKey, ...]]]:
    """The fused results with those that cite a page of the same document merged, best first,
    at most ``limit`` places: each result leads a place unless its pages overlap the pages of
    a place already kept (the pages of its leading chunk), which it then joins. A chunk without
    pages is a place of its own. A place shows at most ``most`` chunks (None: all): the
    later chunks of its pages are left out, not shown as places of their own."""
    if limit <= 0:
        return []
    places: list[tuple[RankedChunk, list[ChunkKey]]] = []
    by_page: dict[tuple[str, int], int] = {}
    for result in ranked:
        span = pages.get(result.key)
        cited = range(span[0], span[1] + 1) if span else range(0)
        joined = next(
            (
                by_page[(result.key.document_id, p)]
                for p in cited
                if (result.key.document_id, p) in by_page
            ),
            None,
        )
        if joined is not None:
            if most is None or len(places[joined][1]) + 1 < most:
                places[joined][1].append(result.key)
            continue
        if len(places) == limit:
            continue
        for page in cited:
            by_page[(result.key.document_id, page)] = len(places)
        places.append((result, []))
    return [(lead, tuple(more)) for lead, more in places]


def row_evidence_first(
    ranked: Sequence[RankedChunk],
    chunks: Mapping[ChunkKey, Chunk],
    question: str,
    terms: Sequence[str],
    policy: KbSearchPolicy,
    named: frozenset[str] = frozenset(),
) -> list[RankedChunk]:
    """``ranked`` with points for the chunks holding a table row that names what the question
    asks in the year it names: reciprocal-rank points by :func:`row_evidence`, best first (with
    ``row_evidence_order`` "cover, rows", of two equal covers the chunk with more rows under
    the year: a whole statement before an excerpt of it), at ``row_evidence_weight``;
    re-sorted by score; then :func:`sources_first`. Unchanged when the question names no
    year. With ``row_evidence_named`` and documents ``named`` (those the question names), only
    their chunks' rows count: "AMD gross margin in 2021" is not answered by Apple's or Costco's
    gross margin table under 2021, which the points had put ahead of AMD's statement."""
    if named and policy.row_evidence_named:
        chunks = {key: chunk for key, chunk in chunks.items() if key.document_id in named}
    years = frozenset(YEAR.findall(question))
    if policy.row_evidence_weight <= 0 or not years:
        return sources_first(list(ranked), chunks, years, terms, policy)
    words = frozenset(stem(t) for t in terms if not t.isdigit())
    held = [
        (*row_evidence(chunks[r.key], words, years, policy.row_evidence_share), order, r)
        for order, r in enumerate(ranked)
        if r.key in chunks
    ]
    order = policy.row_evidence_order  # "cover", "cover, rows" or "rows"
    strong = sorted(
        (x for x in held if x[0] >= policy.row_evidence_min),
        key=lambda x: (
            0 if order == "rows" else -x[0],
            0 if order == "cover" else -x[1],
            x[2],
        ),
    )
    rank = {x[3].key: i for i, x in enumerate(strong, start=1)}
    constant = policy.row_evidence_constant
    scored = [
        replace(
            r,
            score=r.score + r.weight * policy.row_evidence_weight / (constant + k),
            row_evidence_rank=k,
        )
        if (k := rank.get(r.key))
        else r
        for r in ranked
    ]
    return sources_first(sorted(scored, key=lambda r: -r.score), chunks, years, terms, policy)


def row_evidence(
    chunk: Chunk, words: frozenset[str], years: frozenset[str], share: str
) -> tuple[float, int]:
    """The best cover between a question's stemmed ``words`` and the label of a table row of
    ``chunk`` with a value under a column header naming one of ``years`` (0: no such row):
    the share of the label's words the question holds ("label"), of the question's words the
    label holds ("question"; "question, heading": the label or the chunk's heading), or the
    product of the first two ("both"); and how many rows of ``chunk`` have a value under such
    a header."""
    best, rows, _ = year_rows(chunk, words, years, share)
    return best, rows


def year_rows(
    chunk: Chunk,
    words: frozenset[str],
    years: frozenset[str],
    share: str,
    stemmed: Callable[[str], str] = stem,
) -> tuple[float, int, frozenset[str]]:
    """:func:`row_evidence`'s best cover and rows under ``years`` (labels stemmed by
    ``stemmed``), with the figures the rows of that best cover show under such a header.
    With ``share`` "question, heading" the question's words that the chunk's heading holds
    count as held by each of its rows (:func:`heading_words`)."""
    best = 0.0
    rows = 0
    shown: dict[float, set[str]] = {}
    heading = chunk.breadcrumb.rsplit(" › ", 1)[-1]
    above = heading_words(heading, words, stemmed) if share == "question, heading" else set()
    for label, heads, values in headed_values(chunk.text, heading):
        under = [v for h, v in zip(heads, values, strict=True) if years & set(YEAR.findall(h))]
        if not under:
            continue
        rows += 1
        named = {stemmed(w) for w in word_set(label) if not w.isdigit()}
        held = named & words
        if not held:
            continue
        by_label, by_question = len(held) / len(named), len(held | above) / max(len(words), 1)
        cover = {"label": by_label, "both": by_label * by_question}.get(share, by_question)
        best = max(best, cover)
        shown.setdefault(cover, set()).update(f.group() for v in under if (f := FIGURE.search(v)))
    return best, rows, frozenset(shown.get(best, ()))


def heading_words(heading: str, words: frozenset[str], stemmed: Callable[[str], str]) -> set[str]:
    """The question's ``words`` that a chunk's ``heading`` holds (stemmed by ``stemmed``). A
    question names a figure by its row and by the table it is in ("in its 2016 cash flow
    statement, how much ... for net losses on significant asset sales"); the table's heading
    ("Consolidated Statements of Cash Flows") says the second, so those words are not asked of
    the row's label. Why the nearest heading: with the line over the table as well, the even
    analyst half (where it was chosen) lost the first answer the heading alone gains; the
    chunk's every heading gave what the nearest gives (bench/README.md, "The table's
    heading")."""
    return {stemmed(w) for w in word_set(heading) if not w.isdigit()} & words


# A figure in a table cell: "6.11", "(10,708)" → "10,708", "2022"; not "1" or "12".
FIGURE = re.compile(r"\d[\d,]*\.\d+|\d{1,3}(?:,\d{3})+|\d{3,}")


def loose_stem(word: str) -> str:
    """:func:`stem` without a final "e": "revenue" and "revenues" ("revenu") as one."""
    stemmed = stem(word)
    return stemmed[:-1] if stemmed.endswith("e") and len(stemmed) > 3 else stemmed


def sources_first(
    ranked: Sequence[RankedChunk],
    chunks: Mapping[ChunkKey, Chunk],
    years: frozenset[str],
    terms: Sequence[str],
    policy: KbSearchPolicy,
) -> list[RankedChunk]:
    """``ranked`` with the fullest table showing a figure moved ahead of its copies: a
    result's figures are those its best rows (covering at least ``row_evidence_min`` of the
    question's words, singular and plural alike) show under one of ``years`` (those the
    question names); a result
    that no other result of its document showing one of them outdoes in rows under that year
    goes ahead of the first better result showing one in fewer rows, and takes its score. The
    fullest table is where the figure is stated (the statement), the others copy it (a note,
    the MD&A). Unchanged without ``row_sources_first`` or ``years``."""
    if not policy.row_sources_first or not years:
        return list(ranked)
    words = frozenset(loose_stem(t) for t in terms if not t.isdigit())
    held: dict[ChunkKey, tuple[int, frozenset[str]]] = {}
    for result in ranked:
        if result.key in chunks:
            cover, rows, figures = year_rows(
                chunks[result.key], words, years, policy.row_evidence_share, loose_stem
            )
            held[result.key] = (rows, figures if cover >= policy.row_evidence_min else frozenset())
    placed: list[RankedChunk] = []
    for result in ranked:
        rows, figures = held.get(result.key, (0, frozenset()))
        holders = {
            key: held_rows
            for key, (held_rows, held_figures) in held.items()
            if key.document_id == result.key.document_id and figures & held_figures
        }
        copy = next(
            (i for i, better in enumerate(placed) if holders.get(better.key, rows) < rows),
            None,
        )
        if copy is None or max(holders.values()) > rows:
            placed.append(result)
        else:
            placed.insert(copy, replace(result, score=placed[copy].score))
    return placed
