"""A candidate embedding model's view of the store, held in memory: the vector leg and every
cosine recall measures come from the candidate's vectors, everything else (rows, text search,
entities, the time leg) from the store as it is. Nothing is written.

Which memories get a candidate vector: every active memory (only active memories can be
recalled) while there are at most ``FULL_SPACE_LIMIT`` of them; past that, a pool: each
question's candidates under the current model (every leg's top ``leg_depth``) plus the case's
expected and noise memories. The pool is an approximation the report states: the candidate's
vector leg can then only find memories some leg of the current configuration found.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from memoryd.memory.model import Kind, Memory, Status
from memoryd.providers.embedder import Embedder
from memoryd.storage.protocols import MemoryRecords, Store, VectorHit

if TYPE_CHECKING:
    from memoryd.providers.embedder import Vector

# Why 20,000: MiniLM embeds ~200 short memories a second on 2 cores (under two minutes), and
# a remote endpoint is asked for no more than a re-embed of the memories would cost anyway.
FULL_SPACE_LIMIT = 20_000
_BATCH = 64


@dataclass(frozen=True)
class CandidateSpace:
    """The store seen through the candidate's vectors, and how many memories they cover."""

    store: Store
    embedded: int
    note: str


def candidate_space(
    store: Store,
    embedder: Embedder,
    pool: Iterable[str] | None = None,
) -> CandidateSpace:
    """Embed the active memories (or only those of ``pool`` that are active, when given) with
    ``embedder`` and return the store as the candidate would see it."""
    if pool is None:
        memories = store.memories.query(status=Status.ACTIVE, newest_first=False)
        note = f"all {len(memories)} active memories embedded in memory with {embedder.model}"
    else:
        wanted = sorted(set(pool))
        found = store.memories.get_many(wanted)
        memories = [found[i] for i in wanted if i in found and found[i].status is Status.ACTIVE]
        note = (
            f"{len(memories)} of {store.memories.count(status=Status.ACTIVE)} active memories "
            f"embedded with {embedder.model}: those any leg of the current configuration found "
            "for a question, and the cases' own memories"
        )
    vectors = _embed(embedder, memories)
    view = _CandidateStore(store, {m.id: m for m in memories}, vectors)
    # The view answers every Store call: the two it changes itself, the rest by the store.
    return CandidateSpace(cast("Store", view), len(memories), note)


def _embed(embedder: Embedder, memories: Sequence[Memory]) -> dict[str, Vector]:
    import numpy as np

    vectors: dict[str, Vector] = {}
    for start in range(0, len(memories), _BATCH):
        group = memories[start : start + _BATCH]
        embedded = embedder.embed([m.content for m in group])
        for memory, vector in zip(group, embedded, strict=True):
            vectors[memory.id] = np.asarray(vector, dtype=np.float32)
    return vectors


class _CandidateStore:
    """The store with memory vectors and the vector search replaced."""

    def __init__(self, store: Store, memories: dict[str, Memory], vectors: dict[str, Vector]):
        self._store = store
        self.memories = _CandidateMemories(store.memories, vectors)
        self.vectors = _CandidateSearch(memories, vectors)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


class _CandidateMemories:
    """Memory rows as stored; their vectors are the candidate's."""

    def __init__(self, rows: MemoryRecords, vectors: dict[str, Vector]) -> None:
        self._rows = rows
        self._vectors = vectors

    def vectors(self, memory_ids: Sequence[str]) -> dict[str, Vector]:
        """The candidate's vectors of these memories (those it has)."""
        return {i: self._vectors[i] for i in memory_ids if i in self._vectors}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._rows, name)


class _CandidateSearch:
    """Exact cosine search over the candidate's vectors of active memories."""

    def __init__(self, memories: dict[str, Memory], vectors: dict[str, Vector]) -> None:
        import numpy as np

        self._ids = list(vectors)
        self._kinds = [memories[i].kind for i in self._ids]
        self._matrix = (
            np.asarray([vectors[i] for i in self._ids], dtype=np.float32)
            if self._ids
            else np.zeros((0, 1), dtype=np.float32)
        )

    def nearest(
        self, vector: Vector, statuses: Sequence[Status], k: int, kinds: Sequence[Kind] = ()
    ) -> list[VectorHit]:
        """The ``k`` closest active memories (of ``kinds``), best first."""
        import numpy as np

        if Status.ACTIVE not in statuses or not self._ids:
            return []
        cosines = self._matrix @ np.asarray(vector, dtype=np.float32)
        order = np.argsort(-cosines, kind="stable")
        hits = []
        for index in order:
            if kinds and self._kinds[index] not in kinds:
                continue
            hits.append(VectorHit(self._ids[index], float(cosines[index])))
            if len(hits) >= k:
                break
        return hits

    def nearest_each(
        self,
        vectors: Sequence[Vector],
        statuses: Sequence[Status],
        k: int,
        kinds: Sequence[Kind] = (),
    ) -> list[list[VectorHit]]:
        """:meth:`nearest` for each of ``vectors`` (an exact search in memory: nothing to
        share between them)."""
        return [self.nearest(vector, statuses, k, kinds) for vector in vectors]
