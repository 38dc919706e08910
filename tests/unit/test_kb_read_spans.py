"""read_kb's spans and search_kb's request checks (SPEC §6): pure, no store."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryd.errors import InvalidInputError
from memoryd.kb.chunking import join_chunks
from memoryd.kb.model import Chunk, ChunkKey, Document, DocumentStatus, SourceType
from memoryd.kb.search import (
    KbSearchPolicy,
    check_query,
    check_read,
    fit_span,
    page_span,
    pages_of,
    section_chunks,
    stem,
)
from memoryd.kb.word_sets import shared_words

AT = datetime(2026, 1, 1, tzinfo=UTC)


class CharTokenizer:
    """One token per character: budgets are easy to reason about."""

    def count(self, text: str) -> int:
        return len(text)

    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def decode(self, ids: list[int]) -> str:
        return "".join(chr(i) for i in ids)


TOKENS = CharTokenizer()


def document(status: DocumentStatus = DocumentStatus.READY, chunks: int = 3) -> Document:
    return Document(
        id="doc1",
        source_uri="upload:a.md",
        collection="default",
        source_type=SourceType.CURATED,
        title="A",
        status=status,
        created_at=AT,
        updated_at=AT,
        chunk_count=chunks,
        error="it broke" if status is DocumentStatus.FAILED else None,
    )


def chunk(position: int, text: str, headings: tuple[str, ...] = (), **extra: object) -> Chunk:
    return Chunk("doc1", position, headings, "A", text, len(text), **extra)  # type: ignore[arg-type]


@settings(max_examples=150, deadline=None)
@given(
    texts=st.lists(st.text(alphabet="abc \n", min_size=1, max_size=40), min_size=1, max_size=8),
    budget=st.integers(min_value=1, max_value=120),
)
def test_a_read_never_exceeds_its_budget_and_takes_a_prefix(texts: list[str], budget: int) -> None:
    span = [chunk(i, t) for i, t in enumerate(texts)]
    taken, text, used = fit_span(span, budget, TOKENS)
    assert 1 <= len(taken) <= len(span)
    assert taken == span[: len(taken)]
    assert used <= budget
    joined = join_chunks([(c.text, c.overlap_chars) for c in taken])
    assert joined.startswith(text)


def test_a_section_matches_exactly_first_then_by_part() -> None:
    every = [
        chunk(0, "intro", ("Risk factors summary",)),
        chunk(1, "risks", ("Risk factors",)),
        chunk(2, "more", ("Other",)),
    ]
    assert [c.position for c in section_chunks(document(), every, "risk  FACTORS")] == [1]
    assert [c.position for c in section_chunks(document(), every, "summary")] == [0]
    with pytest.raises(InvalidInputError, match="sections: Risk factors summary; Risk factors"):
        section_chunks(document(), every, "Revenue")


def test_a_page_range_reads_exactly_those_pages() -> None:
    every = [
        chunk(0, "one one\n\ntwo two", pages=((1, 0), (2, 9))),
        chunk(1, "three three", pages=((3, 0),)),
    ]
    span, text, covered = page_span(document(), every, (2, 2))
    assert [c.position for c in span] == [0]
    assert text == "two two"
    assert covered == (2, 2)
    _, text, covered = page_span(document(), every, (2, 9))
    assert text == "two two\n\nthree three"
    assert covered == (2, 3)
    assert pages_of(every) == (1, 3)
    with pytest.raises(InvalidInputError, match="has pages 1-3"):
        page_span(document(), every, (4, 5))
    with pytest.raises(InvalidInputError, match="has no pages"):
        page_span(document(), [chunk(0, "no pages")], (1, 1))


def test_a_read_is_refused_with_the_reason() -> None:
    with pytest.raises(InvalidInputError, match="is failed: it broke"):
        check_read(
            document(DocumentStatus.FAILED), section=None, chunks=None, pages=None, max_tokens=10
        )
    with pytest.raises(InvalidInputError, match="max_tokens"):
        check_read(document(), section=None, chunks=None, pages=None, max_tokens=0)
    with pytest.raises(InvalidInputError, match="one at a time"):
        check_read(document(), section="a", chunks=(0, 1), pages=None, max_tokens=10)


def test_a_query_is_checked_and_words_are_shared_by_stem() -> None:
    policy = KbSearchPolicy()
    assert check_query("  cats  ", None, policy) == ("cats", policy.default_limit)
    for query, limit in (("  ", None), ("x" * 2001, None), ("cats", 0)):
        with pytest.raises(InvalidInputError):
            check_query(query, limit, policy)
    assert stem("cats") == stem("cat") and stem("stories") == "story"
    key = ChunkKey("doc1", 0)
    shared = shared_words(["cats", "story", "dog"], {key: chunk(0, "The cat sat on stories")})
    assert shared == {key: 2}
