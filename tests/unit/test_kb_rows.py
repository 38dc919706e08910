"""Table rows as search units (pure, kb/rows.py): each row carries its breadcrumb, the table's
title, its group and label, and each value with its column header."""

from __future__ import annotations

from memoryd.kb.rows import MAX_ROW_CHARS, table_rows

STATEMENT = """Cash flows for the three years were as follows (in millions):

|  | September 24, 2022 | September 25, 2021 |
|---|---|---|
| Investing activities: |  |  |
| Payments for acquisition of property, plant and equipment | (10,708) | (11,085) |
| Other | (1,780) |  |

Cash used in investing activities rose in 2022.
"""


def test_each_row_with_values_is_a_unit_with_its_title_headers_group_and_label() -> None:
    rows = table_rows("Apple Inc. — Form 10-K 2022 > CASH FLOWS", STATEMENT)

    assert [r.index for r in rows] == [0, 1]
    assert rows[0].text == (
        "Apple Inc. — Form 10-K 2022 > CASH FLOWS | Cash flows for the three years were as "
        "follows (in millions): | Investing activities: Payments for acquisition of property, "
        "plant and equipment | September 24, 2022: (10,708) | September 25, 2021: (11,085)"
    )
    assert rows[1].text.endswith("Investing activities: Other | September 24, 2022: (1,780)")


def test_a_table_without_a_header_rule_still_gives_its_rows_and_prose_gives_none() -> None:
    text = "| Net sales | 394,328 | 365,817 |\n| Gross margin | 170,782 | 152,836 |"
    assert [r.text for r in table_rows("", text)] == [
        "Net sales | 394,328 | 365,817",
        "Gross margin | 170,782 | 152,836",
    ]
    assert table_rows("Notes", "No table here.\n\nOnly | a pipe in a sentence.") == []


def test_two_tables_keep_their_own_titles_and_a_long_row_is_cut() -> None:
    wide = "| Label | " + " | ".join(f"{i:,}" for i in range(1000, 1200)) + " |"
    text = f"Segment revenue\n\n| Region | 2022 |\n|---|---|\n| Americas | 5 |\n\n{wide}"
    first, second = table_rows("Doc", text)
    assert first.text == "Doc | Segment revenue | Americas | 2022: 5"
    assert len(second.text) == MAX_ROW_CHARS
    assert "Segment revenue" not in second.text


def test_a_row_label_text_holds_its_label_group_and_table_title_never_its_values() -> None:
    rows = table_rows("Apple Inc. — Form 10-K 2022 > CASH FLOWS", STATEMENT)

    assert rows[0].label == (
        "Payments for acquisition of property, plant and equipment (Investing activities:) — "
        "Cash flows for the three years were as follows (in millions):"
    )
    assert "10,708" not in rows[0].label and "Apple" not in rows[0].label
    # A heading above the table is its title without the Markdown marks; a label of figures
    # alone has no label text (its vector would match nothing).
    [titled] = table_rows("Doc", "## Segment revenue\n\n| Region | 2022 |\n|---|---|\n| West | 5 |")
    assert titled.label == "West — Segment revenue"
    assert [r.label for r in table_rows("", "| 2022 | 5 | 6 |")] == [""]


def test_headed_rows_give_each_label_with_its_group_and_the_headers_over_its_values() -> None:
    from memoryd.kb.rows import headed_rows

    assert headed_rows(STATEMENT) == [
        (
            "Investing activities: Payments for acquisition of property, plant and equipment",
            ("September 24, 2022", "September 25, 2021"),
        ),
        ("Investing activities: Other", ("September 24, 2022",)),
    ]


def test_a_table_cut_from_its_header_takes_the_years_of_the_headings_column_by_column() -> None:
    from memoryd.kb.rows import headed_rows

    continued = "| Net income | 4,491 | 5,116 |\n| Other |  | 12 |\n"

    assert headed_rows(continued, "Year Ended December 31, 2022 2021") == [
        ("Net income", ("2022", "2021")),
        ("Other", ("2021",)),
    ]
    assert headed_rows(continued) == [("Net income", ()), ("Other", ())]
