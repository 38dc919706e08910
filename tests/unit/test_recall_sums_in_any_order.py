"""Recall's word shares do not depend on the order a set iterates in.

A ``frozenset`` of strings iterates in an order that follows string hashing, which Python seeds
afresh in every process. A plain float sum taken in another order can differ in its last bit, and
a share that sits on a threshold then passes in one process and fails in the next. Each check
runs the same computation under several hash seeds and expects one answer.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

# Weights whose plain sum depends on the order they are added in (0.1 + 0.2 + 0.3 is
# 0.6000000000000001 one way and 0.6 another), spread over enough words that the seeds below
# iterate them in different orders.
_COVERAGE = """
from memoryd.recall.gate_policy import Reading
weights = {f"w{i}": 0.1 * (i % 3 + 1) + 1e-9 * i for i in range(12)}
reading = Reading(frozenset(), weights, 1.0)
print(repr(reading.coverage(frozenset(weights))))
"""

_EXCERPT = """
from memoryd.recall.excerpt_policy import _stem_of
print(_stem_of("well-known"), _stem_of("e-mail"))
"""


def _under_seeds(program: str, seeds: range) -> set[str]:
    outputs = set()
    for seed in seeds:
        env = {**os.environ, "PYTHONHASHSEED": str(seed)}
        done = subprocess.run(
            [sys.executable, "-c", program], env=env, capture_output=True, text=True, check=True
        )
        outputs.add(done.stdout.strip())
    return outputs


@pytest.mark.parametrize("program", [_COVERAGE, _EXCERPT], ids=["coverage", "excerpt-word"])
def test_the_same_answer_under_every_hash_seed(program: str) -> None:
    assert len(_under_seeds(program, range(12))) == 1
