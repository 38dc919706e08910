"""The local embedder (SPEC §8): MiniLM int8 on onnxruntime, 384-d unit vectors, windowed."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from memoryd.providers.embedder import (
    ATTENTION_BUDGET,
    BATCH_SIZE,
    LOCAL_DIMENSION,
    WINDOW_PIECES,
    LocalMiniLM,
    minilm_tokenizer_file,
    plan_batches,
)

COOKING = (
    "We chopped onions and garlic, browned them slowly in olive oil, added tomatoes and basil, "
    "then let the sauce simmer for an hour while the bread rose in a warm corner of the kitchen. "
)
LONG_COOKING = COOKING * 8  # about 300 word pieces: more than one window
BLACK_HOLE = (
    "The black hole at the centre of the galaxy tore apart a passing star and the telescope "
    "recorded a burst of x-rays that lasted for several days."
)
GARDEN = "The roses in the garden bloomed early this spring after weeks of warm rain."

fast = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_identity_of_the_model(embedder: LocalMiniLM) -> None:
    assert embedder.model == "all-MiniLM-L6-v2-int8-onnx"
    assert embedder.dimension == LOCAL_DIMENSION == 384


def test_vectors_have_384_dimensions_and_unit_norm(embedder: LocalMiniLM) -> None:
    vectors = embedder.embed(["Lives in Lisbon", "Had lunch with Ana", COOKING])
    assert vectors.shape == (3, 384)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_empty_list_gives_an_empty_matrix(embedder: LocalMiniLM) -> None:
    vectors = embedder.embed([])
    assert vectors.shape == (0, 384)


def test_paraphrase_is_closer_than_an_unrelated_sentence(embedder: LocalMiniLM) -> None:
    statement, paraphrase, unrelated = embedder.embed(
        ["I live in Lisbon", "My home is in Lisbon", "The stock market fell sharply today"]
    )
    assert cosine(statement, paraphrase) > cosine(statement, unrelated) + 0.3


def test_a_new_value_for_the_same_fact_is_not_a_near_duplicate(embedder: LocalMiniLM) -> None:
    """The policy treats cosine >= 0.95 as repetition; a changed fact must stay below it."""
    bali, lisbon = embedder.embed(["The owner lives in Bali", "The owner lives in Lisbon"])
    assert cosine(bali, lisbon) < 0.95


def test_a_trivially_reworded_repeat_is_a_near_duplicate(embedder: LocalMiniLM) -> None:
    """Case and a trailing full stop must not turn a repetition into a new memory."""
    first, again = embedder.embed(["Lives in Lisbon", "lives in lisbon."])
    assert cosine(first, again) >= 0.95


def test_text_beyond_256_pieces_still_counts(embedder: LocalMiniLM) -> None:
    """Without windowing, anything after the first 256 word pieces would be ignored."""
    with_black_hole, with_garden, cooking_only, black_hole = embedder.embed(
        [f"{LONG_COOKING}{BLACK_HOLE}", f"{LONG_COOKING}{GARDEN}", LONG_COOKING, BLACK_HOLE]
    )
    assert cosine(with_black_hole, with_garden) < 0.99
    assert cosine(with_black_hole, black_hole) > cosine(cooking_only, black_hole) + 0.05


def test_long_text_differs_from_its_first_256_pieces_alone(embedder: LocalMiniLM) -> None:
    tokenizer = Tokenizer.from_file(str(minilm_tokenizer_file()))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    text = f"{LONG_COOKING}{BLACK_HOLE}"
    encoding = tokenizer.encode(text, add_special_tokens=False)
    assert len(encoding.ids) > 256  # too long for one window
    first_window_end = encoding.offsets[256 - 2 - 1][1]  # room for [CLS] and [SEP]
    whole, first_window = embedder.embed([text, text[:first_window_end]])
    assert cosine(whole, first_window) < 0.99
    assert np.isclose(np.linalg.norm(whole), 1.0, atol=1e-5)


def test_same_text_gives_the_same_vector(embedder: LocalMiniLM) -> None:
    first = embedder.embed(["Had lunch with Ana at Cervejaria Ramiro"])[0]
    second = embedder.embed(["Had lunch with Ana at Cervejaria Ramiro"])[0]
    assert np.allclose(first, second, atol=1e-6)


@pytest.mark.parametrize("text", ["", " ", "\x00", "\U0001f642" * 600])
def test_odd_texts_still_embed_to_unit_vectors(embedder: LocalMiniLM, text: str) -> None:
    (vector,) = embedder.embed([text])
    assert np.isfinite(vector).all()
    assert np.isclose(np.linalg.norm(vector), 1.0, atol=1e-5)


@fast
@given(st.lists(st.text(max_size=60), min_size=1, max_size=4))
def test_any_texts_embed_to_one_unit_row_each(embedder: LocalMiniLM, texts: list[str]) -> None:
    vectors = embedder.embed(texts)
    assert vectors.shape == (len(texts), 384)
    assert np.isfinite(vectors).all()
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


@fast
@given(st.text(min_size=1, max_size=60), st.lists(st.text(max_size=200), max_size=3))
def test_a_vector_does_not_depend_on_its_batch(
    embedder: LocalMiniLM, text: str, others: list[str]
) -> None:
    """Recall must rank a memory the same however it was batched when stored."""
    alone = embedder.embed([text])[0]
    batched = embedder.embed([*others, text])[-1]
    assert cosine(alone, batched) > 0.999


@given(st.lists(st.integers(min_value=1, max_value=WINDOW_PIECES), max_size=200))
def test_batches_cover_every_window_once_within_the_attention_budget(lengths: list[int]) -> None:
    batches = plan_batches(lengths)

    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    for batch in batches:
        width = max(lengths[i] for i in batch)
        assert len(batch) <= BATCH_SIZE
        assert len(batch) == 1 or len(batch) * width**2 <= ATTENTION_BUDGET


def test_full_windows_go_two_a_call_and_short_ones_thirty_two() -> None:
    assert [len(b) for b in plan_batches([WINDOW_PIECES] * 5)] == [2, 2, 1]
    assert [len(b) for b in plan_batches([12] * 40)] == [32, 8]
