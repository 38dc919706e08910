"""Every filing of the evaluation library is titled right from its opening pages (registrant,
form, fiscal year — not the filing year), and every chunk of a PDF says which page it is on.
The filings' first pages are cut from ``../shared/data/filings`` when it is at hand; a stand-in
cover naming the company is used otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from memoryd.kb.chunking import chunk_markdown
from memoryd.kb.convert import convert
from tests.kb_pdfs import FILINGS, _cut, _write_stand_in

from .chunking_support import count, tail

# Each filing's right title, and the company a stand-in names when the file is not at hand.
TITLES = {
    "COCACOLA_2016_10K.pdf": ("The Coca-Cola Company — Form 10-K 2016", "Coca-Cola"),
    "JPMORGAN_2022Q1_10Q.pdf": (
        "JPMorgan Chase & Co. — Form 10-Q, quarter ended March 31, 2022",
        "JPMorgan",
    ),
    "ORACLE_2023_10K.pdf": ("Oracle Corporation — Form 10-K 2023", "Oracle"),
    # Fiscal year ended December 25, 2021.
    "library/AMD_2021_10K.pdf": ("Advanced Micro Devices, Inc. — Form 10-K 2021", "AMD"),
    # Fiscal years ended September 25, 2021 and September 24, 2022.
    "library/APPLE_2021_10K.pdf": ("Apple Inc. — Form 10-K 2021", "Apple"),
    "library/APPLE_2022_10K.pdf": ("Apple Inc. — Form 10-K 2022", "Apple"),
    # The registrant's name on the cover is a logo.
    "library/COCACOLA_2015_10K.pdf": ("The Coca-Cola Company — Form 10-K 2015", "Coca-Cola"),
    # Fiscal year ended August 28, 2022.
    "library/COSTCO_2022_10K.pdf": ("Costco Wholesale Corporation — Form 10-K 2022", "Costco"),
    # Fiscal year ended June 30, 2022.
    "library/MICROSOFT_2022_10K.pdf": ("Microsoft Corporation — Form 10-K 2022", "Microsoft"),
    "library/NETFLIX_2022_10K.pdf": ("Netflix, Inc. — Form 10-K 2022", "Netflix"),
    # Fiscal year ended May 31, 2022.
    "library/ORACLE_2022_10K.pdf": ("Oracle Corporation — Form 10-K 2022", "Oracle"),
}


class NoImages:
    """Pictures are not read here: the titles and pages come from the text layer."""

    name = "none"

    def read(self, image: bytes) -> str:
        return ""


@pytest.mark.parametrize("where", sorted(TITLES))
def test_each_library_filing_is_titled_by_registrant_form_and_fiscal_year(
    where: str, tmp_path: Path
) -> None:
    title, company = TITLES[where]
    source = FILINGS / where
    if source.exists():
        pdf, wanted = _cut(source, (1, 2, 3, 4, 5)), title
    else:
        stand_in = tmp_path / source.name
        _write_stand_in(stand_in, company)
        pdf, wanted = stand_in.read_bytes(), f"{company} Holdings Corporation — Form 10-K 2025"

    converted = convert(pdf, source.name, NoImages())

    assert converted.title == wanted
    chunks = chunk_markdown(converted.markdown, count, tail)
    assert chunks
    assert all(chunk.pages for chunk in chunks), [c.text[:80] for c in chunks if not c.pages]
