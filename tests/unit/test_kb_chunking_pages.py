"""Chunking: pages, the ceiling, near-empty chunks and short breadcrumbs; pure, measured with
the real o200k.
"""

from __future__ import annotations

from memoryd.kb.chunking import (
    ChunkDraft,
    breadcrumb,
    chunk_markdown,
)

from .chunking_support import (
    POLICY,
    UNMERGED,
    WORDS,
    count,
    joined,
    squash,
    tail,
)

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
