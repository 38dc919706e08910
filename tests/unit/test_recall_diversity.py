"""Recall's diversity (SPEC §4), pure: maximal marginal relevance over the fused ranking's first
items (off as shipped; bench/README.md, "Diversity in the block")."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from memoryd.recall.score_policy import Scored, diversify

from .recall_policy_support import POLICY, memory

ON = replace(POLICY, diversity_weight=0.5, diversity_floor=0.7)


def scored(memory_id: str, score: float) -> Scored:
    return Scored(memory(memory_id), score, score, 1.0, 1.0, 0.0, {"vector": 1})


def unit(*values: float) -> np.ndarray:
    vector = np.asarray(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


# "a" the best; "b" says it again (cosine 0.99); "c" says something else.
ITEMS = (scored("a", 0.50), scored("b", 0.45), scored("c", 0.40))
VECTORS = {"a": unit(1, 0, 0), "b": unit(1, 0.15, 0), "c": unit(0, 1, 0)}


def test_off_as_shipped_the_ranking_is_unchanged() -> None:
    assert diversify(ITEMS, VECTORS, POLICY) == ITEMS


def test_a_memory_that_says_a_better_one_again_yields_its_place() -> None:
    ranked = diversify(ITEMS, VECTORS, ON)

    assert [s.memory.id for s in ranked] == ["a", "c", "b"]
    again = ranked[2]
    assert again.similar is not None and again.similar > 0.98
    # Lowered by weight × the best score × (cosine − floor); the others keep their scores.
    assert again.score == np.float64(0.45 - 0.5 * 0.50 * (again.similar - 0.7))
    assert ranked[0] == ITEMS[0]
    assert ranked[1].score == 0.40


def test_closeness_under_the_floor_costs_nothing() -> None:
    apart = {**VECTORS, "b": unit(1, 0, 1.2)}  # cosine 0.64 to "a", under the floor 0.7

    ranked = diversify(ITEMS, apart, ON)

    assert [(s.memory.id, s.score) for s in ranked] == [("a", 0.5), ("b", 0.45), ("c", 0.4)]


def test_a_memory_without_a_vector_is_never_lowered() -> None:
    ranked = diversify(ITEMS, {"a": VECTORS["a"], "c": VECTORS["c"]}, ON)

    assert [(s.memory.id, s.score) for s in ranked] == [("a", 0.5), ("b", 0.45), ("c", 0.4)]


def test_only_the_first_diversity_depth_items_are_chosen_again() -> None:
    shallow = replace(ON, diversity_depth=2)
    items = (*ITEMS, scored("d", 0.30))
    vectors = {**VECTORS, "d": VECTORS["a"]}

    ranked = diversify(items, vectors, shallow)

    # "b" is lowered below "c"; "c" and "d" (a copy of "a"), under the depth, keep their scores.
    assert [s.memory.id for s in ranked] == ["a", "c", "b", "d"]
    assert (ranked[1].score, ranked[3].score) == (0.40, 0.30)
    assert ranked[2].score < 0.40


@given(
    scores=st.lists(st.floats(0.01, 1.0), min_size=1, max_size=12),
    data=st.data(),
    weight=st.floats(0.0, 2.0),
    floor=st.floats(0.0, 0.95),
)
def test_the_best_stays_first_and_no_score_rises(
    scores: list[float], data: st.DataObject, weight: float, floor: float
) -> None:
    items = tuple(scored(f"m{i:02d}", s) for i, s in enumerate(sorted(scores, reverse=True)))
    angles = data.draw(st.lists(st.floats(0, 3.1), min_size=len(items), max_size=len(items)))
    vectors = {
        s.memory.id: unit(np.cos(t), np.sin(t), 0.1) for s, t in zip(items, angles, strict=True)
    }
    policy = replace(POLICY, diversity_weight=weight, diversity_floor=floor)

    ranked = diversify(items, vectors, policy)

    assert ranked[0].memory.id == items[0].memory.id and ranked[0].score == items[0].score
    assert sorted(s.memory.id for s in ranked) == sorted(s.memory.id for s in items)
    before = {s.memory.id: s.score for s in items}
    assert all(s.score <= before[s.memory.id] + 1e-12 for s in ranked)
    assert [s.score for s in ranked] == sorted((s.score for s in ranked), reverse=True)
