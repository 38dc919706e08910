"""Recall's new-word lift (SPEC §4), pure: an item holding a query word no better item holds is
raised among the fused ranking's first items (off as shipped; bench/README.md, "A word of the
question not yet covered")."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given
from hypothesis import strategies as st

from memoryd.recall.score_policy import Scored, lift_novel

from .recall_policy_support import POLICY, memory

ON = replace(POLICY, novelty_bonus=0.1)


def scored(memory_id: str, score: float) -> Scored:
    return Scored(memory(memory_id), score, score, 1.0, 1.0, 0.0, {"text": 1})


# "When did I start the course and finish the thesis?": "a" and "b" hold "course", "c" the
# thesis, under them.
ITEMS = (scored("a", 0.50), scored("b", 0.47), scored("c", 0.44), scored("d", 0.30))
WORDS = {
    "a": frozenset({"course", "start"}),
    "b": frozenset({"course"}),
    "c": frozenset({"thesis", "finish"}),
    "d": frozenset({"course"}),
}


def test_off_as_shipped_the_ranking_is_unchanged() -> None:
    assert lift_novel(ITEMS, WORDS, POLICY) == ITEMS


def test_a_memory_holding_a_word_no_better_one_holds_is_raised() -> None:
    ranked = lift_novel(ITEMS, WORDS, ON)

    assert [s.memory.id for s in ranked] == ["a", "c", "b", "d"]
    lifted = ranked[1]
    # Raised by the bonus × the best score, and it says by which words.
    assert lifted.score == 0.44 + 0.1 * 0.50
    assert lifted.lifted == lifted.score - 0.44
    assert lifted.novel == ("finish", "thesis")
    # The best and the ones holding only covered words keep their scores.
    assert ranked[0] == ITEMS[0]
    assert [(s.score, s.novel) for s in ranked[2:]] == [(0.47, ()), (0.30, ())]


def test_a_word_lifts_only_the_first_item_holding_it() -> None:
    words = {**WORDS, "b": frozenset({"thesis"}), "d": frozenset({"thesis"})}

    ranked = lift_novel(ITEMS, words, ON)

    assert [(s.memory.id, s.novel) for s in ranked] == [
        ("a", ()),
        ("b", ("thesis",)),
        ("c", ("finish",)),
        ("d", ()),
    ]
    assert ranked[3].score == 0.30


def test_the_best_stays_first_and_no_item_rises_above_it() -> None:
    close = (scored("a", 0.50), scored("c", 0.49))

    ranked = lift_novel(close, WORDS, replace(POLICY, novelty_bonus=0.5))

    assert [(s.memory.id, s.score) for s in ranked] == [("a", 0.50), ("c", 0.50)]


def test_only_the_first_novelty_depth_items_are_raised() -> None:
    ranked = lift_novel(ITEMS, WORDS, replace(ON, novelty_depth=2))

    assert ranked == ITEMS


@given(
    st.lists(
        st.tuples(
            st.floats(0.01, 1.0), st.frozensets(st.sampled_from(["x", "y", "z", "w"]), max_size=3)
        ),
        min_size=1,
        max_size=12,
    ),
    st.floats(0.0, 1.0),
)
def test_the_same_items_best_first_none_lowered(
    drawn: list[tuple[float, frozenset[str]]], bonus: float
) -> None:
    drawn.sort(key=lambda pair: -pair[0])
    items = tuple(scored(f"m{i}", score) for i, (score, _) in enumerate(drawn))
    words = {f"m{i}": held for i, (_, held) in enumerate(drawn)}

    ranked = lift_novel(items, words, replace(POLICY, novelty_bonus=bonus))

    assert sorted(s.memory.id for s in ranked) == sorted(s.memory.id for s in items)
    assert ranked[0] == items[0]
    scores = [s.score for s in ranked]
    assert scores == sorted(scores, reverse=True)
    before = {s.memory.id: s.score for s in items}
    assert all(before[s.memory.id] <= s.score <= items[0].score for s in ranked)
    assert all(s.novel or s.score == before[s.memory.id] for s in ranked)
