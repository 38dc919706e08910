"""Fetching a URL for the knowledge base: http and https only, bounded in size and time.

A failure that may pass (a timeout, a refused connection, a 5xx or 429) is a
:class:`FetchUnavailableError` and is retried from the queue; anything else (a 404, a bad
scheme, a body over the limit) is a :class:`ConversionError`, final.
"""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from http.client import HTTPMessage
from typing import IO, Any

from .converted import ConversionError
from .urls import ALLOWED_SCHEMES, FetchUnavailableError, check_url, is_url

__all__ = ["ALLOWED_SCHEMES", "FetchUnavailableError", "Fetched", "check_url", "fetch", "is_url"]

USER_AGENT = "memoryd/0.1 (+knowledge base ingest)"


@dataclass(frozen=True)
class Fetched:
    """A fetched body with the name and type it came with."""

    url: str
    data: bytes
    content_type: str | None
    name: str


class _HttpOnlyRedirects(urllib.request.HTTPRedirectHandler):
    """Follows redirects, but never to another scheme than http or https."""

    def redirect_request(
        self, req: Any, fp: IO[bytes], code: int, msg: str, headers: HTTPMessage, newurl: str
    ) -> Any:
        check_url(newurl)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def fetch(url: str, *, max_bytes: int, timeout: float) -> Fetched:
    """GET ``url``; refuses bodies over ``max_bytes`` while reading, not after."""
    check_url(url)
    opener = urllib.request.build_opener(_HttpOnlyRedirects())
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    try:
        with opener.open(request, timeout=timeout) as response:
            declared = response.headers.get("Content-Length")
            if declared and declared.isdigit() and int(declared) > max_bytes:
                raise ConversionError(
                    f"the page is {int(declared) / 1e6:.1f} MB, over the "
                    f"{max_bytes / 1e6:.0f} MB limit"
                )
            body = response.read(max_bytes + 1)
            if len(body) > max_bytes:
                raise ConversionError(f"the page is over the {max_bytes / 1e6:.0f} MB limit")
            final = response.geturl()
            content_type = response.headers.get("Content-Type")
    except urllib.error.HTTPError as error:
        if error.code == 429 or error.code >= 500:
            raise FetchUnavailableError(f"the server answered HTTP {error.code}") from None
        raise ConversionError(f"the server answered HTTP {error.code} ({error.reason})") from None
    except urllib.error.URLError as error:
        reason = error.reason
        if isinstance(reason, ConversionError):
            raise reason from None
        raise FetchUnavailableError(f"cannot reach the server ({reason})") from None
    except TimeoutError:
        raise FetchUnavailableError(f"no answer within {timeout:.0f} s") from None
    except (ConnectionError, OSError) as error:
        raise FetchUnavailableError(f"the connection failed ({error})") from None
    path = urllib.parse.urlparse(final).path
    name = path.rsplit("/", 1)[-1] or urllib.parse.urlparse(final).hostname or "page"
    return Fetched(final, body, content_type, name)
