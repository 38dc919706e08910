"""Chunking tables, code and sentences too long for anything but a token cut: pure, measured
with the real o200k.
"""

from __future__ import annotations

import random

from .chunking_support import (
    SLACK,
    TABLE_HEADER,
    TARGET,
    WORDS,
    chunk,
    code_block,
    count,
    joined,
    paragraph,
    squash,
    table,
)

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
