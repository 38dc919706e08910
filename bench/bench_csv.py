"""CSV exports in the knowledge base: what reading and chunking a large one costs, and whether an
owner's questions about a bank statement find the row they ask about.

- **scale**: a seeded ``;``-separated statement of N MB (20 rows a day from 2000 on, five
  columns, ~55 bytes a row), converted (``kb.convert``) and chunked (``kb.chunking``) as an
  ingest does, with the rows in date order (set month by month) and shuffled (one table):
  seconds for each and the chunks made, so the growth with the size shows.
- **questions**: tests/kb_statements.py's ~200-row statement ingested into a fresh SQLite store
  (MiniLM), eight questions an owner would ask, and the rank of the first result holding the
  row (or, for a question naming no month, any row of that payee or category); ``--flat`` reads
  the file as one table (no month sections) for the before.

    python bench/bench_csv.py --sizes 2.5,5,10,20
    python bench/bench_csv.py --questions [--flat]
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memoryd.config.settings import resolve_settings
from memoryd.kb import csv_tables
from memoryd.kb.chunking import chunk_markdown
from memoryd.kb.convert import convert
from memoryd.providers.embedder import LocalMiniLM
from memoryd.providers.tokenizer import O200kTokenizer
from memoryd.wiring import open_service
from tests.kb_statements import ELECTRICITY, GROCER, bank_statement, payment


class _NoImages:
    name = "none"

    def read(self, image: bytes) -> str:
        return ""


def statement_of(megabytes: float, *, ordered: bool, seed: int = 1) -> bytes:
    rng = random.Random(seed)
    lines = ["Date;Payee;Amount (EUR);Category;Reference"]
    size, day, index = 0, dt.date(2000, 1, 1), 0
    while size < megabytes * 1e6:
        index += 1
        if index % 20 == 0:
            day += dt.timedelta(days=1)
        shown = day if ordered else dt.date(2020, rng.randint(1, 12), rng.randint(1, 28))
        amount = f"{-rng.uniform(1, 500):.2f}".replace(".", ",")
        line = (
            f"{shown:%d.%m.%Y};Payee {rng.randint(1, 500)} GmbH;{amount};"
            f"Cat {rng.randint(1, 30)};REF{rng.randint(10**9, 10**10)}"
        )
        lines.append(line)
        size += len(line) + 2
    return ("\r\n".join(lines) + "\r\n").encode()


def scale(sizes: list[float]) -> None:
    tokenizer = O200kTokenizer()

    def tail(text: str, tokens: int) -> str:
        ids = tokenizer.encode(text)
        return tokenizer.decode(ids[-tokens:]) if tokens < len(ids) else text

    print("MB     order     rows     convert s  chunk s  chunks  months")
    for megabytes in sizes:
        for ordered in (True, False):
            data = statement_of(megabytes, ordered=ordered)
            start = time.perf_counter()
            converted = convert(data, "big.csv", _NoImages())
            converted_at = time.perf_counter()
            drafts = chunk_markdown(converted.markdown, tokenizer.count, tail)
            chunked_at = time.perf_counter()
            print(
                f"{megabytes:<6g} {'dated' if ordered else 'shuffled':<9} {data.count(10) - 1:<8} "
                f"{converted_at - start:<10.2f} {chunked_at - converted_at:<8.2f} "
                f"{len(drafts):<7} {converted.markdown.count(chr(10) + '## ')}",
                flush=True,
            )


def questions(flat: bool) -> None:
    if flat:
        setattr(csv_tables, "month_sections", lambda rows: [("", list(rows))])  # noqa: B010
    text = bank_statement()
    lines = text.splitlines()
    directory = Path(tempfile.mkdtemp())
    service = open_service(resolve_settings(str(directory / "kb.db"), {}), embedder=LocalMiniLM())
    service.kb.ingest_bytes(text.encode(), "statement-2026.csv")

    def cells(row: str) -> str:
        return "| " + " | ".join(row.split(";")) + " |"

    def paid(payee: str, month: int) -> str:
        return next(r for r in lines if payee in r and f".{month:02d}.2026;" in r)

    asked = [
        (
            "How much did I pay the electricity company in March?",
            cells(payment(text, ELECTRICITY, 3)),
        ),
        ("What was my electricity bill in June?", cells(payment(text, ELECTRICITY, 6))),
        ("Vattenfall bill October", cells(payment(text, ELECTRICITY, 10))),
        ("What did I spend on groceries in March?", cells(payment(text, GROCER, 3))),
        ("How much was the rent in February?", cells(paid("Krause", 2))),
        ("When did I pay Telekom in August?", cells(paid("Telekom", 8))),
        ("What did I spend on groceries?", "| Groceries |"),
        ("How much did I pay Vattenfall?", "| Vattenfall"),
    ]
    first = found = 0
    for question, needle in asked:
        hits = service.kb.search(question, limit=5).hits
        rank = next((i + 1 for i, hit in enumerate(hits) if needle in hit.text), None)
        first += rank == 1
        found += rank is not None
        print(f"{rank if rank else '-':>4}  {len(hits)} results  {question}")
    print(
        f"{'one table' if flat else 'month sections'}: first {first}/{len(asked)}, "
        f"top 5 {found}/{len(asked)}"
    )
    service.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="", help="MB of the scale run, e.g. 2.5,5,10,20")
    parser.add_argument("--questions", action="store_true")
    parser.add_argument("--flat", action="store_true", help="no month sections (the before)")
    args = parser.parse_args()
    if args.sizes:
        scale([float(s) for s in args.sizes.split(",")])
    if args.questions:
        questions(args.flat)


if __name__ == "__main__":
    main()
