"""The strict proposal contract (SPEC §3): a good batch parses, anything malformed rejects the
whole batch with a message that names the item and the field, and nothing else ever escapes."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from memoryd.errors import InvalidInputError, ProposalBatchError
from memoryd.memory.model import Importance, Kind, Proposal, fact_slot
from memoryd.memory.proposal_policy import (
    ALLOWED_FIELDS,
    MAX_CONTENT_CHARS,
    MAX_ITEMS,
    parse_batch,
    parse_batch_text,
)


def event_item(**overrides: Any) -> dict[str, Any]:
    """A valid event item; keyword arguments replace or add fields."""
    item: dict[str, Any] = {
        "kind": "event",
        "content": "Had lunch with Ana at Cervejaria Ramiro",
        "confidence": 0.9,
        "changes_behavior": False,
    }
    item.update(overrides)
    return item


def good_batch() -> dict[str, Any]:
    """One item of each kind, using every optional field somewhere."""
    return {
        "memories": [
            event_item(
                general_knowledge=False,
                entities=["Ana", "Cervejaria Ramiro", "Ana"],
                occurred_at="2026-08-27T14:30:00Z",
            ),
            {
                "kind": "fact",
                "content": "  Lives in Lisbon  ",
                "confidence": 0.95,
                "changes_behavior": False,
                "general_knowledge": False,
                "subject": "owner",
                "predicate": "lives in",
                "object": "Lisbon",
                "entities": ["Lisbon"],
            },
            {
                "kind": "lesson",
                "content": "Send files with the file marker, not base64",
                "confidence": 1,
                "changes_behavior": True,
                "importance": "high",
            },
            {
                "kind": "inference",
                "content": "Prefers quiet restaurants",
                "confidence": 0.6,
                "changes_behavior": False,
                "occurred_at": None,
                "entities": None,
                "subject": None,
            },
        ]
    }


# ---------------------------------------------------------------------------------------------
# A good batch


def test_good_batch_parses_into_typed_proposals() -> None:
    event, fact, lesson, inference = parse_batch(good_batch())

    assert event.kind is Kind.EVENT
    assert event.content == "Had lunch with Ana at Cervejaria Ramiro"
    assert event.confidence == 0.9
    assert event.changes_behavior is False
    assert event.occurred_at == datetime(2026, 8, 27, 14, 30, tzinfo=UTC)
    assert event.entities == ("Ana", "Cervejaria Ramiro")  # duplicates removed, order kept

    assert fact.kind is Kind.FACT
    assert fact.content == "Lives in Lisbon"  # surrounding spaces trimmed
    assert (fact.subject, fact.predicate, fact.object) == ("owner", "lives in", "Lisbon")
    assert fact.slot == fact_slot("owner", "lives in")

    assert lesson.kind is Kind.LESSON
    assert lesson.importance is Importance.HIGH
    assert lesson.changes_behavior is True
    assert lesson.confidence == 1.0
    assert isinstance(lesson.confidence, float)

    assert inference.kind is Kind.INFERENCE
    assert inference.occurred_at is None
    assert inference.entities == ()


def test_text_and_decoded_forms_agree() -> None:
    batch = good_batch()
    assert parse_batch_text(json.dumps(batch)) == parse_batch(batch)


def test_empty_batch_is_valid_and_yields_nothing() -> None:
    assert parse_batch({"memories": []}) == ()
    assert parse_batch_text('{"memories": []}') == ()


def test_general_knowledge_flag_is_kept_for_the_policy_to_drop() -> None:
    (proposal,) = parse_batch({"memories": [event_item(general_knowledge=True)]})
    assert proposal.general_knowledge is True


def test_occurred_at_with_offset_or_bare_date_is_normalised_to_utc() -> None:
    with_offset, bare_date = parse_batch(
        {
            "memories": [
                event_item(occurred_at="2026-08-27T14:30:00+02:00"),
                event_item(occurred_at="2026-08-27"),
            ]
        }
    )
    assert with_offset.occurred_at == datetime(2026, 8, 27, 12, 30, tzinfo=UTC)
    assert bare_date.occurred_at == datetime(2026, 8, 27, tzinfo=UTC)


@pytest.mark.parametrize(
    ("alias", "kind"),
    [
        ("semantic", Kind.FACT),
        ("episodic", Kind.EVENT),
        ("procedural", Kind.LESSON),
        ("worldview", Kind.INFERENCE),
        ("Semantic", Kind.FACT),
        (" EPISODIC ", Kind.EVENT),
        ("fact", Kind.FACT),
        ("event", Kind.EVENT),
        ("lesson", Kind.LESSON),
        ("inference", Kind.INFERENCE),
    ],
)
def test_kind_names_and_aliases(alias: str, kind: Kind) -> None:
    (proposal,) = parse_batch({"memories": [event_item(kind=alias)]})
    assert proposal.kind is kind


# ---------------------------------------------------------------------------------------------
# Malformed items: the whole batch is rejected, naming the item and the field


def _batch_with_second_item(**changes: Any) -> dict[str, Any]:
    second = event_item(content="Went to the dentist")
    for key, value in changes.items():
        if value is _DELETE:
            del second[key]
        else:
            second[key] = value
    return {"memories": [event_item(), second]}


_DELETE = object()


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        pytest.param({"mood": "happy"}, "mood", id="unknown-field"),
        pytest.param({"Kind": "event"}, "Kind", id="field-names-are-case-sensitive"),
        pytest.param({"kind": "opinion"}, "kind", id="bad-kind"),
        pytest.param({"kind": 3}, "kind", id="kind-not-a-string"),
        pytest.param({"kind": _DELETE}, "kind", id="missing-kind"),
        pytest.param({"importance": "urgent"}, "importance", id="bad-importance"),
        pytest.param({"importance": 3}, "importance", id="importance-not-a-string"),
        pytest.param({"changes_behavior": _DELETE}, "changes_behavior", id="missing-changes"),
        pytest.param({"changes_behavior": "false"}, "changes_behavior", id="changes-as-string"),
        pytest.param({"changes_behavior": 0}, "changes_behavior", id="changes-as-zero"),
        pytest.param({"changes_behavior": None}, "changes_behavior", id="changes-null"),
        pytest.param({"general_knowledge": "no"}, "general_knowledge", id="general-as-string"),
        pytest.param({"confidence": 1.5}, "confidence", id="confidence-above-one"),
        pytest.param({"confidence": -0.1}, "confidence", id="confidence-below-zero"),
        pytest.param({"confidence": True}, "confidence", id="confidence-true"),
        pytest.param({"confidence": False}, "confidence", id="confidence-false"),
        pytest.param({"confidence": "0.9"}, "confidence", id="confidence-as-string"),
        pytest.param({"confidence": float("nan")}, "confidence", id="confidence-nan"),
        pytest.param({"confidence": float("inf")}, "confidence", id="confidence-inf"),
        pytest.param({"confidence": _DELETE}, "confidence", id="missing-confidence"),
        pytest.param({"content": ""}, "content", id="empty-content"),
        pytest.param({"content": "   "}, "content", id="blank-content"),
        pytest.param({"content": 42}, "content", id="content-not-a-string"),
        pytest.param({"content": _DELETE}, "content", id="missing-content"),
        pytest.param({"content": "x" * (MAX_CONTENT_CHARS + 1)}, "content", id="content-too-long"),
        pytest.param({"subject": ""}, "subject", id="empty-subject"),
        pytest.param({"object": 7}, "object", id="object-not-a-string"),
        pytest.param({"entities": "Ana"}, "entities", id="entities-not-a-list"),
        pytest.param({"entities": ["Ana", ""]}, "entities", id="entities-with-blank"),
        pytest.param({"entities": [1]}, "entities", id="entities-not-strings"),
        pytest.param({"entities": [f"e{i}" for i in range(33)]}, "entities", id="many-entities"),
        pytest.param({"cues": "pay, salary"}, "cues", id="cues-not-a-list"),
        pytest.param({"cues": ["pay", " "]}, "cues", id="cues-with-blank"),
        pytest.param({"cues": [3]}, "cues", id="cues-not-strings"),
        pytest.param({"cues": [f"cue {i}" for i in range(9)]}, "cues", id="many-cues"),
        pytest.param({"cues": ["a" * 41]}, "cues", id="cue-too-long"),
        pytest.param({"occurred_at": "last tuesday"}, "occurred_at", id="occurred-not-iso"),
        pytest.param({"occurred_at": 1756300000}, "occurred_at", id="occurred-as-number"),
    ],
)
def test_malformed_item_rejects_whole_batch_naming_item_and_field(
    changes: dict[str, Any], field: str
) -> None:
    with pytest.raises(ProposalBatchError) as caught:
        parse_batch(_batch_with_second_item(**changes))
    error = caught.value
    assert error.item == 1
    assert error.field == field
    assert "item 1" in str(error)
    assert repr(field) in str(error)
    assert "whole batch" in str(error)


def test_malformed_item_is_reported_the_same_through_the_text_entry_point() -> None:
    text = json.dumps(_batch_with_second_item(kind="opinion"))
    with pytest.raises(ProposalBatchError) as caught:
        parse_batch_text(text)
    assert (caught.value.item, caught.value.field) == (1, "kind")


def test_item_that_is_not_an_object_names_its_index() -> None:
    with pytest.raises(ProposalBatchError) as caught:
        parse_batch({"memories": [event_item(), event_item(), "lives in Lisbon"]})
    assert caught.value.item == 2
    assert "item 2" in str(caught.value)
    assert "a string" in str(caught.value)


def test_batch_error_is_an_input_error() -> None:
    """The service maps InvalidInputError to a user-facing error; batch errors must be one."""
    with pytest.raises(InvalidInputError):
        parse_batch({"memories": [event_item(kind="opinion")]})


# ---------------------------------------------------------------------------------------------
# Malformed batches


@pytest.mark.parametrize(
    "text", ["", "  \n", "not json", "{'memories': []}", '{"memories": [', "[1,"]
)
def test_non_json_text_is_a_batch_error_that_says_so(text: str) -> None:
    with pytest.raises(ProposalBatchError) as caught:
        parse_batch_text(text)
    if text.strip():
        assert "not valid JSON" in str(caught.value)
    else:  # a small model's empty answer is named as such, not as a JSON decoding error
        assert "is empty" in str(caught.value) and "Expecting" not in str(caught.value)
    assert '{"memories"' in str(caught.value)  # tells the model what to send instead


@pytest.mark.parametrize(
    ("document", "described_as"),
    [
        ([event_item()], "an array"),
        ("memories", "a string"),
        (None, "null"),
        (3, "a number"),
        (True, "a boolean"),
    ],
)
def test_non_object_top_level_is_rejected(document: object, described_as: str) -> None:
    with pytest.raises(ProposalBatchError) as caught:
        parse_batch(document)
    assert "JSON object" in str(caught.value)
    assert described_as in str(caught.value)
    with pytest.raises(ProposalBatchError):
        parse_batch_text(json.dumps(document))


def test_extra_top_level_key_is_rejected_by_name() -> None:
    with pytest.raises(ProposalBatchError) as caught:
        parse_batch({"memories": [event_item()], "notes": "extra"})
    assert caught.value.field == "notes"
    assert caught.value.item is None
    assert "'notes'" in str(caught.value)


@pytest.mark.parametrize("document", [{}, {"memories": None}, {"memories": {"0": event_item()}}])
def test_memories_must_be_an_array(document: dict[str, Any]) -> None:
    with pytest.raises(ProposalBatchError) as caught:
        parse_batch(document)
    assert caught.value.field == "memories"


def test_too_many_items_is_rejected_with_the_limit() -> None:
    with pytest.raises(ProposalBatchError) as caught:
        parse_batch({"memories": [event_item() for _ in range(MAX_ITEMS + 1)]})
    assert caught.value.field == "memories"
    assert str(MAX_ITEMS) in str(caught.value)
    assert len(parse_batch({"memories": [event_item() for _ in range(MAX_ITEMS)]})) == MAX_ITEMS


def test_parsing_does_not_modify_the_document() -> None:
    batch = good_batch()
    before = copy.deepcopy(batch)
    parse_batch(batch)
    assert batch == before


# ---------------------------------------------------------------------------------------------
# Numbers and dates at the edges must still give a batch error, never a crash


def test_huge_integer_confidence_is_a_batch_error() -> None:
    """A model emitting an absurd integer must get the retry message, not an OverflowError."""
    with pytest.raises(ProposalBatchError) as caught:
        parse_batch({"memories": [event_item(confidence=10**400)]})
    assert caught.value.field == "confidence"


def test_huge_integer_confidence_in_text_is_a_batch_error() -> None:
    text = json.dumps({"memories": [event_item(confidence=0)]}).replace(
        '"confidence": 0', '"confidence": 1' + "0" * 400
    )
    with pytest.raises(ProposalBatchError):
        parse_batch_text(text)


def test_number_too_long_for_python_is_a_batch_error() -> None:
    """json.loads raises a plain ValueError for integers over 4,300 digits."""
    text = '{"memories": [{"kind": "event", "confidence": ' + "1" * 5000 + "}]}"
    with pytest.raises(ProposalBatchError):
        parse_batch_text(text)


def test_deeply_nested_json_is_a_batch_error() -> None:
    """json.loads raises RecursionError on very deep nesting; the model must get the retry."""
    with pytest.raises(ProposalBatchError):
        parse_batch_text('{"memories": ' + "[" * 100_000 + "]" * 100_000 + "}")


@pytest.mark.parametrize(
    "moment", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-05:00"], ids=["min", "max"]
)
def test_occurred_at_that_leaves_the_calendar_in_utc_is_a_batch_error(moment: str) -> None:
    with pytest.raises(ProposalBatchError) as caught:
        parse_batch({"memories": [event_item(occurred_at=moment)]})
    assert caught.value.field == "occurred_at"


# ---------------------------------------------------------------------------------------------
# Properties

_field_names = st.sampled_from([*sorted(ALLOWED_FIELDS), "memories"])
_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from([10**400, -(10**400), 2**63, 1e308, -0.0, 0.8, 1, 0])
    | st.floats()
    | st.text()
    | st.sampled_from(["fact", "episodic", "high", "2026-08-27", "0001-01-01T00:00:00+01:00"])
)
json_values = st.recursive(
    _scalars,
    lambda children: (
        st.lists(children, max_size=5)
        | st.dictionaries(_field_names | st.text(max_size=8), children, max_size=6)
    ),
    max_leaves=20,
)

_aware_moments = st.builds(
    lambda moment, minutes: moment.replace(tzinfo=timezone(timedelta(minutes=minutes))),
    st.datetimes(),
    st.integers(min_value=-23 * 60, max_value=23 * 60),
)
# Per field: plausible values a model would send, odd ones, and anything at all.
_field_values: dict[str, st.SearchStrategy[Any]] = {
    "kind": st.sampled_from(["fact", "event", "lesson", "inference", "semantic", "opinion"]),
    "content": st.sampled_from(["Met Ana", "lives in Lisbon"]) | st.text(max_size=20),
    "confidence": st.floats(min_value=0, max_value=1)
    | st.floats()
    | st.integers()
    | st.sampled_from([10**400, -(10**400), True, 1, 0]),
    "changes_behavior": st.booleans(),
    "general_knowledge": st.booleans(),
    "subject": st.none() | st.text(max_size=10),
    "predicate": st.none() | st.text(max_size=10),
    "object": st.none() | st.text(max_size=10),
    "entities": st.lists(st.text(max_size=10), max_size=4),
    "occurred_at": st.none()
    | st.datetimes().map(datetime.isoformat)
    | _aware_moments.map(datetime.isoformat)
    | st.text(max_size=12),
    "importance": st.sampled_from(["low", "medium", "high", "critical", "urgent", None]),
}
_REQUIRED = ("kind", "content", "confidence", "changes_behavior")
# Items close to valid, so that every field's check is reached, not only the first one.
near_valid_items = st.fixed_dictionaries(
    {name: _field_values[name] | json_values for name in _REQUIRED},
    optional={
        name: values | json_values
        for name, values in _field_values.items()
        if name not in _REQUIRED
    },
)
batches = json_values | st.fixed_dictionaries(
    {"memories": st.lists(near_valid_items | json_values, max_size=3)}
)


def _assert_parses_or_rejects(parse: Callable[[], tuple[Proposal, ...]]) -> None:
    """Either proposals come back or a ProposalBatchError with a message; nothing else."""
    try:
        proposals = parse()
    except ProposalBatchError as error:
        assert str(error)
        return
    assert isinstance(proposals, tuple)
    assert all(isinstance(p, Proposal) for p in proposals)


_HUGE_CONFIDENCE = {"memories": [event_item(confidence=10**400)]}
_OFF_CALENDAR = {"memories": [event_item(occurred_at="0001-01-01T00:00:00+01:00")]}


@settings(max_examples=300)
@given(batches)
@example(_HUGE_CONFIDENCE)
@example(_OFF_CALENDAR)
def test_any_json_value_either_parses_or_raises_a_batch_error(document: object) -> None:
    _assert_parses_or_rejects(lambda: parse_batch(document))


@settings(max_examples=100)
@given(batches)
@example(_HUGE_CONFIDENCE)
@example(_OFF_CALENDAR)
def test_any_json_text_either_parses_or_raises_a_batch_error(document: object) -> None:
    try:
        text = json.dumps(document)
    except (ValueError, TypeError):
        return
    _assert_parses_or_rejects(lambda: parse_batch_text(text))


@given(st.text())
@example('{"memories": [' + "1" * 5000 + "]}")
@example("[" * 100_000)
def test_any_text_either_parses_or_raises_a_batch_error(text: str) -> None:
    _assert_parses_or_rejects(lambda: parse_batch_text(text))


valid_items = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(["fact", "event", "lesson", "inference"]),
        "content": st.text(min_size=1, max_size=40).filter(lambda s: s.strip() == s and s),
        "confidence": st.floats(min_value=0.0, max_value=1.0),
        "changes_behavior": st.booleans(),
    },
    optional={
        "general_knowledge": st.booleans(),
        "importance": st.sampled_from(list(Importance)).map(str),
        "entities": st.lists(
            st.text(min_size=1, max_size=10).filter(lambda s: s.strip() == s and s),
            max_size=4,
            unique=True,
        ),
    },
)


@given(st.lists(valid_items, max_size=6))
def test_valid_items_parse_with_their_values_kept(items: list[dict[str, Any]]) -> None:
    proposals = parse_batch({"memories": items})
    assert len(proposals) == len(items)
    for item, proposal in zip(items, proposals, strict=True):
        assert proposal.kind.value == item["kind"]
        assert proposal.content == item["content"]
        assert proposal.confidence == item["confidence"]
        assert proposal.changes_behavior is item["changes_behavior"]
        assert proposal.general_knowledge is item.get("general_knowledge", False)
        assert proposal.entities == tuple(item.get("entities", ()))
        expected_importance = Importance(item["importance"]) if "importance" in item else None
        assert proposal.importance is expected_importance


@given(st.lists(valid_items, max_size=6), st.data())
def test_one_bad_item_anywhere_rejects_the_whole_batch(
    items: list[dict[str, Any]], data: st.DataObject
) -> None:
    index = data.draw(st.integers(min_value=0, max_value=len(items)))
    bad = dict(data.draw(valid_items))
    spoiler = data.draw(st.sampled_from(["unknown", "kind", "confidence", "changes_behavior"]))
    if spoiler == "unknown":
        bad["reason"] = "the model added a field"
    elif spoiler == "kind":
        bad["kind"] = "opinion"
    elif spoiler == "confidence":
        bad["confidence"] = 1.01
    else:
        del bad["changes_behavior"]
    batch = [*items[:index], bad, *items[index:]]
    with pytest.raises(ProposalBatchError) as caught:
        parse_batch({"memories": batch})
    assert caught.value.item == index
    assert f"item {index}" in str(caught.value)


def test_cues_are_kept_trimmed_and_once_each_without_word_less_ones_and_null_means_none() -> None:
    batch = {
        "memories": [
            {**event_item(), "cues": ["  pay  day ", "salary", "...", "pay day", "a" * 40]},
            {**event_item(content="Went to the dentist"), "cues": None},
        ]
    }
    cued, bare = parse_batch(batch)
    assert cued.cues == ("pay day", "salary", "a" * 40)
    assert bare.cues == ()
