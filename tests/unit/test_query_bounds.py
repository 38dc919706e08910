"""How much of a long message recall reads: the whole of a short one; the start and the end of
a pasted document, cut at word boundaries, named so ``--explain`` can say which part."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.recall.bounds_policy import GAP, bound_query
from memoryd.recall.policy import RecallPolicy


def test_a_short_message_is_read_whole() -> None:
    read = bound_query("where does Ana work?", 500, 1500)
    assert read.text == "where does Ana work?"
    assert read.whole
    assert read.describe() == "the whole message (20 characters)"
    assert read.to_json()["whole"] is True


def test_a_pasted_document_is_read_at_its_start_and_its_end_at_word_boundaries() -> None:
    document = "Dear team, " + "the quarterly filing is attached. " * 3000
    message = document + "What did Ana say about the Lisbon office?"
    read = bound_query(message, 500, 1500)

    head, tail = read.text.split(GAP)
    assert message.startswith(head) and message.endswith(tail)
    assert tail.endswith("What did Ana say about the Lisbon office?")
    assert 450 < len(head) <= 500 and 1450 < len(tail) <= 1500
    assert not head.endswith(("filin", "quarterl")) and tail[0].isalpha()
    assert message[len(head)] == " " and message[len(message) - len(tail) - 1] == " "
    assert not read.whole
    assert read.describe() == (
        f"the first {len(head)} and the last {len(tail):,} of {len(message):,} characters"
    )
    assert read.to_json() == {
        "chars": len(message),
        "whole": False,
        "head_chars": len(head),
        "tail_chars": len(tail),
        "read": read.describe(),
        "question": "What did Ana say about the Lisbon office?",
    }
    # The legs search the question, not the 2,000 characters of report around it.
    assert read.query == "What did Ana say about the Lisbon office?"


def test_a_long_message_asks_its_last_question_else_its_first_else_none() -> None:
    paste = "The filing lists revenue. Is this the final draft? It is. " * 200
    asked_last = bound_query("Can you check this? " + paste + "Who signed it? Thanks!", 500, 1500)
    assert asked_last.question == "Who signed it?"
    asked_first = bound_query("Who wrote this report?\n" + "Costs rose. " * 1000, 500, 1500)
    assert asked_first.question == "Who wrote this report?"
    unasked = bound_query("Costs rose. " * 1000, 500, 1500)
    assert unasked.question is None and unasked.query == unasked.text
    # A short message is read whole, whatever it asks.
    short = bound_query("Who signed it? And when?", 500, 1500)
    assert short.question is None and short.query == "Who signed it? And when?"
    # A run of text ending in "?" longer than a question is not taken for one.
    rambling = bound_query("word " * 2000 + "x" * 400 + "?", 500, 1500)
    assert rambling.question is None


def test_one_endless_word_is_cut_where_the_bound_falls() -> None:
    read = bound_query("x" * 10_000, 100, 200)
    assert read.text == "x" * 100 + GAP + "x" * 200


def test_the_policy_reads_two_thousand_characters_at_most() -> None:
    policy = RecallPolicy()
    assert policy.message_head_chars + policy.message_tail_chars == 2000
    with pytest.raises(ValueError, match="zero or more"):
        bound_query("text", -1, 10)


@given(st.text(alphabet="ab ?.\n", max_size=400), st.integers(0, 80), st.integers(0, 80))
def test_what_is_read_is_bounded_and_taken_from_the_message(
    message: str, head_chars: int, tail_chars: int
) -> None:
    read = bound_query(message, head_chars, tail_chars)
    if read.whole:
        assert read.text == message
        return
    assert len(read.text) <= head_chars + tail_chars + len(GAP)
    head, tail = read.text.split(GAP)
    assert message.startswith(head) and message.endswith(tail)
    assert (read.head_chars, read.tail_chars) == (len(head), len(tail))
    assert read.question is None or read.question in read.text
