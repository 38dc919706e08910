"""The owner's evaluation cases (``memoryd eval``): one row per question, with the memories
recall should find for it and those it should not show; the same SQL on both backends."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memoryd.evaluation.model import EvalCase
from memoryd.storage.row_dialect import RowDialect, SqlConnection, ids_starting

_COLUMNS = "id, question, expected, noise, created_at"
_SELECT = f"SELECT {_COLUMNS} FROM eval_cases"
_SAVE = (
    f"INSERT INTO eval_cases({_COLUMNS}) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (id) DO UPDATE SET question = excluded.question, "
    "expected = excluded.expected, noise = excluded.noise"
)
_DELETE = "DELETE FROM eval_cases WHERE id = ?"


class EvalRows:
    """Evaluation cases, read and written alike by both backends."""

    def __init__(self, connection: SqlConnection, dialect: RowDialect) -> None:
        self._db = connection
        self._dialect = dialect

    def save(self, case: EvalCase) -> None:
        """Insert the case, or replace its question and ids when its id is stored."""
        dialect = self._dialect
        self._db.execute(
            dialect.sql(_SAVE),
            (
                case.id,
                case.question,
                dialect.stored_json(list(case.expected)),
                dialect.stored_json(list(case.noise)),
                dialect.stored_time(case.created_at),
            ),
        )

    def get(self, case_id: str) -> EvalCase | None:
        """One case by id."""
        row = self._db.execute(self._dialect.sql(_SELECT + " WHERE id = ?"), (case_id,)).fetchone()
        return None if row is None else self._case(row)

    def by_question(self, question: str) -> EvalCase | None:
        """The case asking exactly ``question``, if any."""
        row = self._db.execute(
            self._dialect.sql(_SELECT + " WHERE question = ?"), (question,)
        ).fetchone()
        return None if row is None else self._case(row)

    def all(self) -> list[EvalCase]:
        """Every case, oldest first."""
        return [self._case(row) for row in self._db.execute(_SELECT + " ORDER BY id").fetchall()]

    def ids_starting(self, prefix: str, limit: int) -> list[str]:
        """Up to ``limit`` case ids that start with ``prefix``, in id order."""
        return ids_starting(self._db, self._dialect, "eval_cases", prefix, limit)

    def delete(self, case_id: str) -> None:
        """Remove one case (nothing when it is not stored)."""
        self._db.execute(self._dialect.sql(_DELETE), (case_id,))

    def _case(self, row: Sequence[Any]) -> EvalCase:
        dialect = self._dialect
        return EvalCase(
            id=str(row[0]),
            question=str(row[1]),
            expected=dialect.read_names(row[2]),
            noise=dialect.read_names(row[3]),
            created_at=dialect.read_time(row[4]),
        )
