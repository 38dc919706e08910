"""Which sources are URLs and which URLs memoryd fetches (http and https only); apart from
:mod:`memoryd.kb.fetch` so that deciding costs no HTTP client import."""

from __future__ import annotations

import urllib.parse

from memoryd.errors import MemorydError
from memoryd.kb.converted import ConversionError

ALLOWED_SCHEMES = ("http", "https")


class FetchUnavailableError(MemorydError):
    """The URL could not be fetched for a reason that may pass; try again later."""


def is_url(text: str) -> bool:
    """Whether ``text`` is meant as a URL (has a scheme), whatever the scheme."""
    parsed = urllib.parse.urlparse(text)
    return bool(parsed.scheme) and len(parsed.scheme) > 1 and "://" in text


def check_url(url: str) -> str:
    """The URL when memoryd may fetch it; a clear error otherwise (file://, ftp:, …)."""
    parsed = urllib.parse.urlparse(url)
    if not parsed.scheme:
        raise ConversionError(f"{url!r} is not a URL; use http:// or https://, or a file path")
    if parsed.scheme.lower() not in ALLOWED_SCHEMES:
        raise ConversionError(
            f"{parsed.scheme}:// URLs are not fetched; only http and https are "
            "(ingest a local file by its path instead)"
        )
    if not parsed.hostname:
        raise ConversionError(f"the URL {url!r} has no host")
    return url
