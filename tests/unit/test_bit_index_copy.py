"""The SQLite store's in-process copy of its bit index answers the vector prefilter exactly as
sqlite-vec's KNN does (same candidates, same order, ties included) and stays in step with
writes: inserts, status moves, purges, another connection's commits, an open transaction.

SQLite only (PostgreSQL's vector leg is an HNSW index with no such copy), on a real store file.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from memoryd.ids import IdGenerator
from memoryd.memory.model import Kind, Memory, Source, Status
from memoryd.storage.protocols import EmbeddingSignature
from memoryd.storage.sqlite import SqliteStore
from memoryd.storage.sqlite_bits import query_bits
from memoryd.storage.sqlite_search import SqliteVectorSearch

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
DIMENSION = 384
STATUS_SETS = ([Status.ACTIVE], [Status.ACTIVE, Status.PENDING], [Status.ARCHIVED])
KIND_SETS: tuple[tuple[Kind, ...], ...] = ((), (Kind.FACT,), (Kind.EVENT, Kind.LESSON))


def _vectors(rng: np.random.Generator, n: int) -> np.ndarray:
    """Random vectors whose sign bits mostly agree, so many share a Hamming distance and the
    pool's edge falls inside runs of ties."""
    vectors = rng.standard_normal((n, DIMENSION)).astype(np.float32)
    vectors[:, 48:] = np.abs(vectors[:, 48:])
    flips = rng.random((n, DIMENSION - 48)) < 0.05
    vectors[:, 48:][flips] *= -1
    return vectors


class _Filled:
    """A store file with memories of every status and kind, and what was written to it."""

    def __init__(self, path: Path, seed: int, *, initialize: bool = True) -> None:
        self.store = SqliteStore(path, create=True)
        if initialize:
            self.store.initialize_embeddings(EmbeddingSignature("test-model", DIMENSION))
        self.rng = np.random.default_rng(seed)
        self.random = random.Random(seed)
        self.ids = IdGenerator()
        self.vectors: dict[str, np.ndarray] = {}
        self.status: dict[str, Status] = {}

    def insert(self, n: int) -> None:
        """``n`` new memories, mostly active, in one transaction."""
        statuses = [Status.ACTIVE] * 6 + [Status.PENDING, Status.REJECTED]
        with self.store.transaction():
            for vector in _vectors(self.rng, n):
                status = self.random.choice(statuses)
                memory = Memory(
                    id=self.ids.new_id(NOW), kind=self.random.choice(list(Kind)), status=status,
                    content="memory", source=Source.OWNER, created_at=NOW,
                    last_confirmed_at=NOW, confidence=0.9,
                )  # fmt: skip
                self.store.memories.insert(memory, vector)
                self.vectors[memory.id] = vector
                self.status[memory.id] = status

    def churn(self, moves: int, purges: int) -> None:
        """Move ``moves`` memories to another status and purge ``purges`` others."""
        with self.store.transaction():
            for memory_id in self.random.sample(sorted(self.status), moves):
                status = self.random.choice([s for s in Status if s != self.status[memory_id]])
                self.store.memories.set_status(memory_id, status)
                self.status[memory_id] = status
            for memory_id in self.random.sample(sorted(self.status), purges):
                self.store.memories.purge(memory_id, NOW)
                del self.status[memory_id]

    def queries(self, n: int) -> np.ndarray:
        """Query vectors: some near stored ones, some new."""
        near = [self.vectors[i] for i in self.random.sample(sorted(self.vectors), n // 2)]
        return np.concatenate([np.asarray(near), _vectors(self.rng, n - n // 2)])


@pytest.fixture
def filled(tmp_path: Path) -> Iterator[_Filled]:
    built = _Filled(tmp_path / "bits.db", seed=16)
    built.insert(3000)
    yield built
    built.store.close()


def _search(store: SqliteStore) -> SqliteVectorSearch:
    vectors = store.vectors
    assert isinstance(vectors, SqliteVectorSearch)
    return vectors


def _fact(built: _Filled, content: str) -> Memory:
    """A new active fact (its vector is the caller's)."""
    return Memory(
        id=built.ids.new_id(NOW), kind=Kind.FACT, status=Status.ACTIVE, content=content,
        source=Source.OWNER, created_at=NOW, last_confirmed_at=NOW, confidence=0.9,
    )  # fmt: skip


def _not_asked(*args: object, **kwargs: object) -> list[int]:
    raise AssertionError("the prefilter fell back to sqlite-vec")


def _assert_same_as_sqlite_vec(built: _Filled, queries: int) -> int:
    """Compare every prefilter and every nearest() of the copy with sqlite-vec's; return how
    many prefilters were compared."""
    search = _search(built.store)
    compared = 0
    for i, query in enumerate(built.queries(queries)):
        statuses = STATUS_SETS[i % len(STATUS_SETS)]
        kinds = KIND_SETS[(i // len(STATUS_SETS)) % len(KIND_SETS)]
        for pool in (1, 7, 64, 100, 200):
            # The copy answers alone: sqlite-vec is not asked behind its back.
            search.sqlite_vec_prefilter = _not_asked  # type: ignore[method-assign]
            copied = search._prefilter(query, statuses, pool, kinds)
            del search.sqlite_vec_prefilter
            assert copied == search.sqlite_vec_prefilter(query, statuses, pool, kinds)
            compared += 1
        for k in (1, 10, 50):
            search.in_process_bits = False
            expected = search.nearest(query, statuses, k, kinds)
            search.in_process_bits = True
            assert search.nearest(query, statuses, k, kinds) == expected
    return compared


def test_the_copy_answers_what_sqlite_vec_answers_ties_included(filled: _Filled) -> None:
    assert _assert_same_as_sqlite_vec(filled, 120) == 600
    # The copy was used: it holds the searched statuses' bits (48 bytes a vector and more).
    assert _search(filled.store).bit_copy_bytes() >= 48 * 3000 * 0.75


def test_several_query_vectors_scanned_at_once_get_what_each_gets_alone(filled: _Filled) -> None:
    # A message and its sentences (VectorSearch.nearest_each): one check and one scan of the
    # copy for all of them, and one read of their candidates' vectors; ties included (the
    # vectors share most sign bits), the same vector twice among them.
    search = _search(filled.store)
    queries = list(filled.queries(7))
    queries.append(queries[0])
    compared = 0
    for statuses in STATUS_SETS:
        for kinds in KIND_SETS:
            for pool in (1, 7, 64, 200):
                search.sqlite_vec_prefilter = _not_asked  # type: ignore[method-assign]
                together = search._prefilter_each(queries, statuses, pool, kinds)
                del search.sqlite_vec_prefilter
                alone = [search.sqlite_vec_prefilter(q, statuses, pool, kinds) for q in queries]
                assert together == alone
                assert together[0] == together[-1]
                compared += 1
            for k in (1, 10, 50):
                found = search.nearest_each(queries, statuses, k, kinds)
                assert found == [search.nearest(q, statuses, k, kinds) for q in queries]
                # Different vectors, different answers (none from a status no memory has).
                distinct = len({tuple(hits) for hits in found})
                assert distinct > 2 if Status.ARCHIVED not in statuses and k > 1 else distinct
    assert compared == 36


def test_the_copy_follows_inserts_moves_and_purges(filled: _Filled) -> None:
    _assert_same_as_sqlite_vec(filled, 15)
    for _ in range(4):
        filled.churn(moves=150, purges=20)
        _assert_same_as_sqlite_vec(filled, 15)
        # New rows land in the last chunks, some in slots freed by the moves.
        filled.insert(200)
        _assert_same_as_sqlite_vec(filled, 15)


def test_ties_are_broken_by_sqlite_vecs_scan_order(filled: _Filled) -> None:
    # Many copies of one vector: every one is at distance 0, so the pool is decided by ties.
    vector = _vectors(filled.rng, 1)[0]
    with filled.store.transaction():
        for _ in range(150):
            filled.store.memories.insert(_fact(filled, "same"), vector)
    search = _search(filled.store)
    for pool in (1, 64, 149, 150, 151):
        assert search._prefilter(vector, [Status.ACTIVE], pool, ()) == (
            search.sqlite_vec_prefilter(vector, [Status.ACTIVE], pool, ())
        )


def test_the_re_rank_keeps_the_pools_closest_ties_in_rowid_order(filled: _Filled) -> None:
    # Copies of a few vectors: equal cosines, so which of them make the k decides the order.
    copied = _vectors(filled.rng, 3)
    with filled.store.transaction():
        for vector in copied:
            for _ in range(40):
                memory = _fact(filled, "same")
                filled.store.memories.insert(memory, vector)
                filled.vectors[memory.id] = vector
    search = _search(filled.store)
    rows = filled.store.memories._db.execute("SELECT rowid, id FROM memories").fetchall()
    id_of = dict(rows)
    for query in [*copied, *filled.queries(12)]:
        for k in (1, 10, 50, 100):
            pool = sorted(search._prefilter(query, [Status.ACTIVE], max(2 * k, 64), ()))
            matrix = np.asarray([filled.vectors[id_of[rowid]] for rowid in pool])
            cosines = matrix @ np.asarray(query, dtype=np.float32)
            order = np.argsort(-cosines, kind="stable")[:k]
            expected = [(id_of[pool[i]], float(cosines[i])) for i in order]
            found = search.nearest(query, [Status.ACTIVE], k, ())
            assert [(hit.memory_id, hit.cosine) for hit in found] == expected


def test_another_connections_commits_are_seen(filled: _Filled, tmp_path: Path) -> None:
    _assert_same_as_sqlite_vec(filled, 6)
    other = _Filled(tmp_path / "bits.db", seed=17, initialize=False)
    other.ids = filled.ids
    try:
        other.insert(300)
        other.status = dict(filled.status)
        other.churn(moves=100, purges=10)
    finally:
        other.store.close()
    filled.vectors.update(other.vectors)
    _assert_same_as_sqlite_vec(filled, 12)


def test_a_transaction_searches_its_own_uncommitted_writes(filled: _Filled) -> None:
    _assert_same_as_sqlite_vec(filled, 3)
    search = _search(filled.store)
    vector = _vectors(filled.rng, 1)[0]
    memory = Memory(
        id=filled.ids.new_id(NOW), kind=Kind.EVENT, status=Status.ACTIVE, content="new",
        source=Source.OWNER, created_at=NOW, last_confirmed_at=NOW, confidence=0.9,
    )  # fmt: skip

    class Abandon(Exception):
        pass

    with pytest.raises(Abandon), filled.store.transaction():
        filled.store.memories.insert(memory, vector)
        hits = search.nearest(vector, [Status.ACTIVE], 1)
        assert [hit.memory_id for hit in hits] == [memory.id]
        raise Abandon
    assert memory.id not in [hit.memory_id for hit in search.nearest(vector, [Status.ACTIVE], 5)]


def test_query_bits_are_packed_as_vec_quantize_binary_packs_them(filled: _Filled) -> None:
    vectors = list(_vectors(filled.rng, 20))
    vectors.append(np.zeros(DIMENSION, dtype=np.float32))
    edge = np.zeros(DIMENSION, dtype=np.float32)
    edge[::3], edge[1::3] = -0.0, 1e-30
    vectors.append(edge)
    for vector in vectors:
        row = filled.store._db.execute(
            "SELECT vec_quantize_binary(?)", (np.asarray(vector).tobytes(),)
        ).fetchone()
        assert query_bits(vector) == row[0]


def test_searches_inside_write_transactions_beside_other_searches(filled: _Filled) -> None:
    # A writer that searches inside its transaction holds the connection while readers
    # refresh the copy: neither may wait on the other for good.
    import threading

    search = _search(filled.store)
    queries = filled.queries(8)
    failures: list[BaseException] = []

    def read() -> None:
        try:
            for _ in range(15):
                for query in queries:
                    search.nearest(query, [Status.ACTIVE], 10)
        except BaseException as error:  # reported by the assertion below
            failures.append(error)

    def write() -> None:
        try:
            for vector in _vectors(filled.rng, 30):
                with filled.store.transaction():
                    memory = _fact(filled, "written")
                    filled.store.memories.insert(memory, vector)
                    found = search.nearest(vector, [Status.ACTIVE], 1)
                    assert [hit.memory_id for hit in found] == [memory.id]
        except BaseException as error:  # reported by the assertion below
            failures.append(error)

    threads = [threading.Thread(target=read, daemon=True) for _ in range(3)]
    threads.append(threading.Thread(target=write, daemon=True))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "a search waited for good"
    assert failures == []
    _assert_same_as_sqlite_vec(filled, 3)


def test_a_bit_index_made_by_another_sqlite_vec_is_searched_by_sqlite_vec(
    filled: _Filled,
) -> None:
    filled.store._db.execute(
        "UPDATE memory_bits_info SET value = 'v0.1.6' WHERE key = 'CREATE_VERSION'"
    )
    search = _search(filled.store)
    query = filled.queries(2)[0]
    expected = search.sqlite_vec_prefilter(query, [Status.ACTIVE], 100, ())
    assert search._prefilter(query, [Status.ACTIVE], 100, ()) == expected
    assert search.bit_copy_bytes() == 0
