"""The per-session taint of the model's tools (memoryd.trust.taint): what taints a session, what
clears it, and the bounds that keep it from growing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from memoryd.errors import InvalidInputError
from memoryd.trust.taint import MARKED_UNTRUSTED, UNTRUSTED_CONTENT, SessionTaints

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
READ = "read_kb returned document 01DOC"


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


def test_a_session_is_tainted_from_the_read_until_a_new_owner_turn() -> None:
    taints = SessionTaints(Clock())
    assert taints.begin_call("chat", "t1", untrusted=False) is None
    taints.mark("chat", READ)
    # Every later call of the same turn (or with no turn) runs tainted, naming the read.
    assert taints.begin_call("chat", "t1", untrusted=False) == f"{UNTRUSTED_CONTENT} ({READ})"
    assert taints.begin_call("chat", None, untrusted=False) == f"{UNTRUSTED_CONTENT} ({READ})"
    # Another session is not touched.
    assert taints.begin_call("other", "t1", untrusted=False) is None
    # The owner's next turn clears it.
    assert taints.begin_call("chat", "t2", untrusted=False) is None
    assert taints.tainted_by("chat") is None


def test_an_untrusted_mark_taints_the_session_and_a_call_without_session_alone() -> None:
    taints = SessionTaints(Clock())
    marked = f"{UNTRUSTED_CONTENT} ({MARKED_UNTRUSTED})"
    assert taints.begin_call("chat", "t1", untrusted=True) == marked
    assert taints.begin_call("chat", "t1", untrusted=False) == marked
    # Without a session a call is its own session: marked or not, nothing carries over.
    assert taints.begin_call(None, None, untrusted=True) == marked
    taints.mark(None, READ)
    assert taints.begin_call(None, None, untrusted=False) is None
    assert len(taints) == 1


def test_sessions_are_bounded_by_count_and_idle_time() -> None:
    clock = Clock()
    taints = SessionTaints(clock, max_sessions=2, idle=timedelta(hours=1))
    for name in ("a", "b"):
        taints.mark(name, READ)
    taints.begin_call("a", None, untrusted=False)  # "a" is now the most recently used
    taints.mark("c", READ)  # pushes out the least recently used: "b"
    assert len(taints) == 2
    assert taints.tainted_by("b") is None
    assert taints.tainted_by("a") is not None
    clock.now += timedelta(hours=1, seconds=1)
    assert taints.tainted_by("a") is None
    assert len(taints) == 0


@pytest.mark.parametrize(
    ("session", "turn", "field"),
    [("", None, "session"), (" ", None, "session"), ("x" * 201, None, "session"),
     ("chat", "", "turn")],
)  # fmt: skip
def test_a_bad_session_or_turn_id_is_a_clear_error(
    session: str, turn: str | None, field: str
) -> None:
    taints = SessionTaints(Clock())
    with pytest.raises(InvalidInputError, match=f"{field} must be a non-empty string") as error:
        taints.begin_call(session, turn, untrusted=False)
    assert error.value.fields == (field,)
    assert len(taints) == 0
