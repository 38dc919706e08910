"""The candidate signal measured by bench/fit_recall_score.py --definite-grade
(bench/definite_reference.py): a bare "the …" of the writer's world, not a fact of the world."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[2] / "bench" / "definite_reference.py"
_SPEC = importlib.util.spec_from_file_location("definite_reference", _PATH)
assert _SPEC is not None and _SPEC.loader is not None
_MODULE = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_MODULE)
definite_reference = _MODULE.definite_reference


@pytest.mark.parametrize(
    "message",
    [
        "Where's the hammer?",
        "Which school is the boy at?",
        "Who in the family makes wine?",
        "When does the landlord get his money?",
    ],
)
def test_a_bare_definite_reference_counts(message: str) -> None:
    assert definite_reference(message)


@pytest.mark.parametrize(
    "message",
    [
        "What is the capital of Mongolia?",
        "What is the largest desert in the world?",
        "Who was the first emperor of Rome?",
        "When did the Berlin Wall fall?",
        "What is the square root of 144?",
        "How can I undo the last git commit?",
        "What is a good name for a cat?",
    ],
)
def test_a_fact_of_the_world_does_not(message: str) -> None:
    # One complement, rank or capital makes the whole message general.
    assert not definite_reference(message)
