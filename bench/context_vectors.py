"""A memory's vector informed by the message before it (issue 28, session 14): measured offline.

Many of BEAM's user messages only make sense with the conversation before them ("Yes, and can
you add the deadline to it?"): the message alone embeds far from a question about its topic.
This computes, on the stores ``bench_beam.py`` builds (the same protocol, the same cached
vectors), a context vector for each memory from the memory before it: the conversation's
previous stored item of the same session date (the first of a session has none and keeps its
own vector), or with ``--across`` the conversation's previous item, any session. It swaps the
context vector into the vector leg of a stand-in for the store (the stores' files are never
changed):

- ``own``: the stored vectors, read through the stand-in (checks the stand-in against
  ``shipped``, the store's own leg: its search is exact, the store's has a prefilter);
- ``blend a``: normalise(v_i + a * v_prev), a in {0.25, 0.5} (no model pass);
- ``embed``: the vector of the previous memory's last 300 characters, a space, the memory's
  text;
- ``max blend 0.5`` / ``max embed``: a second vector: the leg ranks by, and every cosine
  (the gates', the episode leg's) is, the larger of the memory's own cosine and its context
  vector's; ``max embed -0.05``: the context vector's cosine less 0.05; ``max embed own
  cosine``: ranked by the larger, every cosine the memory's own.

Every question is gathered under each variant through recall's own code (``devsets.gather``
and ``devsets.judge``: legs, sentences, gates, cut, packing): the stand-in answers the vector
leg's nearest-memory search and the stored vectors' products. The owner sets' memories are made
by ``remember`` with no message before them: a product would give them no context vector, so
they are unchanged by construction.

    .venv/bin/python bench/context_vectors.py [--sets beam,locomo] [--across] [--compound] \
        [--variants "own,max embed"] [--stores /tmp/context-vectors]
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from devsets import (
    Built,
    CachedEmbedder,
    Conversation,
    Outcome,
    beam,
    build,
    compound,
    embedder_named,
    gather,
    judge,
    locomo,
    offtopic_questions,
)
from long_memory_vectors import summary
from report import mean, print_table, progress
from stores import open_with_store

from memoryd.memory.model import Status, embedded_text
from memoryd.recall import vector_legs
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.score import rank
from memoryd.recall.score_policy import relative_cut
from memoryd.storage.protocols import VectorHit

VARIANTS = (
    "shipped",
    "own",
    "blend 0.25",
    "blend 0.5",
    "embed",
    "max blend 0.5",
    "max embed",
    "max embed -0.05",
    "max embed own cosine",
)
# The previous memory's characters read before the memory's own text (variant "embed").
CONTEXT_CHARS = 300


class ContextStore:
    """A store whose vector search and stored vectors' products read ``primary`` (memory id →
    unit vector) and, when given, the larger of that and ``second``'s products; everything else
    is the wrapped store's."""

    def __init__(
        self,
        store: Any,
        memories: dict[str, Any],
        primary: Any,
        second: Any,
        margin: float = 0.0,
        own_cosine: bool = False,
    ) -> None:
        import numpy as np

        self._np = np
        self._store = store
        self._memories = memories
        self.ids = list(primary)
        self.where = {memory_id: at for at, memory_id in enumerate(self.ids)}
        self.first = np.asarray([primary[i] for i in self.ids], dtype=np.float32)
        self.second = (
            np.asarray([second[i] for i in self.ids], dtype=np.float32) if second else None
        )
        self.margin = margin
        self.own_cosine = own_cosine
        self.vectors = _Search(self)
        self.memories = _Records(store.memories, primary)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def products(self, memory_ids: Sequence[str], vectors: Any) -> Iterator[tuple[str, Any]]:
        """As ``vector_legs.stored_products``: each memory's products with ``vectors``."""
        ids = [i for i in memory_ids if i in self.where]
        if not ids:
            return iter(())
        rows = [self.where[i] for i in ids]
        found = self.first[rows] @ vectors
        if self.second is not None and not self.own_cosine:
            found = self._np.maximum(found, self.second[rows] @ vectors - self.margin)
        return zip(ids, found, strict=True)

    def nearest(self, vector: Any, k: int, kinds: Sequence[Any]) -> list[VectorHit]:
        """Exact search over every active memory (of ``kinds``), by the variant's cosine."""
        np = self._np
        query = np.asarray(vector, dtype=np.float32)
        own = cosines = self.first @ query
        if self.second is not None:
            cosines = np.maximum(cosines, self.second @ query - self.margin)
        order = np.argsort(-cosines, kind="stable")
        if self.own_cosine:  # ranked by the larger, measured (by the gates) by its own
            cosines = own
        hits = []
        for at in order:
            memory_id = self.ids[at]
            if kinds and self._memories[memory_id].kind not in kinds:
                continue
            hits.append(VectorHit(memory_id=memory_id, cosine=float(cosines[at])))
            if len(hits) == k:
                break
        return hits


class _Search:
    def __init__(self, owner: ContextStore) -> None:
        self._owner = owner

    def nearest(
        self, vector: Any, statuses: Sequence[Status], k: int, kinds: Sequence[Any] = ()
    ) -> list[VectorHit]:
        assert list(statuses) == [Status.ACTIVE], statuses
        return self._owner.nearest(vector, k, kinds)


class _Records:
    def __init__(self, records: Any, vectors: dict[str, Any]) -> None:
        self._records = records
        self._vectors = vectors

    def __getattr__(self, name: str) -> Any:
        return getattr(self._records, name)

    def vectors(self, memory_ids: Sequence[str]) -> dict[str, Any]:
        return {i: self._vectors[i] for i in memory_ids if i in self._vectors}


_stored_products = vector_legs.stored_products


def _products(store: Any, memory_ids: Sequence[str], vectors: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(store, ContextStore):
        return store.products(memory_ids, vectors)
    return _stored_products(store, memory_ids, vectors)


vector_legs.stored_products = _products  # the stand-in's products wherever cosines are read


def previous_of(built: Built, across: bool = False) -> dict[str, str]:
    """Each memory → the memory stored before it in the same session (same stamp), or in the
    same conversation when ``across``."""
    memory_of = built.memory_of
    out: dict[str, str] = {}
    last: tuple[Any, str] | None = None
    for key, _, when in built.conversation.items:
        memory_id = memory_of.get(key)
        if memory_id is None:
            continue
        if last is not None and (across or last[0] == when) and last[1] != memory_id:
            out.setdefault(memory_id, last[1])
        last = (when, memory_id)
    return out


def context_stores(
    built: Built, embedder: CachedEmbedder, across: bool
) -> tuple[dict[str, Any], int]:
    """Each variant's stand-in store (None for ``shipped``), and how many memories have a
    previous one."""
    import numpy as np

    memories = {m.id: m for m in built.store.memories.query(status=Status.ACTIVE)}
    stored = built.store.memories.vectors(list(memories))
    own = {i: np.asarray(stored[i], dtype=np.float32) for i in memories if i in stored}
    before = {i: p for i, p in previous_of(built, across).items() if i in own and p in own}

    def unit(v: Any) -> Any:
        return (v / np.linalg.norm(v)).astype(np.float32)

    def blend(a: float) -> dict[str, Any]:
        return {i: unit(v + a * own[before[i]]) if i in before else v for i, v in own.items()}

    ordered = sorted(before)
    texts = [
        memories[before[i]].content[-CONTEXT_CHARS:]
        + " "
        + embedded_text(memories[i].content, memories[i].cues)
        for i in ordered
    ]
    embedder.warm(texts)
    embedded = dict(zip(ordered, embedder.embed(texts), strict=True)) if texts else {}
    joined = {i: unit(np.asarray(embedded[i])) if i in embedded else v for i, v in own.items()}
    blended = {a: blend(a) for a in (0.25, 0.5)}
    plain = built.store
    return {
        "shipped": None,
        "own": ContextStore(plain, memories, own, None),
        "blend 0.25": ContextStore(plain, memories, blended[0.25], None),
        "blend 0.5": ContextStore(plain, memories, blended[0.5], None),
        "embed": ContextStore(plain, memories, joined, None),
        "max blend 0.5": ContextStore(plain, memories, own, blended[0.5]),
        "max embed": ContextStore(plain, memories, own, joined),
        "max embed -0.05": ContextStore(plain, memories, own, joined, margin=0.05),
        "max embed own cosine": ContextStore(plain, memories, own, joined, own_cosine=True),
    }, len(before)


def run_set(
    name: str,
    conversations: Sequence[Conversation],
    embedder: CachedEmbedder,
    where: Path,
    across: bool,
    chosen: Sequence[str] = VARIANTS,
) -> tuple[dict[str, list[Outcome]], dict[str, list[bool]], tuple[int, int]]:
    """Outcomes and general-empty per variant; memories, and those with a previous one."""
    policy = RecallPolicy()
    general = offtopic_questions()
    outcomes: dict[str, list[Outcome]] = {v: [] for v in chosen}
    empty: dict[str, list[bool]] = {v: [] for v in chosen}
    total = with_context = 0
    for number, conversation in enumerate(conversations):
        built = build(conversation, str(where / f"{name}-{number}.db"), embedder, open_with_store)
        stands, counted = context_stores(built, embedder, across)
        total += len(built.by_memory)
        with_context += counted
        views = {
            v: built if s is None else replace(built, store=s)
            for v, s in stands.items()
            if v in chosen
        }
        for question in conversation.questions:
            for variant, view in views.items():
                evidence = gather(view, question.text, policy)
                outcomes[variant].append(judge(view, question, evidence, policy)[0])
        for text in general:
            for variant, view in views.items():
                evidence = gather(view, text, policy)
                ranking, _ = rank(view.store, evidence, conversation.now, policy, view.zone)
                empty[variant].append(not relative_cut(ranking.items, policy)[0])
        built.service.close()
        progress(f"  {name}: {conversation.name} done")
    return outcomes, empty, (total, with_context)


def category_table(outcomes: dict[str, list[Outcome]]) -> tuple[list[str], list[list[Any]]]:
    """Per category: n, text R@10, then each variant's vector / fused R@10 / block; a fused
    below its best leg marked."""
    groups: dict[str, dict[str, list[Outcome]]] = defaultdict(lambda: defaultdict(list))
    for variant, found in outcomes.items():
        for outcome in found:
            groups[outcome.category][variant].append(outcome)
    table = []
    for category in sorted(groups):
        shipped = groups[category]["shipped"]
        text = mean([o.legs["text"] for o in shipped])
        row: list[Any] = [category, len(shipped), f"{text:.3f}"]
        for variant in outcomes:
            found = groups[category][variant]
            vector = mean([o.legs["vector"] for o in found])
            fused = mean([o.legs["fused"] for o in found])
            below = "*" if fused < max(text, vector) else ""
            row.append(f"{vector:.3f} / {fused:.3f}{below} / {mean([o.block for o in found]):.3f}")
        table.append(row)
    return list(outcomes), table


def loso(measured: dict[str, dict[str, tuple[float, float]]]) -> list[list[Any]]:
    """Leave one set out: the variant with the best block (then fused) on one set, and its
    numbers on the other beside the shipped ones."""
    rows = []
    for chosen_on, other in (("beam", "locomo"), ("locomo", "beam")):
        if chosen_on not in measured or other not in measured:
            continue
        options = {v: m for v, m in measured[chosen_on].items() if v not in ("shipped", "own")}
        best = max(options, key=lambda v: (options[v][1], options[v][0]))
        there, shipped = measured[other][best], measured[other]["shipped"]
        rows.append([
            chosen_on, best, f"{options[best][0]:.3f} / {options[best][1]:.3f}", other,
            f"{there[0]:.3f} / {there[1]:.3f}", f"{shipped[0]:.3f} / {shipped[1]:.3f}",
        ])  # fmt: skip
    return rows


def main() -> int:
    """Measure each set under each variant, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sets", default="beam,locomo")
    parser.add_argument("--stores", type=Path, default=Path("/tmp/context-vectors"))
    parser.add_argument(
        "--across",
        action="store_true",
        help="the previous memory of the conversation, across sessions (else: of the session)",
    )
    parser.add_argument(
        "--variants", default="", help="only these variants (comma-separated; shipped always)"
    )
    parser.add_argument(
        "--compound",
        action="store_true",
        help="ask each set's questions two at a time (devsets.compound; the general ones alone)",
    )
    parser.add_argument("--chats", type=int, default=20, help="BEAM chats (of 20)")
    parser.add_argument("--samples", type=int, default=10, help="LoCoMo conversations (of 10)")
    args = parser.parse_args()
    args.stores.mkdir(parents=True, exist_ok=True)
    data = {
        name: beam(chats=args.chats) if name == "beam" else locomo(samples=args.samples)
        for name in args.sets.split(",")
    }
    if args.compound:
        data = {name: compound(sets) for name, sets in data.items()}
    asked = [q.text for sets in data.values() for c in sets for q in c.questions]
    embedder = embedder_named("minilm", asked + offtopic_questions())
    picked = {"shipped", *(v.strip() for v in args.variants.split(",") if v.strip())}
    chosen = [v for v in VARIANTS if v in picked] if args.variants else list(VARIANTS)
    rows, counted, per_category = [], [], {}
    measured: dict[str, dict[str, tuple[float, float]]] = {}
    for name, conversations in data.items():
        outcomes, empty, (total, with_context) = run_set(
            name, conversations, embedder, args.stores, args.across, chosen
        )
        counted.append([name, total, with_context])
        for variant in chosen:
            rows.append(summary(name, variant, outcomes[variant], empty[variant], block_digits=4))
        measured[name] = {
            v: (mean([o.legs["fused"] for o in f]), mean([o.block for o in f]))
            for v, f in outcomes.items()
        }
        per_category[name] = category_table(outcomes)
    print("Memories, and those with a previous memory in their session:\n")
    print_table(("set", "memories", "with a previous one"), counted)
    print("\nEach variant of the memories' vectors:\n")
    print_table(
        ("set", "vectors", "questions", "text R@10", "vector R@10", "fused R@10", "block",
         "block tokens", "answerable, empty", "general, empty"),
        rows,
    )  # fmt: skip
    for name, (names, table) in per_category.items():
        print(f"\n{name}, per category (vector R@10 / fused R@10 / block; * fused < best leg):\n")
        print_table(("category", "n", "text R@10", *names), table)
    print("\nLeave one set out (fused R@10 / block):\n")
    print_table(
        ("chosen on", "variant", "there", "measured on", "variant there", "shipped there"),
        loso(measured),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
