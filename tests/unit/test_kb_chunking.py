"""Heading-aware chunking of Markdown (knowledge base): pure, measured with the real o200k."""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memoryd.kb.chunking import (
    Block,
    ChunkDraft,
    ChunkPolicy,
    breadcrumb,
    chunk_markdown,
    join_chunks,
    parse_blocks,
)
from memoryd.tokens import O200kTokenizer

TOKENIZER = O200kTokenizer()
POLICY = ChunkPolicy()
TARGET = POLICY.target_tokens
# Packing adds up its units' tokens; the newlines that glue them can cost a token or two more
# once the whole chunk is counted. "At most about the target" allows that much.
SLACK = 5

# Every example tokenizes a few thousand words for real.
documents_settings = settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

WORDS = (
    "harbour", "lantern", "meadow", "copper", "winter", "gravel", "council", "orchard",
    "ferry", "library", "quarry", "bakery", "glacier", "pier", "market", "village",
    "tram", "valley", "beacon", "kettle", "saddle", "timber", "violin", "wagon",
)  # fmt: skip


def count(text: str) -> int:
    return TOKENIZER.count(text)


def tail(text: str, n: int) -> str:
    """The last ``n`` tokens of ``text``, as the service cuts them."""
    ids = TOKENIZER.encode(text)
    return TOKENIZER.decode(ids[-n:]) if n < len(ids) else text


# The section tests use tiny sections; merging small chunks is tested on its own below.
UNMERGED = ChunkPolicy(min_tokens=0, min_content_tokens=0)


def chunk(markdown: str, policy: ChunkPolicy | None = None) -> list[ChunkDraft]:
    return chunk_markdown(markdown, count, tail, policy or UNMERGED)


def joined(drafts: list[ChunkDraft]) -> str:
    return join_chunks([(d.text, d.overlap_chars) for d in drafts])


def squash(text: str) -> str:
    """``text`` with every run of whitespace as one space."""
    return " ".join(text.split())


def sentence(index: int, words: int = 18) -> str:
    """A distinct, deterministic sentence: 'Sentence 7 ...words... .'"""
    rng = random.Random(index)
    body = " ".join(rng.choice(WORDS) for _ in range(words))
    return f"Sentence {index} {body}."


def paragraph(first: int, sentences: int, words: int = 18) -> str:
    return " ".join(sentence(i, words) for i in range(first, first + sentences))


def sections(drafts: list[ChunkDraft]) -> list[list[ChunkDraft]]:
    """Consecutive chunks with the same heading path, in order."""
    return [list(group) for _, group in itertools.groupby(drafts, key=lambda d: d.headings)]


def table(rows: int) -> tuple[str, list[str]]:
    """A Markdown table (header, separator, ``rows`` rows) and its rows."""
    body = [f"| {i} | crate {i} of {WORDS[i % len(WORDS)]} | {i * 7} kg |" for i in range(rows)]
    return "| id | item | weight |\n| --- | --- | --- |\n" + "\n".join(body), body


TABLE_HEADER = "| id | item | weight |\n| --- | --- | --- |"


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


# --- tables -----------------------------------------------------------------------------------


def test_a_big_table_is_cut_between_rows_and_each_continuation_repeats_the_header() -> None:
    text, rows = table(150)
    markdown = f"# Stock\n\nThe crates in the store.\n\n{text}\n\nThat was all."
    drafts = chunk(markdown)
    assert len(drafts) >= 3
    allowance = count(TABLE_HEADER) + SLACK
    for draft in drafts:
        assert draft.tokens <= TARGET + allowance
        for line in draft.text.split("\n"):
            if line.startswith("|"):
                # Never half a row: every table line is a whole row of the table.
                assert line in rows or line in TABLE_HEADER.split("\n"), line
    for draft in drafts[1:]:
        # A chunk that brings rows of its own opens with the header row and separator.
        if any(row in draft.text[draft.overlap_chars :] for row in rows):
            assert draft.text.startswith(TABLE_HEADER + "\n| ")
    whole = joined(drafts)
    places = [whole.index(row) for row in rows]
    assert places == sorted(places)
    assert all(whole.count(row) == 1 for row in rows)
    assert whole.count(TABLE_HEADER) == 1
    assert squash(whole) == squash(markdown)


def test_a_table_that_fits_stays_in_one_chunk() -> None:
    text, _ = table(8)
    markdown = f"# Small\n\n{paragraph(0, 10)}\n\n{text}"
    drafts = chunk(markdown)
    assert sum(text in d.text for d in drafts) >= 1
    assert all(d.text.count(TABLE_HEADER) <= 1 for d in drafts)


def test_a_continuation_chunk_says_the_table_header_once() -> None:
    text, _ = table(150)
    filler = paragraph(0, 10, 30)
    assert count(filler) < TARGET
    # Find a lead-in length that makes the first cut fall just after the header.
    doubled = []
    for extra in range(0, 120, 4):
        lead = f"{filler} {' '.join(WORDS[i % len(WORDS)] for i in range(extra))}."
        drafts = chunk(f"# T\n\n{lead}\n\nThe crates follow.\n\n{text}")
        doubled += [d.text for d in drafts if d.text.count(TABLE_HEADER) > 1]
    assert doubled == []


def test_rows_repeated_as_overlap_come_with_the_header() -> None:
    text, rows = table(150)
    drafts = chunk(f"# Stock\n\n{text}\n\nThat was all.")
    for draft in drafts[1:]:
        if any(row in draft.text for row in rows):
            assert draft.text.startswith(TABLE_HEADER + "\n| "), draft.text


# --- code -------------------------------------------------------------------------------------


def code_block(lines: int) -> str:
    body = [f"    total_{i} = compute({i}, scale={i * 3})  # step {i}" for i in range(lines)]
    return "```python\ndef run():\n" + "\n".join(body) + "\n```"


def test_a_code_block_that_fits_is_never_split() -> None:
    code = code_block(12)
    assert TARGET // 4 < count(code) < TARGET
    markdown = f"# Code\n\n{paragraph(0, 12)}\n\n{code}\n\n{paragraph(50, 6)}"
    drafts = chunk(markdown)
    assert len(drafts) >= 2
    holding = [d for d in drafts if "def run():" in d.text]
    assert len(holding) == 1
    assert code in holding[0].text
    assert all("total_" not in d.text for d in drafts if d is not holding[0])


def test_a_code_block_longer_than_the_target_is_cut_only_between_lines() -> None:
    code = code_block(120)
    lines = code.split("\n")
    drafts = chunk(f"# Code\n\n{code}")
    assert len(drafts) >= 3
    for draft in drafts:
        body = draft.text.split("\n")
        if draft.position == 0:
            body = body[2:]  # the heading and the blank line after it
        assert all(line in lines for line in body), draft.text
    whole = joined(drafts)
    assert squash(whole) == squash(f"# Code\n\n{code}")
    assert all(whole.count(line) == 1 for line in lines[2:-1])


def test_a_long_code_block_is_cut_into_chunks_of_about_the_target() -> None:
    short_lines = "```\n" + "\n".join("x" for _ in range(1500)) + "\n```"
    indented = code_block(120)
    sizes = [d.tokens for code in (short_lines, indented) for d in chunk(code)]
    assert max(sizes) <= TARGET + SLACK, sizes


# --- a sentence too long for anything but a token cut ----------------------------------------


GIANT = " ".join(random.Random(7).choice(WORDS) for _ in range(3000))


def test_a_giant_sentence_without_punctuation_loses_nothing() -> None:
    markdown = f"# Dump\n\n{GIANT}"
    assert count(GIANT) > 5 * TARGET
    drafts = chunk(markdown)
    assert len(drafts) >= 6
    assert squash(joined(drafts)) == squash(markdown)


def test_a_giant_sentence_is_cut_into_pieces_of_at_most_the_target() -> None:
    drafts = chunk(f"# Dump\n\n{GIANT}")
    assert max(d.tokens for d in drafts) <= TARGET + SLACK


def test_no_chunk_is_only_a_heading() -> None:
    drafts = chunk(f"# Dump\n\n{GIANT}")
    assert all(not d.text.startswith("#") or "\n" in d.text for d in drafts)


def test_a_token_cut_never_breaks_a_character() -> None:
    markdown = "Earth " + "🌍" * 1000
    whole = joined(chunk(markdown))
    assert "\ufffd" not in whole
    assert whole.count("🌍") == 1000


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


# ---------------------------------------------------------------------------------------------
# Pages, the ceiling, near-empty chunks, short breadcrumbs

CEILING = POLICY.target_tokens + POLICY.overlap_tokens


def paged(*pages: str) -> str:
    return "\n\n".join(f"<!-- page {n} -->\n\n{text}" for n, text in enumerate(pages, start=1))


def test_each_chunk_says_where_its_pages_begin() -> None:
    pages = [" ".join(f"Page {n} sentence {i} about {WORDS[i % 24]}." for i in range(60))
             for n in (1, 2, 3)]  # fmt: skip
    drafts = chunk_markdown(paged(*pages), count, tail)

    for draft in drafts:
        assert draft.pages and draft.pages[0][1] == 0
        for page, offset in draft.pages[1:]:
            assert draft.text[offset:].startswith(f"Page {page} sentence")
        assert "<!-- page" not in draft.text
    assert drafts[0].pages[0][0] == 1 and drafts[-1].pages[-1][0] == 3
    covered = {page for d in drafts for page, _ in d.pages}
    assert covered == {1, 2, 3}


def test_a_document_without_page_marks_has_no_pages() -> None:
    assert all(d.pages == () for d in chunk_markdown("# A\n\nSome text here.", count, tail))


def test_no_chunk_passes_the_ceiling_whatever_the_source() -> None:
    """A table row longer than a chunk, a run of headings, one endless line."""
    huge_row = "| " + " | ".join(f"cell {i} holds {WORDS[i % 24]}" for i in range(300)) + " |"
    table = "| a | b |\n| --- | --- |\n" + huge_row + "\n| x | y |"
    headings = "\n\n".join(f"###### Heading line {i} of a bold exhibit" for i in range(120))
    headings += "\n\nThe exhibit ends here."
    endless = " ".join(WORDS) * 80
    for markdown in (table, headings, endless, f"# Title\n\n{endless}\n\n{table}"):
        drafts = chunk_markdown(markdown, count, tail)
        assert drafts
        assert max(d.tokens for d in drafts) <= CEILING, markdown[:40]


def test_a_heading_with_nothing_under_it_joins_the_chunk_after_it() -> None:
    body = " ".join(f"Sentence {i} of the next item." for i in range(40))
    markdown = f"## Item 6. [Reserved]\n\n## Item 7. Discussion\n\n{body}"

    drafts = chunk_markdown(markdown, count, tail)

    assert drafts[0].text.startswith("## Item 6. [Reserved]")
    assert "Item 7. Discussion" in drafts[0].text
    assert drafts[0].headings == ("Item 7. Discussion",)
    assert all(count(d.text) >= POLICY.min_content_tokens for d in drafts)


def test_a_short_section_with_real_content_keeps_its_own_chunk_and_breadcrumb() -> None:
    markdown = (
        "# Venues\n\n## Season Overview\n\n" + " ".join(["The season opens in spring."] * 30)
        + "\n\n## Unusual Rehearsal Spaces\n\nThe troupe rehearses in a disused tram depot."
    )  # fmt: skip

    drafts = chunk_markdown(markdown, count, tail)

    last = drafts[-1]
    assert last.headings == ("Venues", "Unusual Rehearsal Spaces")
    assert "tram depot" in last.text


def test_a_short_introduction_opens_its_first_subsection_whose_breadcrumb_names_it() -> None:
    markdown = (
        "# Venues\n\n## Touring Stages\n\nThree stages travel with the troupe.\n\n"
        "### The Barge Stage\n\n" + " ".join(["The barge stage moors at river towns."] * 20)
    )  # fmt: skip

    drafts = chunk_markdown(markdown, count, tail)

    assert len(drafts) == 1, "the two-line introduction is no chunk of its own"
    assert drafts[0].headings == ("Venues", "Touring Stages", "The Barge Stage")
    assert "Three stages travel with the troupe." in drafts[0].text
    assert drafts[0].text.index("## Touring Stages") < drafts[0].text.index("### The Barge")


def short_tail(drafts: list[ChunkDraft]) -> list[ChunkDraft]:
    return [d for d in drafts if count(d.text[d.overlap_chars :]) < POLICY.min_tokens]


def test_the_short_tail_of_a_long_section_joins_the_chunk_before_it() -> None:
    # The first length at which a section's last chunk holds only a few words of its own.
    for sentences in range(60, 200):
        body = " ".join(f"Harbour sentence number {i} is here." for i in range(sentences))
        plain = chunk_markdown(f"# Harbour\n\n{body}", count, tail, UNMERGED)
        if short_tail(plain):
            break
    merged = chunk_markdown(f"# Harbour\n\n{body}", count, tail)

    tails = short_tail(plain)
    assert tails, "the premise: without merging, the section ends in a tiny chunk"
    assert len(merged) == len(plain) - len(tails)
    assert squash(joined(merged)) == squash(joined(plain))
    assert max(d.tokens for d in merged) <= CEILING


def test_a_long_or_deep_breadcrumb_is_shortened() -> None:
    long_heading = "A heading that goes on " * 10
    crumb = breadcrumb(
        "The Coca-Cola Company — Form 10-K 2016",
        ("Part II", "Item 8", long_heading, "Note 12 — Debt"),
    )

    assert len(crumb) <= 200
    assert crumb.startswith("The Coca-Cola Company — Form 10-K 2016")
    assert crumb.endswith("Note 12 — Debt")
