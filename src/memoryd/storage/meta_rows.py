"""The store's key-value table and named leases, shared by the SQLite and PostgreSQL stores."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

from memoryd.errors import StoreMismatchError, StoreUnavailableError
from memoryd.storage.protocols import EmbeddingSignature
from memoryd.storage.row_dialect import RowDialect, SqlConnection

_SIGNATURE = "SELECT key, value FROM meta WHERE key IN ('embedding_model', 'embedding_dimension')"
RECORD_SIGNATURE = (
    "INSERT INTO meta(key, value) VALUES ('embedding_model', ?), ('embedding_dimension', ?)"
)
_GET = "SELECT value FROM meta WHERE key = ?"
_SET = (
    "INSERT INTO meta(key, value) VALUES (?, ?) "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)
_ALL = "SELECT key, value FROM meta"
_TRY_LOCK = (
    "INSERT INTO locks(name, holder, expires_at) VALUES (?, ?, ?) "
    "ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, "
    "expires_at = excluded.expires_at WHERE locks.expires_at <= ? "
    "OR locks.holder = excluded.holder"
)
_HOLDER = "SELECT holder FROM locks WHERE name = ?"
_TAKE_OVER = "UPDATE locks SET holder = ?, expires_at = ? WHERE name = ? AND holder = ?"
_UNLOCK = "DELETE FROM locks WHERE name = ? AND holder = ?"

ConnectionT = TypeVar("ConnectionT", bound=SqlConnection)


class MetaAndLeases(Generic[ConnectionT]):
    """Key-value settings, named leases and the embedding signature; a store sets ``_db``,
    ``_dialect`` and ``path`` (what its errors name) and says whether its vectors exist."""

    _db: ConnectionT
    _dialect: RowDialect
    path: Any
    # The signature of the embedder this process uses (None: the process embeds nothing).
    _expected: EmbeddingSignature | None = None

    def expect_signature(self, signature: EmbeddingSignature) -> None:
        """Vector work in this process uses ``signature``'s model (see :meth:`check_space`)."""
        self._expected = signature

    def has_vectors(self) -> bool:
        """Whether the store's vector index exists yet (the backend knows where to look)."""
        raise NotImplementedError

    def require_vectors(self) -> None:
        """Fail clearly when vectors are written before the embedding signature exists, or
        into another model's space."""
        if not self.has_vectors():
            raise StoreUnavailableError(
                f"store {self.path} has no embedding signature yet; run `memoryd init`"
            )
        self.check_space()

    def check_space(self) -> None:
        """Refuse vector work once the store records another model than this process embeds
        with: a re-embed switched it while the process ran, and its vectors would be from
        the wrong space (one indexed read of the key-value table)."""
        expected = self._expected
        if expected is None:
            return
        found = self.embedding_signature()
        if found is not None and found != expected:
            raise StoreMismatchError(
                f"the store was re-embedded with {found.model!r} ({found.dimension} "
                f"dimensions) while this process embeds with {expected.model!r}; restart it "
                f"with the embedder set to {found.model!r} (MEMORYD_EMBED_MODEL, or [embed] "
                "in memoryd.toml)"
            )

    def embedding_signature(self) -> EmbeddingSignature | None:
        """The recorded model and dimension."""
        rows = {str(row[0]): str(row[1]) for row in self._db.execute(_SIGNATURE).fetchall()}
        if "embedding_model" not in rows:
            return None
        return EmbeddingSignature(rows["embedding_model"], int(rows["embedding_dimension"]))

    def get_meta(self, key: str) -> str | None:
        """A value from the store's key-value table."""
        row = self._db.execute(self._dialect.sql(_GET), (key,)).fetchone()
        return str(row[0]) if row else None

    def set_meta(self, key: str, value: str) -> None:
        """Set a value in the store's key-value table."""
        self._db.execute(self._dialect.sql(_SET), (key, value))

    def meta_items(self) -> dict[str, str]:
        """The whole key-value table."""
        return {str(row[0]): str(row[1]) for row in self._db.execute(_ALL).fetchall()}

    def try_lock(self, name: str, holder: str, now: datetime, lease_seconds: int) -> bool:
        """Take the named lease if it is free or expired (call inside a transaction)."""
        stored_time = self._dialect.stored_time
        expires = stored_time(now + timedelta(seconds=lease_seconds))
        cursor = self._db.execute(
            self._dialect.sql(_TRY_LOCK), (name, holder, expires, stored_time(now))
        )
        return bool(cursor.rowcount)

    def lock_holder(self, name: str) -> str | None:
        """Who holds the named lease, if anyone."""
        row = self._db.execute(self._dialect.sql(_HOLDER), (name,)).fetchone()
        return str(row[0]) if row else None

    def take_over_lock(
        self, name: str, previous: str, holder: str, now: datetime, lease_seconds: int
    ) -> bool:
        """Take the lease from ``previous`` (known dead) if it still holds it."""
        expires = self._dialect.stored_time(now + timedelta(seconds=lease_seconds))
        cursor = self._db.execute(self._dialect.sql(_TAKE_OVER), (holder, expires, name, previous))
        return bool(cursor.rowcount)

    def unlock(self, name: str, holder: str) -> None:
        """Release the lease if ``holder`` still holds it."""
        self._db.execute(self._dialect.sql(_UNLOCK), (name, holder))
