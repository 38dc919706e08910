"""Recall's search legs in the SQLite store: a Hamming prefilter over the sign-bit index
(sqlite-vec's, or its in-process copy) re-ranked by exact cosine, and BM25 over FTS5."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memoryd.clock import to_db
from memoryd.memory.model import Kind, Status
from memoryd.storage.memory_rows import MemoryVectorSearch
from memoryd.storage.protocols import PhrasesWritten, TextHit, TextResult, VectorHit
from memoryd.storage.row_dialect import SqlConnection, VectorTables
from memoryd.storage.sqlite_bits import BitIndexCopy, query_bits
from memoryd.storage.sqlite_connection import SQLITE_ROWS, SqliteConnection, vector_blob

if TYPE_CHECKING:
    from memoryd.providers.embedder import Vector

# The bit prefilter keeps this many candidates per wanted result (and at least PREFILTER_MIN)
# for the exact re-rank; measured on MiniLM vectors it recovers the float top-k almost whole.
PREFILTER_OVERSAMPLE = 2
PREFILTER_MIN = 64
# A word as FTS5's unicode61 tokenizer reads one: a run of letters and digits.
_WORD = re.compile(r"[^\W_]+")


class SqliteVectorSearch(MemoryVectorSearch[SqliteConnection]):
    """KNN over memory vectors, filtered by status metadata: a Hamming prefilter over the bit
    index, then the exact cosine on the candidates. The prefilter runs on an in-process copy
    of the bit index (:mod:`.sqlite_bits`), which answers what sqlite-vec's KNN answers, or on
    sqlite-vec itself when the copy cannot be used."""

    # Whether the prefilter may use the in-process copy of the bit index (the equality tests
    # and the bench turn it off to time or compare sqlite-vec's own KNN).
    in_process_bits = True

    def __init__(self, connection: SqliteConnection, vector_tables: VectorTables) -> None:
        super().__init__(connection, vector_tables)
        self._copy_lock = threading.Lock()
        self._copy: BitIndexCopy | None = None
        self._copy_checked = False

    def _search(
        self, vectors: Sequence[Vector], statuses: Sequence[Status], k: int, kinds: Sequence[Kind]
    ) -> list[list[VectorHit]]:
        import numpy as np

        pool = max(k * PREFILTER_OVERSAMPLE, PREFILTER_MIN)
        each = self._prefilter_each(vectors, statuses, pool, kinds)
        # One read of every vector's candidates (one vector's as they came). SQLite walks an
        # IN list of rowids in ascending order, so each vector's own candidates, taken from
        # the read in its order, are in the order a read of them alone returns: the same
        # cosines, and equal cosines in the same order.
        several = len(each) > 1
        rows = self._db.select_in(
            "SELECT e.rowid, m.id, e.embedding FROM memory_embeddings e "
            "JOIN memories m ON m.rowid = e.rowid",
            "e.rowid",
            sorted({rowid for candidates in each for rowid in candidates}) if several else each[0],
        )
        if not rows:
            return [[] for _ in vectors]
        matrix = np.frombuffer(b"".join(row[2] for row in rows), dtype=np.float32).reshape(
            len(rows), -1
        )
        found: list[list[VectorHit]] = []
        for vector, candidates in zip(vectors, each, strict=True):
            read: Sequence[int] = range(len(rows))
            own = matrix
            if several:
                wanted = set(candidates)
                read = [at for at, row in enumerate(rows) if row[0] in wanted]
                own = matrix[read]
            cosines = own @ np.asarray(vector, dtype=np.float32)
            order = np.argsort(-cosines, kind="stable")[:k]
            found.append([VectorHit(rows[read[i]][1], float(cosines[i])) for i in order])
        return found

    def _prefilter(
        self, vector: Vector, statuses: Sequence[Status], pool: int, kinds: Sequence[Kind]
    ) -> list[int]:
        """The ``pool`` rowids nearest by Hamming distance in each status, status by status."""
        return self._prefilter_each([vector], statuses, pool, kinds)[0]

    def _prefilter_each(
        self,
        vectors: Sequence[Vector],
        statuses: Sequence[Status],
        pool: int,
        kinds: Sequence[Kind],
    ) -> list[list[int]]:
        """What :meth:`_prefilter` answers for each of ``vectors``: the in-process copy checked
        and scanned once per status for all of them."""
        copy = self._bit_copy() if self.in_process_bits else None
        if copy is not None:
            queries = [query_bits(vector) for vector in vectors]
            candidates: list[list[int]] = [[] for _ in vectors]
            for status in statuses:
                found = copy.nearest_each(queries, status, pool, kinds)
                if found is None:
                    break
                for mine, more in zip(candidates, found, strict=True):
                    mine.extend(more)
            else:
                return candidates
        return [self.sqlite_vec_prefilter(vector, statuses, pool, kinds) for vector in vectors]

    def sqlite_vec_prefilter(
        self, vector: Vector, statuses: Sequence[Status], pool: int, kinds: Sequence[Kind]
    ) -> list[int]:
        """What :meth:`_prefilter` answers, from sqlite-vec's KNN over ``memory_bits``."""
        query = vector_blob(vector)
        candidates: list[int] = []
        for status in statuses:
            sql = (
                "SELECT rowid FROM memory_bits WHERE bits MATCH vec_quantize_binary(?) "
                "AND k = ? AND status = ?"
            )
            params: list[Any] = [query, pool, status.value]
            if kinds:
                sql += f" AND kind IN ({SQLITE_ROWS.marks(len(kinds))})"
                params.extend(kind.value for kind in kinds)
            candidates.extend(row[0] for row in self._db.execute(sql, params).fetchall())
        return candidates

    def forget_bit_copy(self) -> None:
        """Drop the in-process copy (the bit index was rebuilt for another model)."""
        with self._copy_lock:
            self._copy, self._copy_checked = None, False

    def bit_copy_bytes(self) -> int:
        """Memory held by the in-process copy of the bit index (0 before its first use)."""
        return self._copy.bytes_held() if self._copy is not None else 0

    def _bit_copy(self) -> BitIndexCopy | None:
        # The check runs SQL outside the lock: a thread inside a write transaction holds the
        # connection and may search too.
        with self._copy_lock:
            if self._copy_checked:
                return self._copy
        copy = BitIndexCopy(self._db) if BitIndexCopy.usable(self._db) else None
        with self._copy_lock:
            if not self._copy_checked:
                self._copy, self._copy_checked = copy, True
            return self._copy


# Statuses a memory can have besides active, as SQL: the text and entity legs leave these rows
# out.
INACTIVE = tuple(status.value for status in Status if status is not Status.ACTIVE)


def inactive_select(column: str) -> str:
    """SQL selecting ``column`` of every memory that is not active (parameters: INACTIVE)."""
    return f"SELECT {column} FROM memories WHERE status IN ({SQLITE_ROWS.marks(len(INACTIVE))})"


def few_inactive(db: SqlConnection, most: int) -> bool:
    """Whether at most ``most`` memories are not active (counted no further)."""
    row = db.execute(
        f"SELECT count(*) FROM ({_INACTIVE_ROWIDS} LIMIT ?)", (*INACTIVE, most + 1)
    ).fetchone()
    return int(row[0]) <= most


_INACTIVE_ROWIDS = inactive_select("rowid")
# Up to this many memories that are not active, the text leg leaves them out by rowid (SQLite
# keeps the few rowids in a set for the statement) instead of reading every match's row for
# its status: at 100k memories a query's ~8,000 matches cost ~12 ms of row reads that way, and
# a set of 1,000 rowids costs ~0.2 ms a statement. Both forms feed the same rows, in the same
# order, to the same ORDER BY, so they answer alike.
INACTIVE_SET_MAX = 1000


class SqliteTextSearch:
    """BM25 over active memories with FTS5."""

    def __init__(self, connection: SqliteConnection) -> None:
        self._db = connection
        self.inactive_set_max = INACTIVE_SET_MAX

    def search(self, terms: Sequence[str], k: int, kinds: Sequence[Kind] = ()) -> TextResult:
        """Active memories containing any of ``terms``, best BM25 first, with the terms each
        contains and every term's document frequency among active memories."""
        if not terms:
            return TextResult((), {})
        phrases = ['"' + term.replace('"', '""') + '"' for term in terms]
        by_set = not kinds and self._few_inactive()
        hits = self._hits(phrases, k, kinds, by_set) if k > 0 else []
        marks = ", ".join("?" * len(hits))
        contains: dict[int, set[str]] = {rowid: set() for _, rowid in hits}
        frequency: dict[str, int] = {}
        if by_set:
            counted = (
                f"FROM memory_fts WHERE memory_fts MATCH ? AND rowid NOT IN ({_INACTIVE_ROWIDS})"
            )
            inactive: tuple[str, ...] = INACTIVE
            rowid_column = "rowid"
        else:
            counted = (
                "FROM memory_fts JOIN memories m ON m.rowid = memory_fts.rowid "
                "WHERE memory_fts MATCH ? AND m.status = 'active'"
            )
            inactive, rowid_column = (), "m.rowid"
        for term, phrase in zip(terms, phrases, strict=True):
            # One pass over the term's postings: how many active memories hold it, and which
            # of the hits do.
            found = (
                f", json_group_array({rowid_column}) FILTER (WHERE {rowid_column} IN ({marks}))"
                if hits
                else ""
            )
            row = self._db.execute(
                f"SELECT count(*){found} {counted}",
                (*(rowid for _, rowid in hits), phrase, *inactive),
            ).fetchone()
            frequency[term] = int(row[0])
            for hit in json.loads(row[1]) if hits else ():
                contains[hit].add(term)
        return TextResult(
            tuple(TextHit(memory_id, frozenset(contains[rowid])) for memory_id, rowid in hits),
            frequency,
        )

    def holding(self, phrases: Sequence[str], k: int, kinds: Sequence[Kind] = ()) -> list[str]:
        """Up to ``k`` active memories holding any of ``phrases``, newest first: one FTS5
        query of quoted phrases, unranked."""
        if not phrases or k <= 0:
            return []
        query = " OR ".join('"' + phrase.replace('"', '""') + '"' for phrase in fewest(phrases))
        rows = self._active_matches(query, kinds, "memory_fts.rowid DESC", k)
        return [row[0] for row in rows]

    def holding_written(
        self, groups: Sequence[PhrasesWritten], k: int, kinds: Sequence[Kind] = ()
    ) -> list[str]:
        """Up to ``k`` active memories holding a group's phrases and written in its span,
        newest first: one statement, an FTS5 query per group within its span of time."""
        groups = [group for group in groups if group.phrases and group.start < group.end]
        if not groups or k <= 0:
            return []
        kind_filter = f" AND m.kind IN ({SQLITE_ROWS.marks(len(kinds))})" if kinds else ""
        # CROSS JOIN: the index's matches first, then their rows (left to itself, SQLite walks
        # every active memory and asks the index about each: 500 ms at 10,000, not 3).
        select = (
            "SELECT m.id, m.rowid AS r FROM memory_fts CROSS JOIN memories m "
            "ON m.rowid = memory_fts.rowid WHERE memory_fts MATCH ? AND m.status = 'active' "
            f"AND coalesce(m.occurred_at, m.created_at) >= ? "
            f"AND coalesce(m.occurred_at, m.created_at) < ?{kind_filter}"
        )
        params: list[Any] = []
        for group in groups:
            query = " OR ".join('"' + p.replace('"', '""') + '"' for p in fewest(group.phrases))
            params += [query, to_db(group.start), to_db(group.end)]
            params += [kind.value for kind in kinds]
        union = " UNION ".join([select] * len(groups))
        rows = self._db.execute(f"SELECT id FROM ({union}) ORDER BY r DESC LIMIT ?", (*params, k))
        return [row[0] for row in rows.fetchall()]

    def _hits(
        self, phrases: list[str], k: int, kinds: Sequence[Kind], by_set: bool
    ) -> list[tuple[str, int]]:
        """(memory id, rowid) of the k best active matches of any phrase, best BM25 first."""
        query = " OR ".join(phrases)
        if by_set:
            rowids = [
                row[0]
                for row in self._db.execute(
                    "SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? "
                    f"AND rowid NOT IN ({_INACTIVE_ROWIDS}) ORDER BY bm25(memory_fts) LIMIT ?",
                    (query, *INACTIVE, k),
                ).fetchall()
            ]
            ids = dict(self._db.select_in("SELECT rowid, id FROM memories", "rowid", rowids))
            return [(ids[rowid], rowid) for rowid in rowids if rowid in ids]
        return [
            (row[0], row[1]) for row in self._active_matches(query, kinds, "bm25(memory_fts)", k)
        ]

    def _active_matches(
        self, query: str, kinds: Sequence[Kind], order: str, k: int
    ) -> list[tuple[str, int]]:
        """(memory id, rowid) of the first ``k`` active memories (of ``kinds``, if any) that
        match the FTS5 ``query``, in ``order``, joined through the memories table."""
        sql = (
            "SELECT m.id, m.rowid FROM memory_fts JOIN memories m "
            "ON m.rowid = memory_fts.rowid WHERE memory_fts MATCH ? AND m.status = 'active'"
        )
        params: list[Any] = [query]
        if kinds:
            sql += f" AND m.kind IN ({SQLITE_ROWS.marks(len(kinds))})"
            params.extend(kind.value for kind in kinds)
        rows = self._db.execute(sql + f" ORDER BY {order} LIMIT ?", (*params, k))
        return [(row[0], row[1]) for row in rows.fetchall()]

    def _few_inactive(self) -> bool:
        """Whether at most ``inactive_set_max`` memories are not active (counted no further)."""
        return few_inactive(self._db, self.inactive_set_max)


def fewest(phrases: Sequence[str]) -> list[str]:
    """The phrases as the index splits them into words ("2026-11-20" is "2026 11 20"), less
    those holding another in a row (a text holding "2026 11 20" holds "11 20"): the same
    matches for fewer postings read."""
    forms = dict.fromkeys(tuple(_WORD.findall(phrase.lower())) for phrase in phrases)
    forms.pop((), None)
    shortest = min(map(len, forms), default=0)
    kept: list[str] = []
    for form in forms:
        size = len(form)
        parts = (form[i : i + n] for n in range(shortest, size) for i in range(size - n + 1))
        if not any(part in forms for part in parts):
            kept.append(" ".join(form))
    return kept
