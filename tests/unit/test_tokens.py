"""The o200k_base tokenizer (SPEC §8): exact, offline, and lossless."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memoryd.providers.tokenizer import O200kTokenizer

TOKENIZER = O200kTokenizer()


def test_hello_world_is_two_known_tokens() -> None:
    assert TOKENIZER.encode("hello world") == [24912, 2375]
    assert TOKENIZER.count("hello world") == 2
    assert TOKENIZER.decode([24912, 2375]) == "hello world"


def test_empty_text_has_no_tokens() -> None:
    assert TOKENIZER.count("") == 0
    assert TOKENIZER.encode("") == []


def test_special_token_text_is_counted_as_plain_text() -> None:
    """A memory that happens to contain "<|endoftext|>" must be costed, not crash packing."""
    text = "the model printed <|endoftext|> and stopped"
    assert TOKENIZER.count(text) > TOKENIZER.count("the model printed  and stopped")
    assert 199999 not in TOKENIZER.encode(text)
    assert TOKENIZER.decode(TOKENIZER.encode(text)) == text


def test_longer_text_costs_more() -> None:
    short = "Lives in Lisbon."
    assert TOKENIZER.count(short * 10) > TOKENIZER.count(short)


@given(st.text())
def test_decode_of_encode_is_the_identity(text: str) -> None:
    ids = TOKENIZER.encode(text)
    assert TOKENIZER.decode(ids) == text
    assert TOKENIZER.count(text) == len(ids)
