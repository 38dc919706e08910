"""Fuzzing the parsers and escapers that take outside text, where the existing property tests
(test_proposals.py, test_fence.py, test_kb_chunking.py) leave room:

- the proposal parser on JSON-token soup, on mutations of a valid batch, and on ISO-8601
  lookalikes in ``occurred_at`` (only ProposalBatchError or InvalidInputError may escape);
- the fence escaper on soup that also holds the third fence name (``conversation``), every
  bracket and slash lookalike the escaper knows, their entity spellings and letters that grow
  when folded;
- the chunker on arbitrary Markdown-ish text: it never raises, and no text is lost;
- time phrases with any counts and dates: a window or none, never an error.
"""

from __future__ import annotations

import html
import json
import re
import unicodedata
from datetime import UTC, datetime

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memoryd.errors import InvalidInputError, ProposalBatchError
from memoryd.kb.blocks import parse_blocks
from memoryd.kb.chunking import ChunkPolicy, chunk_markdown, join_chunks
from memoryd.memory.model import Proposal
from memoryd.memory.proposal_policy import parse_batch_text
from memoryd.providers.tokenizer import O200kTokenizer
from memoryd.recall.time_window_policy import find_time_window
from memoryd.trust.fence import FENCE_NAMES, contains_fence_tag, escape_data, fence

# ---------------------------------------------------------------------------------------------
# The proposal parser


def _parses_or_refuses(text: str) -> None:
    """Proposals, or one of the two input errors with a message; nothing else."""
    try:
        proposals = parse_batch_text(text)
    except (ProposalBatchError, InvalidInputError) as error:
        assert str(error)
        return
    assert isinstance(proposals, tuple)
    assert all(isinstance(p, Proposal) for p in proposals)


_JSON_TOKENS = [
    '{"memories": [', "{", "}", "[", "]", ",", ":", '"', "\\", '"memories"', '"kind"', '"fact"',
    '"event"', '"lesson"', '"content"', '"Met Ana in Porto"', '"confidence"', '"changes_behavior"',
    '"occurred_at"', '"importance"', '"entities"', '"subject"', '"general_knowledge"', "true",
    "false", "null", "0", "1", "0.9", "-0", "1e999", "-1e999", "1e-999", "NaN", "Infinity",
    "-Infinity", "1" * 4400, "9" * 5000, '"\\ud800"', '"\\udfff\\ud800"', '"\\u0000"', '"\\x41"',
    '"\\u00"', "\ufeff", " ", "\n", "\t", "\u00a0", "\u2028", '"2026-08-27"', '"24:00"',
    '"0001-01-01T00:00:00+01:00"', '"9999-12-31T23:59:59-01:00"',
]  # fmt: skip
json_soup = st.lists(
    st.sampled_from(_JSON_TOKENS) | st.text(max_size=3), min_size=1, max_size=60
).map("".join)

_VALID_BATCH = json.dumps(
    {
        "memories": [
            {"kind": "fact", "content": "Lives in Lisbon", "confidence": 0.9,
             "changes_behavior": False, "subject": "owner", "predicate": "lives in",
             "object": "Lisbon", "entities": ["Lisbon"]},
            {"kind": "event", "content": "Met Ana", "confidence": 0.85,
             "changes_behavior": False, "occurred_at": "2026-08-27T14:30:00Z"},
            {"kind": "lesson", "content": "Prefers short answers", "confidence": 1,
             "changes_behavior": True, "importance": "high", "general_knowledge": False},
        ]
    }
)  # fmt: skip


@st.composite
def mutated_batches(draw: st.DrawFn) -> str:
    """A valid batch with a few characters inserted, deleted or replaced."""
    text = _VALID_BATCH
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(text)))
        edit = draw(st.sampled_from(["insert", "delete", "replace"]))
        piece = draw(st.sampled_from(_JSON_TOKENS) | st.characters())
        if edit == "insert":
            text = text[:at] + piece + text[at:]
        elif edit == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 8)) :]
        else:
            text = text[:at] + piece + text[at + len(piece) :]
    return text


@settings(max_examples=400, deadline=None)
@given(json_soup)
@example('{"memories": [' * 50_000)
@example('{"memories": [{"kind": "fact", "content": "\\ud800", "confidence": 1e999, '
         '"changes_behavior": false}]}')  # fmt: skip
def test_json_token_soup_either_parses_or_is_refused(text: str) -> None:
    _parses_or_refuses(text)


@settings(max_examples=400, deadline=None)
@given(mutated_batches())
def test_a_mutated_valid_batch_either_parses_or_is_refused(text: str) -> None:
    _parses_or_refuses(text)


_ISO_PARTS = [
    "0000", "0001", "1970", "2026", "9999", "10000", "-", "--", "01", "12", "13", "00", "29",
    "30", "31", "32", "02-29", "T", "t", " ", "24", "23", "59", "60", ":", ".", ",", "999999",
    "0000001", "Z", "z", "ZZ", "+", "-", "+00:00", "+23:59", "-23:59", "+24:00", "+14", "+0530",
    "W", "W53", "-7", "366", "\u0660", "\uff12", "\x00", "\n",
]  # fmt: skip
iso_lookalikes = st.lists(st.sampled_from(_ISO_PARTS), min_size=1, max_size=12).map("".join)


@settings(max_examples=500, deadline=None)
@given(iso_lookalikes, st.sampled_from(["fact", "event"]))
@example("9999-12-31T23:59:59.999999-23:59", "event")
@example("0001-01-01T00:00:00+23:59", "event")
@example("2026-W53-7", "event")
def test_any_occurred_at_either_parses_or_is_refused(moment: str, kind: str) -> None:
    batch = {
        "memories": [
            {"kind": kind, "content": "Went sailing", "confidence": 0.9,
             "changes_behavior": False, "occurred_at": moment}
        ]
    }  # fmt: skip
    _parses_or_refuses(json.dumps(batch))


# ---------------------------------------------------------------------------------------------
# The fence escaper

_BRACKETS = "<＜﹤‹⟨〈❮˂ᐸ«≪≤\u2329"
_CLOSERS = ">＞﹥›⟩〉❯»\u232a"
_SLASHES = "/／⁄∕⧸╱\\"
_INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u180e", "\u061c"]
_ENTITIES = [
    "&lt;", "&LT;", "&lt", "&#60;", "&#060;", "&#0000060;", "&#x3c;", "&#X3C;", "&#x3C", "&Lt;",
    "&le;", "&lsaquo;", "&laquo;", "&lang;", "&LeftAngleBracket;", "&gt;", "&rang;", "&sol;",
    "&bsol;", "&frasl;", "&#47;", "&#x2F;", "&#8203;", "&ZeroWidthSpace;", "&NoBreak;", "&shy;",
    "&#xFEFF;", "&amp;", "&", "&#", "&#x",
]  # fmt: skip
_NAMES = [
    "memory", "MEMORY", "Memory", "mem", "ory", "conversation", "CONVERSATION", "Conversation",
    "conver", "sation", "conver\u017fation", "untrusted_content", "untrusted", "_content",
    "untru\ufb06ed_content", "＿", "ｍｅｍｏｒｙ", "ｃｏｎｖｅｒｓａｔｉｏｎ",
    "𝐦𝐞𝐦𝐨𝐫𝐲", "𝕔𝕠𝕟𝕧𝕖𝕣𝕤𝕒𝕥𝕚𝕠𝕟",
    "m\u0301emory", 'trust="data"', "=", '"',
]  # fmt: skip
# Letters that change length when case-folded or NFKC-normalised, before or inside a tag.
_GROWERS = ["ß", "ﬁ", "ﬆ", "¼", "…", "™", "İ", "K", "ſ", "ŉ", "ǰ", "ﬃ", "㎒"]
FENCE_FRAGMENTS = [
    *_BRACKETS, *_CLOSERS, *_SLASHES, *_INVISIBLE, *_ENTITIES, *_NAMES, *_GROWERS,
    " ", "\t", "\n", "[", "]", "a",
]  # fmt: skip
fence_soup = st.lists(st.sampled_from(FENCE_FRAGMENTS) | st.text(max_size=3), max_size=40).map(
    "".join
)

_READER_TAG = re.compile(r"<[\s/]*(?:" + "|".join(FENCE_NAMES) + r")(?![a-z0-9])")


def reader_view(text: str) -> str:
    """A lenient reader: entities decoded once, confusables folded, invisibles dropped."""
    out: list[str] = []
    for char in html.unescape(text):
        if char in _BRACKETS:
            out.append("<")
        elif char in _CLOSERS:
            out.append(">")
        elif char in _SLASHES:
            out.append("/")
        elif unicodedata.category(char) == "Cf":
            continue
        else:
            out.append(unicodedata.normalize("NFKC", char).casefold())
    return "".join(out).replace("＿", "_")


@settings(max_examples=2000, deadline=None)
@given(fence_soup)
@example("<conver\u017fation>")
@example("&Lt;/untru\ufb06ed_content&gt;")
@example("</mem&#8203;ory>")
def test_escaped_text_never_holds_a_fence_tag(text: str) -> None:
    escaped = escape_data(text)

    assert not contains_fence_tag(escaped), (text, escaped)
    assert _READER_TAG.search(reader_view(escaped)) is None, (text, escaped)
    assert escape_data(escaped) == escaped


@settings(max_examples=500, deadline=None)
@given(
    body=fence_soup,
    attributes=st.dictionaries(st.sampled_from(["trust", "source", "id"]), fence_soup, max_size=3),
    tag=st.sampled_from(FENCE_NAMES),
)
def test_a_fenced_block_opens_and_closes_exactly_once(
    body: str, attributes: dict[str, str], tag: str
) -> None:
    escaped = escape_data(body)
    block = fence(tag, escaped, attributes)

    # Attribute values may hold newlines: cut the block by what follows the opening tag.
    after = f"\n{escaped}\n</{tag}>"
    assert block.endswith(after)
    opening = block[: -len(after)]
    assert opening.startswith(f"<{tag}") and opening.endswith(">")
    assert opening.count('"') == 2 * len(attributes), opening
    assert not contains_fence_tag(escaped)
    # The opening tag is the only one a reader finds in it.
    assert len(_READER_TAG.findall(reader_view(opening))) == 1, opening


# ---------------------------------------------------------------------------------------------
# The chunker

TOKENIZER = O200kTokenizer()


def _count(text: str) -> int:
    return TOKENIZER.count(text)


def _tail(text: str, n: int) -> str:
    if n <= 0:
        return ""
    ids = TOKENIZER.encode(text)
    return TOKENIZER.decode(ids[-n:]) if n < len(ids) else text


_MARKDOWN_BITS = [
    "# ", "## ", "###### ", "####### ", "#", " #", " ##", "\n", "\n\n", "\r\n", "\r", "```",
    "```python\n", "~~~", "    ", "\t", "| a | b |", "|", "| --- | --- |", "---", ":-:", "- ",
    "* ", "+ ", "1. ", "42) ", ". ", "! ", "? ", "… ", "Wort", "harbour lantern", "C#",
    "👩‍👩‍👧", "🇵🇹", "日本語の文章。", "e\u0301", "\u200b", "\u2028", "\x0b", "\x0c", "\x1c", "\x85",
    "\u00a0", "a" * 300, "Lorem ipsum dolor sit amet. " * 12, "x" * 40 + "." * 5,
]  # fmt: skip
markdownish = st.lists(st.sampled_from(_MARKDOWN_BITS) | st.text(max_size=12), max_size=50).map(
    "".join
)
policies = st.builds(
    ChunkPolicy,
    target_tokens=st.integers(min_value=8, max_value=200),
    overlap=st.sampled_from([0.0, 0.15, 0.3, 0.5]),
)
_IGNORED = re.compile(r"[\s#]+")


def _letters(text: str) -> str:
    """``text`` without whitespace and '#' (heading marks are markup, not content)."""
    return _IGNORED.sub("", text)


@settings(max_examples=300, deadline=None)
@given(markdownish)
def test_parsing_blocks_keeps_every_character(markdown: str) -> None:
    blocks = parse_blocks(markdown)

    assert _letters("".join(b.text for b in blocks)) == _letters(markdown)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(markdownish, policies)
@example("# Title\n\n" + "Sentence number one is here. " * 40, ChunkPolicy(target_tokens=20))
@example("| h |\n| - |\n" + "| row with some words |\n" * 30, ChunkPolicy(target_tokens=8))
@example("👩‍👩‍👧" * 60, ChunkPolicy(target_tokens=8, overlap=0.5))
def test_chunking_never_raises_and_loses_no_text(markdown: str, policy: ChunkPolicy) -> None:
    drafts = chunk_markdown(markdown, _count, _tail, policy)

    blocks = parse_blocks(markdown)
    # Headings after the last content block head no section: they are the only text dropped.
    while blocks and blocks[-1].kind == "heading":
        blocks.pop()
    assert _letters(join_chunks([(d.text, d.overlap_chars) for d in drafts])) == _letters(
        "".join(b.text for b in blocks)
    )
    assert [d.position for d in drafts] == list(range(len(drafts)))
    for draft in drafts:
        assert draft.tokens == _count(draft.text)
        assert 0 <= draft.overlap_chars <= len(draft.text)


# A run with no sentence end, a token-count cut that falls inside its last character (U+15180
# is four o200k tokens) and no overlap: the whole run becomes one piece and an empty piece
# follows it, which opens a chunk of its own.
_BLANK_CHUNK = ("word " * 495 + "\U00015180", ChunkPolicy(overlap=0.0))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(markdownish, policies)
@example(*_BLANK_CHUNK)
def test_no_chunk_is_blank(markdown: str, policy: ChunkPolicy) -> None:
    drafts = chunk_markdown(markdown, _count, _tail, policy)

    blank = [d for d in drafts if not d.text.strip()]
    assert not blank, [(d.position, d.tokens, d.text[:40]) for d in drafts]


# ---------------------------------------------------------------------------------------------
# Time phrases: counts and dates anywhere on (or off) the calendar

_TIME_WORDS = st.sampled_from(
    "what did I do happened on in the since until between and before after ago from now past "
    "last next this day days week weeks weekend month months year years monday friday january "
    "march december sept of , / - : 0 1 2 12 13 29 30 31 32 99 1000 9999 10000 2023 "
    "99999 999999999".split()
)


@settings(max_examples=400, deadline=None)
@given(
    words=st.lists(st.one_of(_TIME_WORDS, st.integers(0, 10**12).map(str)), max_size=14),
    now=st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
)
@example(words="what happened 3000 years ago".split(), now=datetime(2026, 12, 4))
@example(words="99999 months after april 10 , 2023".split(), now=datetime(2026, 12, 4))
def test_a_time_phrase_names_a_window_or_none_never_an_error(
    words: list[str], now: datetime
) -> None:
    window = find_time_window(" ".join(words), now.replace(tzinfo=UTC))
    assert window is None or window.start < window.end
