"""``memoryd init`` on a PostgreSQL URL creates the extension and the schema, or says exactly
which privilege is missing (SPEC §9)."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import psycopg

from tests.pg import TestPostgres

from .conftest import Cli


def as_user(url: str, user: str) -> str:
    parts = urlsplit(url)
    host = parts.netloc.split("@", 1)[-1]
    return urlunsplit(parts._replace(netloc=f"{user}:@{host}"))


def test_init_creates_the_extension_and_schema_and_names_missing_privileges(
    cli: Cli, postgres_server: TestPostgres
) -> None:
    url = postgres_server.create_database()
    database = urlsplit(url).path.lstrip("/")
    role = f"limited_{database}"
    try:
        with psycopg.connect(postgres_server.admin_url, autocommit=True) as admin:
            admin.execute(f'CREATE ROLE "{role}" LOGIN')
            admin.execute(f'GRANT CONNECT ON DATABASE "{database}" TO "{role}"')
        limited = as_user(url, role)

        no_extension = cli.fails("--db", limited, "init")
        assert "pgvector extension" in no_extension
        assert "CREATE EXTENSION vector" in no_extension

        with psycopg.connect(url, autocommit=True) as owner:
            owner.execute("CREATE EXTENSION vector")
        no_schema = cli.fails("--db", limited, "init")
        assert "GRANT CREATE ON SCHEMA" in no_schema

        with psycopg.connect(url, autocommit=True) as owner:
            owner.execute(f'GRANT CREATE ON SCHEMA public TO "{role}"')
        ready = cli.json("--db", limited, "init")
        assert ready["embedding_dimension"] == 384
        kept = cli.json("--db", limited, "remember", "Owner keeps bees on the roof")
        assert kept["status"] == "active"
        assert "no memoryd store" in cli.fails("--db", as_user(
            postgres_server.url_for("postgres"), "postgres"), "list")  # fmt: skip
    finally:
        postgres_server.drop_database(url)
        with psycopg.connect(postgres_server.admin_url, autocommit=True) as admin:
            admin.execute(f'DROP ROLE IF EXISTS "{role}"')
