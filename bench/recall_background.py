"""Which measure of a candidate's cosine tells evidence from chance: the cosine itself, or the
cosine measured against the message's background in the store (its margin over the k-th
neighbour, its lead over the mean of the closest ten, its z-score over the vector leg's 100,
its gap to the runner-up), or the cosine *plus* the background.

For every question of the owner paraphrase set (200- and 20-memory stores), of the first
LoCoMo conversations and the first BEAM chats, and every general question asked of the same
stores, the vector leg's cosines are read once (``MemoryService.evidence``). A measure's
threshold is the value that keeps 90 % of the general questions' best candidates below it;
the table gives the share of answerable questions whose evidence memory reaches it.

    .venv/bin/python bench/recall_background.py [--stores DIR] [--samples 3] [--chats 5]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_paraphrase as paraphrase
import numpy as np
from devsets import CachedEmbedder, Conversation, beam, build, locomo, offtopic_questions
from report import print_table, progress
from stores import open_with_store

from memoryd.providers.embedder import LocalMiniLM

QUIET = 0.9
Measure = Callable[[float, np.ndarray], float]
MEASURES: dict[str, Measure] = {
    "cosine": lambda c, a: c,
    "cosine − mean of the closest 10": lambda c, a: c - float(a[:10].mean()),
    "margin over the 10th": lambda c, a: c - float(a[min(10, len(a)) - 1]),
    "margin over the 50th": lambda c, a: c - float(a[min(50, len(a)) - 1]),
    "z-score over the leg's 100": lambda c, a: (c - float(a.mean())) / (float(a.std()) + 1e-6),
    "gap to the runner-up": lambda c, a: c - float(a[1]) if len(a) > 1 else 0.0,
    "cosine + 2 × background": lambda c, a: c + 2 * float(a[:10].mean()),
    "cosine + 5 × background": lambda c, a: c + 5 * float(a[:10].mean()),
}
# One question: whether it has evidence, the vector leg's cosines best first, and the
# positions in them of its evidence memories.
Asked = tuple[bool, np.ndarray, list[int]]


def read_set(
    name: str, conversations: list[Conversation], general: list[str], stores: Path
) -> list[Asked]:
    """Every question's vector-leg cosines in each (cached) store of one set."""
    embedder = CachedEmbedder(LocalMiniLM())
    asked: list[Asked] = []
    for number, conversation in enumerate(conversations):
        built = build(conversation, str(stores / f"{name}-{number}.db"), embedder, open_with_store)
        questions = [(q.text, q.evidence) for q in conversation.questions]
        for text, evidence in questions + [(t, frozenset()) for t in general]:
            found = built.service.evidence(text, now=conversation.now)
            ids = found.rankings.get("vector", [])
            cosines = np.asarray([found.candidates[i].cosine or 0.0 for i in ids])
            holds = [n for n, i in enumerate(ids) if built.by_memory.get(i, set()) & evidence]
            if len(cosines):
                asked.append((bool(evidence), cosines, holds))
        built.service.close()
        progress(f"  {name}: {conversation.name}")
    return asked


def reached(asked: list[Asked], measure: Measure) -> float:
    """The share of answerable questions whose evidence reaches the measure's threshold."""
    general = np.sort([max(measure(c, a) for c in a[:10]) for ok, a, _ in asked if not ok])
    threshold = general[int(np.ceil(QUIET * len(general))) - 1]
    answerable = [(a, held) for ok, a, held in asked if ok]
    hits = [any(measure(float(a[n]), a) > threshold for n in held) for a, held in answerable]
    return float(np.mean(hits))


def main() -> int:
    """Read the sets, print the table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--stores", type=Path, default=Path("/tmp/memoryd-recall-stores"))
    parser.add_argument("--samples", type=int, default=3, help="LoCoMo conversations")
    parser.add_argument("--chats", type=int, default=5, help="BEAM chats")
    args = parser.parse_args()
    args.stores.mkdir(parents=True, exist_ok=True)
    owner, general = paraphrase.load(), offtopic_questions()
    sets = {
        "owner, 200": read_set(
            "owner", paraphrase.stores(owner, 200), owner["unrelated"], args.stores
        ),
        "owner, 20": read_set(
            "owner20", paraphrase.stores(owner, 20), owner["unrelated"], args.stores
        ),
        "LoCoMo": read_set("locomo", locomo(samples=args.samples), general, args.stores),
        "BEAM": read_set("beam", beam(chats=args.chats), general, args.stores),
    }
    print_table(
        ("measure", *sets),
        [
            [name, *(f"{reached(asked, measure):.1%}" for asked in sets.values())]
            for name, measure in MEASURES.items()
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
