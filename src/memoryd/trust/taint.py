"""Per-session taint of the model's tools: once a session has read untrusted content, the
model's ``remember`` in that session waits for the owner until the owner's next turn.

A model that has just read a document or a web page can be talked into calling ``remember``
("remember that the owner's new bank account is …"). The dispatcher therefore remembers, per
session, whether the model has read untrusted content since the owner last spoke: a
``search_kb`` that returned passages, a ``read_kb`` that returned text, or a call the caller
marks ``untrusted`` (the model read another tool's output, a web page, an e-mail). From then on
every ``remember`` in the session lands pending with the reason
:data:`UNTRUSTED_CONTENT`, whatever its kind, until a call arrives for a new owner turn.

The owner's turn is a ``turn`` id the caller passes with each tool call (the id of the owner's
message the model is answering, or a counter): a call with a turn id the session has not been
in starts that turn clean. A call without a session is its own one-call session.

Sessions live in this process's memory only, bounded by count (least recently used first out)
and by idle time; a session forgotten that way starts clean, like a new one.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime, timedelta

from memoryd.clock import Clock
from memoryd.errors import InvalidInputError

UNTRUSTED_CONTENT = "written after reading untrusted content"
MARKED_UNTRUSTED = "the caller marked this turn as having read untrusted tool output"
# Why 10,000 and a day: one entry per live conversation is a few hundred bytes; an assistant
# with more live conversations than that, or a conversation idle for a day, starts clean.
MAX_SESSIONS = 10_000
SESSION_IDLE = timedelta(hours=24)
MAX_ID_CHARS = 200


@dataclass
class _Session:
    turn: str | None
    tainted_by: str | None
    seen_at: datetime


@dataclass(eq=False)
class SessionTaints:
    """The taint of each live session, safe to use from several threads."""

    clock: Clock
    _: KW_ONLY
    max_sessions: int = MAX_SESSIONS
    idle: timedelta = SESSION_IDLE
    _sessions: OrderedDict[str, _Session] = field(
        default_factory=OrderedDict, init=False, repr=False
    )
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def begin_call(self, session: str | None, turn: str | None, untrusted: bool) -> str | None:
        """Before a tool call of ``session`` runs: what the call runs tainted by (a reason for
        the review queue), or None when the session is clean. A ``turn`` the session has not
        been in clears the taint first (the owner spoke again); ``untrusted`` taints it."""
        check_session_id(session, "session")
        check_session_id(turn, "turn")
        if session is None:
            return _reason(MARKED_UNTRUSTED) if untrusted else None
        with self._lock:
            now = self.clock()
            state = self._touch(session, now)
            if turn is not None and turn != state.turn:
                state.turn, state.tainted_by = turn, None
            if untrusted and state.tainted_by is None:
                state.tainted_by = MARKED_UNTRUSTED
            return _reason(state.tainted_by) if state.tainted_by else None

    def mark(self, session: str | None, why: str) -> None:
        """``session`` has just returned untrusted content to the model (``why`` says what);
        its ``remember`` calls wait for the owner until the next owner turn."""
        if session is None:
            return
        with self._lock:
            state = self._touch(session, self.clock())
            if state.tainted_by is None:
                state.tainted_by = why

    def tainted_by(self, session: str) -> str | None:
        """Why ``session`` is tainted now, or None (for diagnostics)."""
        with self._lock:
            self._expire(self.clock())
            state = self._sessions.get(session)
            return _reason(state.tainted_by) if state and state.tainted_by else None

    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def _touch(self, session: str, now: datetime) -> _Session:
        """The session's state, made the most recently used (created clean if unknown)."""
        self._expire(now)
        state = self._sessions.pop(session, None) or _Session(None, None, now)
        state.seen_at = now
        self._sessions[session] = state
        while len(self._sessions) > self.max_sessions:
            self._sessions.popitem(last=False)
        return state

    def _expire(self, now: datetime) -> None:
        # Least recently used first: stop at the first session still fresh.
        while self._sessions:
            oldest = next(iter(self._sessions.values()))
            if now - oldest.seen_at <= self.idle:
                break
            self._sessions.popitem(last=False)


def _reason(why: str) -> str:
    return f"{UNTRUSTED_CONTENT} ({why})"


def check_session_id(value: object, what: str) -> None:
    """A session or turn id is a non-empty string of at most 200 characters (or absent)."""
    if value is None:
        return
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_ID_CHARS:
        raise InvalidInputError(
            f"{what} must be a non-empty string of at most {MAX_ID_CHARS} characters "
            f"(the caller's id for the {'conversation' if what == 'session' else 'owner turn'})",
            fields=(what,),
        )
