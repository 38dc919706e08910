"""A message's sentences about the answer's form, left out of what recall searches
(recall/answer_form_policy.py, read by recall/read.py when ``answer_form_out`` is on), and a
question asking for a history, whose words about the asking the legs may leave out
(recall/history_policy.py, ``history_frame_out``)."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from memoryd.memory.entity_policy import EntityMatcher
from memoryd.recall.answer_form_policy import is_answer_form, without_answer_form
from memoryd.recall.history_policy import asks_for_history, topic_words
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.read import read_message
from memoryd.words import query_terms

HISTORY = (
    "Can you list the order in which I brought up different aspects of my budget tracker "
    "throughout our conversations, in order?"
)


@pytest.mark.parametrize(
    "sentence",
    [
        "Mention ONLY and ONLY five items.",
        "Answer in three sentences.",
        "Use bullet points.",
        "No more than 50 words, please.",
        "Keep it short and concise.",
        "Reply in JSON.",
    ],
)
def test_a_sentence_about_the_answers_shape_is_left_out(sentence: str) -> None:
    assert is_answer_form(sentence)
    assert without_answer_form(f"{HISTORY} {sentence}") == HISTORY
    assert without_answer_form(f"{sentence}\n{HISTORY}") == HISTORY


@pytest.mark.parametrize(
    "sentence",
    [
        "List them in order.",  # a verb of answering alone says nothing of the form
        "Tell me more.",
        "Which items did I buy?",  # a topic word beside the unit
        "I bought five items at the market.",
        "How many words are in my thesis draft?",
    ],
)
def test_a_sentence_with_a_word_of_its_own_stays(sentence: str) -> None:
    assert not is_answer_form(sentence)
    message = f"{HISTORY} {sentence}"
    assert without_answer_form(message) == message


@pytest.mark.parametrize(
    "message", ["Keep it short.", "Use bullet points. Answer in three sentences.", ""]
)
def test_a_message_of_nothing_else_is_searched_as_it_is(message: str) -> None:
    assert without_answer_form(message) == message


class _NoNames:
    """A store whose entity index knows no names: the read needs nothing else of it."""

    entities = SimpleNamespace(mention_counts=lambda ids: {})
    memories = SimpleNamespace(count=lambda: 0)


@pytest.mark.parametrize("out", [True, False])
def test_the_read_searches_the_question_without_it_when_on(out: bool) -> None:
    store: Any = _NoNames()
    message = f"{HISTORY} Mention ONLY and ONLY five items."
    policy = RecallPolicy(answer_form_out=out)
    query = read_message(
        store,
        lambda: EntityMatcher.build([]),
        message,
        datetime(2026, 1, 1, tzinfo=UTC),
        UTC,
        policy,
    )
    words = set(query.words)
    assert {"budget", "tracker", "order"} <= words
    assert ({"mention", "five", "items"} & words == set()) is out
    assert (query.read.question == HISTORY) is out


@pytest.mark.parametrize(
    "message",
    [
        HISTORY,
        "In what order did I bring up the parts of my garden?",
        "How has my running plan changed since spring?",
        "What did I say about the roof across our chats?",
        "Every time I call my mother, what do we talk about?",
        "What new diet did Sam adopt over time?",
    ],
)
def test_a_question_asking_for_a_history(message: str) -> None:
    assert asks_for_history(message)


@pytest.mark.parametrize(
    "message",
    [
        "What did I order for dinner on Friday?",  # an order, not the order of the talks
        "When did I last talk to Ana?",
        "Which conversation app does my team use?",
        "How much time do I spend commuting?",
    ],
)
def test_a_question_about_one_thing(message: str) -> None:
    assert not asks_for_history(message)
    words = tuple(query_terms(message))
    assert topic_words(words, message) == words


def test_the_words_about_the_asking_leave_the_topics() -> None:
    words = tuple(query_terms(HISTORY))
    assert topic_words(words, HISTORY) == ("budget", "tracker")
    # A history of nothing but the asking keeps its words.
    only = "In what order did I bring up different topics throughout our conversations?"
    assert topic_words(tuple(query_terms(only)), only) == tuple(query_terms(only))


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_the_history_switch_reaches_the_legs(mode: int) -> None:
    store: Any = _NoNames()
    policy = RecallPolicy(history_frame_out=mode, sentence_vectors=3)
    query = read_message(
        store,
        lambda: EntityMatcher.build([]),
        HISTORY,
        datetime(2026, 1, 1, tzinfo=UTC),
        UTC,
        policy,
    )
    assert ("order" in query.words) is (mode == 0)
    assert query.sentences == (("budget tracker",) if mode == 2 else ())
