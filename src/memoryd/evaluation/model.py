"""The owner's evaluation case as a record: a question, the memories recall should find for it
and those it should not show (the storage keeps these; ``policy.py`` plans and scores them)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TypedDict


class EvalCaseJson(TypedDict):
    # An evaluation case.
    id: str
    question: str
    expected: list[str]
    noise: list[str]
    created_at: str


@dataclass(frozen=True)
class EvalCase:
    """A question and what recall should (``expected``) and should not (``noise``) show."""

    id: str
    question: str
    expected: tuple[str, ...]
    noise: tuple[str, ...]
    created_at: datetime

    def to_json(self) -> EvalCaseJson:
        """The public JSON shape (CLI ``--json``, HTTP, export)."""
        return {
            "id": self.id,
            "question": self.question,
            "expected": list(self.expected),
            "noise": list(self.noise),
            "created_at": self.created_at.isoformat(),
        }
