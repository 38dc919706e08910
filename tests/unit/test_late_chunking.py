"""A message's sentences pooled from the message's own model run ("late chunking";
providers/embedder.py ``embed_spans``, recall/sentences_policy.py ``sentence_spans``,
recall/vector_legs.py ``late_begun``)."""

from __future__ import annotations

import numpy as np
import pytest

from memoryd.providers.embedder import LocalMiniLM, span_tokens, span_vectors
from memoryd.recall.sentences_policy import sentence_spans, sentences
from memoryd.recall.vector_legs import late_begun

GALLERY = (
    "I'm adding lazy loading to my café gallery — it uses Bootstrap 5.3.0!  "
    "How would you load the thumbnails (JPEG, ~40 kB) before the full pictures?"
)
LONG = "We chopped onions and garlic, then let the sauce simmer for an hour. " * 20


def unit(matrix: np.ndarray) -> np.ndarray:
    rows: np.ndarray = matrix / np.linalg.norm(matrix, axis=-1, keepdims=True)
    return rows


def test_each_sentence_is_found_where_it_stands_in_the_message() -> None:
    found = sentences(GALLERY, 3, 4)
    spans = sentence_spans(GALLERY, found)
    assert spans is not None
    assert [GALLERY[start:end] for start, end in spans] == list(found)


def test_a_sentence_not_in_the_message_as_it_is_has_no_span() -> None:
    assert sentence_spans("Where does Ana work? And what does she do there?", ("Ana work",)) == (
        (11, 19),
    )
    assert (
        sentence_spans("Where does work? What does she do there?", ("Where does Ana work?",))
        is None
    )
    # In order: a sentence is looked for after the one before it.
    assert sentence_spans("b a", ("a", "b")) is None


def test_a_span_vector_is_the_mean_of_its_tokens_states(embedder: LocalMiniLM) -> None:
    spans = sentence_spans(GALLERY, sentences(GALLERY, 3, 4))
    assert spans is not None
    pooled = embedder.embed_spans(GALLERY, spans)
    assert pooled is not None
    vector, matrix = pooled
    encoding = embedder._tokenizer.encode(GALLERY)
    ids = np.asarray([encoding.ids], dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
    if embedder._needs_token_types:
        feeds["token_type_ids"] = np.zeros_like(ids)
    hidden = embedder._session.run(None, feeds)[0][0]
    for (start, end), row in zip(spans, matrix, strict=True):
        rows = [
            i
            for i, ((low, high), special) in enumerate(
                zip(encoding.offsets, encoding.special_tokens_mask, strict=True)
            )
            if not special and start <= low < end and high > low
        ]
        # The tokens are the span's text's word pieces, punctuation and accents included.
        assert "".join(encoding.tokens[i].removeprefix("##") for i in rows) == "".join(
            embedder._tokenizer.encode(GALLERY[start:end]).tokens[1:-1]
        ).replace("##", "")
        np.testing.assert_allclose(row, unit(hidden[rows].mean(axis=0)), atol=1e-5)
    # The message's own vector is the one embed gives it.
    np.testing.assert_allclose(vector, embedder.embed([GALLERY])[0], atol=1e-5)
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)


def test_special_tokens_and_empty_spans_are_never_pooled() -> None:
    offsets = [(0, 0), (0, 3), (4, 7), (7, 8), (0, 0)]
    special = [1, 0, 0, 0, 1]
    assert span_tokens(offsets, special, [(0, 3), (4, 8)]) == [[1], [2, 3]]
    assert span_tokens(offsets, special, [(0, 3), (8, 9)]) is None


def test_a_message_over_one_window_is_not_pooled(embedder: LocalMiniLM) -> None:
    assert embedder.embed_spans(LONG, [(0, 10), (70, 80)]) is None


class OnlyEmbed:
    """An embedder without ``embed_spans`` (a remote one)."""

    model = "fake"
    dimension = 2

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls.append(texts)
        return unit(np.asarray([[len(t), 1.0] for t in texts], dtype=np.float32))


@pytest.mark.parametrize("beside", [False, True])
def test_without_span_pooling_the_sentences_are_embedded_alone(beside: bool) -> None:
    fake = OnlyEmbed()
    found = list(sentences(GALLERY, 3, 4))
    assert span_vectors(fake, GALLERY, [(0, 5)]) is None
    begun = late_begun(fake, GALLERY, found, beside)
    assert begun is not None
    vector, matrix = (future.result(timeout=10) for future in begun)
    np.testing.assert_allclose(vector, fake.embed([GALLERY])[0])
    np.testing.assert_allclose(matrix, fake.embed(found))
    assert fake.calls[:2] == [[GALLERY], found]


def test_late_vectors_come_from_one_run(embedder: LocalMiniLM) -> None:
    found = list(sentences(GALLERY, 3, 4))
    begun = late_begun(embedder, GALLERY, found, True)
    assert begun is not None
    vector, matrix = (future.result(timeout=30) for future in begun)
    spans = sentence_spans(GALLERY, tuple(found))
    assert spans is not None
    pooled = embedder.embed_spans(GALLERY, spans)
    assert pooled is not None
    np.testing.assert_allclose(vector, pooled[0], atol=1e-6)
    np.testing.assert_allclose(matrix, pooled[1], atol=1e-6)
    # Pooled in context, not the sentences embedded alone.
    alone = embedder.embed(found)
    assert not np.allclose(matrix, alone, atol=1e-3)
