"""What search_kb's results point at (pure): one place a person would read per result.

Fusion ranks chunks, but a reader goes to a page. Two or three chunks of one page (a statement
cut in two, a heading chunk and its table) often took three of the first five places, so the
first five named fewer than five places. Here a result whose pages overlap the pages of a
better result of the same document joins that result instead of taking a place of its own:
the place shows both chunks' text and cites the pages of both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memoryd.kb.model import ChunkKey
from memoryd.kb.search import RankedChunk


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
