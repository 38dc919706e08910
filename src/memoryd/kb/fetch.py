"""Fetching a URL for the knowledge base: http and https only, bounded in size and time.

A failure that may pass (a timeout, a refused connection, a 5xx or 429) is a
:class:`FetchUnavailableError` and is retried from the queue; anything else (a 404, a bad
scheme, a body over the limit) is a :class:`ConversionError`, final.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import IO, Any

from memoryd.kb.converted import ConversionError
from memoryd.kb.urls import ALLOWED_SCHEMES, FetchUnavailableError, check_url, is_url

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
        self,
        req: Any,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: http.client.HTTPMessage,
        newurl: str,
    ) -> Any:
        check_url(newurl)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class _Deadline:
    """Closes every connection of one fetch when its time is up, wherever the fetch is then
    (connecting, reading headers a byte at a time, or a body trickling in): a socket timeout
    bounds one read, and a server sending a byte every few seconds never trips it."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> _Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()

    def track(self, sock: socket.socket) -> None:
        """Close ``sock`` at the deadline (at once if it has passed)."""
        with self._lock:
            self._sockets.append(sock)
            if not self.expired:
                return
        _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed: nothing left to stop
        sock.shutdown(socket.SHUT_RDWR)


def _watched(base: type[http.client.HTTPConnection], deadline: _Deadline) -> Any:
    class Watched(base):  # type: ignore[misc,valid-type]
        def connect(self) -> None:
            super().connect()
            deadline.track(self.sock)

    return Watched


class _WatchedHttp(urllib.request.HTTPHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def http_open(self, req: Any) -> Any:
        return self.do_open(_watched(http.client.HTTPConnection, self._deadline), req)


class _WatchedHttps(urllib.request.HTTPSHandler):
    def __init__(self, deadline: _Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def https_open(self, req: Any) -> Any:
        connection = _watched(http.client.HTTPSConnection, self._deadline)
        return self.do_open(connection, req, context=getattr(self, "_context", None))


def fetch(url: str, *, max_bytes: int, timeout: float) -> Fetched:
    """GET ``url``; refuses bodies over ``max_bytes`` while reading, not after. ``timeout``
    is a deadline for the whole fetch (redirects, headers and body), not for each read."""
    check_url(url)
    with _Deadline(timeout) as deadline:
        try:
            return _fetch(url, max_bytes, timeout, deadline)
        except (FetchUnavailableError, ConversionError):
            if deadline.expired:
                raise FetchUnavailableError(
                    f"the page did not arrive within {timeout:g} s (the whole fetch)"
                ) from None
            raise


def _fetch(url: str, max_bytes: int, timeout: float, deadline: _Deadline) -> Fetched:
    opener = urllib.request.build_opener(
        _WatchedHttp(deadline), _WatchedHttps(deadline), _HttpOnlyRedirects()
    )
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
            if deadline.expired:  # cut off mid-body: what arrived is not the page
                raise FetchUnavailableError("the deadline passed")
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
    except (ConnectionError, OSError, http.client.HTTPException) as error:
        raise FetchUnavailableError(f"the connection failed ({error})") from None
    path = urllib.parse.urlparse(final).path
    name = path.rsplit("/", 1)[-1] or urllib.parse.urlparse(final).hostname or "page"
    return Fetched(final, body, content_type, name)
