"""The owner's evaluation set, pure: what a case holds, how a new verdict joins a case, how one
recall is scored against it, and the recall settings a candidate run may change.

A case is a question with the memories recall should find for it (``expected``) and those it
should not show (``noise``). A run scores each case three ways: recall@k (expected memories
among the top k of the ranking ``search_memory`` returns), block recall (expected memories in
the fenced block recall packs) and noise (noise memories in that block).
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypedDict

from memoryd.errors import InvalidInputError
from memoryd.evaluation.model import EvalCase as EvalCase  # the plans return it
from memoryd.recall.policy import RecallPolicy
from memoryd.words import has_lone_surrogate

# A question is a message to the assistant; recall reads no more of one than this anyway.
MAX_QUESTION_CHARS = 2_000
DEFAULT_K = 5
MAX_K = 200
SETTING_PREFIX = "recall."
# No recall number means anything past this (depths, budgets, characters are far below).
MAX_SETTING = 1_000_000


def plan_case(
    existing: EvalCase | None,
    new_id: str,
    question: str,
    expected: Sequence[str],
    noise: Sequence[str],
    at: datetime,
) -> EvalCase:
    """The case after the owner's verdicts: a new case, or ``existing`` (the same question)
    with the new ids joined. The latest verdict on a memory wins: marking an expected memory
    as noise moves it. Raises InvalidInputError for an empty or too long question, no ids, or
    an id given as both."""
    text = question.strip()
    if has_lone_surrogate(text) or "\x00" in text:
        raise InvalidInputError(
            "the question holds a NUL character or invalid Unicode (a lone surrogate)",
            fields=("question",),
        )
    if not text:
        raise InvalidInputError("the question is empty; give the message to test recall with",
                                fields=("question",))  # fmt: skip
    if len(text) > MAX_QUESTION_CHARS:
        raise InvalidInputError(
            f"the question is {len(text)} characters; at most {MAX_QUESTION_CHARS} are kept",
            fields=("question",),
        )
    if not expected and not noise:
        raise InvalidInputError(
            "say which memories recall should find (expect) or should not show (noise)",
            fields=("expect", "noise"),
        )
    both = sorted(set(expected) & set(noise))
    if both:
        raise InvalidInputError(
            f"memory {both[0]} is given as both expected and noise; choose one",
            fields=("expect", "noise"),
        )
    old_expected = existing.expected if existing else ()
    old_noise = existing.noise if existing else ()
    kept_expected = [i for i in old_expected if i not in noise]
    kept_noise = [i for i in old_noise if i not in expected]
    return EvalCase(
        id=existing.id if existing else new_id,
        question=text,
        expected=tuple(dict.fromkeys([*kept_expected, *expected])),
        noise=tuple(dict.fromkeys([*kept_noise, *noise])),
        created_at=existing.created_at if existing else at,
    )


class EvalScoreJson(TypedDict):
    # A case's score.
    id: str
    question: str
    expected: list[str]
    noise: list[str]
    recall_at_k: float | None
    found_in_top_k: list[str]
    block_recall: float | None
    found_in_block: list[str]
    noise_in_block: list[str]
    inactive: list[str]


@dataclass(frozen=True)
class CaseScore:
    """One case against one configuration: the top-k ids, the block's ids, and the case's
    memories that are no longer active (superseded, archived, purged: recall cannot show
    them)."""

    case: EvalCase
    top: tuple[str, ...]
    block: tuple[str, ...]
    inactive: tuple[str, ...] = ()

    @property
    def found_in_top(self) -> tuple[str, ...]:
        """Expected memories among the top k."""
        return tuple(i for i in self.case.expected if i in self.top)

    @property
    def found_in_block(self) -> tuple[str, ...]:
        """Expected memories in the block."""
        return tuple(i for i in self.case.expected if i in self.block)

    @property
    def noise_in_block(self) -> tuple[str, ...]:
        """Noise memories in the block."""
        return tuple(i for i in self.case.noise if i in self.block)

    @property
    def recall_at_k(self) -> float | None:
        """Share of the expected memories in the top k (None: the case expects none)."""
        return _share(self.found_in_top, self.case.expected)

    @property
    def block_recall(self) -> float | None:
        """Share of the expected memories in the block (None: the case expects none)."""
        return _share(self.found_in_block, self.case.expected)

    def to_json(self) -> EvalScoreJson:
        """JSON shape, per case."""
        return {
            "id": self.case.id,
            "question": self.case.question,
            "expected": list(self.case.expected),
            "noise": list(self.case.noise),
            "recall_at_k": self.recall_at_k,
            "found_in_top_k": list(self.found_in_top),
            "block_recall": self.block_recall,
            "found_in_block": list(self.found_in_block),
            "noise_in_block": list(self.noise_in_block),
            "inactive": list(self.inactive),
        }


class EvalOverallJson(TypedDict):
    # The scores over every case.
    cases: int
    recall_at_k: float | None
    block_recall: float | None
    noise_in_block: int
    noise_total: int


class EvalReportJson(TypedDict):
    # One scoring of the evaluation set.
    label: str
    note: str
    k: int
    overall: EvalOverallJson
    cases: list[EvalScoreJson]


@dataclass(frozen=True)
class EvalReport:
    """Every case scored against one configuration (``label`` says which), and the totals:
    recall@k and block recall are averaged over the cases that expect something; noise is the
    number of noise memories shown, out of all the cases' noise memories."""

    label: str
    k: int
    scores: tuple[CaseScore, ...]
    # How the configuration was built, when it needs saying (a candidate embedder's space).
    note: str = ""

    @property
    def recall_at_k(self) -> float | None:
        """Mean recall@k over the cases that expect something."""
        return _mean([s.recall_at_k for s in self.scores])

    @property
    def block_recall(self) -> float | None:
        """Mean block recall over the cases that expect something."""
        return _mean([s.block_recall for s in self.scores])

    @property
    def noise_shown(self) -> int:
        """Noise memories that appeared in a block, over all cases."""
        return sum(len(s.noise_in_block) for s in self.scores)

    @property
    def noise_total(self) -> int:
        """Noise memories over all cases."""
        return sum(len(s.case.noise) for s in self.scores)

    def to_json(self) -> EvalReportJson:
        """JSON shape: the configuration, the totals and every case."""
        return {
            "label": self.label,
            "note": self.note,
            "k": self.k,
            "overall": {
                "cases": len(self.scores),
                "recall_at_k": self.recall_at_k,
                "block_recall": self.block_recall,
                "noise_in_block": self.noise_shown,
                "noise_total": self.noise_total,
            },
            "cases": [s.to_json() for s in self.scores],
        }


def _share(found: Sequence[str], wanted: Sequence[str]) -> float | None:
    return len(found) / len(wanted) if wanted else None


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


# ------------------------------------------------------------------ candidate recall settings


def recall_setting_keys() -> dict[str, type]:
    """Every recall setting a candidate run may change (``recall.vector_gate``, …): the
    RecallPolicy numbers and switches, by key, with their type."""
    kinds: dict[str, type] = {}
    for spec in dataclasses.fields(RecallPolicy):
        value = getattr(RecallPolicy(), spec.name)
        if isinstance(value, bool | int | float):
            kinds[SETTING_PREFIX + spec.name] = type(value)
    return kinds


def parse_overrides(pairs: Sequence[str]) -> dict[str, Any]:
    """``["recall.vector_gate=0.3", …]`` as ``{"recall.vector_gate": 0.3}``: each key a recall
    setting, each value of its type. Raises InvalidInputError (naming ``set``) for a pair
    without ``=``, an unknown key (with the closest one and every valid key) or a bad value."""
    keys = recall_setting_keys()
    chosen: dict[str, Any] = {}
    for pair in pairs:
        key, sign, text = pair.partition("=")
        key, text = key.strip(), text.strip()
        if not sign or not key:
            raise InvalidInputError(
                f"{pair!r} is not KEY=VALUE; e.g. recall.vector_gate=0.3", fields=("set",)
            )
        if key not in keys:
            close = difflib.get_close_matches(key, list(keys), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise InvalidInputError(
                f"unknown recall setting {key!r}{hint}; valid keys: {', '.join(keys)}",
                fields=("set",),
            )
        chosen[key] = _value(key, text, keys[key])
    return chosen


def policy_with(policy: RecallPolicy, overrides: Mapping[str, Any]) -> RecallPolicy:
    """``policy`` with the overridden settings (keys as :func:`parse_overrides` returns)."""
    changes = {key.removeprefix(SETTING_PREFIX): value for key, value in overrides.items()}
    return dataclasses.replace(policy, **changes)


def _value(key: str, text: str, kind: type) -> Any:
    if kind is bool:
        if text.lower() in ("true", "yes", "on", "1"):
            return True
        if text.lower() in ("false", "no", "off", "0"):
            return False
        raise InvalidInputError(f"{key} must be true or false, not {text!r}", fields=("set",))
    try:
        number = int(text) if kind is int else float(text)
    except ValueError:
        expected = "a whole number" if kind is int else "a number"
        raise InvalidInputError(
            f"{key} must be {expected}, not {text!r}", fields=("set",)
        ) from None
    if not 0 <= number <= MAX_SETTING:  # NaN and infinity fail this too
        raise InvalidInputError(
            f"{key} must be between 0 and {MAX_SETTING}, not {text!r}", fields=("set",)
        )
    return number


def overrides_label(overrides: Mapping[str, Any]) -> str:
    """``recall.vector_gate=0.3, …`` for a report's column."""
    return ", ".join(f"{key}={value}" for key, value in overrides.items())
