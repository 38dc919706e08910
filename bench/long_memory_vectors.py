"""Long memories and the vector leg: is a memory better scored by its best window?

MiniLM reads at most 256 word pieces; a longer text is cut into windows overlapping by 32
pieces and its stored vector is the mean of the window vectors. A long message about several
things gets a vector that matches none of them well. This measures, offline, on the stores
``bench_beam.py`` builds (the same protocol, the same cached vectors):

- how many memories of BEAM, LoCoMo and the owner sets (the paraphrase set's memories and
  filler, the held-out set's memories) are longer than one window;
- the vector leg's R@10, the fused R@10, block recall and tokens, answerable-empty and
  general-empty, when the vector leg scores every memory (and every candidate's cosine, which
  the gates read) by: ``shipped`` (the store's own leg, as gathered), ``mean`` (the stored
  vector, recomputed over every active memory: checks this script against ``shipped``),
  ``max`` (the best window's cosine), ``first`` (the first window's only), ``mean+max`` (the
  mean of the mean-vector cosine and the best window's); and ``max 128``, ``mean+max 128``,
  ``max 64``, ``mean+max 64`` (the same over windows of 128 or 64 pieces, overlapping by 32,
  for every memory longer than one such window: a finer best part). Memories of one window
  score alike in all.

Every question is gathered once (the shipped policy); each variant replaces the vector leg's
ranking (its first ``leg_depth``, over all active memories) and the cosines, then ranks, cuts
and packs as recall does (``devsets.judge``). Window vectors are cached beside the benchmark's
embeddings (``$MEMORYD_BENCH_CACHE``).

    .venv/bin/python bench/long_memory_vectors.py [--sets beam,locomo] [--stores /tmp/lmv]
"""

from __future__ import annotations

import argparse
import hashlib
import sqlite3
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_paraphrase import DATA, HELDOUT, filler
from bench_paraphrase import load as load_owner
from devsets import (
    CACHE,
    Built,
    CachedEmbedder,
    Conversation,
    Outcome,
    beam,
    build,
    embedder_named,
    gather,
    judge,
    locomo,
    offtopic_questions,
)
from report import mean, print_table, progress
from stores import open_with_store

from memoryd.memory.model import Status, embedded_text
from memoryd.providers.embedder import WINDOW_OVERLAP, WINDOW_PIECES, minilm_tokenizer_file
from memoryd.recall.evidence_policy import Candidate
from memoryd.recall.legs import Evidence
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.score import rank
from memoryd.recall.score_policy import relative_cut

# Finer windows (word pieces) a memory's best part is also measured over.
FINE = (128, 64)
VARIANTS = (
    "shipped",
    "mean",
    "max",
    "first",
    "mean+max",
    *(f"{name} {pieces}" for pieces in FINE for name in ("max", "mean+max")),
)
Scores = dict[str, dict[str, float]]  # variant → memory id → cosine


class Windows:
    """Each text's window vectors (one row per window of ``pieces`` word pieces, overlapping by
    32 as the model's own), cached on disk."""

    def __init__(self, embedder: CachedEmbedder, pieces: int = WINDOW_PIECES) -> None:
        import numpy as np
        from tokenizers import Tokenizer

        self._np = np
        self._model = cast(Any, embedder.inner)  # LocalMiniLM: its tokenizer and windows
        self._model._load()
        self._tokenizer = Tokenizer.from_file(str(minilm_tokenizer_file()))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=pieces, stride=WINDOW_OVERLAP)
        self._pieces = pieces
        self._db = sqlite3.connect(str(CACHE / "windows-minilm.sqlite"))
        self._db.execute("CREATE TABLE IF NOT EXISTS w (k TEXT PRIMARY KEY, n INT, b BLOB)")

    def count(self, texts: Sequence[str]) -> list[int]:
        """How many windows each text is read in."""
        return [1 + len(e.overflowing) for e in self._tokenizer.encode_batch(list(texts))]

    def vectors(self, text: str) -> Any:
        """``text``'s window vectors (unit rows)."""
        np = self._np
        key = f"{self._pieces}:" + hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()
        row = self._db.execute("SELECT n, b FROM w WHERE k = ?", (key,)).fetchone()
        if row is not None:
            return np.frombuffer(row[1], dtype=np.float32).reshape(row[0], -1)
        encoding = self._tokenizer.encode_batch([text])[0]
        windows = [piece.ids for piece in [encoding, *encoding.overflowing]]
        matrix = np.asarray(self._model._run_windows(windows), dtype=np.float32)
        self._db.execute("INSERT INTO w VALUES (?, ?, ?)", (key, len(matrix), matrix.tobytes()))
        self._db.commit()
        return matrix


class StoreWindows:
    """One store's active memories: stored vectors, and window vectors of the long ones."""

    def __init__(self, built: Built, windows: Windows, *fine: Windows) -> None:
        import numpy as np

        self._np = np
        memories = built.store.memories.query(status=Status.ACTIVE)
        self.memories = {m.id: m for m in memories}
        texts = [embedded_text(m.content, m.cues) for m in memories]
        counts = windows.count(texts)
        self.long = {m.id: c for m, c in zip(memories, counts, strict=True) if c > 1}
        stored = built.store.memories.vectors(list(self.memories))
        self.ids = [i for i in self.memories if i in stored]
        self.matrix = np.asarray([stored[i] for i in self.ids], dtype=np.float32)
        self.windows = {
            m.id: windows.vectors(text)
            for m, text in zip(memories, texts, strict=True)
            if m.id in self.long
        }
        self.fine: dict[int, dict[str, Any]] = {}
        for pieces, finer in zip(FINE, fine, strict=True):
            small = finer.count(texts)
            self.fine[pieces] = {
                m.id: finer.vectors(text)
                for m, text, c in zip(memories, texts, small, strict=True)
                if c > 1
            }

    def scores(self, query: Any) -> Scores:
        """Every active memory's cosine to ``query`` under each variant (not ``shipped``)."""
        np = self._np
        q = np.asarray(query, dtype=np.float32)
        base = dict(zip(self.ids, (float(c) for c in self.matrix @ q), strict=True))
        out: Scores = {v: dict(base) for v in VARIANTS[1:]}
        for memory_id, matrix in self.windows.items():
            cosines = matrix @ q
            best = float(cosines.max())
            out["max"][memory_id] = best
            out["first"][memory_id] = float(cosines[0])
            out["mean+max"][memory_id] = (base[memory_id] + best) / 2
        for pieces, held in self.fine.items():
            for memory_id, matrix in held.items():
                best = float((matrix @ q).max())
                out[f"max {pieces}"][memory_id] = best
                out[f"mean+max {pieces}"][memory_id] = (base[memory_id] + best) / 2
        return out


def rescored(
    evidence: Evidence, held: StoreWindows, scores: dict[str, float], depth: int
) -> Evidence:
    """``evidence`` with the vector leg ranked by ``scores`` (its first ``depth``) and every
    candidate's cosine from them."""
    order = sorted(scores, key=lambda i: -scores[i])[:depth]
    rankings = {**evidence.rankings, "vector": order}
    ranks: dict[str, dict[str, int]] = defaultdict(dict)
    for leg, ids in rankings.items():
        for position, memory_id in enumerate(ids, start=1):
            ranks[memory_id].setdefault(leg, position)
    candidates = {}
    for memory_id, found in ranks.items():
        old = evidence.candidates.get(memory_id)
        memory = old.memory if old is not None else held.memories[memory_id]
        words = old.words if old is not None else frozenset()
        # As the legs do: vector and text hits carry a cosine; entity and time hits none.
        measured = "vector" in found or "text" in found
        cosine = scores.get(memory_id) if measured else None
        candidates[memory_id] = Candidate(memory, dict(found), cosine, words)
    return replace(evidence, candidates=candidates, rankings=rankings)


def variants_of(evidence: Evidence, held: StoreWindows, depth: int) -> dict[str, Evidence]:
    """The gathered evidence under each variant."""
    if evidence.vector is None:
        return dict.fromkeys(VARIANTS, evidence)
    scores = held.scores(evidence.vector)
    out = {"shipped": evidence}
    for variant in VARIANTS[1:]:
        out[variant] = rescored(evidence, held, scores[variant], depth)
    return out


Hits = dict[str, dict[str, list[bool]]]  # variant → length class → evidence in vector top 10


def run_set(
    name: str,
    conversations: Sequence[Conversation],
    embedder: CachedEmbedder,
    where: Path,
    windows: Sequence[Windows],
) -> tuple[dict[str, list[Outcome]], dict[str, list[bool]], dict[str, float], Hits]:
    """Outcomes per variant, general-empty per variant, counts of long memories, and whether
    each evidence memory was in the vector leg's first ten, by its length."""
    policy = RecallPolicy()
    general = offtopic_questions()
    outcomes: dict[str, list[Outcome]] = {v: [] for v in VARIANTS}
    empty: dict[str, list[bool]] = {v: [] for v in VARIANTS}
    hits: Hits = {v: defaultdict(list) for v in VARIANTS}
    total = long = evidence_long = evidence_all = 0
    over = dict.fromkeys(FINE, 0)
    windows_of_long: list[int] = []
    for number, conversation in enumerate(conversations):
        built = build(conversation, str(where / f"{name}-{number}.db"), embedder, open_with_store)
        held = StoreWindows(built, *windows)
        total += len(held.memories)
        long += len(held.long)
        for pieces, found in held.fine.items():
            over[pieces] += len(found)
        windows_of_long.extend(held.long.values())
        memory_of = built.memory_of
        for question in conversation.questions:
            keys = [memory_of.get(k) for k in question.evidence]
            evidence_all += len(keys)
            evidence_long += sum(k in held.long for k in keys if k)
            gathered = gather(built, question.text, policy)
            for variant, evidence in variants_of(gathered, held, policy.leg_depth).items():
                outcomes[variant].append(judge(built, question, evidence, policy)[0])
                first = set(evidence.rankings.get("vector", [])[:10])
                for memory_id in filter(None, keys):
                    size = "over 256" if memory_id in held.long else "one window"
                    hits[variant][size].append(memory_id in first)
        for text in general:
            gathered = gather(built, text, policy)
            for variant, evidence in variants_of(gathered, held, policy.leg_depth).items():
                ranking, _ = rank(built.store, evidence, conversation.now, policy, built.zone)
                empty[variant].append(not relative_cut(ranking.items, policy)[0])
        built.service.close()
        progress(f"  {name}: {conversation.name} done")
    counts = {
        "memories": total,
        "long": long,
        **{f"over {pieces}": over[pieces] for pieces in FINE},
        "windows per long": mean([float(n) for n in windows_of_long]),
        "evidence": evidence_all,
        "evidence long": evidence_long,
    }
    return outcomes, empty, counts, hits


def owner_counts(windows: Sequence[Windows]) -> list[list[Any]]:
    """Rows: owner set, texts, longer than each window (memories and filler, as stored)."""
    rows = []
    for label, path in (("owner", DATA), ("owner held-out", HELDOUT)):
        data = load_owner(path)
        texts = [p["memory"] for p in data["pairs"]] + filler(data, 2000)
        over = [sum(c > 1 for c in size.count(texts)) for size in windows]
        rows.append([label, len(texts), *over])
    return rows


def summary(
    name: str,
    variant: str,
    found: Sequence[Outcome],
    empty: Sequence[bool],
    block_digits: int = 3,
) -> list[Any]:
    """One table row: each leg's and the fused R@10, block recall (to ``block_digits``), mean
    block tokens, answerable-empty and general-empty shares."""
    at: Callable[[str], str] = lambda leg: f"{mean([o.legs[leg] for o in found]):.3f}"  # noqa: E731
    return [
        name,
        variant,
        len(found),
        at("text"),
        at("vector"),
        at("fused"),
        f"{mean([o.block for o in found]):.{block_digits}f}",
        f"{mean([float(o.tokens) for o in found]):.0f}",
        f"{mean([float(o.empty) for o in found]):.1%}",
        f"{mean([float(e) for e in empty]):.1%}",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sets", default="beam,locomo")
    parser.add_argument("--stores", type=Path, default=Path("/tmp/long-memory-vectors"))
    args = parser.parse_args()
    args.stores.mkdir(parents=True, exist_ok=True)
    data = {name: beam() if name == "beam" else locomo() for name in args.sets.split(",")}
    asked = [q.text for sets in data.values() for c in sets for q in c.questions]
    embedder = embedder_named("minilm", asked + offtopic_questions())
    windows = (Windows(embedder), *(Windows(embedder, pieces) for pieces in FINE))
    print("Owner sets, texts longer than one window:\n")
    over = tuple(f"over {pieces} pieces" for pieces in (WINDOW_PIECES, *FINE))
    print_table(("set", "texts", *over), owner_counts(windows))
    rows, per_category, counted, lengths = [], {}, [], []
    for name, conversations in data.items():
        outcomes, empty, counts, hits = run_set(name, conversations, embedder, args.stores, windows)
        for size in ("one window", "over 256"):
            held = [hits[v][size] for v in VARIANTS]
            lengths.append(
                [name, size, len(held[0]), *(f"{mean([float(x) for x in h]):.3f}" for h in held)]
            )
        counted.append([name, *(f"{v:g}" if isinstance(v, float) else v for v in counts.values())])
        for variant in VARIANTS:
            rows.append(summary(name, variant, outcomes[variant], empty[variant]))
        per_category[name] = outcomes
    print("\nDev sets, memories longer than one window (and evidence memories that are):\n")
    headers = (
        "set",
        "memories",
        "over 256 pieces",
        *(f"over {pieces} pieces" for pieces in FINE),
        "256-piece windows per long",
        "evidence",
        "evidence long",
    )
    print_table(headers, counted)
    print("\nEvidence memories in the vector leg's first ten, by their length:\n")
    print_table(("set", "evidence memory", "n", *VARIANTS), lengths)
    print("\nEach variant of the vector leg's score:\n")
    print_table(
        ("set", "vector score", "questions", "text R@10", "vector R@10", "fused R@10", "block",
         "block tokens", "answerable, empty", "general, empty"),
        rows,
    )  # fmt: skip
    for name, outcomes in per_category.items():
        groups: dict[str, dict[str, list[Outcome]]] = defaultdict(lambda: defaultdict(list))
        for variant, found in outcomes.items():
            for outcome in found:
                groups[outcome.category][variant].append(outcome)
        table = []
        for category in sorted(groups):
            row: list[Any] = [category, len(groups[category]["shipped"])]
            for variant in VARIANTS:
                found = groups[category][variant]
                row.append(
                    f"{mean([o.legs['vector'] for o in found]):.3f} / "
                    f"{mean([o.legs['fused'] for o in found]):.3f} / "
                    f"{mean([o.block for o in found]):.3f}"
                )
            table.append(row)
        print(f"\n{name}, per category (vector R@10 / fused R@10 / block recall):\n")
        print_table(("category", "n", *VARIANTS), table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
