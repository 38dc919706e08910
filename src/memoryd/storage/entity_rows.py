"""The entity index's statements both backends run alike (names and aliases); each backend
adds how it creates an entity, counts mentions and ranks memories by entities."""

from __future__ import annotations

from collections.abc import Callable

from memoryd.storage.row_dialect import RowDialect, SqlConnection
from memoryd.storage.row_keys import RowKeys

_ALIASES = "SELECT alias, entity_id FROM entity_aliases"
_ALIAS_PAIRS = "SELECT e.name, a.alias FROM entity_aliases a JOIN entities e ON e.id = a.entity_id"
_ADD_ALIAS = (
    "INSERT INTO entity_aliases(key, alias, entity_id) VALUES (?, ?, ?) "
    "ON CONFLICT (key) DO UPDATE SET entity_id = excluded.entity_id, alias = excluded.alias"
)


class EntityRows:
    """Entity names and aliases, matched by the key the domain gives each name; a backend adds
    its counting and ranking queries and passes how it finds or creates an entity."""

    def __init__(
        self,
        connection: SqlConnection,
        dialect: RowDialect,
        entity_id: Callable[[SqlConnection, str, str], int],
        keys: RowKeys,
    ) -> None:
        self._db = connection
        self._dialect = dialect
        self._entity_id = entity_id
        self._keys = keys

    def entity_id(self, name: str) -> int:
        """The id of the entity ``name`` refers to, created (with ``name`` as its alias) when
        new."""
        return self._entity_id(self._db, name, self._keys.entity(name))

    def aliases(self) -> list[tuple[str, int]]:
        """Every (alias or name, entity id)."""
        rows = self._db.execute(_ALIASES).fetchall()
        return [(row[0], int(row[1])) for row in rows]

    def add_alias(self, name: str, alias: str) -> None:
        """Make ``alias`` another name of the entity called ``name`` (created if new)."""
        entity_id = self.entity_id(name)
        key = self._keys.entity(alias)
        self._db.execute(self._dialect.sql(_ADD_ALIAS), (key, alias, entity_id))

    def alias_pairs(self) -> list[tuple[str, str]]:
        """Every (entity name, alias), sorted."""
        rows = self._db.execute(_ALIAS_PAIRS).fetchall()
        return sorted((str(row[0]), str(row[1])) for row in rows)
