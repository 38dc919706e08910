"""Which PostgreSQL errors mean "the server is not answering" (503, retried by the pool) and
which are statements the server refused (they keep their own handling), and how the worker
backs off while the store is away."""

from __future__ import annotations

import psycopg
import pytest
from psycopg_pool import PoolTimeout

from memoryd.jobs.worker import UNREACHABLE_BACKOFF_CAP, backoff_seconds
from memoryd.storage.postgres_connection import server_gone


@pytest.mark.parametrize(
    ("error", "gone"),
    [
        (psycopg.OperationalError("connection refused"), True),  # no SQLSTATE: the client saw it
        (psycopg.errors.AdminShutdown(), True),  # fast shutdown, pg_terminate_backend
        (psycopg.errors.CannotConnectNow(), True),  # starting up or shutting down
        (psycopg.errors.ConnectionFailure(), True),
        (PoolTimeout(), True),
        (psycopg.errors.QueryCanceled(), False),  # statement_timeout: the server answered
        (psycopg.errors.LockNotAvailable(), False),
        (psycopg.errors.DiskFull(), False),
    ],
)
def test_only_a_server_that_went_away_counts_as_not_answering(
    error: psycopg.OperationalError, gone: bool
) -> None:
    assert server_gone(error) is gone


def test_the_worker_backs_off_while_the_store_is_away_and_not_after() -> None:
    waits = [backoff_seconds(5.0, failures) for failures in range(8)]
    assert waits[:4] == [5.0, 5.0, 10.0, 20.0]
    assert max(waits) == UNREACHABLE_BACKOFF_CAP and waits == sorted(waits)
    assert backoff_seconds(60.0, 3) == 60.0  # never shorter than the configured poll
