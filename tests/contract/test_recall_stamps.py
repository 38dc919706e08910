"""Retrieval stamps handed out close together are written together: one transaction, in the
order they were handed out, so the rows end as if each had been written alone; ``settle``
writes them at once."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

import pytest

import memoryd.recall.run
from memoryd.memory.model import Memory
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.run import Retriever
from memoryd.service import MemoryService

from .recall_support import NOW, remember


def test_stamps_handed_out_together_are_written_once_in_order(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memoryd.recall.run, "STAMP_GATHER_SECONDS", 60.0)
    tea = remember(service, "Owner drinks green tea every afternoon")
    pot = remember(service, "The blue ceramic pot came from the market in Porto")
    store = service.store

    def row(memory_id: str) -> Memory:
        found = store.memories.get(memory_id)
        assert found is not None
        return found

    transactions = []
    opened = store.transaction

    @contextmanager
    def counted() -> Iterator[None]:
        transactions.append(1)
        with opened():
            yield

    monkeypatch.setattr(store, "transaction", counted)
    retriever = Retriever(
        store=store,
        embedder=service.embedder,
        tokenizer=service.tokenizer,
        policy=RecallPolicy(),
        clock=lambda: NOW,
        zone=service.zone,
    )
    try:
        retriever.stamp_later([tea.id, pot.id], NOW)
        retriever.stamp_later([tea.id], NOW + timedelta(hours=2))
        retriever.stamp_later([tea.id], NOW + timedelta(hours=1))  # handed out last: it stays
        assert row(tea.id).retrieval_hits == 0, "nothing written yet"
        began = time.monotonic()
        retriever.settle()
        assert time.monotonic() - began < 30, "settle writes at once"
        assert transactions == [1]
        first_tea, first_pot = row(tea.id), row(pot.id)
        assert first_tea.retrieval_hits == 3
        assert first_tea.last_retrieved_at == NOW + timedelta(hours=1)
        assert first_pot.retrieval_hits == 1
        assert first_pot.last_retrieved_at == NOW

        retriever.stamp_later([pot.id], NOW + timedelta(hours=3))  # a later write of its own
        retriever.close()
        assert transactions == [1, 1]
        assert row(pot.id).retrieval_hits == 2
        assert row(pot.id).last_retrieved_at == NOW + timedelta(hours=3)
    finally:
        retriever.close()
