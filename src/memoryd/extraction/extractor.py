"""Extraction: the model reads conversation and proposes memories under the strict contract.

Prompts and input rendering are pure; ``Extractor`` adds the LLM call with exactly one retry
that shows the model its validation error. Every input is dated: a trusted line above the fenced
text says when it was written in the owner's zone ("The turn happened on Monday 2026-11-30 at
18:05, Europe/Lisbon."), so the model resolves "yesterday" against it, and an event it leaves
undated gets that day, never the time a late job runs.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, time, tzinfo
from importlib import resources
from typing import Any

from memoryd.clock import parse_instant
from memoryd.errors import InvalidInputError, ProposalBatchError
from memoryd.extraction.example_echo_policy import echoes_example, example_contents
from memoryd.memory.model import Kind, Memory, Proposal, Source
from memoryd.memory.proposal_policy import SCHEMA_NAME, contract_schema, parse_batch_text
from memoryd.providers.llm import AnswerCutOffError, Gateway, Message, Structured
from memoryd.trust.credential_screening import fingerprint
from memoryd.trust.fence import escape_data
from memoryd.words import query_terms

log = logging.getLogger("memoryd.extraction.extractor")


@dataclass(frozen=True)
class Prompt:
    """A versioned prompt file: ``extract.v1`` is name ``extract``, version ``v1``."""

    name: str
    version: str
    text: str
    # Whether its contract (v3 on) asks for search cues: a strict schema must then list them,
    # and must not for an older contract, whose worked examples have none.
    cues: bool = False

    @property
    def label(self) -> str:
        """What a memory records as its prompt version."""
        return f"{self.name}.{self.version}"


# The prompt each trigger uses, and the source its proposals carry.
TRIGGERS: dict[str, tuple[str, Source]] = {
    "turn": ("extract", Source.TURN),
    "compaction": ("compaction", Source.COMPACTION),
    "mission": ("mission", Source.MISSION),
    # A turn from an imported conversation history (``import-chats``): read like a live turn.
    "imported_turn": ("extract", Source.TURN),
}
# Imported turns are a backlog: a job of these kinds runs only when no live trigger is due, so
# an import of thousands of turns never holds back what the owner said today.
BACKLOG_TRIGGERS = ("imported_turn",)
LIVE_TRIGGERS = tuple(kind for kind in TRIGGERS if kind not in BACKLOG_TRIGGERS)


# Prompts that define their own answer format instead of the proposal contract.
OWN_CONTRACT = frozenset({"merge", "cues"})


def _versions(name: str) -> list[int]:
    """The version numbers of a prompt shipped in the package, oldest first."""
    folder = resources.files("memoryd.extraction.prompts")
    return sorted(
        int(match.group(1))
        for entry in folder.iterdir()
        if (match := re.fullmatch(re.escape(name) + r"\.v(\d+)\.md", entry.name))
    )


@functools.cache
def load_prompt(name: str, version: str | None = None) -> Prompt:
    """A prompt shipped in the package (the newest version unless ``version``, e.g. "v1", is
    given to compare), with the output contract of the same version (or the newest older one:
    a prompt written for contract v1 keeps reading contract v1)."""
    versions = _versions(name)
    if not versions:
        raise InvalidInputError(f"no prompt named {name!r} ships with memoryd")
    asked = re.fullmatch(r"v(\d+)", version or "")
    number = versions[-1] if version is None else int(asked.group(1)) if asked else -1
    if number not in versions:
        shipped = ", ".join(f"v{v}" for v in versions)
        raise InvalidInputError(f"prompt {name!r} has no version {version!r} (shipped: {shipped})")
    folder = resources.files("memoryd.extraction.prompts")
    body = folder.joinpath(f"{name}.v{number}.md").read_text(encoding="utf-8").strip()
    if name in OWN_CONTRACT:
        return Prompt(name, f"v{number}", body)
    contract_number = max(v for v in _versions("contract") if v <= number)
    contract = folder.joinpath(f"contract.v{contract_number}.md").read_text(encoding="utf-8")
    return Prompt(name, f"v{number}", body + "\n\n" + contract.strip(), cues=contract_number >= 3)


@dataclass(frozen=True)
class MissionDigest:
    """The outcome of a finished mission, and when it finished (None: when it is queued)."""

    title: str
    goal: str
    outcome: str
    finished_at: datetime | None = None


_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def zone_name(zone: tzinfo) -> str:
    """The owner's zone as a model reads it: the IANA name (Europe/Lisbon), else UTC±hh:mm."""
    return str(getattr(zone, "key", None) or zone)


def _local(at: datetime, zone: tzinfo) -> str:
    local = at.astimezone(zone)
    # Day names from a table, not strftime: the process locale must not change the prompt.
    return f"{_DAYS[local.weekday()]} {local:%Y-%m-%d} at {local:%H:%M}"


def when_line(lead: str, at: datetime, zone: tzinfo) -> str:
    """The trusted line above a fenced input saying when it was written, in the owner's zone:
    ``when_line("The turn happened", ...)`` is "The turn happened on Monday 2026-11-30 at
    18:05, Europe/Lisbon." — what the model resolves "yesterday" against."""
    return f"{lead} on {_local(at, zone)}, {zone_name(zone)}."


def turn_stamp(at: datetime, zone: tzinfo) -> str:
    """A turn's local time at the start of its line in a compaction batch: "[Mon 2026-11-30
    18:05]"."""
    local = at.astimezone(zone)
    return f"[{_DAYS[local.weekday()][:3]} {local:%Y-%m-%d %H:%M}]"


def span_line(first: datetime, last: datetime, zone: tzinfo) -> str:
    """The trusted line above a batch of dated turns."""
    if first == last:
        return when_line("The turns below happened", first, zone)
    return (
        f"The turns below happened from {_local(first, zone)} to {_local(last, zone)}, "
        f"{zone_name(zone)}; each line starts with its own local time."
    )


def parse_local_instant(text: str, zone: tzinfo, *, what: str) -> datetime:
    """An ISO-8601 date or time the owner gave (``--at``, a turn's ``"at"``): without an
    offset it is the owner's local time in ``zone``. UTC, aware."""
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return parse_instant(text, what=what)  # raises its clear error
    if value.tzinfo is None:
        text = value.replace(tzinfo=zone).isoformat()
    return parse_instant(text, what=what)


def date_events(proposals: Sequence[Proposal], day: date) -> tuple[Proposal, ...]:
    """Events the model left undated happened on ``day`` (the turn's date in the owner's
    zone), stored like a date the model gives: midnight UTC of that date. Never the time a
    late job happens to run."""
    midnight = datetime.combine(day, time.min, tzinfo=UTC)
    return tuple(
        replace(p, occurred_at=midnight) if p.kind is Kind.EVENT and p.occurred_at is None else p
        for p in proposals
    )


def render_turn(user_message: str, summary: str | None) -> str:
    """The extraction input for one turn, fenced as data."""
    parts = [f"Owner: {escape_data(user_message.strip())}"]
    if summary and summary.strip():
        parts.append(f"Summary of the turn: {escape_data(summary.strip())}")
    return "<conversation>\n" + "\n".join(parts) + "\n</conversation>"


def render_turns(turns: Sequence[Mapping[str, Any]], zone: tzinfo = UTC) -> str:
    """The extraction input for turns about to be compacted; a turn with an ``"at"`` instant
    starts with its local time in ``zone``."""
    lines = []
    for turn in turns:
        role = "Owner" if turn.get("role", "user") == "user" else "Assistant"
        at = turn.get("at")
        stamp = turn_stamp(at, zone) + " " if isinstance(at, datetime) else ""
        lines.append(f"{stamp}{role}: {escape_data(str(turn.get('content', '')).strip())}")
    return "<conversation>\n" + "\n".join(lines) + "\n</conversation>"


def render_mission(digest: MissionDigest) -> str:
    """The extraction input for a mission digest."""
    return (
        "<conversation>\n"
        f"Mission title: {escape_data(digest.title)}\n"
        f"Mission goal: {escape_data(digest.goal)}\n"
        f"Outcome digest:\n{escape_data(digest.outcome)}\n"
        "</conversation>"
    )


def render_known_predicates(known: Sequence[tuple[str, Sequence[str]]]) -> str:
    """The section that lists the predicates already used for each subject (predicates
    only, never values), appended after the conversation; "" when there are none."""
    if not known:
        return ""
    lines = [
        f"- {escape_data(subject)}: " + "; ".join(escape_data(p) for p in predicates)
        for subject, predicates in known
    ]
    return (
        "\n\nPredicates already used for these subjects. When a fact fills one of them, use "
        "that subject and predicate exactly; make up a new predicate only for something none "
        "of them means:\n" + "\n".join(lines)
    )


def parse_turns(text: str) -> list[dict[str, str]]:
    """Turns for ``compact``: a JSON array of {"role", "content", optional "at"}, or plain text
    (one turn). An "at" stays text here; the queue reads it in the owner's zone."""
    stripped = text.strip()
    if not stripped:
        raise InvalidInputError("the turns file is empty")
    if stripped.startswith("["):
        try:
            document = json.loads(stripped)
        except json.JSONDecodeError as error:
            raise InvalidInputError(f"the turns file is not valid JSON: {error.msg}") from None
        if not isinstance(document, list) or not all(
            isinstance(t, dict)
            and isinstance(t.get("content"), str)
            and isinstance(t.get("at") or "", str)
            for t in document
        ):
            raise InvalidInputError(
                'turns must be a JSON array of {"role": "user" | "assistant", "content": "...", '
                '"at": "ISO-8601 time (optional)"}'
            )
        return [
            {"role": str(t.get("role", "user")), "content": t["content"]}
            | ({"at": t["at"]} if t.get("at") else {})
            for t in document
        ]
    return [{"role": "user", "content": stripped}]


def parse_mission(text: str, zone: tzinfo = UTC) -> MissionDigest:
    """A digest for ``mission``: JSON {"title", "goal", "outcome", optional "finished_at" (read
    in the owner's ``zone`` when it has no offset)} or text whose first line is the title."""
    stripped = text.strip()
    if not stripped:
        raise InvalidInputError("the mission digest is empty")
    if stripped.startswith("{"):
        try:
            document: Any = json.loads(stripped)
        except json.JSONDecodeError as error:
            raise InvalidInputError(f"the mission digest is not valid JSON: {error.msg}") from None
        if not isinstance(document, dict) or not isinstance(document.get("title"), str):
            raise InvalidInputError('a JSON mission digest needs "title" and "outcome" strings')
        outcome = document.get("outcome") or document.get("digest")
        if not isinstance(outcome, str) or not outcome.strip():
            raise InvalidInputError('a JSON mission digest needs an "outcome" string')
        finished = document.get("finished_at")
        if finished is not None and not isinstance(finished, str):
            raise InvalidInputError('a mission\'s "finished_at" must be an ISO-8601 time string')
        return MissionDigest(
            document["title"],
            str(document.get("goal") or ""),
            outcome,
            parse_local_instant(finished, zone, what="finished_at") if finished else None,
        )
    title, _, rest = stripped.partition("\n")
    return MissionDigest(title.lstrip("# ").strip(), "", rest.strip() or title)


def render_merge(contents: Sequence[str]) -> str:
    """The merge input: the near-duplicate notes, fenced as data."""
    notes = "\n".join(f"- {escape_data(c)}" for c in contents)
    return f"<conversation>\n{notes}\n</conversation>"


def render_events(events: Sequence[Memory]) -> str:
    """The reflection input: recent episodes with their dates, fenced as data."""
    lines = []
    for event in events:
        when = (event.occurred_at or event.created_at).date().isoformat()
        lines.append(f"- {when}: {escape_data(event.content)}")
    return "<conversation>\n" + "\n".join(lines) + "\n</conversation>"


def parse_merge(raw: str) -> str:
    """The merged sentence from the model's ``{"content": "..."}`` answer."""
    try:
        document = json.loads(raw)
    except json.JSONDecodeError as error:
        raise ProposalBatchError(f"the merge answer is not JSON: {error.msg}") from None
    if not isinstance(document, dict) or set(document) != {"content"}:
        raise ProposalBatchError('the merge answer must be exactly {"content": "..."}')
    content = document["content"]
    if not isinstance(content, str) or not content.strip():
        raise ProposalBatchError("the merged content must be a non-empty string")
    return content.strip()


def echoes_goal(proposal: Proposal, digest: MissionDigest, threshold: float = 0.6) -> bool:
    """Whether a proposal mostly repeats the mission's own title or goal (by content words):
    such items restate the task, they are not discoveries."""
    words = set(query_terms(proposal.content))
    if not words:
        return True
    own = set(query_terms(digest.title)) | set(query_terms(digest.goal))
    return len(words & own) / len(words) >= threshold


def repeats_secret(proposal: Proposal, fingerprints: frozenset[str], salt: str) -> bool:
    """Whether the proposal repeats a word of a secret that was removed from its source."""
    if not fingerprints:
        return False
    text = " ".join(
        part
        for part in (
            proposal.content,
            proposal.subject,
            proposal.object,
            *proposal.entities,
            *proposal.cues,
        )
        if part
    )
    words = re.findall(r"[^\s'\":=,.;!?()]{4,}", text)
    return any(fingerprint(word, salt) in fingerprints for word in words)


@dataclass(frozen=True)
class Extraction:
    """What one extraction produced."""

    proposals: tuple[Proposal, ...]
    attempts: int
    error: str | None
    model: str | None
    prompt_version: str
    # How the answer was constrained: json_schema, json_object or off (see llm.Structured).
    structured: str = Structured.JSON_OBJECT.value
    # The last broken answer was cut at the endpoint's token cap: the input is not at fault,
    # so the job keeps it for `memoryd jobs retry` once the limit is raised.
    cut_off: bool = False


class Extractor:
    """Runs a prompt against an operation's route (``extract`` by default, ``reflect`` for
    insights) with one retry on a broken contract."""

    def __init__(self, gateway: Gateway, operation: str = "extract") -> None:
        self.gateway = gateway
        self.operation = operation

    def extract(self, prompt: Prompt, conversation: str) -> Extraction:
        """Proposals from the model, or none with the error after a second broken answer.
        Transport failures (LLMUnavailableError) propagate so the job can be retried."""
        route = self.gateway.routes.get(self.operation)
        model = route.model if route is not None else None
        messages = [Message("user", conversation)]
        schema = contract_schema(cues=prompt.cues)
        broken: list[ProposalBatchError] = []
        said, structured = "", Structured.JSON_OBJECT.value
        for attempt in (1, 2):
            try:
                answer = self.gateway.complete_json(
                    self.operation, prompt.text, messages, schema, SCHEMA_NAME
                )
                said, structured = answer.text, answer.structured
                proposals = parse_batch_text(answer.text)
                examples = example_contents(prompt.text)
                proposals = tuple(
                    p for p in proposals if not echoes_example(p, conversation, examples)
                )
                return Extraction(proposals, attempt, None, model, prompt.label, answer.structured)
            except AnswerCutOffError as error:
                broken.append(error)
                said, structured = error.text, error.structured or structured
            except ProposalBatchError as error:
                broken.append(error)
            if attempt == 1:
                messages += [
                    Message("assistant", said),
                    Message(
                        "user",
                        f"Your answer broke the contract: {broken[0]}. Answer again with only the "
                        'corrected JSON object {"memories": [...]}.',
                    ),
                ]
        log.warning(
            "extraction broke the contract twice (%s, answered in %s mode); nothing "
            "proposed. Raw output: %r",
            broken[-1],
            structured,
            said[:4000],
        )
        failed = f"contract broken twice: {broken[-1]}"
        cut_off = isinstance(broken[-1], AnswerCutOffError)
        return Extraction((), 2, failed, model, prompt.label, structured, cut_off)
