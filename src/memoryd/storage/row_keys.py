"""The keys memory rows are looked up by, as the domain computes them.

A fact's vocabulary is found by its canonical subject and an entity by its normalised name;
both are domain rules (``memory/slot_policy.py``, ``memory/entity_policy.py``). The domain
hands them to the store when it is opened (``memory/keys.py``, through ``wiring.open_store``);
storage stores and matches the keys and keeps no rule of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from memoryd.errors import InvalidOperationError


@dataclass(frozen=True)
class RowKeys:
    """How a subject and a name become the keys their rows are stored and matched under."""

    subject: Callable[[str], str]  # a fact's subject → the key of its subject's vocabulary
    entity: Callable[[str], str]  # an entity's name or alias → the key names are matched by


def _unkeyed(_: str) -> str:
    raise InvalidOperationError(
        "this store was opened without the domain's keys, to read or copy it; open it with "
        "memoryd.wiring.open_store to write memories with subjects or entities"
    )


# A store opened to read, count or copy (a backup's check): writing a keyed row fails clearly.
READ_ONLY_KEYS = RowKeys(subject=_unkeyed, entity=_unkeyed)
