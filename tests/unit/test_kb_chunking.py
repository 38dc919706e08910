"""Heading-aware chunking of Markdown (knowledge base): pure, measured with the real o200k.
Blocks, long sections, headings and breadcrumbs.
"""

from __future__ import annotations

import itertools

from memoryd.kb.blocks import Block, parse_blocks
from memoryd.kb.chunking import ChunkDraft, ChunkPolicy, breadcrumb, chunk_markdown

from .chunking_support import (
    POLICY,
    SLACK,
    TARGET,
    chunk,
    count,
    joined,
    paragraph,
    sections,
    sentence,
    squash,
    tail,
)

# --- blocks -----------------------------------------------------------------------------------


def test_parse_blocks_finds_headings_paragraphs_lists_tables_and_code() -> None:
    markdown = (
        "# Title\n\nFirst line\nsecond line.\n\n- one\n- two\n\n"
        "| a | b |\n| --- | --- |\n| 1 | 2 |\n\n```python\n# not a heading\n\nx = 1\n```\n\n"
        "### Deep\n"
    )
    assert parse_blocks(markdown) == [
        Block("heading", "Title", 1),
        Block("paragraph", "First line\nsecond line."),
        Block("list", "- one\n- two"),
        Block("table", "| a | b |\n| --- | --- |\n| 1 | 2 |"),
        Block("code", "```python\n# not a heading\n\nx = 1\n```"),
        Block("heading", "Deep", 3),
    ]


def test_windows_line_endings_parse_like_unix_ones() -> None:
    unix = "# T\n\nOne.\n\n- a\n- b\n"
    assert parse_blocks(unix.replace("\n", "\r\n")) == parse_blocks(unix)


def test_empty_and_blank_markdown_has_no_chunks() -> None:
    assert chunk("") == []
    assert chunk("\n\n   \n") == []


# --- a long section ---------------------------------------------------------------------------


# Three paragraphs of ~650 tokens (cut between sentences) and a short one (moved whole).
LONG_SECTION = "# Report\n\n" + "\n\n".join(
    [paragraph(0, 30), paragraph(30, 30), paragraph(60, 6), paragraph(66, 30)]
)


def test_a_section_longer_than_the_target_is_cut_into_chunks_of_about_the_target() -> None:
    drafts = chunk(LONG_SECTION)
    assert count(LONG_SECTION) > 4 * TARGET
    assert len(drafts) >= 5
    for draft in drafts:
        assert draft.tokens == count(draft.text)
        assert draft.tokens <= TARGET + SLACK
    # Not cut needlessly small either: every chunk but the last is well filled.
    assert all(d.tokens >= TARGET // 2 for d in drafts[:-1])


def test_each_later_chunk_opens_with_the_end_of_the_one_before() -> None:
    drafts = chunk(LONG_SECTION)
    assert drafts[0].overlap_chars == 0
    for previous, current in itertools.pairwise(drafts):
        repeated = current.text[: current.overlap_chars]
        assert repeated.strip()
        assert previous.text.endswith(repeated)
        # About 15% of the target (75 tokens), never more.
        # About 15% of the target (75 tokens), never much more: whole sentences while they
        # fit, else the last 75 tokens (which can count one more once their space is stripped).
        assert POLICY.overlap_tokens // 3 <= count(repeated) <= POLICY.overlap_tokens + 2


def test_joining_a_sections_chunks_gives_every_sentence_once_in_order() -> None:
    drafts = chunk(LONG_SECTION)
    text = joined(drafts)
    places = []
    for index in range(96):
        wanted = sentence(index)
        assert text.count(wanted) == 1, wanted
        places.append(text.index(wanted))
    assert places == sorted(places)
    assert squash(text) == squash(LONG_SECTION)


def test_the_overlap_follows_the_policy() -> None:
    wide = ChunkPolicy(target_tokens=300, overlap=0.3)
    drafts = chunk(LONG_SECTION, wide)
    assert all(d.tokens <= 300 + SLACK for d in drafts)
    repeated = [count(d.text[: d.overlap_chars]) for d in drafts[1:]]
    assert max(repeated) > ChunkPolicy(target_tokens=300).overlap_tokens
    assert all(r <= wide.overlap_tokens + 2 for r in repeated)
    assert squash(joined(drafts)) == squash(LONG_SECTION)


def test_without_overlap_no_chunk_repeats_anything() -> None:
    drafts = chunk(LONG_SECTION, ChunkPolicy(overlap=0.0))
    assert all(d.overlap_chars == 0 for d in drafts)
    assert squash(" ".join(d.text for d in drafts)) == squash(LONG_SECTION)


def test_a_section_that_fits_is_one_chunk_with_its_exact_text() -> None:
    markdown = "# Notes\n\nShort and sweet. Two sentences."
    (draft,) = chunk(markdown)
    assert draft == ChunkDraft(0, ("Notes",), markdown, count(markdown), 0)


def test_a_long_paragraph_after_a_short_one_stays_within_the_target() -> None:
    long = paragraph(100, 20)
    assert TARGET - POLICY.overlap_tokens < count(long) <= TARGET
    sizes = [d.tokens for d in chunk(f"# T\n\n{paragraph(0, 4)}\n\n{long}")]
    assert max(sizes) <= TARGET + SLACK, sizes


# --- headings ---------------------------------------------------------------------------------


def test_chunks_never_cross_headings_and_carry_their_heading_path() -> None:
    markdown = (
        f"Preamble before any heading. {sentence(1)}\n\n"
        f"# Title\n\n{paragraph(10, 30)}\n\n"
        f"## A\n\n{paragraph(40, 30)}\n\n"
        f"### A.1\n\n{paragraph(70, 30)}\n\n"
        f"## B\n\n{paragraph(100, 3)}\n"
    )
    drafts = chunk(markdown)
    groups = sections(drafts)
    assert [g[0].headings for g in groups] == [
        (),
        ("Title",),
        ("Title", "A"),
        ("Title", "A", "A.1"),
        ("Title", "B"),
    ]
    owned = {(): range(1, 2), ("Title",): range(10, 40), ("Title", "A"): range(40, 70)}
    owned |= {("Title", "A", "A.1"): range(70, 100), ("Title", "B"): range(100, 103)}
    for draft in drafts:
        mine = owned[draft.headings]
        # Every sentence in the chunk belongs to the chunk's own section.
        numbers = [int(w) for w in draft.text.replace(".", " ").split() if w.isdigit()]
        found = [n for n in numbers if f"Sentence {n} " in draft.text]
        assert found
        assert all(n in mine for n in found), (draft.headings, found)
    assert [d.position for d in drafts] == list(range(len(drafts)))


def test_each_heading_opens_its_own_section() -> None:
    markdown = "# Title\n\nIntro.\n\n## A\n\nAbout a.\n\n## B\n\nAbout b.\n"
    assert [(d.headings, d.text) for d in chunk(markdown)] == [
        (("Title",), "# Title\n\nIntro."),
        (("Title", "A"), "## A\n\nAbout a."),
        (("Title", "B"), "## B\n\nAbout b."),
    ]


def test_a_heading_directly_followed_by_a_subheading_travels_with_the_subsection() -> None:
    markdown = "# Title\n\n## A\n\n### A.1\n\nThe body of A.1.\n"
    (draft,) = chunk(markdown)
    assert draft.headings == ("Title", "A", "A.1")
    assert draft.text == "# Title\n\n## A\n\n### A.1\n\nThe body of A.1."


def test_preamble_before_any_heading_has_no_heading_path() -> None:
    drafts = chunk("Loose words first.\n\n# Later\n\nBody.")
    assert [(d.headings, d.text) for d in drafts] == [
        ((), "Loose words first."),
        (("Later",), "# Later\n\nBody."),
    ]


def test_a_shallower_heading_closes_the_deeper_ones() -> None:
    markdown = "## A\n\nx.\n\n### A.1\n\ny.\n\n#### A.1.a\n\nz.\n\n## B\n\nw.\n"
    assert [d.headings for d in chunk(markdown)] == [
        ("A",),
        ("A", "A.1"),
        ("A", "A.1", "A.1.a"),
        ("B",),
    ]


def test_a_heading_ending_in_a_hash_keeps_it() -> None:
    (draft,) = chunk("# Why C#\n\nBecause.")
    assert draft.headings == ("Why C#",)
    assert "C#" in draft.text


def test_a_closing_hash_sequence_is_not_part_of_the_heading() -> None:
    assert chunk("## Setup ##\n\nSteps.")[0].headings == ("Setup",)


# --- breadcrumbs ------------------------------------------------------------------------------


def test_breadcrumb_joins_the_title_and_the_heading_path() -> None:
    assert breadcrumb("Doc", ("A", "B")) == "Doc › A › B"


def test_breadcrumb_does_not_repeat_a_title_the_first_heading_already_says() -> None:
    assert breadcrumb("Doc", ("Doc", "A")) == "Doc › A"
    assert breadcrumb("  Doc ", ("Doc",)) == "Doc"


def test_breadcrumb_without_headings_or_title() -> None:
    assert breadcrumb("Doc", ()) == "Doc"
    assert breadcrumb("", ("A", "B")) == "A › B"
    assert breadcrumb(" ", ()) == ""


# --- linear in the text's length --------------------------------------------------------------


def _characters_read(markdown: str) -> int:
    """How many characters the tokenizer reads while chunking ``markdown``."""
    seen = 0

    def counted(text: str) -> int:
        nonlocal seen
        seen += len(text)
        return count(text)

    def tailed(text: str, n: int) -> str:
        nonlocal seen
        seen += len(text)
        return tail(text, n)

    chunk_markdown(markdown, counted, tailed, POLICY)
    return seen


def test_text_without_sentence_ends_is_cut_reading_each_character_a_bounded_number_of_times() -> (
    None
):
    # A log without a full stop: one "sentence" as long as the file. Cutting it by re-reading
    # the rest after every piece read 200 KB ~400 times over (1.2 s; a 49 MB log: a day).
    words = " ".join(f"entry{i} host=web{i % 7} status=ok" for i in range(8_000))
    for size in (len(words) // 4, len(words)):
        text = words[:size]
        assert _characters_read(text) < 30 * len(text), size
