"""Calibrating recall's gates: the curve of the thresholds tried on LoCoMo and the off-topic sets.

Stores every LoCoMo conversation as in bench_locomo.py (memories stamped at their session date),
gathers each question's evidence once (``MemoryService.evidence``: the legs, cosines, words,
names, window), then ranks, cuts and packs it under each policy variant with the same functions
recall uses (``memoryd.retrieval.rank``, ``memoryd.recall.relative_cut`` and ``pack_block``).

Conversations 0-4 are the calibration half, 5-9 the held-out half; both are printed so a
threshold that only fits the first half shows. Columns: R@10 of the gated ranking (what
``search_memory`` returns), block recall and mean block tokens of the packed block, and the
share of recalls with an empty memories section for the answerable questions (own), set (a)
(nobody's life) and set (b) (another conversation's questions).

    .venv/bin/python bench/bench_recall_gates.py [--samples 10]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_locomo import DEFAULT_DATA, Conversation, build, offtopic_questions
from report import mean, print_table, progress

from memoryd.embedding import LocalMiniLM
from memoryd.recall import RecallPolicy, pack_block, relative_cut
from memoryd.retrieval import Evidence, rank
from memoryd.tokens import O200kTokenizer

DEFAULT = RecallPolicy()
# The tokenizer recall packs with (MemoryService's default).
TOKENIZER = O200kTokenizer()
# Every gate open and no cut: the fusion as it was before the gates (without the old floor).
OPEN = replace(
    DEFAULT,
    vector_gate=-1.0,
    text_min_cosine=-1.0,
    strong_cosine=-1.0,
    unfamiliar_strong_cosine=-1.0,
    word_max_share=1.0,
    relative_cut=0.0,
    window_bounds_events=False,
    episode_depth=0,
)
VARIANTS: list[tuple[str, RecallPolicy]] = [
    ("no gates, no cut, no episode leg", OPEN),
    ("no gates, no cut (episode leg on)", replace(OPEN, episode_depth=DEFAULT.episode_depth)),
    ("**default**", DEFAULT),
    *((f"vector_gate {v}", replace(DEFAULT, vector_gate=v)) for v in (0.2, 0.3)),
    *((f"strong_cosine {v}", replace(DEFAULT, strong_cosine=v)) for v in (0.3, 0.4, 0.45)),
    *(
        (f"unfamiliar_strong_cosine {v}", replace(DEFAULT, unfamiliar_strong_cosine=v))
        for v in (0.35, 0.45, 0.5, 0.65)
    ),
    *(
        (f"unseen_word_share {v}", replace(DEFAULT, unseen_word_share=v))
        for v in (0.4, 0.5, 0.6, 0.7, 1.01)
    ),
    ("unseen_min_words 1", replace(DEFAULT, unseen_min_words=1)),
    *(
        (
            f"unseen_word_share {v}, unfamiliar_strong_cosine {u}",
            replace(DEFAULT, unseen_word_share=v, unfamiliar_strong_cosine=u),
        )
        for v, u in ((0.5, 0.45), (0.6, 0.45), (0.5, 0.5))
    ),
    *(
        (f"strong_text_coverage {v}", replace(DEFAULT, strong_text_coverage=v))
        for v in (0.35, 0.7, 1.01)
    ),
    *((f"text_min_cosine {v}", replace(DEFAULT, text_min_cosine=v)) for v in (-1.0, 0.15, 0.2)),
    *((f"relative_cut {v}", replace(DEFAULT, relative_cut=v)) for v in (0.0, 0.25, 0.3, 0.4, 0.5)),
    *((f"episode_depth {v}", replace(DEFAULT, episode_depth=v)) for v in (0, 5, 20)),
    ("window_bounds_events off", replace(DEFAULT, window_bounds_events=False)),
    ("budget 900 (no cut)", replace(DEFAULT, relative_cut=0.0, budget_tokens=900)),
]


@dataclass
class Asked:
    """One question's gathered evidence, and its evidence dialog ids when answerable."""

    conversation: Conversation
    evidence: Evidence
    answer: set[str] | None
    category: int | None = None


def gather(conversations: list[Conversation]) -> dict[str, list[list[Asked]]]:
    """Per set, per conversation: every question's evidence."""
    offtopic = offtopic_questions()
    sets: dict[str, list[list[Asked]]] = {"own": [], "a": [], "b": []}
    for index, conversation in enumerate(conversations):
        service, now = conversation.service, conversation.now
        sets["own"].append(
            [
                Asked(conversation, service.evidence(q, now=now), evidence, category)
                for q, category, evidence in conversation.questions()
            ]
        )
        sets["a"].append(
            [Asked(conversation, service.evidence(q, now=now), None) for q in offtopic]
        )
        other = conversations[(index + 1) % len(conversations)]
        sets["b"].append(
            [
                Asked(conversation, service.evidence(q, now=now), None)
                for q, _, _ in other.questions()
            ]
        )
    return sets


def score(asked: list[Asked], policy: RecallPolicy) -> dict[str, float]:
    """R@10, block recall, mean tokens and the share of empty memories sections."""
    r10: list[float] = []
    block: list[float] = []
    tokens: list[int] = []
    empty: list[bool] = []
    for item in asked:
        conversation = item.conversation
        ranking, _ = rank(
            conversation.store, item.evidence, conversation.now, policy, conversation.zone
        )
        kept, _ = relative_cut(ranking.items, policy)
        packed = pack_block([], kept, TOKENIZER, policy.budget_tokens)
        ids = [s.memory.id for s in packed.items]
        empty.append(not ids)
        tokens.append(packed.tokens)
        if item.answer is not None:
            r10.append(
                conversation.recall_at([s.memory.id for s in ranking.items], item.answer, 10)
            )
            block.append(conversation.recall_at(ids, item.answer, len(ids)))
    return {"r10": mean(r10), "block": mean(block), "tokens": mean(tokens), "empty": mean(empty)}


def main() -> int:
    """Store the conversations, gather evidence once, print each half's curve."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--samples", type=int, default=10)
    args = parser.parse_args()
    data = json.loads(args.data.read_text())[: args.samples]
    embedder = LocalMiniLM()
    started = time.time()
    halves = {
        "calibration (conversations 0-4)": range(0, min(5, len(data))),
        "held out (conversations 5-9)": range(5, len(data)),
    }
    with tempfile.TemporaryDirectory() as tmp:
        conversations = [
            build(sample, str(Path(tmp) / f"{n}.db"), "session", embedder)
            for n, sample in enumerate(data)
        ]
        progress(f"stored {len(data)} conversations ({time.time() - started:.0f} s)")
        sets = gather(conversations)
        progress(f"gathered evidence ({time.time() - started:.0f} s)")
        for half, members in halves.items():
            if not members:
                continue
            print(f"\n### {half}\n")
            rows = []
            for name, policy in VARIANTS:
                pick = {key: [q for i in members for q in sets[key][i]] for key in sets}
                own, a, b = (score(pick[key], policy) for key in ("own", "a", "b"))
                rows.append(
                    (
                        name,
                        f"{own['r10']:.3f}",
                        f"{own['block']:.3f}",
                        f"{own['tokens']:.0f}",
                        f"{own['empty']:.1%}",
                        f"{a['empty']:.1%}",
                        f"{a['tokens']:.0f}",
                        f"{b['empty']:.1%}",
                        f"{b['tokens']:.0f}",
                    )
                )
                progress(f"  {half}: {name}")
            print_table(
                (
                    "variant",
                    "R@10",
                    "block recall",
                    "block tokens",
                    "own empty",
                    "(a) empty",
                    "(a) tokens",
                    "(b) empty",
                    "(b) tokens",
                ),
                rows,
            )
        for conversation in conversations:
            conversation.service.close()
    print(f"\nwall time {time.time() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
