"""An in-process copy of the SQLite store's bit index (``memory_bits``, a sqlite-vec 0.1.9 vec0
table) and the Hamming KNN sqlite-vec runs over it, answered in numpy.

Why: sqlite-vec's KNN reads and ranks every chunk through SQL on each query (about 70 ms at
100k memories with k = 100 on 2 cores); the same scan over sign bits kept in memory, 48 bytes
a vector, takes a few milliseconds.

It answers exactly what sqlite-vec answers, ties included. sqlite-vec scans a partition's
chunks in ``chunk_id`` order, keeps each chunk's k best (equal distances: the later slot
first) and merges chunk lists keeping the earlier chunk's entry on a tie; so its answer is the
first k of the matching slots sorted by (distance, chunk, slot descending). The copy is kept per
chunk and checked before every query against the chunks table's validity and rowid blobs:
a chunk whose blobs changed (an insert, a status move, a purge) is read again, whole, with its
vectors and kinds in one statement; a retrieval stamp changes no chunk and costs nothing.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memoryd.memory.model import Kind, Status
from memoryd.storage.sqlite_connection import SqliteConnection

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

# The shadow-table layout this copy reads; another sqlite-vec version falls back to its SQL.
SQLITE_VEC_VERSION = "v0.1.9"
# vec0 keeps a TEXT metadata value as 16 bytes a slot: its length (int32) and first 12 bytes.
_TEXT_SLOT = 16
_TEXT_PREFIX = 12
# Each kind as a small code in the copy (0: a kind this version does not know).
KIND_CODES: dict[Kind, int] = {kind: code for code, kind in enumerate(Kind, start=1)}
# Listings read before giving up on a settled copy while writes keep changing chunks.
REFRESH_ROUNDS = 4

_LISTING = (
    "SELECT chunk_id, validity, rowids FROM memory_bits_chunks WHERE partition00 = ? "
    "ORDER BY chunk_id"
)
_CHUNKS = (
    "SELECT c.chunk_id, c.validity, c.rowids, v.vectors, k.data FROM memory_bits_chunks c "
    "JOIN memory_bits_vector_chunks00 v ON v.rowid = c.chunk_id "
    "JOIN memory_bits_metadatachunks00 k ON k.rowid = c.chunk_id "
    "WHERE c.partition00 = ? AND c.chunk_id IN "
)


def text_slot(value: str) -> bytes:
    """``value`` as vec0 0.1.9 stores a short TEXT metadata value in a chunk's slot."""
    encoded = value.encode()
    return struct.pack("<i", len(encoded)) + encoded[:_TEXT_PREFIX].ljust(_TEXT_PREFIX, b"\0")


def query_bits(vector: Any) -> bytes:
    """The query's sign bits as ``vec_quantize_binary`` packs them (bit i of byte j is
    dimension 8j + i, set when the value is above zero)."""
    import numpy as np

    values = np.asarray(vector, dtype=np.float32)
    return bytes(np.packbits(values > 0, bitorder="little").tobytes())


@dataclass(frozen=True)
class _Chunk:
    """One vec0 chunk as read: the blobs that identify its state, and its slots' data."""

    validity: bytes
    rowids: bytes
    valid: NDArray[np.bool_]
    ids: NDArray[np.int64]
    bits: NDArray[Any]
    kinds: NDArray[np.uint8]


@dataclass(frozen=True)
class _Partition:
    """Every chunk of one status in scan order, stacked for one vectorised scan."""

    chunk_ids: tuple[int, ...]
    # The (validity, rowids) blobs each chunk was read with: a chunk whose blobs differ in
    # the chunks table has changed and is read again.
    blobs: tuple[tuple[bytes, bytes], ...]
    starts: tuple[int, ...]
    valid: NDArray[np.bool_]
    ids: NDArray[np.int64]
    # (words, slots): word w of every slot's bits side by side.
    bits: NDArray[Any]
    kinds: NDArray[np.uint8]
    # Ties at equal distance go in sqlite-vec's order: the earlier chunk, then the later slot.
    tie_order: NDArray[np.int32]

    def chunk(self, rank: int) -> _Chunk:
        """The ``rank``-th chunk's slots, as held."""
        start = self.starts[rank]
        end = self.starts[rank + 1] if rank + 1 < len(self.starts) else len(self.ids)
        validity, rowids = self.blobs[rank]
        return _Chunk(
            validity,
            rowids,
            self.valid[start:end],
            self.ids[start:end],
            self.bits[:, start:end].T,
            self.kinds[start:end],
        )


class BitIndexCopy:
    """The bit index's chunks of each status searched so far, refreshed chunk by chunk."""

    def __init__(self, connection: SqliteConnection) -> None:
        self._db = connection
        self._lock = threading.Lock()
        self._partitions: dict[str, _Partition] = {}

    @staticmethod
    def usable(connection: SqliteConnection) -> bool:
        """Whether both the loaded sqlite-vec and the one that created ``memory_bits`` are the
        version whose layout and tie order this copy reproduces."""
        loaded = connection.execute("SELECT vec_version()").fetchone()
        # Tables made by sqlite-vec before 0.1.6 have no info table (and another layout).
        created = connection.execute(
            "SELECT 1 FROM sqlite_master WHERE name = 'memory_bits_info'"
        ).fetchone()
        if created is not None:
            created = connection.execute(
                "SELECT value FROM memory_bits_info WHERE key = 'CREATE_VERSION'"
            ).fetchone()
        return (
            loaded is not None
            and created is not None
            and loaded[0] == SQLITE_VEC_VERSION
            and created[0] == SQLITE_VEC_VERSION
        )

    def nearest(
        self, bits: bytes, status: Status, k: int, kinds: Sequence[Kind]
    ) -> list[int] | None:
        """The rowids sqlite-vec's ``bits MATCH … AND k = ? AND status = ? [AND kind IN …]``
        returns, in its order; None when writes kept changing the index while it was read
        (the caller asks sqlite-vec instead)."""
        found = self.nearest_each([bits], status, k, kinds)
        return None if found is None else found[0]

    def nearest_each(
        self, queries: Sequence[bytes], status: Status, k: int, kinds: Sequence[Kind]
    ) -> list[list[int]] | None:
        """What :meth:`nearest` answers for each of ``queries``, from one check of the copy
        and one pass over its bits (every query's distances side by side)."""
        import numpy as np

        partition = self._current(status.value)
        if partition is None:
            return None
        if k <= 0 or not len(partition.ids) or not queries:
            return [[] for _ in queries]
        # Word by word over the column-major bits: a sum across each row's words costs
        # three times as much at 100k. One row of counts per query.
        words = np.frombuffer(b"".join(queries), dtype=partition.bits.dtype).reshape(
            len(queries), -1
        )
        slots = len(partition.ids)
        counts = np.zeros((len(queries), slots), dtype=np.uint16)
        word = np.empty((len(queries), slots), dtype=partition.bits.dtype)
        for column, query_words in zip(partition.bits, words.T, strict=True):
            counts += np.bitwise_count(np.bitwise_xor(column, query_words[:, None], out=word))
        wanted = partition.valid
        if kinds:
            asked = np.zeros(256, dtype=bool)
            asked[[KIND_CODES[kind] for kind in kinds]] = True
            wanted = wanted & asked[partition.kinds]
        k = min(k, int(np.count_nonzero(wanted)))
        if k == 0:
            return [[] for _ in queries]
        keys = np.where(
            wanted, (counts.astype(np.int64) << 32) | partition.tie_order, np.iinfo(np.int64).max
        )
        found = []
        for row in keys:
            best = np.argpartition(row, k - 1)[:k] if k < slots else np.arange(slots)
            best = best[np.argsort(row[best])]
            found.append([int(rowid) for rowid in partition.ids[best]])
        return found

    def bytes_held(self) -> int:
        """Memory held by the copy: its arrays and the chunk blobs it compares."""
        return sum(
            p.valid.nbytes
            + p.ids.nbytes
            + p.bits.nbytes
            + p.kinds.nbytes
            + p.tie_order.nbytes
            + sum(len(validity) + len(rowids) for validity, rowids in p.blobs)
            for p in self._partitions.values()
        )

    def _current(self, status: str) -> _Partition | None:
        # Read the listing until every chunk held matches it: then the copy is the state of
        # that one listing (one committed state, or this thread's open transaction), even if
        # writes committed while changed chunks were being read. No lock is held while SQL
        # runs: a thread inside a write transaction holds the connection and may search too.
        with self._lock:
            held = self._partitions.get(status) or _empty()
        ranks = {chunk_id: rank for rank, chunk_id in enumerate(held.chunk_ids)}
        fresh: dict[int, _Chunk] = {}
        for _ in range(REFRESH_ROUNDS):
            listing = self._db.execute(_LISTING, (status,)).fetchall()
            stale = []
            for chunk_id, validity, rowids in listing:
                if chunk_id in fresh:
                    blobs = (fresh[chunk_id].validity, fresh[chunk_id].rowids)
                elif chunk_id in ranks:
                    blobs = held.blobs[ranks[chunk_id]]
                else:
                    blobs = None
                if blobs != (validity, rowids):
                    stale.append(chunk_id)
            if stale:
                fresh.update(self._read(status, stale))
                continue
            listed = tuple(row[0] for row in listing)
            if fresh or listed != held.chunk_ids:
                chunks = [fresh.get(c) or held.chunk(ranks[c]) for c in listed]
                held = _stack(listed, chunks)
                with self._lock:
                    self._partitions[status] = held
            return held
        return None

    def _read(self, status: str, chunk_ids: list[int]) -> dict[int, _Chunk]:
        read: dict[int, _Chunk] = {}
        for start in range(0, len(chunk_ids), 500):
            group = chunk_ids[start : start + 500]
            sql = _CHUNKS + f"({', '.join('?' * len(group))})"
            for row in self._db.execute(sql, (status, *group)).fetchall():
                read[row[0]] = _chunk(row)
        return read


def _chunk(row: Sequence[Any]) -> _Chunk:
    import numpy as np

    _, validity, rowids, vectors, kind_slots = row
    ids = np.frombuffer(rowids, dtype="<i8").astype(np.int64)
    size = len(ids)
    width = len(vectors) // size
    valid = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")[:size]
    slots = np.frombuffer(kind_slots, dtype=np.uint8).reshape(-1, _TEXT_SLOT)[:size]
    kinds = np.zeros(size, dtype=np.uint8)
    for kind, code in KIND_CODES.items():
        stored = np.frombuffer(text_slot(kind.value), dtype=np.uint8)
        kinds[(slots == stored).all(axis=1)] = code
    return _Chunk(
        validity=bytes(validity),
        rowids=bytes(rowids),
        valid=valid.astype(bool),
        ids=ids,
        bits=np.frombuffer(vectors, dtype=np.uint64 if width % 8 == 0 else np.uint8).reshape(
            size, -1
        ),
        kinds=kinds,
    )


def _stack(chunk_ids: tuple[int, ...], chunks: Sequence[_Chunk]) -> _Partition:
    import numpy as np

    if not chunks:
        return _empty()
    starts: list[int] = []
    slots = 0
    for chunk in chunks:
        starts.append(slots)
        slots += len(chunk.ids)
    # Within a chunk the later slot wins a tie, so count its slots down from the chunk's end.
    tie_order = np.concatenate(
        [start + np.arange(len(c.ids) - 1, -1, -1) for start, c in zip(starts, chunks, strict=True)]
    ).astype(np.int32)
    return _Partition(
        chunk_ids=chunk_ids,
        blobs=tuple((c.validity, c.rowids) for c in chunks),
        starts=tuple(starts),
        valid=np.concatenate([c.valid for c in chunks]),
        ids=np.concatenate([c.ids for c in chunks]),
        bits=np.ascontiguousarray(np.concatenate([c.bits for c in chunks]).T),
        kinds=np.concatenate([c.kinds for c in chunks]),
        tie_order=tie_order,
    )


def _empty() -> _Partition:
    import numpy as np

    return _Partition(
        (),
        (),
        (),
        np.zeros(0, dtype=bool),
        np.zeros(0, dtype=np.int64),
        np.zeros((1, 0), dtype=np.uint8),
        np.zeros(0, dtype=np.uint8),
        np.zeros(0, dtype=np.int32),
    )
