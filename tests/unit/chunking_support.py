"""What the chunking unit tests share: the real o200k tokenizer, the policies, and Markdown
builders (sentences, paragraphs, tables) with their token counts.
"""

from __future__ import annotations

import itertools
import random

from hypothesis import HealthCheck, settings

from memoryd.kb.chunking import (
    ChunkDraft,
    ChunkPolicy,
    chunk_markdown,
    join_chunks,
)
from memoryd.providers.tokenizer import O200kTokenizer

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


def code_block(lines: int) -> str:
    body = [f"    total_{i} = compute({i}, scale={i * 3})  # step {i}" for i in range(lines)]
    return "```python\ndef run():\n" + "\n".join(body) + "\n```"
