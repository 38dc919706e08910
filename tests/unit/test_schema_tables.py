"""The tables both backends share are written once; each backend's migrations fill in its own
column types."""

from __future__ import annotations

import pytest

from memoryd.storage import postgres_schema, schema_tables, sqlite_schema


def test_each_backend_gets_its_own_types() -> None:
    postgres = schema_tables.filled("postgres", schema_tables.JOBS)
    sqlite = schema_tables.filled("sqlite", schema_tables.JOBS)
    assert "payload JSONB NOT NULL" in postgres
    assert "next_attempt_at TIMESTAMPTZ NOT NULL" in postgres
    assert "payload TEXT NOT NULL" in sqlite
    assert "next_attempt_at TEXT NOT NULL" in sqlite


def test_an_unknown_mark_is_refused() -> None:
    with pytest.raises(KeyError):
        schema_tables.filled("sqlite", "CREATE TABLE t (x $nothing);")


@pytest.mark.parametrize("migrations", [sqlite_schema.MIGRATIONS, postgres_schema.MIGRATIONS])
def test_no_mark_is_left_in_a_migration(migrations: tuple[tuple[str, str], ...]) -> None:
    for name, sql in migrations:
        for mark in schema_tables.COLUMN_TYPES:
            assert f"${mark}" not in sql, (name, mark)


def test_the_sqlite_migrations_name_no_postgres_type() -> None:
    declared = " ".join(sql for _name, sql in sqlite_schema.MIGRATIONS)
    for postgres_word in ("TIMESTAMPTZ", "JSONB", "BIGSERIAL", "BYTEA", "DEFERRABLE", "BOOLEAN"):
        assert postgres_word not in declared
