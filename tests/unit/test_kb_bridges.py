"""Words across the gap learned from the documents' own numbers (pure, kb/bridge_policy.py):
which rows and sentences tie two wordings, and which labels of the named document a question's
words reach through them."""

from __future__ import annotations

from memoryd.kb.abbreviation_policy import label_words
from memoryd.kb.bridge_policy import Tie, bridge, document_ties, number_key, words_of

# A bottler's filing: a segment table and the cash-flow statement carry one number.
BOTTLER = [
    "Total capital expenditures by operating segment were as follows (in millions):\n\n"
    "| | 2016 | 2015 |\n|---|---|---|\n"
    "| Capital expenditures | $2,262 | $2,553 |\n| Europe | 2.7% | 2.1% |\n",
    "CONSOLIDATED STATEMENTS OF CASH FLOWS\n\n"
    "| | 2016 | 2015 |\n|---|---|---|\n| INVESTING ACTIVITIES | | |\n"
    "| Purchases of property, plant and equipment | (2,262) | (2,553) |\n"
    "| Proceeds from disposals of property, plant and equipment | 150 | 85 |\n",
]
# A retailer's filing: its prose repeats the cash-flow row's number.
RETAILER = [
    "In 2022, we spent $3,891 on capital expenditures, and we intend to spend more in 2023.",
    "CONSOLIDATED STATEMENTS OF CASH FLOWS\n\n"
    "| | 2022 | 2021 |\n|---|---|---|\n| CASH FLOWS FROM INVESTING ACTIVITIES | | |\n"
    "| Additions to property and equipment | (3,891) | (3,588) |\n",
]
# The named filing: its cash-flow row says neither "capex" nor "capital expenditures".
NAMED = [
    (words_of("Payments for acquisition of property, plant and equipment"), ("investing",)),
    (words_of("Proceeds from sales of marketable securities"), ("investing",)),
    (words_of("Total net sales"), ()),
    (words_of("Research and development"), ("operating", "expenses")),
]


def ties_of(*documents: list[str]) -> list[Tie]:
    return [tie for texts in documents for tie in document_ties(texts)]


def reach(
    question: str, words: list[str], ties: list[Tie], own: list[Tie] | None = None
) -> dict[str, tuple[str, ...]]:
    library = label_words(" ".join(t.wording) for t in ties)
    return {e.token: e.phrases for e in bridge(words, question, NAMED, library, ties, own or [])}


def test_a_number_two_rows_carry_ties_their_labels() -> None:
    ties = document_ties(BOTTLER)
    pairs = {(" ".join(t.wording), " ".join(t.label)) for t in ties}
    assert ("capital expenditures", "purchases of property plant and equipment") in pairs
    assert ("purchases of property plant and equipment", "capital expenditures") in pairs
    # 150 and "2.7%" are not distinctive: nothing ties the disposals or Europe.
    assert not any("disposals" in p or "europe" in p for pair in pairs for p in pair)


def test_a_sentence_repeating_a_rows_number_ties_its_words_to_the_label() -> None:
    ties = document_ties(RETAILER)
    assert any(
        {"capital", "expenditures"} <= set(t.wording)
        and t.label == words_of("Additions to property and equipment")
        for t in ties
    )


def test_years_short_numbers_and_common_totals_are_not_distinctive() -> None:
    assert number_key("2022") is None  # a year
    assert number_key("150") is None
    assert number_key("2,022") == "2022"  # with a comma it is an amount
    assert number_key("394,328") == "394328"
    # One number under more than three labels ties nothing.
    crowded = "| | 2022 |\n|---|---|\n" + "".join(f"| Item {n} thing | 5,000 |\n" for n in "abcd")
    assert document_ties([crowded]) == []


def test_an_abbreviation_reaches_the_named_label_through_other_documents() -> None:
    found = reach("What was Apple's FY2022 capex?", ["capex"], ties_of(BOTTLER, RETAILER))
    assert "capex" in found
    assert "payments for acquisition of property plant and equipment" in found["capex"]
    assert "proceeds from sales of marketable securities" not in found["capex"]


def test_a_word_pair_reaches_it_too() -> None:
    ties = ties_of(BOTTLER, RETAILER)
    words = ["capital", "expenditures"]
    found = reach("Apple capital expenditures in fiscal 2021", words, ties)
    assert (
        "payments for acquisition of property plant and equipment" in found["capital expenditures"]
    )


def test_without_a_tie_nothing_is_added() -> None:
    assert reach("What was Apple's FY2022 capex?", ["capex"], ties_of(RETAILER[:1])) == {}
    assert reach("Apple buybacks in 2022", ["buybacks"], ties_of(BOTTLER, RETAILER)) == {}


def test_a_lone_word_inside_a_sentence_does_not_bridge() -> None:
    # "spent" stands beside $3,891 in the retailer's prose, but a lone word in a sentence says
    # little about the number: only a whole wording (a label) bridges one word.
    assert reach("How much was spent on marketing?", ["spent"], ties_of(RETAILER)) == {}


def test_words_the_named_labels_use_are_left_to_the_keyword_legs() -> None:
    ties = ties_of(BOTTLER, RETAILER)
    assert reach("Apple total net sales 2022", ["total", "net", "sales"], ties) == {}


def test_an_abbreviation_the_named_labels_spell_uses_the_named_documents_own_ties() -> None:
    # The named filing labels a row "Capital expenditures" itself: other documents' ties are not
    # used, its own are ("Capital expenditures" by segment, the cash-flow row by number).
    named = [(words_of("Capital expenditures"), ()), *NAMED]
    ties = ties_of(BOTTLER, RETAILER)
    library = label_words(" ".join(t.wording) for t in ties)
    question = "Coca-Cola 2016 capex"
    assert bridge(["capex"], question, named, library, ties, []) == []
    own = document_ties(BOTTLER)
    named_cash_flow = [(words_of("Purchases of property, plant and equipment"), ()), *named]
    found = bridge(["capex"], question, named_cash_flow, library, ties, own)
    assert found[0].phrases[0] == "purchases of property plant and equipment"


def test_a_label_naming_a_year_ties_nothing() -> None:
    # A maturity schedule's "Fiscal 2024" or "Notes due April 2028" is a period, not a name of
    # the quantity; its words would otherwise tie "fiscal" to any figure.
    schedule = (
        "| | Amount |\n|---|---|\n| Fiscal 2024 | 3,750 |\n| Notes due April 2028 | 1,250 |\n"
    )
    prose = "We repay $3,750 of principal in fiscal 2024 and $1,250 in 2028."
    assert document_ties([schedule, prose]) == []


# A liquidity table and the balance sheet on the next chunk: working capital is current assets
# less current liabilities in both years; goodwill matches one year's difference only.
LIQUIDITY = [
    "| | 2022 | 2021 |\n|---|---|---|\n| Working capital | $ 12,122 | $ 31,403 |\n",
    "| | 2022 | 2021 |\n|---|---|---|\n| Total current assets | 31,633 | 55,567 |\n"
    "| Total current liabilities | 19,511 | 24,164 |\n| Goodwill | 12,122 | 9,999 |\n",
]


def test_a_row_that_is_two_rows_difference_in_both_years_ties_to_both() -> None:
    ties = document_ties(LIQUIDITY)
    differences = {
        " ".join(t.label) for t in ties if t.by_difference and t.wording == ("working", "capital")
    }
    assert differences == {"total current assets", "total current liabilities"}
    # Goodwill carries 12,122 too: tied by that one shared number, not as a difference.
    assert {" ".join(t.label) for t in ties if not t.by_difference} >= {"goodwill"}
    assert not any("goodwill" in t.label for t in ties if t.by_difference)
    assert not any(t.by_difference for t in document_ties(LIQUIDITY, differences=False))


def test_the_differences_reach_the_named_labels_that_spell_the_operands_whole() -> None:
    named = [
        (words_of("Total current assets"), ("current", "assets")),
        (words_of("Other current assets"), ("current", "assets")),
        (words_of("Total current liabilities"), ("current", "liabilities")),
    ]
    ties = document_ties(LIQUIDITY)
    library = label_words(" ".join(t.wording) for t in ties)
    found = bridge(["working", "capital"], "Acme working capital 2022", named, library, ties)
    assert {p for e in found for p in e.phrases} == {
        "total current assets",
        "total current liabilities",
    }
