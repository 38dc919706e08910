"""Full-text search in the PostgreSQL store: tsvector with GIN, ranked BM25-like.

``ts_rank`` alone has no IDF; each query term's rank is weighted by its BM25 inverse document
frequency among the candidate rows (``idf_weighting``, on unless measuring what it is worth).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memoryd.memory.model import Kind
from memoryd.storage.postgres_connection import PostgresDatabase
from memoryd.storage.protocols import PhrasesWritten, TextHit, TextResult


class PostgresTextSearch:
    """Full-text search over active memories, ranked BM25-like (IDF-weighted ts_rank)."""

    def __init__(self, db: PostgresDatabase, *, idf_weighting: bool = True) -> None:
        self._db = db
        self._idf_weighting = idf_weighting

    def search(self, terms: Sequence[str], k: int, kinds: Sequence[Kind] = ()) -> TextResult:
        """Active memories containing any of ``terms``, best first, with the terms each
        contains and every term's document frequency among active memories."""
        if not terms:
            return TextResult((), {})
        kind_filter = ""
        params: list[Any] = []
        if kinds:
            kind_filter = " AND kind = ANY(%s)"
            params.append([kind.value for kind in kinds])
        count = len(terms)
        ranked = idf_ranked_sql(
            table="memories",
            key="id",
            where="status = 'active'",
            total="(SELECT n FROM memory_counts WHERE status = 'active')",
            terms=count,
            carry=", kind",
            narrow=kind_filter,
            idf_weighting=self._idf_weighting,
        )
        rows = self._db.execute(ranked, (*terms, *params, max(0, int(k)))).fetchall()
        if rows:
            frequency = dict(zip(terms, (int(n) for n in rows[0][1 + count :]), strict=True))
        else:
            # No hit to carry the counts (k = 0, or a kind filter that matched nothing).
            counts = ", ".join(f"count(*) FILTER (WHERE fts @@ q{i})" for i in range(count))
            queries = ", ".join(f"plainto_tsquery('english', %s) AS q{i}" for i in range(count))
            union = " || ".join(f"q{i}" for i in range(count))
            row = self._db.execute(
                f"WITH q AS (SELECT {queries}) SELECT {counts} FROM memories, q "
                f"WHERE status = 'active' AND fts @@ ({union})",
                tuple(terms),
            ).fetchone()
            frequency = dict(zip(terms, (int(n) for n in row), strict=True))
        hits = tuple(
            TextHit(
                row[0],
                frozenset(
                    term for term, found in zip(terms, row[1 : 1 + count], strict=True) if found
                ),
            )
            for row in rows
        )
        return TextResult(hits, frequency)

    def holding(self, phrases: Sequence[str], k: int, kinds: Sequence[Kind] = ()) -> list[str]:
        """Up to ``k`` active memories holding any of ``phrases`` (``phraseto_tsquery``),
        newest first."""
        if not phrases or k <= 0:
            return []
        union = " || ".join("phraseto_tsquery('english', %s)" for _ in phrases)
        return self._newest_active(f"fts @@ ({union})", list(phrases), kinds, k)

    def holding_written(
        self, groups: Sequence[PhrasesWritten], k: int, kinds: Sequence[Kind] = ()
    ) -> list[str]:
        """Up to ``k`` active memories holding a group's phrases (``phraseto_tsquery``) and
        written in its span, newest first."""
        groups = [group for group in groups if group.phrases and group.start < group.end]
        if not groups or k <= 0:
            return []
        written = "coalesce(occurred_at, created_at)"
        clauses: list[str] = []
        params: list[Any] = []
        for group in groups:
            union = " || ".join("phraseto_tsquery('english', %s)" for _ in group.phrases)
            clauses.append(f"(fts @@ ({union}) AND {written} >= %s AND {written} < %s)")
            params += [*group.phrases, group.start, group.end]
        return self._newest_active(f"({' OR '.join(clauses)})", params, kinds, k)

    def _newest_active(
        self, condition: str, params: list[Any], kinds: Sequence[Kind], k: int
    ) -> list[str]:
        """The ids of up to ``k`` active memories meeting ``condition`` (of these kinds, when
        any are given), newest first."""
        sql = f"SELECT id FROM memories WHERE status = 'active' AND {condition}"
        if kinds:
            sql += " AND kind = ANY(%s)"
            params = [*params, [kind.value for kind in kinds]]
        rows = self._db.execute(sql + " ORDER BY created_at DESC, id DESC LIMIT %s", (*params, k))
        return [row[0] for row in rows.fetchall()]


def idf_ranked_sql(
    *,
    table: str,
    key: str,
    where: str,
    total: str,
    terms: int,
    carry: str = "",
    narrow: str = "",
    idf_weighting: bool = True,
) -> str:
    """Rows matching any term, ranked by Σ idf(term) × ts_rank(row, term); each row comes with
    whether it holds each term and, after those, each term's count among the rows ``where``
    selects. ``narrow`` (a condition on the ``carry`` columns) filters the ranked rows only,
    never the counts.

    ts_rank alone scores a common word like a rare one; the BM25 IDF, computed from how many
    candidate rows hold each term, restores the weight of rare words.
    """
    queries = ", ".join(f"plainto_tsquery('english', %s) AS q{i}" for i in range(terms))
    union = " || ".join(f"q{i}" for i in range(terms))
    counts = ", ".join(f"count(*) FILTER (WHERE fts @@ q{i}) AS n{i}" for i in range(terms))
    holds = ", ".join(f"fts @@ q{i}" for i in range(terms))
    frequencies = ", ".join(f"n{i}" for i in range(terms))
    score = (
        " + ".join(
            f"ln(1 + ({total} - n{i} + 0.5) / (n{i} + 0.5)) * ts_rank(fts, q{i})"
            for i in range(terms)
        )
        if idf_weighting
        else f"ts_rank(fts, {union})"
    )
    narrowed = f"SELECT * FROM hits WHERE true{narrow}" if narrow else "SELECT * FROM hits"
    return (
        f"WITH q AS (SELECT {queries}), "
        # MATERIALIZED: computed once, whatever the planner guesses about the row count.
        f"hits AS MATERIALIZED (SELECT {key} AS key, fts{carry} FROM {table}, q "
        f"WHERE {where} AND fts @@ ({union})), "
        f"df AS MATERIALIZED (SELECT {counts} FROM hits, q), "
        f"ranked AS ({narrowed}) "
        f"SELECT key, {holds}, {frequencies} FROM ranked, q, df "
        f"ORDER BY {score} DESC, key DESC LIMIT %s"
    )
