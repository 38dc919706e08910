"""Calls to model endpoints (the LLM routes, the embeddings endpoint) that end on time and stay
small, whatever the endpoint does.

Every call runs under a :class:`Budget`: a total deadline (the route's ``timeout``, for the
whole call with its retries from its first request, not per read) and a cap on the bytes one
answer may have. The SDKs' HTTP client gets a transport (:func:`bounded_http_client`) that
reads the budget of the call in progress: it clamps every connect, read and write timeout to
the time left, shuts the socket down when the deadline passes (an endpoint that sends a byte
every few seconds never trips a read timeout), and cuts an answer off past the cap. The SDKs'
own retries are off: this module retries, and never sleeps past the deadline
(:func:`retry_delay`, the policy).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import httpx2

T = TypeVar("T")

ONE_MIB = 1 << 20
# Why 8 s and 60 s: the SDKs' own backoff ceiling, and the longest Retry-After worth honouring
# inside a call (a longer one is the job queue's business).
MAX_BACKOFF = 8.0
MAX_RETRY_AFTER = 60.0
RETRY_STATUSES = frozenset({408, 409, 429})


class EndpointLimitError(Exception):
    """A call ran out of its budget: its deadline passed or its answer was too large."""


class DeadlineExceeded(EndpointLimitError):
    """The call's total deadline passed."""


class AnswerTooLarge(EndpointLimitError):
    """The answer had more bytes than the cap (or was compressed, so unbounded once read)."""


@dataclass(frozen=True)
class Limits:
    """What one kind of call may take: ``what`` names the endpoint in errors ("the extract
    route", "the embeddings endpoint")."""

    what: str
    timeout: float
    max_bytes: int = ONE_MIB
    retries: int = 0


class Budget:
    """The deadline and byte cap of one call in progress (monotonic clock). The deadline runs
    from the call's first request: what the SDK does before it sends anything (loading its
    modules on first use) is not the endpoint's time."""

    def __init__(self, limits: Limits, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self.clock = clock
        self.deadline: float | None = None

    def start(self) -> None:
        """The call's first request goes out now (later ones keep the deadline)."""
        if self.deadline is None:
            self.deadline = self.clock() + self.limits.timeout

    def remaining(self) -> float:
        """Seconds left before the deadline (negative once passed)."""
        if self.deadline is None:
            return self.limits.timeout
        return self.deadline - self.clock()

    def expired(self) -> bool:
        """Whether the deadline has passed."""
        return self.remaining() <= 0

    def late(self) -> DeadlineExceeded:
        """The error for a call past its deadline."""
        return DeadlineExceeded(
            f"{self.limits.what} did not answer within its {_seconds(self.limits.timeout)} "
            "timeout (the whole call, retries included)"
        )

    def too_large(self) -> AnswerTooLarge:
        """The error for an answer over the cap."""
        return AnswerTooLarge(
            f"{self.limits.what} answered more than {_size(self.limits.max_bytes)}"
        )


_current: contextvars.ContextVar[Budget | None] = contextvars.ContextVar(
    "memoryd_endpoint_budget", default=None
)


def retry_delay(
    tries: int, retries: int, status: int | None, retry_after: float | None, remaining: float
) -> float | None:
    """How long to wait before trying a failed attempt again, or None to give up now.

    ``tries`` attempts failed so far (1 after the first); ``status`` is the HTTP status of the
    failure (None: the connection failed); ``retry_after`` what the endpoint asked for. Worth
    retrying: connection failures, 408, 409, 429 and 5xx, while retries and time remain; a wait
    that would end past the deadline gives up at once instead.
    """
    if tries > retries:
        return None
    if status is not None and status not in RETRY_STATUSES and status < 500:
        return None
    if retry_after is not None and 0 <= retry_after <= MAX_RETRY_AFTER:
        delay = retry_after
    else:
        delay = min(0.5 * 2.0 ** (tries - 1), MAX_BACKOFF)
    return delay if delay < remaining else None


def call_within(
    limits: Limits, attempt: Callable[[], T], sleep: Callable[[float], None] = time.sleep
) -> T:
    """``attempt()`` under a fresh :class:`Budget`, retried by :func:`retry_delay`.

    Raises :class:`EndpointLimitError` when the deadline passes or an answer is too large;
    otherwise the last attempt's own error (an SDK error the caller maps) once retries are
    spent or the failure is not worth retrying.
    """
    budget = Budget(limits)
    token = _current.set(budget)
    try:
        tries = 0
        while True:
            try:
                return attempt()
            except Exception as error:
                limit = _limit_in(error)
                if limit is not None:
                    raise limit from None
                if budget.expired():
                    raise budget.late() from None
                tries += 1
                delay = retry_delay(
                    tries, limits.retries, _status(error), _retry_after(error), budget.remaining()
                )
                if delay is None:
                    error.add_note(f"{_ATTEMPTS_NOTE}{tries}")
                    raise
                sleep(delay)
    finally:
        _current.reset(token)


_ATTEMPTS_NOTE = "memoryd attempts: "


def attempts_of(error: BaseException) -> int:
    """How many attempts :func:`call_within` made before giving up with ``error`` (1 when it
    did not come from there)."""
    for note in getattr(error, "__notes__", ()):
        if note.startswith(_ATTEMPTS_NOTE):
            return int(note.removeprefix(_ATTEMPTS_NOTE))
    return 1


def _limit_in(error: BaseException) -> EndpointLimitError | None:
    """Our own limit error, however deep an SDK wrapped it."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, EndpointLimitError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _status(error: Exception) -> int | None:
    status = getattr(error, "status_code", None)
    return status if isinstance(status, int) else None


def _retry_after(error: Exception) -> float | None:
    response = getattr(error, "response", None)
    value = getattr(response, "headers", {}).get("retry-after") if response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _seconds(value: float) -> str:
    return f"{value:g} s"


def _size(value: int) -> str:
    return f"{value / ONE_MIB:.3g} MiB" if value >= ONE_MIB else f"{value:,} bytes"


def bounded_http_client(fallback: Limits) -> httpx2.Client:
    """An HTTP client for an SDK (``http_client=``) whose every request obeys the budget of the
    call in progress, or ``fallback``'s for a request made outside :func:`call_within`.

    Connections are not kept alive: each request opens its own, so the deadline can shut it
    down without touching another request's.
    """
    import httpx2

    class BoundedClient(httpx2.Client):
        # Why override a private method: it is where the client picks the transport for a URL,
        # the environment's proxies included, and every one of them must be bounded.
        def _transport_for_url(self, url: httpx2.URL) -> httpx2.BaseTransport:
            return _BoundedTransport(super()._transport_for_url(url), fallback)

    return BoundedClient(
        timeout=httpx2.Timeout(fallback.timeout),
        limits=httpx2.Limits(max_connections=100, max_keepalive_connections=0),
        follow_redirects=True,
    )


class _Watchdog:
    """Shuts the request's socket down when the deadline passes (a blocked read returns)."""

    def __init__(self, seconds: float) -> None:
        self.fired = False
        self._socket: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(seconds, 0.0), self._fire)
        self._timer.daemon = True

    def trace(self, name: str, info: dict[str, Any]) -> None:
        """The httpcore trace hook: keep the socket the connection opened."""
        if name == "connection.connect_tcp.complete":
            stream = info.get("return_value")
            found = stream.get_extra_info("socket") if stream is not None else None
            with self._lock:
                self._socket = found if isinstance(found, socket.socket) else None
                if self.fired:
                    self._shut()

    def start(self) -> None:
        self._timer.start()

    def cancel(self) -> None:
        self._timer.cancel()

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            self._shut()

    def _shut(self) -> None:
        if self._socket is not None:
            # Already closed (OSError): the request ended on its own.
            with contextlib.suppress(OSError):
                self._socket.shutdown(socket.SHUT_RDWR)


@functools.cache
def _transport_class() -> type[Any]:
    import httpx2

    class BoundedTransport(httpx2.BaseTransport):
        """Applies the current call's budget to one request."""

        def __init__(self, inner: httpx2.BaseTransport, fallback: Limits) -> None:
            self.inner = inner
            self.fallback = fallback

        def handle_request(self, request: httpx2.Request) -> httpx2.Response:
            budget = _current.get() or Budget(self.fallback)
            budget.start()
            remaining = budget.remaining()
            if remaining <= 0:
                raise budget.late()
            given = request.extensions.get("timeout") or {}
            request.extensions["timeout"] = {
                phase: remaining if given.get(phase) is None else min(given[phase], remaining)
                for phase in ("connect", "read", "write", "pool")
            }
            watchdog = _Watchdog(remaining)
            request.extensions["trace"] = watchdog.trace
            # A compressed answer would grow past the cap once decoded: ask for none.
            request.headers["accept-encoding"] = "identity"
            watchdog.start()
            try:
                response = self.inner.handle_request(request)
            except Exception as error:
                watchdog.cancel()
                if watchdog.fired or budget.expired():
                    raise budget.late() from error
                raise
            encoding = response.headers.get("content-encoding", "identity").lower()
            length = response.headers.get("content-length", "")
            too_long = length.isdigit() and int(length) > budget.limits.max_bytes
            if encoding not in ("identity", "") or too_long:
                watchdog.cancel()
                response.close()
                raise budget.too_large()
            return httpx2.Response(
                status_code=response.status_code,
                headers=response.headers,
                stream=_capped(response, budget, watchdog),
                extensions=response.extensions,
            )

        def close(self) -> None:
            self.inner.close()

    return BoundedTransport


def _capped(
    response: httpx2.Response, budget: Budget, watchdog: _Watchdog
) -> httpx2.SyncByteStream:
    stream: httpx2.SyncByteStream = _stream_class()(response, budget, watchdog)
    return stream


@functools.cache
def _stream_class() -> type[Any]:
    import httpx2

    class CappedStream(httpx2.SyncByteStream):
        """The answer's bytes, cut off past the cap or the deadline."""

        def __init__(self, response: httpx2.Response, budget: Budget, watchdog: _Watchdog) -> None:
            self.response = response
            self.budget = budget
            self.watchdog = watchdog

        def __iter__(self) -> Iterator[bytes]:
            response, budget, watchdog = self.response, self.budget, self.watchdog
            seen = 0
            try:
                for chunk in response.stream:  # type: ignore[union-attr]
                    seen += len(chunk)
                    if seen > budget.limits.max_bytes:
                        raise budget.too_large()
                    if watchdog.fired:
                        raise budget.late()
                    yield chunk
            except EndpointLimitError:
                raise
            except Exception as error:
                if watchdog.fired or budget.expired():
                    raise budget.late() from error
                raise
            if watchdog.fired:  # the shutdown looked like the end of a read-to-close body
                raise budget.late()

        def close(self) -> None:
            self.watchdog.cancel()
            self.response.close()

    return CappedStream


def _BoundedTransport(inner: httpx2.BaseTransport, fallback: Limits) -> httpx2.BaseTransport:
    transport: httpx2.BaseTransport = _transport_class()(inner, fallback)
    return transport
