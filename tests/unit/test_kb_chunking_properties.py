"""Chunking properties over random Markdown documents (Hypothesis): no chunk over the target,
every block given back once, positions from zero.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from memoryd.kb.chunking import (
    ChunkPolicy,
)

from .chunking_support import (
    SLACK,
    TABLE_HEADER,
    WORDS,
    chunk,
    code_block,
    count,
    documents_settings,
    joined,
    sections,
    squash,
    table,
)

# --- properties over random documents ---------------------------------------------------------

# A smaller target keeps random documents (and Hypothesis' shrinking) small; the packing is the
# same at any size.
SMALL = ChunkPolicy(target_tokens=200, min_tokens=0, min_content_tokens=0)


@dataclass(frozen=True)
class Section:
    headings: tuple[str, ...]
    text: str  # its headings and blocks as the document has them


@dataclass(frozen=True)
class Document:
    markdown: str
    sections: list[Section]


sentences = st.builds(
    lambda words: " ".join(words).capitalize() + ".",
    st.lists(st.sampled_from(WORDS), min_size=4, max_size=20),
)
ALL_KINDS = ("paragraph", "list", "table", "code")


@st.composite
def blocks(draw: st.DrawFn, kinds: tuple[str, ...] = ALL_KINDS) -> str:
    """A paragraph, list, table or code block: either small (under ~110 tokens, moved whole)
    or several times SMALL's target (cut at its seams).

    Blocks between target - overlap and the target are left out: they hit the overflow that
    test_a_long_paragraph_after_a_short_one_stays_within_the_target pins down.
    """
    kind = draw(st.sampled_from(kinds))
    big = draw(st.booleans())
    if kind in ("paragraph", "list"):
        many = st.lists(sentences, min_size=45, max_size=60)
        few = st.lists(sentences, min_size=1, max_size=4)
        parts = draw(many if big else few)
        return " ".join(parts) if kind == "paragraph" else "\n".join(f"- {p}" for p in parts)
    if kind == "table":
        return table(draw(st.integers(40, 70) if big else st.integers(1, 5)))[0]
    return code_block(draw(st.integers(30, 50) if big else st.integers(1, 3)))


@st.composite
def documents(draw: st.DrawFn, kinds: tuple[str, ...] = ALL_KINDS) -> Document:
    """An optional preamble, then sections of one or two headings (the first travels with the
    second) and one to three blocks; every heading text is unique."""
    parts: list[str] = []
    found: list[Section] = []
    if draw(st.booleans()):
        preamble = draw(blocks(kinds))
        parts.append(preamble)
        found.append(Section((), preamble))
    path: list[tuple[int, str]] = []
    for number in range(draw(st.integers(1, 4))):
        heads = []
        for sub in range(draw(st.integers(1, 2))):
            level = draw(st.integers(1, 3))
            name = f"Heading {number}.{sub}"
            while path and path[-1][0] >= level:
                path.pop()
            path.append((level, name))
            heads.append("#" * level + " " + name)
        body = draw(st.lists(blocks(kinds), min_size=1, max_size=3))
        section = "\n\n".join(heads + body)
        parts.append(section)
        found.append(Section(tuple(name for _, name in path), section))
    return Document("\n\n".join(parts) + "\n", found)


# Code is left out here: test_a_long_code_block_is_cut_into_chunks_of_about_the_target.
@documents_settings
@given(document=documents(kinds=("paragraph", "list", "table")))
def test_no_chunk_is_longer_than_the_target_plus_a_table_header(document: Document) -> None:
    allowance = count(TABLE_HEADER) + SLACK
    for draft in chunk(document.markdown, SMALL):
        assert draft.tokens == count(draft.text)
        assert draft.tokens <= SMALL.target_tokens + allowance, draft.text


@documents_settings
@given(document=documents())
def test_joining_each_sections_chunks_gives_back_its_blocks(document: Document) -> None:
    groups = sections(chunk(document.markdown, SMALL))
    assert [g[0].headings for g in groups] == [s.headings for s in document.sections]
    for group, section in zip(groups, document.sections, strict=True):
        assert squash(joined(group)) == squash(section.text)


@documents_settings
@given(document=documents())
def test_positions_count_up_from_zero(document: Document) -> None:
    drafts = chunk(document.markdown, SMALL)
    assert len(drafts) >= len(document.sections)
    assert [d.position for d in drafts] == list(range(len(drafts)))
