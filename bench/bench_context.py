"""Context pack benchmark: does the one pack hold the evidence at least as often as the memory
block plus the top search_kb results cut to the same total budget?

A mixed set, built per LoCoMo conversation in one store: every turn of the conversation is
remembered as an event memory ("Speaker: text", dated and stamped at its session, as
``bench_locomo.py`` loads them), and SciFact abstracts are ingested into the knowledge base
("# title" + text through the real pipeline, as ``bench_kb.py`` ingests them): the evidence
abstracts of the first ``--claims`` test claims plus the first ``--distractors`` other
abstracts. Questions: the conversation's QA items with evidence (evidence = a memory), and the
claims (evidence = a document). Data files are read in place.

For each question, two answers within the same budget (``--budget``, default the recall
budget):
- pack: ``service.context(question)``;
- baseline: ``service.recall(question)`` (the memory block) followed by search_kb's top 5
  fenced results, whole, in order, while the total still fits the budget.
A LoCoMo question is a hit when one of its evidence turns is in the answer (``share`` is the
mean fraction of its evidence turns present); a claim when one of its evidence abstracts is.

    .venv/bin/python bench/bench_context.py [--first I] [--conversations N] [--claims N]
        [--distractors N] [--budget N]

``--first`` picks the first LoCoMo conversation (0-based, default 0), so a second subset can
check that a change measured on one conversation holds on another.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_kb import ingest_abstract
from bench_kb import load as load_scifact
from bench_locomo import DEFAULT_DATA as LOCOMO
from bench_locomo import build
from report import mean, print_table, progress

from memoryd.providers.embedder import LocalMiniLM
from memoryd.recall.policy import RecallPolicy
from memoryd.service import MemoryService

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "scifact"


@dataclass
class Tally:
    """Per-source results: hits, evidence shares and tokens of pack and baseline."""

    hits: dict[str, list[bool]] = field(default_factory=lambda: defaultdict(list))
    shares: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    tokens: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    chunks: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))

    def add(self, key: str, found: set[str], evidence: set[str], tokens: int, chunks: int) -> None:
        """One answer of ``key`` ("locomo pack", …)."""
        self.hits[key].append(bool(found & evidence))
        self.shares[key].append(len(found & evidence) / len(evidence))
        self.tokens[key].append(tokens)
        self.chunks[key].append(chunks)


def ingest_scifact(service: MemoryService, records: list[dict[str, Any]]) -> dict[str, str]:
    """Ingest the abstracts; memoryd document id → SciFact corpus id."""
    by_document: dict[str, str] = {}
    for record in records:
        result = ingest_abstract(service, record)
        if result.document is not None:
            by_document[result.document.id] = record["_id"]
    return by_document


def baseline(service: MemoryService, question: str, budget: int, now: object) -> tuple[Any, ...]:
    """The memory block, then search_kb's top results (whole, in order) while they fit."""
    block = service.recall(question, budget=budget, now=now, stamp=False)  # type: ignore[arg-type]
    memories = {m.id for m in block.packed.lessons} | {s.memory.id for s in block.packed.items}
    parts = [block.text] if block.text else []
    documents: list[str] = []
    counter = service.tokenizer
    tokens = block.packed.tokens
    for hit in service.kb.search(question[:2000]).hits:
        trial = "\n\n".join([*parts, hit.fenced])
        cost = counter.count(trial)
        if cost > budget:
            break
        parts.append(hit.fenced)
        documents.append(hit.document.id)
        tokens = cost
    return memories, documents, tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--first", type=int, default=0, help="first LoCoMo conversation (0-9)")
    parser.add_argument("--conversations", type=int, default=2)
    parser.add_argument("--claims", type=int, default=100)
    parser.add_argument("--distractors", type=int, default=400)
    parser.add_argument("--budget", type=int, default=None)
    args = parser.parse_args()

    every = json.loads(LOCOMO.read_text(encoding="utf-8"))
    if not 0 <= args.first < len(every):
        parser.error(f"--first must be between 0 and {len(every) - 1}")
    samples = every[args.first : args.first + args.conversations]
    corpus, claims, qrels = load_scifact(SCIFACT)
    chosen = sorted(claims, key=int)[: args.claims]
    evidence_docs = {doc for claim in chosen for doc in qrels[claim] if qrels[claim][doc] > 0}
    others = [r for r in corpus if r["_id"] not in evidence_docs][: args.distractors]
    records = [r for r in corpus if r["_id"] in evidence_docs] + others
    embedder = LocalMiniLM()
    tally = Tally()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as directory:
        for index, sample in enumerate(samples):
            progress(
                f"conversation {args.first + index}: remembering turns, "
                f"ingesting {len(records)} abstracts"
            )
            conversation = build(sample, f"{directory}/store-{index}.db", "session", embedder)
            service = conversation.service
            scifact_of = ingest_scifact(service, records)
            budget = RecallPolicy().budget_tokens if args.budget is None else args.budget
            questions = [(q, e) for q, _, e in conversation.questions()]
            progress(f"  {len(questions)} LoCoMo questions, {len(chosen)} SciFact claims")
            asked = [("locomo", q, e) for q, e in questions] + [
                ("scifact", claims[c], {d for d, r in qrels[c].items() if r > 0}) for c in chosen
            ]
            for source, question, evidence in asked:
                now = conversation.now
                pack = service.context(question, budget=budget, now=now, stamp=False)
                memories, documents, tokens = baseline(service, question, budget, now)
                pack_memories = {i.id for i in pack.items if i.memory is not None}
                pack_memories |= {m.id for m in pack.lessons}
                pack_documents = [i.hit.document.id for i in pack.items if i.hit is not None]
                if source == "locomo":
                    found_pack = _turns(conversation.by_memory, pack_memories)
                    found_base = _turns(conversation.by_memory, memories)
                else:
                    found_pack = {scifact_of.get(d, "") for d in pack_documents}
                    found_base = {scifact_of.get(d, "") for d in documents}
                tally.add(f"{source} pack", found_pack, evidence, pack.tokens, len(pack_documents))
                tally.add(f"{source} baseline", found_base, evidence, tokens, len(documents))
            service.close()
            conversation.store.close()
    seconds = time.perf_counter() - started
    rows = []
    for source in ("locomo", "scifact"):
        for variant in ("pack", "baseline"):
            key = f"{source} {variant}"
            rows.append(
                [
                    source,
                    variant,
                    str(len(tally.hits[key])),
                    f"{mean([float(h) for h in tally.hits[key]]):.3f}",
                    f"{mean(tally.shares[key]):.3f}",
                    f"{mean([float(t) for t in tally.tokens[key]]):.0f}",
                    f"{mean([float(c) for c in tally.chunks[key]]):.2f}",
                ]
            )
    for variant in ("pack", "baseline"):
        hits = [h for s in ("locomo", "scifact") for h in tally.hits[f"{s} {variant}"]]
        shares = [x for s in ("locomo", "scifact") for x in tally.shares[f"{s} {variant}"]]
        tokens = [t for s in ("locomo", "scifact") for t in tally.tokens[f"{s} {variant}"]]
        rows.append(
            [
                "all",
                variant,
                str(len(hits)),
                f"{mean([float(h) for h in hits]):.3f}",
                f"{mean(shares):.3f}",
                f"{mean([float(t) for t in tokens]):.0f}",
                "",
            ]
        )
    last = args.first + len(samples) - 1
    which = f"{args.first}" if last == args.first else f"{args.first}–{last}"
    print(
        f"\nContext pack vs memory block + search_kb, LoCoMo conversation {which}, "
        f"{len(chosen)} SciFact claims over {len(records)} abstracts, {seconds:.0f} s\n"
    )
    print_table(
        ["evidence in", "answer", "questions", "hit rate", "evidence share", "tokens", "chunks"],
        rows,
    )


def _turns(by_memory: dict[str, set[str]], memory_ids: set[str]) -> set[str]:
    return {turn for memory_id in memory_ids for turn in by_memory.get(memory_id, set())}


if __name__ == "__main__":
    main()
