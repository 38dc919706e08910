"""The evaluation set's pure rules: a repeated question joins its case and the latest verdict
on a memory wins; candidate recall settings are checked by key, type and range."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from memoryd.errors import InvalidInputError
from memoryd.evaluation.policy import (
    CaseScore,
    EvalCase,
    EvalReport,
    parse_overrides,
    plan_case,
    policy_with,
)
from memoryd.recall.policy import RecallPolicy

AT = datetime(2026, 3, 1, tzinfo=UTC)


def test_a_later_verdict_moves_a_memory_and_keeps_the_case() -> None:
    first = plan_case(None, "C1", " Where is my kayak? ", ["A", "B"], ["N"], AT)
    later = plan_case(first, "C2", "Where is my kayak?", ["N"], ["B"], AT.replace(day=2))

    assert (first.id, first.question, first.expected, first.noise) == (
        "C1", "Where is my kayak?", ("A", "B"), ("N",))  # fmt: skip
    assert (later.id, later.expected, later.noise, later.created_at) == (
        "C1",
        ("A", "N"),
        ("B",),
        AT,
    )
    with pytest.raises(InvalidInputError, match="NUL"):
        plan_case(None, "C3", "kayak\x00", ["A"], [], AT)


def test_scores_average_over_cases_that_expect_something() -> None:
    expects = EvalCase("C1", "q1", ("A", "B"), ("N",), AT)
    noise_only = EvalCase("C2", "q2", (), ("M",), AT)
    report = EvalReport("current", 2, (
        CaseScore(expects, top=("A", "X"), block=("A", "N")),
        CaseScore(noise_only, top=("M",), block=("M",)),
    ))  # fmt: skip

    assert (report.recall_at_k, report.block_recall) == (0.5, 0.5)
    assert (report.noise_shown, report.noise_total) == (2, 2)
    assert report.scores[1].recall_at_k is None


def test_candidate_settings_are_checked_by_key_type_and_range() -> None:
    chosen = parse_overrides(["recall.vector_gate = 0.3", "recall.leg_depth=20",
                              "recall.window_bounds_events=off"])  # fmt: skip
    policy = policy_with(RecallPolicy(), chosen)

    assert (policy.vector_gate, policy.leg_depth, policy.window_bounds_events) == (0.3, 20, False)
    for bad, problem in (
        ("vector_gate=0.3", "unknown recall setting 'vector_gate'"),
        ("recall.type_weights=1", "unknown recall setting"),
        ("recall.leg_depth=2.5", "must be a whole number"),
        ("recall.vector_gate=nan", "between 0 and"),
        ("recall.relative_cut=-1", "between 0 and"),
        ("recall.window_bounds_events=maybe", "true or false"),
        ("recall.vector_gate", "is not KEY=VALUE"),
    ):
        with pytest.raises(InvalidInputError, match=problem) as refused:
            parse_overrides([bad])
        assert refused.value.fields == ("set",)
