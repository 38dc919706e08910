"""``memoryd serve``: the HTTP API plus the background work a running memoryd owes its owner —
the extraction and document-retry worker, and the daily consolidation."""

from __future__ import annotations

import errno
import ipaddress
import logging
import os
import signal
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import time, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memoryd.config.settings import DEFAULT_HOST, DEFAULT_PORT, Settings, system_zone
from memoryd.errors import InvalidInputError, MemorydError
from memoryd.http.api import create_app
from memoryd.http.connections import DeadlineH11Protocol, connection_cap
from memoryd.http.hosts import allowed_hosts
from memoryd.http.lanes import ingest_lane_width
from memoryd.providers.llm import Gateway, routes_of
from memoryd.service import MemoryService

if TYPE_CHECKING:
    from memoryd.http.proxy import ChatProxy

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ServeOptions:
    """Where to listen and when the daily job runs."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    daily_at: time = time(3, 30)
    zone: tzinfo | None = None
    worker: bool = True
    scheduler: bool = True
    # Requests handled at once (None: request_threads()).
    threads: int | None = None
    # Host names answered besides loopback and ``host`` (serve.allowed_hosts; "*": any).
    allowed_hosts: tuple[str, ...] = ()


def request_threads(cores: int | None = None) -> int:
    """How many requests run at once by default: four per core, at least eight."""
    return max(8, 4 * (cores or os.cpu_count() or 1))


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, token: str | None) -> None:
    """Refuse to listen beyond loopback without a token."""
    if not token and not is_loopback(host):
        raise InvalidInputError(
            f"refusing to listen on {host} without a token: run `memoryd init` (it writes one) "
            "or set MEMORYD_TOKEN, or bind to 127.0.0.1"
        )


def listen_socket(host: str, port: int) -> socket.socket:
    """``host:port`` bound now, so that a busy port, a foreign address or a privileged port is
    a clear error before anything else starts (the server then listens on this socket)."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as error:
        raise InvalidInputError(
            f"cannot listen on {host!r}: {error.strerror}; use an address such as 127.0.0.1 "
            "(--host, or serve.host in memoryd.toml)"
        ) from None
    family, kind, protocol, _, address = found[0]
    listener = socket.socket(family, kind, protocol)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(address)
    except OSError as error:
        listener.close()
        raise InvalidInputError(_bind_failure(host, port, error)) from None
    return listener


def _bind_failure(host: str, port: int, error: OSError) -> str:
    other_port = "choose another port with --port (or `memoryd config set serve.port N`)"
    if error.errno == errno.EADDRINUSE:
        return (
            f"port {port} on {host} is already in use (another memoryd serve? `memoryd "
            f"status` tells); stop it, or {other_port}"
        )
    if error.errno == errno.EACCES:
        return f"not allowed to listen on port {port} (below 1024 needs privileges); {other_port}"
    if error.errno == errno.EADDRNOTAVAIL:
        return f"{host} is not an address of this machine; use 127.0.0.1 or 0.0.0.0 (--host)"
    return f"cannot listen on {host}:{port}: {error.strerror}"


def serve(
    service: MemoryService,
    token: str,
    options: ServeOptions,
    *,
    listener: socket.socket | None = None,
    proxy: ChatProxy | None = None,
) -> None:
    """Run until interrupted: the API, the worker and the daily scheduler, listening on
    ``listener`` when given (a socket :func:`listen_socket` bound); with ``proxy``, the chat
    proxy too."""
    import uvicorn

    check_bind(options.host, token)
    threads = options.threads or request_threads()
    app = create_app(
        service,
        token,
        proxy=proxy,
        hosts=allowed_hosts(options.host, options.allowed_hosts),
        ingest_lane=ingest_lane_width(threads),
    )
    if options.worker:
        service.start_worker()
        service.start_sync()
    if options.scheduler:
        service.start_scheduler(options.daily_at, options.zone or system_zone())
    config = uvicorn.Config(
        app,
        host=options.host,
        port=options.port,
        log_level=logging.getLevelName(log.getEffectiveLevel()).lower()
        if log.getEffectiveLevel() < logging.WARNING
        else "warning",
        access_log=False,
        server_header=False,
        timeout_graceful_shutdown=10,
        # A client's idle or trickling connections hold a descriptor, never a thread: headers
        # within 10 s, a body within 30 s (limits.py), 5 s idle between requests; past the
        # cap, 503 rather than no descriptor left for the database.
        http=DeadlineH11Protocol,
        timeout_keep_alive=5,
        limit_concurrency=connection_cap(),
    )
    server = uvicorn.Server(config)
    admit_in_order(server, threads)
    exit_cleanly_on_sigterm()
    try:
        server.run(sockets=[listener] if listener is not None else None)
    finally:
        service.stop_scheduler()
        service.stop_sync()
        service.stop_worker()


@dataclass(eq=False)
class SettingsWatcher:
    """Reads memoryd.toml again when it changes while ``serve`` runs: new LLM routes replace
    the service's gateway at once (the worker's next job uses them); other changes (the store,
    the embedder, the time zone, the address) are reported as needing a restart."""

    service: MemoryService
    current: Settings
    reload: Callable[[], Settings]
    say: Callable[[str], None]
    interval: float = 2.0
    # Told the new settings after each change (the chat proxy's); what it answers is said.
    on_change: Callable[[Settings], str | None] | None = None
    _stop: threading.Event = field(default_factory=threading.Event, init=False, repr=False)
    _thread: threading.Thread = field(init=False, repr=False)
    _seen: tuple[int, int] | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._thread = threading.Thread(target=self._run, name="memoryd-settings", daemon=True)
        self._seen = self._stamp()

    def start(self) -> None:
        """Watch in a background thread."""
        self._thread.start()

    def stop(self) -> None:
        """Stop watching."""
        self._stop.set()
        self._thread.join(timeout=self.interval + 5)

    def _stamp(self) -> tuple[int, int] | None:
        path = self.current.file
        try:
            found = path.stat() if path is not None else None
        except OSError:
            return None
        return None if found is None else (found.st_mtime_ns, found.st_size)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            stamp = self._stamp()
            if stamp != self._seen:
                self._seen = stamp
                self.check()

    def check(self) -> None:
        """Apply what changed in the file since the last look."""
        where = self.current.file or Path("memoryd.toml")
        try:
            fresh = self.reload()
            routes = routes_of(fresh)
        except MemorydError as error:
            self.say(f"memoryd serve: {where} changed but cannot be used ({error}); keeping the "
                     "settings it started with")  # fmt: skip
            log.warning("settings file %s unusable: %s", where, error)
            return
        if routes != self.service.gateway.routes:
            self.service.use_gateway(Gateway(routes))
            for operation in ("extract", "merge", "reflect", "caption"):
                route = routes.get(operation)
                text = route.describe().partition(": ")[2] if route else "off"
                self.say(f"memoryd serve: {where} changed: llm {operation} now {text}")
        if self.on_change is not None:
            try:
                told = self.on_change(fresh)
                if told:
                    self.say(f"memoryd serve: {where} changed: {told}")
            except MemorydError as error:
                self.say(f"memoryd serve: {where} changed but cannot be used ({error})")
        live = ("llm.", "proxy.") if self.on_change is not None else ("llm.",)
        others = sorted(
            key
            for key in set(fresh.values) | set(self.current.values)
            if not key.startswith(live) and _value(fresh, key) != _value(self.current, key)
        )
        if others:
            self.say(f"memoryd serve: {', '.join(others)} changed in {where}; restart serve to "
                     "use the new values")  # fmt: skip
        self.current = fresh


def _value(settings: Settings, key: str) -> Any:
    found = settings.setting(key)
    return None if found is None else found.value


def admit_in_order(server: Any, threads: int) -> None:
    """Run at most ``threads`` requests at once; the others wait in arrival order.

    Route handlers run on anyio's worker threads, admitted by its default limiter, which
    wakes waiters first come, first served. Its default of 40 let every client of a busy
    server run at once: on 2 cores the threads fought over the interpreter lock, a write
    transaction stretched while it waited for it, and the writes behind it queued (32 mixed
    clients: writes p95 ~1 s, reads ~0.2 s). Eight at a time keep both cores busy, and every
    request waits its turn: p95 ~0.43 s for all, same throughput."""
    startup = server.startup

    async def startup_with_limit(sockets: Any = None) -> None:
        import anyio.to_thread

        anyio.to_thread.current_default_thread_limiter().total_tokens = threads
        await startup(sockets)

    server.startup = startup_with_limit


def exit_cleanly_on_sigterm() -> None:
    """uvicorn re-raises the SIGTERM it shut down for; make that a normal exit so the worker,
    the scheduler and the store close (the write-ahead log is folded in) instead of dying."""

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)


def free_port(host: str = DEFAULT_HOST) -> int:
    """A port nothing listens on right now (for tests and benchmarks)."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])
