"""A store written before a migration is upgraded when it is opened, on both backends: the
fact predicates indexed for search, and fact slots keyed by canonical forms (colliding facts
wait for the owner, never merged silently)."""

from __future__ import annotations

from pathlib import Path

import psycopg
import sqlean

from memoryd.config.settings import resolve_settings
from memoryd.memory.model import Memory
from memoryd.providers.embedder import LocalMiniLM
from memoryd.wiring import open_service
from tests.legacy_slots import as_legacy, check_reslotted
from tests.pg import TestPostgres

JOB = "The owner works as a tram driver on the number 28 line"
PREDICATE_MIGRATION = {
    "sqlite": "0008_fact_predicates_searchable",
    "postgres": "0003_fact_predicates_searchable",
}


def _store_a_job(where: str, embedder: LocalMiniLM) -> None:
    service = open_service(resolve_settings(where, {}), embedder=embedder)
    try:
        service.remember(JOB, subject="owner", predicate="job", object="tram driver")
        for n in range(3):
            service.remember(f"Owner's reading list has {n + 3} novels on it")
    finally:
        service.close()


def _recalled(where: str, embedder: LocalMiniLM) -> str:
    service = open_service(resolve_settings(where, {}), embedder=embedder)
    try:
        return service.recall("What is my job?").text
    finally:
        service.close()


def test_a_sqlite_store_indexes_fact_predicates_once_upgraded(
    tmp_path: Path, embedder: LocalMiniLM
) -> None:
    where = str(tmp_path / "old.db")
    _store_a_job(where, embedder)
    # Make the store look as the previous release left it: the predicate not indexed, the
    # migration not applied.
    raw = sqlean.connect(where)
    raw.execute(
        "UPDATE memory_fts SET content = (SELECT content FROM memories m "
        "WHERE m.rowid = memory_fts.rowid)"
    )
    raw.execute("DELETE FROM schema_migrations WHERE name = ?", (PREDICATE_MIGRATION["sqlite"],))
    raw.commit()
    raw.close()

    assert JOB in _recalled(where, embedder)


def test_a_postgres_store_indexes_fact_predicates_once_upgraded(
    postgres_server: TestPostgres, embedder: LocalMiniLM
) -> None:
    where = postgres_server.create_database()
    try:
        _store_a_job(where, embedder)
        with psycopg.connect(where, autocommit=True) as raw:
            raw.execute("UPDATE memories SET indexed_text = content")
            raw.execute(
                "DELETE FROM schema_migrations WHERE name = %s", (PREDICATE_MIGRATION["postgres"],)
            )

        assert JOB in _recalled(where, embedder)
    finally:
        postgres_server.drop_database(where)


SLOT_MIGRATION = {"sqlite": "0012_fact_slot_vocabulary", "postgres": "0006_fact_slot_vocabulary"}
UNDO_SLOT_MIGRATION = [
    "DROP INDEX memories_by_subject_key",
    "ALTER TABLE memories DROP COLUMN same_slot_as",
    "ALTER TABLE memories DROP COLUMN subject_key",
    "DELETE FROM meta WHERE key = 'slot_scheme'",
]


def _legacy_facts(where: str, embedder: LocalMiniLM) -> dict[str, Memory]:
    service = open_service(resolve_settings(where, {}), embedder=embedder)
    try:
        return as_legacy(service)
    finally:
        service.close()


def _check_upgraded(where: str, embedder: LocalMiniLM, rows: dict[str, Memory]) -> None:
    service = open_service(resolve_settings(where, {}), embedder=embedder)
    try:
        assert service.store.integrity_errors() == []
        check_reslotted(service, rows)
    finally:
        service.close()


def test_a_sqlite_store_from_before_canonical_slots_is_migrated_and_reslotted(
    tmp_path: Path, embedder: LocalMiniLM
) -> None:
    where = str(tmp_path / "old.db")
    rows = _legacy_facts(where, embedder)
    raw = sqlean.connect(where)
    for statement in UNDO_SLOT_MIGRATION:
        raw.execute(statement)
    raw.execute("DELETE FROM schema_migrations WHERE name = ?", (SLOT_MIGRATION["sqlite"],))
    raw.commit()
    raw.close()

    _check_upgraded(where, embedder, rows)


def test_a_postgres_store_from_before_canonical_slots_is_migrated_and_reslotted(
    postgres_server: TestPostgres, embedder: LocalMiniLM
) -> None:
    where = postgres_server.create_database()
    try:
        rows = _legacy_facts(where, embedder)
        with psycopg.connect(where, autocommit=True) as raw:
            for statement in UNDO_SLOT_MIGRATION:
                raw.execute(statement)
            raw.execute(
                "DELETE FROM schema_migrations WHERE name = %s", (SLOT_MIGRATION["postgres"],)
            )

        _check_upgraded(where, embedder, rows)
    finally:
        postgres_server.drop_database(where)
