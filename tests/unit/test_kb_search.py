"""search_kb's ranking (SPEC §6): gated legs, weighted reciprocal-rank fusion, pure."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.kb.model import Chunk, ChunkKey, SourceType
from memoryd.kb.search import (
    DocumentWeighting,
    KbSearchPolicy,
    RankedChunk,
    fuse,
    gate_keyword,
    gate_vector,
    stem,
)
from memoryd.kb.word_sets import shared_words
from memoryd.words import query_terms

POLICY = KbSearchPolicy()
NO_PINS: frozenset[str] = frozenset()
CURATED = DocumentWeighting(SourceType.CURATED, "main")
MISSION = DocumentWeighting(SourceType.MISSION, "main")
WEB = DocumentWeighting(SourceType.WEB, "main")

ranking = settings(max_examples=150, deadline=None)


def key(document: str, position: int = 0) -> ChunkKey:
    return ChunkKey(document, position)


def search(
    vector: list[tuple[ChunkKey, float]] | None = None,
    keyword: list[ChunkKey] | None = None,
    *,
    shared: dict[ChunkKey, int] | None = None,
    documents: dict[str, DocumentWeighting] | None = None,
    pinned: frozenset[str] = NO_PINS,
    policy: KbSearchPolicy = POLICY,
    limit: int = 20,
) -> list[RankedChunk]:
    """fuse() with every document curated and every keyword hit sharing three words unless
    told otherwise."""
    vector = vector or []
    keyword = keyword or []
    if shared is None:
        shared = {k: 3 for k in keyword}
    if documents is None:
        documents = {k.document_id: CURATED for k, _ in vector} | {
            k.document_id: CURATED for k in keyword
        }
    return fuse(vector, keyword, shared, documents, pinned, policy, limit)


def keys(results: list[RankedChunk]) -> list[ChunkKey]:
    return [r.key for r in results]


# --- the gates --------------------------------------------------------------------------------


def test_vector_hits_below_cosine_a_quarter_are_dropped_and_at_a_quarter_kept() -> None:
    hits = [(key("a"), 0.9), (key("b"), 0.25), (key("c"), 0.2499), (key("d"), -0.5)]
    assert gate_vector(hits, POLICY) == [(key("a"), 0.9), (key("b"), 0.25)]
    assert keys(search(hits)) == [key("a"), key("b")]


def test_the_cosine_floor_follows_the_policy() -> None:
    hits = [(key("a"), 0.5), (key("b"), 0.3)]
    assert gate_vector(hits, KbSearchPolicy(min_cosine=0.4)) == [(key("a"), 0.5)]


def test_keyword_hits_sharing_fewer_than_two_words_are_dropped() -> None:
    hits = [key("a"), key("b"), key("c"), key("d")]
    shared = {key("a"): 1, key("b"): 2, key("c"): 0, key("d"): 7}
    assert gate_keyword(hits, shared, POLICY) == [key("b"), key("d")]
    assert gate_keyword([key("unknown")], {}, POLICY) == []
    assert set(keys(search(keyword=hits, shared=shared))) == {key("b"), key("d")}


def test_a_dropped_vector_hit_can_still_come_back_on_its_keywords() -> None:
    (result,) = search([(key("a"), 0.1)], [key("a")], shared={key("a"): 2})
    assert result.key == key("a")
    assert result.cosine is None and result.vector_rank is None
    assert result.keyword_rank == 1 and result.shared_words == 2


def test_ranks_are_counted_after_the_gate() -> None:
    """A hit dropped by the gate does not push the hits behind it down a rank."""
    (result,) = search([(key("weak"), 0.1), (key("a"), 0.8)])
    assert result.vector_rank == 1
    assert result.score == pytest.approx(1 / 61)


# --- fusion -----------------------------------------------------------------------------------


def test_a_vector_hit_at_rank_one_scores_one_over_sixty_one() -> None:
    (result,) = search([(key("a"), 0.7)])
    assert result.score == pytest.approx(1 / 61)
    assert (result.cosine, result.vector_rank, result.keyword_rank) == (0.7, 1, None)
    assert result.weight == 1.0


def test_a_keyword_only_hit_counts_as_much_as_a_vector_hit_of_the_same_rank() -> None:
    vector_only = search([(key("v"), 0.6)])[0]
    keyword_only = search(keyword=[key("k")])[0]
    assert keyword_only.score == pytest.approx(vector_only.score)
    tenth = search(keyword=[key("k")], policy=KbSearchPolicy(keyword_weight=0.1))[0]
    assert tenth.score == pytest.approx(vector_only.score / 10)


def test_the_best_keyword_hit_outranks_a_far_vector_hit() -> None:
    vector = [(key(f"v{i:03d}"), 0.5) for i in range(100)]
    results = search(vector, [key("k")], limit=101)
    # Equal first places (1/61 each) go by document id.
    assert keys(results)[:2] == [key("k"), key("v000")]
    assert results[-1].key == key("v099")


def test_a_hit_in_both_legs_adds_both_legs_points() -> None:
    (result,) = search([(key("a"), 0.6)], [key("a")])
    assert result.score == pytest.approx(2 / 61)
    assert (result.vector_rank, result.keyword_rank, result.shared_words) == (1, 1, 3)


def test_source_weights_order_curated_over_mission_over_web() -> None:
    # Web is ranked best by the vector leg and curated worst; the weights turn that around.
    documents = {"web": WEB, "mission": MISSION, "curated": CURATED}
    vector = [(key("web"), 0.6), (key("mission"), 0.6), (key("curated"), 0.6)]
    results = search(vector, documents=documents)
    assert keys(results) == [key("curated"), key("mission"), key("web")]
    assert [r.weight for r in results] == [1.0, 0.8, 0.6]
    assert results[0].score == pytest.approx(1.0 / 63)
    assert results[1].score == pytest.approx(0.8 / 62)
    assert results[2].score == pytest.approx(0.6 / 61)


def test_source_weights_scale_the_score_exactly() -> None:
    for weighting, weight in ((CURATED, 1.0), (MISSION, 0.8), (WEB, 0.6)):
        (result,) = search([(key("a"), 0.6)], documents={"a": weighting})
        assert result.score == pytest.approx(weight / 61)


def test_a_pinned_collection_is_weighted_half_as_much_again_not_filtered() -> None:
    documents = {
        "loose": DocumentWeighting(SourceType.CURATED, "inbox"),
        "pinned": DocumentWeighting(SourceType.CURATED, "project"),
        "web-pinned": DocumentWeighting(SourceType.WEB, "project"),
    }
    vector = [(key("loose"), 0.9), (key("pinned"), 0.8), (key("web-pinned"), 0.7)]
    results = search(vector, documents=documents, pinned=frozenset({"project"}))
    assert keys(results) == [key("pinned"), key("loose"), key("web-pinned")]
    assert [r.weight for r in results] == pytest.approx([1.5, 1.0, 0.9])
    assert results[0].score == pytest.approx(1.5 / 62)
    # Without the pin the order is the vector leg's own.
    assert keys(search(vector, documents=documents)) == [
        key("loose"),
        key("pinned"),
        key("web-pinned"),
    ]


def test_every_good_chunk_of_one_long_document_is_returned() -> None:
    """A question usually targets one long document: its best chunks are not cut."""
    vector = [(key("big", p), 0.9) for p in range(5)] + [(key("other"), 0.3)]
    results = search(vector)
    assert keys(results) == [*(key("big", p) for p in range(5)), key("other")]


def test_at_equal_score_other_documents_first_chunks_come_before_later_chunks() -> None:
    # big/0 and big/1 lead the two legs (1/61 each); small/0 and big/2 come second (1/62).
    tied = search([(key("big", 0), 0.9), (key("small", 0), 0.9)], [key("big", 1), key("big", 2)])
    assert [r.score for r in tied] == pytest.approx([1 / 61, 1 / 61, 1 / 62, 1 / 62])
    assert keys(tied) == [key("big", 0), key("big", 1), key("small", 0), key("big", 2)]


def test_a_per_document_cap_is_still_available_as_a_policy() -> None:
    vector = [(key("big", p), 0.9) for p in range(5)]
    assert len(search(vector, policy=KbSearchPolicy(per_document=3))) == 3


def test_the_limit_keeps_the_best_results() -> None:
    vector = [(key(f"d{i}"), 0.9) for i in range(10)]
    assert keys(search(vector, limit=3)) == [key("d0"), key("d1"), key("d2")]
    assert len(search(vector, limit=1)) == 1
    assert len(search(vector, limit=20)) == 10


def test_capped_chunks_do_not_use_up_the_limit() -> None:
    vector = [(key("big", p), 0.9) for p in range(6)] + [(key("a"), 0.5), (key("b"), 0.5)]
    capped = KbSearchPolicy(per_document=2)
    assert keys(search(vector, limit=4, policy=capped)) == [
        key("big", 0),
        key("big", 1),
        key("a"),
        key("b"),
    ]


def test_hits_of_unknown_documents_are_ignored() -> None:
    results = search([(key("gone"), 0.9), (key("here"), 0.5)], documents={"here": CURATED})
    assert keys(results) == [key("here")]


def test_nothing_found_is_an_empty_list() -> None:
    assert search() == []
    assert search([(key("a"), 0.1)], [key("b")], shared={key("b"): 1}) == []


def test_ties_are_ordered_by_document_then_position() -> None:
    # With equal leg weights a vector rank 1 and a keyword rank 1 score exactly the same.
    even = KbSearchPolicy(keyword_weight=1.0)
    results = search(
        [(key("b", 4), 0.9), (key("a", 9), 0.8)],
        [key("a", 2), key("b", 1)],
        policy=even,
    )
    assert [r.score for r in results] == pytest.approx([1 / 61, 1 / 61, 1 / 62, 1 / 62])
    assert keys(results) == [key("a", 2), key("b", 4), key("a", 9), key("b", 1)]


def test_the_same_hits_always_give_the_same_order() -> None:
    documents = {f"d{i}": (CURATED, MISSION, WEB)[i % 3] for i in range(12)}
    vector = [(key(f"d{i}", i % 4), 0.3 + i / 100) for i in range(12)]
    keyword = [key(f"d{11 - i}", i % 4) for i in range(12)]
    first = search(vector, keyword, documents=documents)
    for _ in range(5):
        again = search(list(vector), list(keyword), documents=dict(reversed(documents.items())))
        assert again == first


# --- properties -------------------------------------------------------------------------------


@st.composite
def legs(
    draw: st.DrawFn,
) -> tuple[list[tuple[ChunkKey, float]], list[ChunkKey], dict[ChunkKey, int]]:
    pool = [key(f"d{d}", p) for d in range(6) for p in range(4)]
    vector_keys = draw(st.lists(st.sampled_from(pool), unique=True, max_size=15))
    cosines = sorted(
        draw(st.lists(st.floats(-1, 1), min_size=len(vector_keys), max_size=len(vector_keys))),
        reverse=True,
    )
    keyword = draw(st.lists(st.sampled_from(pool), unique=True, max_size=15))
    shared = {k: draw(st.integers(0, 5)) for k in keyword}
    return list(zip(vector_keys, cosines, strict=True)), keyword, shared


documents_by_id = st.fixed_dictionaries(
    {
        f"d{d}": st.builds(
            DocumentWeighting, st.sampled_from(list(SourceType)), st.sampled_from(["a", "b"])
        )
        for d in range(6)
    }
)


@ranking
@given(
    hits=legs(),
    documents=documents_by_id,
    pinned=st.frozensets(st.sampled_from(["a", "b"])),
    limit=st.integers(1, 20),
)
def test_results_are_gated_limited_and_best_first(
    hits: tuple[list[tuple[ChunkKey, float]], list[ChunkKey], dict[ChunkKey, int]],
    documents: dict[str, DocumentWeighting],
    pinned: frozenset[str],
    limit: int,
) -> None:
    vector, keyword, shared = hits
    results = fuse(vector, keyword, shared, documents, pinned, POLICY, limit)
    assert len(results) <= limit
    assert len({r.key for r in results}) == len(results)
    scores = [r.score for r in results]
    assert scores == sorted(scores, reverse=True)
    for result in results:
        passed_vector = result.cosine is not None and result.cosine >= 0.25
        passed_keyword = result.shared_words >= 2 and result.keyword_rank is not None
        assert passed_vector or passed_keyword
        assert result.score > 0
    # Nothing was left out short of the limit, and nothing scoring higher than a result.
    gated = {k for k, c in vector if c >= 0.25} | {k for k in keyword if shared[k] >= 2}
    gated = {k for k in gated if k.document_id in documents}
    if len(results) < limit:
        assert {r.key for r in results} == gated
    everything = fuse(vector, keyword, shared, documents, pinned, POLICY, 100)
    assert [r.key for r in everything[: len(results)]] == [r.key for r in results]


WORDS = st.sampled_from(
    "cat cats caties category categories class classes pass passes passing passed sales sale "
    "sal salient net nets netting cost costs costed it's apple's apple don't during dur "
    "property properties propert 2022 22 7 a x is the equipment equipping".split()
)


@given(
    st.lists(WORDS, min_size=1, max_size=6),
    st.lists(st.lists(WORDS, max_size=30), min_size=1, max_size=4),
)
@ranking
def test_shared_words_counts_the_query_stems_a_chunk_holds(
    query: list[str], texts: list[list[str]]
) -> None:
    chunks = {
        key(f"d{index}"): Chunk(
            document_id=f"d{index}",
            position=0,
            headings=(),
            breadcrumb="Report",
            text=" ".join(words).title() if index % 2 else " ".join(words),
            tokens=len(words),
        )
        for index, words in enumerate(texts)
    }
    terms = query_terms(" ".join(query))

    counted = shared_words(terms, chunks)

    stems = {stem(t) for t in terms}
    for chunk_key, chunk in chunks.items():
        held = {stem(t) for t in query_terms(f"{chunk.breadcrumb}\n{chunk.text}")}
        assert counted[chunk_key] == len(stems & held)


def test_row_label_hits_add_half_a_vector_leg_above_their_cosine_floor_only() -> None:
    near = [(key("a", 3), 0.62), (key("b", 1), 0.29)]  # b's row is under the 0.3 floor
    documents = {"a": CURATED, "b": CURATED}

    ranked = fuse([], [], {}, documents, NO_PINS, POLICY, 10, row_vector_hits=near)

    [result] = ranked
    assert result.key == key("a", 3) and result.row_vector_rank == 1
    assert result.score == pytest.approx(0.5 / 61)
    # Within the named documents the same rank counts again, at the route weight.
    both = fuse(
        [], [], {}, documents, NO_PINS, POLICY, 10, row_vector_hits=near,
        routed_row_vector_hits=near[:1],
    )  # fmt: skip
    assert both[0].routed_row_vector_rank == 1
    assert both[0].score == pytest.approx(0.5 / 61 + POLICY.route_weight * 0.5 / 61)
    off = KbSearchPolicy(row_vector_weight=0.0)
    assert fuse([], [], {}, documents, NO_PINS, off, 10, row_vector_hits=near) == []
