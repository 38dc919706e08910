"""What the entity and time legs hand on (evidence_policy.handed_on): their first few, and
below them only what another leg found too."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memoryd.recall.evidence_policy import handed_on

_IDS = st.lists(st.sampled_from([f"m{i}" for i in range(40)]), unique=True, max_size=30)


def test_a_deep_name_hit_stays_only_when_another_leg_found_it() -> None:
    rankings = {
        "entity": ["a", "b", "c", "d", "e"],
        "time": ["e", "x"],
        "vector": ["d", "y"],
    }

    kept = handed_on(rankings, {"entity": 2, "time": 1})

    assert kept == {"entity": ["a", "b", "d", "e"], "time": ["e"], "vector": ["d", "y"]}


@given(
    rankings=st.dictionaries(st.sampled_from(["vector", "text", "entity", "time"]), _IDS),
    entity=st.integers(1, 10),
    time=st.integers(1, 10),
)
def test_every_leg_keeps_its_order_its_first_few_and_what_another_leg_found(
    rankings: dict[str, list[str]], entity: int, time: int
) -> None:
    bounds = {"entity": entity, "time": time}

    kept = handed_on(rankings, bounds)

    assert kept.keys() == rankings.keys()
    for leg, ranked in rankings.items():
        others = {i for other, ids in rankings.items() if other != leg for i in ids}
        bound = bounds.get(leg, len(ranked))
        expected = [i for n, i in enumerate(ranked) if n < bound or i in others]
        assert kept[leg] == expected
    # Every memory two legs found is still a candidate.
    for leg, ranked in rankings.items():
        for other, ids in rankings.items():
            if other != leg:
                assert set(ranked) & set(ids) <= set(kept[leg])
