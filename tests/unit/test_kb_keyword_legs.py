"""search_kb's keyword legs read as deep as the search uses them: a shallow read is the start
of the deep one, the row leg read deep when its best rows share chunks, and read again only
for new terms or when the named documents' candidates come from the deep read."""

from __future__ import annotations

from collections.abc import Sequence

from memoryd.kb.keyword_legs import final_legs, needs_deep, read_legs
from memoryd.kb.model import ChunkKey
from memoryd.kb.search import KbSearchPolicy

POLICY = KbSearchPolicy(pool=3, deep_pool=6, row_pool=2)


class Ranked:
    """Each leg's chunks best first (rows: one chunk a row, repeated when rows share it); each
    read is the first ``k`` distinct chunks, as the store gives them, and is recorded."""

    def __init__(self, chunks: Sequence[ChunkKey], rows: Sequence[ChunkKey]) -> None:
        self._chunks = list(chunks)
        self._rows = list(rows)
        self.reads: list[tuple[str, tuple[str, ...], int]] = []

    def keyword_chunks(self, terms: Sequence[str], k: int) -> list[ChunkKey]:
        self.reads.append(("chunks", tuple(terms), k))
        return self._chunks[:k]

    def keyword_rows(self, terms: Sequence[str], k: int) -> list[ChunkKey]:
        self.reads.append(("rows", tuple(terms), k))
        # Four rows a chunk are read (ROWS_PER_CHUNK), then each chunk kept once.
        return list(dict.fromkeys(self._rows[: 4 * k]))[:k]


def keys(*positions: int) -> list[ChunkKey]:
    return [ChunkKey("d", p) for p in positions]


def test_a_shallow_read_is_the_start_of_the_deep_one() -> None:
    store = Ranked(keys(*range(10)), keys(*range(20, 30)))

    shallow = read_legs(store, ["a"], POLICY, 6, full=False)  # type: ignore[arg-type]
    deep = read_legs(store, ["a"], POLICY, 6, full=True)  # type: ignore[arg-type]

    assert shallow.chunks == deep.chunks[: POLICY.pool]
    assert shallow.rows[: POLICY.row_pool] == deep.rows[: POLICY.row_pool]
    assert store.reads[:2] == [("chunks", ("a",), 3), ("rows", ("a",), 4)]


def test_rows_sharing_chunks_are_read_deep() -> None:
    # The best 16 rows all sit in one chunk: a read of 4 chunks finds one.
    store = Ranked(keys(1, 2, 3), keys(*[7] * 16, 8, 9))

    legs = read_legs(store, ["a"], POLICY, 6, full=False)  # type: ignore[arg-type]

    assert legs.rows[: POLICY.row_pool] == keys(7, 8)
    assert [r for r in store.reads if r[0] == "rows"] == [("rows", ("a",), 4), ("rows", ("a",), 6)]


def test_legs_are_read_again_only_for_new_terms_or_the_deep_read() -> None:
    store = Ranked(keys(*range(10)), keys(*range(20, 30)))
    first = read_legs(store, ["a"], POLICY, 6, full=False)  # type: ignore[arg-type]
    store.reads.clear()

    kept = final_legs(store, first, ["a"], POLICY, 6, full=False)  # type: ignore[arg-type]
    assert kept is first and store.reads == []

    deeper = final_legs(store, first, ["a"], POLICY, 6, full=True)  # type: ignore[arg-type]
    assert deeper.deep and deeper.chunks == keys(*range(6))

    spelled = final_legs(store, first, ["a", "b"], POLICY, 6, full=False)  # type: ignore[arg-type]
    assert spelled.terms == ("a", "b") and not spelled.deep


def test_the_deep_read_counts_only_for_named_documents_searched_with_every_word() -> None:
    assert needs_deep({"d"}, ["acme", "capex"], ["acme", "capex"])
    assert not needs_deep({"d"}, ["capex"], ["acme", "capex"])
    assert not needs_deep(set(), ["capex"], ["capex"])
