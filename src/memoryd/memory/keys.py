"""The keys the memory domain hands the store: a fact's canonical subject and an entity's
normalised name (``storage/row_keys.py`` says why storage keeps neither rule)."""

from __future__ import annotations

from memoryd.memory.entity_policy import normalize_name
from memoryd.memory.slot_policy import canonical_subject
from memoryd.storage.row_keys import RowKeys

ROW_KEYS = RowKeys(subject=canonical_subject, entity=normalize_name)
