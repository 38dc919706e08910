"""The chat proxy's pure rules: where the pack goes, what a turn is, how a conversation is
recognised, what a streamed answer said, and the Anthropic translation."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memoryd.config.settings import SettingsError, setting_values
from memoryd.proxy.anthropic import (
    AnthropicStream,
    from_anthropic,
    models_from_anthropic,
    to_anthropic,
)
from memoryd.proxy.policy import (
    ChatRequestError,
    StreamedAnswer,
    answer_of,
    conversation_of,
    down_hint,
    finished,
    finished_history,
    history_digest,
    latest_turn,
    messages_of,
    proxy_settings_of,
    turn_key,
    with_pack,
)

BLOCK = '<memory trust="data">\n- [fact] The owner is allergic to penicillin\n</memory>'
texts = st.text(min_size=1, max_size=80).filter(lambda t: t.strip())


def test_the_pack_is_appended_to_the_apps_system_message_never_replacing_it() -> None:
    messages = [
        {"role": "system", "content": "You are Maple."},
        {"role": "user", "content": "hi"},
    ]
    sent = with_pack(messages, BLOCK)
    assert sent[0] == {"role": "system", "content": "You are Maple.\n\n" + BLOCK}
    assert sent[1:] == messages[1:]
    assert messages[0]["content"] == "You are Maple."  # the app's list is not changed


def test_without_a_system_message_one_goes_first_and_an_empty_pack_changes_nothing() -> None:
    messages = [{"role": "user", "content": "hi"}]
    assert with_pack(messages, BLOCK) == [{"role": "system", "content": BLOCK}, *messages]
    assert with_pack(messages, "") == messages


def test_a_system_message_made_of_parts_gets_a_text_part() -> None:
    parts = [{"type": "text", "text": "Be brief."}]
    sent = with_pack([{"role": "developer", "content": parts}], BLOCK)
    assert sent[0]["content"] == [*parts, {"type": "text", "text": "\n\n" + BLOCK}]


@given(st.lists(st.tuples(st.sampled_from(["system", "user", "assistant"]), texts), max_size=6))
def test_every_message_of_the_app_survives_whole(pairs: list[tuple[str, str]]) -> None:
    messages = [{"role": role, "content": text} for role, text in pairs]
    sent = with_pack(messages, BLOCK)
    joined = json.dumps(sent)
    assert joined.count("allergic to penicillin") == 1 + json.dumps(messages).count(
        "allergic to penicillin"
    )
    for original in messages:
        assert any(original["content"] in str(m["content"]) for m in sent)
    assert len(sent) == len(messages) + (0 if any(r == "system" for r, _ in pairs) else 1)


def test_the_turn_is_the_latest_user_message_with_what_followed_it() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": [{"type": "text", "text": "second"}, {"type": "image_url"}]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]},
        {"role": "tool", "tool_call_id": "1", "content": "result"},
    ]
    turn = latest_turn(messages)
    assert turn is not None
    assert (turn.user, turn.number, len(turn.earlier), turn.read_tool_output) == (
        "second",
        2,
        2,
        True,
    )
    assert latest_turn([{"role": "system", "content": "x"}]) is None


def test_a_request_without_messages_is_refused() -> None:
    with pytest.raises(ChatRequestError, match="messages"):
        messages_of({"model": "m"})
    with pytest.raises(ChatRequestError, match="role"):
        messages_of({"messages": ["hi"]})


def test_a_conversation_is_found_again_by_the_history_its_app_sends_back() -> None:
    known: dict[str, str] = {}
    forgotten: dict[str, str] = {}
    first = [{"role": "system", "content": "Today is Monday"}, {"role": "user", "content": "hi"}]
    conversation = conversation_of(None, latest_turn(first), first, known.get)
    assert conversation.startswith("h-")
    known[history_digest(finished_history(first, "hello!"))] = conversation
    # The app changed its system message (a new date) and added the next user message.
    second = [
        {"role": "system", "content": "Today is Tuesday"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello! "},
        {"role": "user", "content": "and now?"},
    ]
    assert conversation_of(None, latest_turn(second), second, known.get) == conversation
    # Unknown history (the proxy restarted): named by its digest, the same each time.
    again = conversation_of(None, latest_turn(second), second, forgotten.get)
    assert again.startswith("h-") and again != conversation
    assert again == conversation_of(None, latest_turn(second), second, forgotten.get)
    assert conversation_of("mine", latest_turn(second), second, known.get) == "mine"
    with pytest.raises(ChatRequestError, match="200"):
        conversation_of("x" * 201, None, second, known.get)


def test_the_requests_of_a_first_turn_that_runs_tools_are_one_conversation() -> None:
    asked = [{"role": "user", "content": "look it up"}]
    followed: list[dict[str, Any]] = [
        *asked,
        {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]},
        {"role": "tool", "tool_call_id": "1", "content": "found"},
    ]
    unknown: dict[str, str] = {}
    one = conversation_of(None, latest_turn(asked), asked, unknown.get)
    assert conversation_of(None, latest_turn(followed), followed, unknown.get) == one


def test_the_same_answer_again_is_the_same_turn() -> None:
    turn = latest_turn([{"role": "user", "content": "I moved to Porto"}])
    other = latest_turn([{"role": "user", "content": "I moved to Braga"}])
    assert turn is not None and other is not None
    assert turn_key("c", turn, "Nice!") == turn_key("c", turn, "Nice! ")
    assert turn_key("c", turn, "Nice!") != turn_key("c", turn, "Lovely city.")
    assert turn_key("c", turn, "Nice!") != turn_key("c", other, "Nice!")
    assert turn_key("c", turn, "Nice!") != turn_key("d", turn, "Nice!")


def _events(texts: list[str], finish: str) -> bytes:
    out = b""
    for text in texts:
        chunk = {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
        out += b"data: " + json.dumps(chunk).encode() + b"\n\n"
    last = {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
    return out + b"data: " + json.dumps(last).encode() + b"\n\ndata: [DONE]\n\n"


@given(st.lists(st.text(max_size=12), min_size=1, max_size=8), st.integers(1, 40))
def test_a_streamed_answer_reads_the_same_however_the_bytes_are_cut(
    pieces: list[str], size: int
) -> None:
    data = _events(pieces, "stop")
    reader = StreamedAnswer()
    for start in range(0, len(data), size):
        reader.feed(data[start : start + size])
    assert (reader.text, reader.finish, reader.done) == ("".join(pieces), "stop", True)
    assert finished(reader.text, reader.finish, reader.called_tools) == bool(
        "".join(pieces).strip()
    )


def test_an_answer_that_calls_tools_does_not_end_the_turn() -> None:
    reader = StreamedAnswer()
    call = {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0}]}}]}
    reader.feed(b"data: " + json.dumps(call).encode() + b"\n\n" + _events([], "tool_calls"))
    assert not finished(reader.text, reader.finish, reader.called_tools)
    completion = {"choices": [{"message": {"content": "Done."}, "finish_reason": "stop"}]}
    assert answer_of(completion) == ("Done.", "stop", False)
    assert finished(*answer_of(completion))


def test_settings_are_read_with_their_sources(tmp_path: Any) -> None:
    (tmp_path / "memoryd.toml").write_text(
        '[proxy]\nenabled = false\ninject = "memories"\nbudget = 600\n'
    )
    settings = proxy_settings_of(setting_values({"MEMORYD_HOME": str(tmp_path)}))
    assert (settings.enabled, settings.inject, settings.observe, settings.budget) == (
        False,
        "memories",
        True,
        600,
    )
    (tmp_path / "memoryd.toml").write_text('[proxy]\ninject = "everything"\n')
    with pytest.raises(SettingsError, match=r"proxy.inject must be .*memoryd.toml"):
        proxy_settings_of(setting_values({"MEMORYD_HOME": str(tmp_path)}))
    env = {"MEMORYD_HOME": str(tmp_path / "none"), "MEMORYD_PROXY_OBSERVE": "maybe"}
    with pytest.raises(SettingsError, match="on or off"):
        proxy_settings_of(setting_values(env))


def test_the_hint_names_ollama_on_its_port() -> None:
    assert "is Ollama running?" in down_hint("http://localhost:11434/v1")
    assert down_hint("http://gpu-box:8000/v1") == (
        "is the server running? (tried http://gpu-box:8000/v1)"
    )


def test_anthropic_requests_answers_and_streams_are_translated() -> None:
    body = {
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "system", "content": BLOCK},
            {"role": "user", "content": "hi"},
            {"role": "user", "content": "there"},
        ],
        "max_tokens": 50,
        "stream": True,
        "stop": "END",
    }
    request = to_anthropic(body, "claude-x")
    assert request["system"] == "Be brief.\n\n" + BLOCK
    assert request["messages"] == [{"role": "user", "content": "hi\n\nthere"}]
    assert (request["max_tokens"], request["stop_sequences"], request["stream"]) == (
        50,
        ["END"],
        True,
    )
    with pytest.raises(ChatRequestError, match="tools"):
        to_anthropic({**body, "tools": [{}]}, "claude-x")
    answer = {"id": "m1", "content": [{"type": "text", "text": "Hi!"}], "stop_reason":
              "max_tokens", "usage": {"input_tokens": 3, "output_tokens": 2}}  # fmt: skip
    completion = from_anthropic(answer)
    assert answer_of(completion) == ("Hi!", "length", False)
    assert completion["usage"]["total_tokens"] == 5
    events = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"m2"}}\n\n'
        b'event: content_block_delta\ndata: {"type":"content_block_delta","delta":'
        b'{"type":"text_delta","text":"Hel"}}\n\n'
        b'event: content_block_delta\ndata: {"type":"content_block_delta","delta":'
        b'{"type":"text_delta","text":"lo"}}\n\n'
        b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"}}'
        b'\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n'
    )
    translate = AnthropicStream("claude-x")
    reader = StreamedAnswer()
    for start in range(0, len(events), 7):
        reader.feed(translate.feed(events[start : start + 7]))
    assert (reader.text, reader.finish, reader.done) == ("Hello", "stop", True)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(
        st.sampled_from(["type", "text", "content", "usage", "input_tokens", "id", "model",
                         "stop_reason", "message", "delta", "error", "data", "output_tokens"]),
        inner,
        max_size=4,
    ),
    max_leaves=12,
)  # fmt: skip


@given(_json, st.sampled_from(["", "message_start", "content_block_delta", "message_delta",
                               "message_stop", "error"]))  # fmt: skip
def test_an_anthropic_answer_of_any_shape_is_translated_never_raised(
    answer: Any, kind: str
) -> None:
    """A misbehaving upstream (fields missing, of the wrong type, a lone surrogate escaped in
    its JSON) gets empty fields, not a 500 or a stream cut mid-answer."""
    completion = from_anthropic(answer)
    assert completion["object"] == "chat.completion" and isinstance(completion["choices"], list)
    json.dumps(completion)
    assert models_from_anthropic(answer)["object"] == "list"
    event = {"type": kind, "delta": answer, "message": answer, "error": answer} if kind else answer
    out = AnthropicStream("m").feed(b"data: " + json.dumps(event).encode() + b"\n")
    out.decode("utf-8")
    assert from_anthropic({"content": [{"type": "text", "text": "\ud800ok"}]})["choices"]


@pytest.mark.parametrize(
    ("field", "value"),
    [("max_tokens", "lots"), ("max_tokens", -5), ("max_tokens", 2.5), ("stop", 7), ("stop", [1])],
)
def test_a_request_anthropic_cannot_take_is_refused_by_field(field: str, value: Any) -> None:
    body = {"messages": [{"role": "user", "content": "hi"}], field: value}
    with pytest.raises(ChatRequestError, match=field):
        to_anthropic(body, "claude")
