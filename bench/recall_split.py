"""Where a warm recall's time goes: perf_counter hooks patched over memoryd's recall steps.

Used by ``bench_recall.py --split``; the hooks are installed only then, so the normal path is
timed unpatched. Steps nest (the text leg's SQL is inside "text leg"), so the "self" time of
each step is its time minus the time of the steps inside it.
"""

from __future__ import annotations

import functools
import importlib
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import memoryd.providers.tokenizer
import memoryd.recall.legs
import memoryd.recall.run
import memoryd.trust.fence
from memoryd.storage import memory_rows, sqlite_memories, sqlite_search

try:  # the in-process bit index copy; older code has none
    from memoryd.storage import sqlite_bits
except ImportError:
    sqlite_bits = None  # type: ignore[assignment]


def _module(name: str) -> ModuleType | None:
    """The module ``recall/<name>.py``, or None where the tree measured has no such module
    (the stages' modules since the one-way pipeline; ``evidence`` and ``policy`` before it)."""
    try:
        return importlib.import_module(f"{memoryd.recall.legs.__package__}.{name}")
    except ImportError:
        return None


# Where each step is looked up: the module that calls it (before the one-way pipeline,
# recall.evidence gathered and ranked and recall.policy rendered; now recall.read reads the
# message, recall.legs gathers, recall.score ranks and recall.pack_policy renders).
_EVIDENCE = _module("evidence")
_READ = _module("read")
_SCORE = _module("score")
_RENDER = _module("pack_policy") if _READ is not None else _module("policy")
_READS = _READ or memoryd.recall.run
_NAMES = _READ or _EVIDENCE
_LEGS = _EVIDENCE or memoryd.recall.legs
_RANKS = _SCORE or _EVIDENCE
# The vector leg's module since a message's sentences are searched too (None before).
_VECTOR_LEGS = _module("vector_legs")

# (owner, attribute, step name); the owner is the module or class the caller looks it up in.
STEPS: tuple[tuple[Any, str, str], ...] = (
    (_READS, "find_time_window", "time window"),
    (_NAMES, "name_context", "names (entity lookup)"),
    (_LEGS, "query_vector", "query embedding"),
    # Since the embedding runs beside the text, entity and time legs: the time recall waits
    # for it after them.
    (_LEGS, "awaited_vector", "query embedding"),
    (_LEGS, "vector_leg", "vector leg SQL"),
    # A message of several sentences: the wait for its sentences' vectors (embedded beside the
    # legs, like the message's), the index read for each sentence (one read of all the vectors
    # since VectorSearch.nearest_each), their rankings joined, and the cosines measured.
    (_LEGS, "awaited_vectors", "sentences embedding"),
    (_VECTOR_LEGS, "vector_leg", "vector leg SQL"),
    (getattr(memory_rows, "MemoryVectorSearch", None), "nearest_each", "vector leg SQL"),
    (_VECTOR_LEGS, "joined", "sentences' rankings joined"),
    (_VECTOR_LEGS, "best_cosines", "sentences' cosines"),
    # Inside the vector leg, where the code has them: the Hamming prefilter (sqlite-vec's KNN,
    # or the in-process copy with its check against the chunks table); the rest of the leg is
    # the candidates' float vectors and the exact cosine.
    (sqlite_search.SqliteVectorSearch, "sqlite_vec_prefilter", "vector prefilter (sqlite-vec)"),
    (getattr(sqlite_bits, "BitIndexCopy", None), "nearest", "vector prefilter (in-process bits)"),
    (
        getattr(sqlite_bits, "BitIndexCopy", None),
        "nearest_each",
        "vector prefilter (in-process bits)",
    ),
    (getattr(sqlite_bits, "BitIndexCopy", None), "_current", "bit copy check"),
    (_LEGS, "text_leg", "text leg SQL"),
    (_LEGS, "searched_text", "text leg SQL"),  # the text leg with its stand-ins, since session 15
    (_LEGS, "entity_leg", "entity leg SQL"),
    (_LEGS, "time_leg_events", "time leg SQL"),
    (_LEGS, "time_leg", "time leg SQL"),  # its name before time_leg_events, and since
    (sqlite_memories.SqliteMemoryRecords, "get_many", "candidate fetch"),
    (_LEGS, "cosines_of", "text-hit cosines"),
    (_LEGS, "unknown_names", "unknown names"),
    (_RANKS, "rank_candidates", "gates + fusion"),
    (_RANKS, "extend_ranking", "gates + fusion"),
    (_RANKS, "episode_leg", "episode leg"),
    (memoryd.recall.run, "relative_cut", "relative cut"),
    (sqlite_memories.SqliteMemoryRecords, "standing_lessons", "standing lessons SQL"),
    (memoryd.recall.run, "pack_block", "packing"),
    (_RENDER, "render_item", "rendering lines"),
    (memoryd.providers.tokenizer.O200kTokenizer, "count", "tokenising"),
    (_RENDER, "fence", "fencing"),
    (memoryd.recall.run.Retriever, "stamp_later", "retrieval stamp (queue)"),
)


class Split:
    """Accumulated self time per step, in milliseconds, over the recalls it watched."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        # perf_counter: wall time; process_time: the process's CPU time (all its threads),
        # steadier on a shared machine.
        self._clock = clock
        self.self_ms: dict[str, float] = defaultdict(float)
        self.total_ms = 0.0
        self.recalls = 0
        self._stack: list[list[float]] = []

    def wrap(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        """``function`` timed as step ``name``; time spent in nested steps is not its own."""

        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            self._stack.append([0.0])
            begin = self._clock()
            try:
                return function(*args, **kwargs)
            finally:
                spent = (self._clock() - begin) * 1000
                inner = self._stack.pop()[0]
                self.self_ms[name] += spent - inner
                if self._stack:
                    self._stack[-1][0] += spent

        return timed

    def time_recall(self, call: Callable[[], Any]) -> Any:
        """Run one recall, adding its time (on the split's clock) to the total."""
        begin = self._clock()
        result = call()
        self.total_ms += (self._clock() - begin) * 1000
        self.recalls += 1
        return result

    def rows(self) -> list[tuple[str, str, str]]:
        """(step, mean ms per recall, share of the recall) rows, largest first, with the rest."""
        n = max(1, self.recalls)
        steps = sorted(self.self_ms.items(), key=lambda item: -item[1])
        rest = self.total_ms - sum(self.self_ms.values())
        out = [(name, f"{ms / n:.2f}", f"{ms / self.total_ms:.0%}") for name, ms in steps]
        out.append(("other (service, dataclasses, glue)", f"{rest / n:.2f}", ""))
        out.append(("**recall, total**", f"{self.total_ms / n:.2f}", "100%"))
        return out


@contextmanager
def hooked(clock: Callable[[], float] = time.perf_counter) -> Iterator[Split]:
    """Install the hooks for the duration of the block, timing with ``clock``."""
    split = Split(clock)
    saved = []
    for owner, attribute, name in STEPS:
        original = getattr(owner, attribute, None)
        if original is None:
            continue
        saved.append((owner, attribute, original))
        setattr(owner, attribute, split.wrap(name, original))
    try:
        yield split
    finally:
        for owner, attribute, original in reversed(saved):
            setattr(owner, attribute, original)


def side_by_side(
    slowest: list[tuple[str, str, str]], rest: list[tuple[str, str, str]]
) -> list[tuple[str, str, str, str]]:
    """Two splits' rows (:meth:`Split.rows`) as one table: each step's time per recall in the
    slowest messages, in the rest, and the difference, largest difference first (the glue and
    the total last)."""
    times = {name: float(ms) for name, ms, _ in rest}
    last = ("other (service, dataclasses, glue)", "**recall, total**")
    steps = [(name, float(ms), times.get(name, 0.0)) for name, ms, _ in slowest]
    steps.sort(key=lambda row: -(row[1] - row[2]))
    rows = [row for row in steps if row[0] not in last]
    rows += [row for name in last for row in steps if row[0] == name]
    return [(name, f"{a:.2f}", f"{b:.2f}", f"{a - b:+.2f}") for name, a, b in rows]
