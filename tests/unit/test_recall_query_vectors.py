"""The query vectors recall keeps: a message embeds once, a new embedder starts afresh."""

from __future__ import annotations

import numpy as np

from memoryd.providers.embedder import Embedder, Matrix
from memoryd.providers.tokenizer import O200kTokenizer
from memoryd.recall.legs import QueryEmbedder


class CountingEmbedder:
    """A deterministic embedder that records every text it embeds."""

    model = "counting"
    dimension = 3

    def __init__(self, offset: float = 0.0) -> None:
        self.offset = offset
        self.seen: list[str] = []

    def embed(self, texts: list[str]) -> Matrix:
        self.seen.extend(texts)
        return np.asarray([[len(t), self.offset, 1.0] for t in texts], dtype=np.float32)


def test_the_same_message_is_embedded_once() -> None:
    inner = CountingEmbedder()
    embedder = QueryEmbedder(lambda: inner)
    first = embedder.embed(["where did I meet Ana?"])
    second = embedder.embed(["where did I meet Ana?"])
    assert inner.seen == ["where did I meet Ana?"]
    np.testing.assert_array_equal(first, second)


def test_a_returned_vector_can_be_changed_without_changing_the_kept_one() -> None:
    inner = CountingEmbedder()
    embedder = QueryEmbedder(lambda: inner)
    first = embedder.embed(["hello"])
    first[0][0] = 99.0
    assert embedder.embed(["hello"])[0][0] == 5.0


def test_a_replaced_embedder_answers_itself() -> None:
    current: list[Embedder] = [CountingEmbedder(offset=0.0)]
    embedder = QueryEmbedder(lambda: current[0])
    assert embedder.embed(["hi"])[0][1] == 0.0
    replacement = CountingEmbedder(offset=1.0)
    current[0] = replacement
    assert embedder.embed(["hi"])[0][1] == 1.0
    assert replacement.seen == ["hi"]
    assert embedder.model == "counting" and embedder.dimension == 3


def test_only_the_most_recent_messages_are_kept() -> None:
    inner = CountingEmbedder()
    embedder = QueryEmbedder(lambda: inner, kept=2)
    for text in ("a", "b", "a", "c", "a", "b"):
        embedder.embed([text])
    # "b" was evicted by "c" (least recently used), "a" stayed in use.
    assert inner.seen == ["a", "b", "c", "b"]


def test_batches_pass_through() -> None:
    inner = CountingEmbedder()
    embedder = QueryEmbedder(lambda: inner)
    assert embedder.embed(["x", "yy"]).shape == (2, 3)
    embedder.embed(["x", "yy"])
    assert inner.seen == ["x", "yy", "x", "yy"]


def test_token_counts_are_the_same_counted_again_or_at_length() -> None:
    tokenizer = O200kTokenizer()
    line = "- [event 2026-11-02] Met Ana at the Blue Door in Lisbon to talk about jazz.\n"
    assert tokenizer.count(line) == tokenizer.count(line) == len(tokenizer.encode(line))
    long_text = line * 100  # past the cached length: counted directly
    assert tokenizer.count(long_text) == len(tokenizer.encode(long_text))


def test_keeping_none_embeds_every_time() -> None:
    inner = CountingEmbedder()
    embedder = QueryEmbedder(lambda: inner, kept=0)
    embedder.embed(["same"])
    embedder.embed(["same"])
    assert inner.seen == ["same", "same"]
