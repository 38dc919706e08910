"""How far would an ideal word expansion carry the analysts' vocabulary misses? Each analyst
question whose evidence is out of the top 10 because its word is not the filing's is asked
three ways on one store: as written, with the word replaced by the filing's own word, and with
the filing's word appended (what an expansion adds). The filing's words below were read off
the evidence by hand: this is a ceiling for a mechanism, not a ranking rule.

    python bench/probe_expansion_ceiling.py --store /tmp/lib.db   # a bench_kb --set filings store

Prints, per question and form, the rank of the evidence text and of its page in the top 10.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_kb_filings import SETS, _hit_pages, _hit_text, squash
from kb_cache import CachedEmbedder
from report import print_table
from stores import open_with_store

from memoryd.providers.embedder import LocalMiniLM

# Analyst question (its line number from 0), the question's word, the filing's word.
SWAPS = (
    (6, "headcount", "employees"),
    (13, "employ", "employees"),
    (38, "headcount", "employees"),
    (75, "headcount", "employees"),
    (83, "headcount", "employees"),
    (7, "buy back", "repurchase"),
    (61, "buybacks", "repurchases"),
    (32, "share repurchases", "purchases of stock for treasury"),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--store", type=Path, required=True)
    args = parser.parse_args()
    _, service = open_with_store(str(args.store), embedder=CachedEmbedder(LocalMiniLM()))
    try:
        documents = {
            Path(d.source_uri).name: d for d in service.kb.list_documents(collection="filings")
        }
        questions = [json.loads(line) for line in SETS["analyst"].read_text("utf-8").splitlines()]
        rows = []
        for index, word, theirs in SWAPS:
            question = questions[index]
            document = documents[question["file"]]
            written = question["question"]
            for form, text in (
                ("as written", written),
                ("replaced", written.replace(word, theirs)),
                ("appended", f"{written} {theirs}"),
            ):
                found = service.kb.search(text, limit=10).hits
                ours = [(r, h) for r, h in enumerate(found, 1) if h.document.id == document.id]
                quote, pages = squash(question["quote"]), set(question["pages"])
                text_rank = next((r for r, h in ours if quote in squash(_hit_text(h))), None)
                page_rank = next((r for r, h in ours if pages & _hit_pages(h)), None)
                rows.append((index, form, text, text_rank or "-", page_rank or "-"))
        print_table(("question", "form", "asked", "evidence rank", "page rank"), rows)
    finally:
        service.close()


if __name__ == "__main__":
    main()
