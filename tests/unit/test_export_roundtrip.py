"""Export → import → export is lossless, as a property: whatever history a store has (owner
writes, proposals, confirmations, edits, purges, aliases, documents), the copy exports the same
bytes and answers recall the same way."""

from __future__ import annotations

import io
import itertools
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memoryd
from memoryd.errors import MemorydError
from memoryd.memory.model import Kind, Source, Status
from memoryd.ops.portability import export_store, import_store
from memoryd.providers.embedder import LocalMiniLM
from memoryd.service import MemoryService

WORDS = ("heron", "violin", "Lisbon", "quartz", "saffron", "tandem", "glacier", "orchard",
         "Marta", "lantern", "walnut", "ferry")  # fmt: skip
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
_stores = itertools.count()

step = st.one_of(
    st.tuples(st.just("remember"), st.sampled_from(list(Kind)[:3]), st.integers(0, 11),
              st.integers(0, 11)),
    st.tuples(st.just("propose"), st.booleans(), st.integers(0, 11), st.integers(0, 11)),
    st.tuples(st.just("confirm"), st.integers(0, 50)),
    st.tuples(st.just("reject"), st.integers(0, 50)),
    st.tuples(st.just("edit"), st.integers(0, 50), st.integers(0, 11)),
    st.tuples(st.just("purge"), st.integers(0, 50)),
    st.tuples(st.just("alias"), st.integers(0, 11), st.integers(0, 11)),
    st.tuples(st.just("document"), st.integers(0, 11), st.integers(1, 4)),
)  # fmt: skip


def text(a: int, b: int, salt: int) -> str:
    return f"Owner's {WORDS[a]} note mentions the {WORDS[b]} (entry {salt})"


def apply(service: MemoryService, steps: list[tuple[object, ...]]) -> None:
    for number, action in enumerate(steps):
        now = T0 + timedelta(hours=number)
        ids = [m.id for m in service.list_memories()]
        try:
            # Class patterns check each step's shape and give its fields their types.
            match action:
                case ("remember", Kind() as kind, int(a), int(b)):
                    service.remember(text(a, b, number), kind=kind, entities=[WORDS[a]], now=now)
                case ("propose", bool(behaviour), int(a), int(b)):
                    item = {
                        "kind": "lesson" if behaviour else "fact",
                        "confidence": 0.9,
                        "content": text(a, b, number),
                        "changes_behavior": behaviour,
                        # Cues travel with the store; re-embedded, they give the same vector.
                        "cues": [f"{WORDS[b]} question", "export cue"],
                    }
                    if behaviour:
                        item["importance"] = "high"
                    service.propose({"memories": [item]}, source=Source.TURN, now=now)
                case (("confirm" | "reject" | "purge") as verb, int(pick)) if ids:
                    getattr(service, verb)(ids[pick % len(ids)], now=now)
                case ("edit", int(pick), int(a)) if ids:
                    service.edit(ids[pick % len(ids)], text(a, 0, number), now=now)
                case ("alias", int(a), int(b)):
                    service.add_alias(WORDS[a], f"{WORDS[b]}-alias")
                case ("document", int(a), int(parts)):
                    sections = "".join(
                        f"## Part {i}\n\n{text(a, i, number)} and more prose.\n\n"
                        for i in range(parts)
                    )
                    service.kb.ingest_bytes(f"# Doc {number}\n\n{sections}".encode(),
                                            f"doc-{a}.md", now=now)  # fmt: skip
        except MemorydError:
            pass  # a refused action (wrong status, …) is part of a real history too


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(step, min_size=1, max_size=14), with_vectors=st.booleans())
def test_export_import_export_is_lossless(
    tmp_path: Path, embedder: LocalMiniLM, steps: list[tuple[object, ...]], with_vectors: bool
) -> None:
    number = next(_stores)
    original = memoryd.open(tmp_path / f"a-{number}.db", embedder=embedder)
    copy = memoryd.open(tmp_path / f"b-{number}.db", embedder=embedder)
    try:
        apply(original, steps)
        first = io.StringIO()
        export_store(original.store, first, with_vectors=with_vectors)
        import_store(copy.store, io.StringIO(first.getvalue()), copy.embedder)
        second = io.StringIO()
        export_store(copy.store, second, with_vectors=with_vectors)

        assert second.getvalue() == first.getvalue()
        assert copy.store.integrity_errors() == []
        for status in Status:
            assert copy.store.memories.count(status=status) == original.store.memories.count(
                status=status
            )
        question = f"What about the {WORDS[0]} and the {WORDS[2]}?"
        later = T0 + timedelta(days=2)
        assert copy.recall(question, now=later).text == original.recall(question, now=later).text
    finally:
        original.close()
        copy.close()
