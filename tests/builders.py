"""Builders for proposal batches as a model would send them, shared by the test suites."""

from __future__ import annotations

import json
from typing import Any


def item(
    content: str, kind: str = "event", confidence: float = 0.9, **extra: Any
) -> dict[str, Any]:
    """One proposal item as a model would send it."""
    return {
        "kind": kind,
        "content": content,
        "confidence": confidence,
        "changes_behavior": False,
        "general_knowledge": False,
        **extra,
    }


def batch(*items: dict[str, Any]) -> str:
    """A batch as the raw JSON text a model returns."""
    return json.dumps({"memories": list(items)})
