"""Extraction: the model reads conversation and proposes memories under the strict contract.

Prompts and input rendering are pure; ``Extractor`` adds the LLM call with exactly one retry
that shows the model its validation error.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from .errors import InvalidInputError, ProposalBatchError
from .fence import escape_data
from .llm import Gateway, Message
from .model import Memory, Proposal, Source
from .proposals import parse_batch_text
from .screening import fingerprint
from .textutil import query_terms

log = logging.getLogger("memoryd.extraction")


@dataclass(frozen=True)
class Prompt:
    """A versioned prompt file: ``extract.v1`` is name ``extract``, version ``v1``."""

    name: str
    version: str
    text: str

    @property
    def label(self) -> str:
        """What a memory records as its prompt version."""
        return f"{self.name}.{self.version}"


# The prompt each trigger uses, and the source its proposals carry.
TRIGGERS: dict[str, tuple[str, Source]] = {
    "turn": ("extract", Source.TURN),
    "compaction": ("compaction", Source.COMPACTION),
    "mission": ("mission", Source.MISSION),
}


# Prompts that define their own answer format instead of the proposal contract.
OWN_CONTRACT = frozenset({"merge"})


@functools.cache
def load_prompt(name: str) -> Prompt:
    """The newest version of a prompt shipped in the package, with the output contract."""
    folder = resources.files("memoryd.prompts")
    versions = sorted(
        (
            int(match.group(1))
            for entry in folder.iterdir()
            if (match := re.fullmatch(re.escape(name) + r"\.v(\d+)\.md", entry.name))
        ),
    )
    if not versions:
        raise InvalidInputError(f"no prompt named {name!r} ships with memoryd")
    version = f"v{versions[-1]}"
    body = folder.joinpath(f"{name}.{version}.md").read_text(encoding="utf-8").strip()
    if name in OWN_CONTRACT:
        return Prompt(name, version, body)
    contract = folder.joinpath("contract.v1.md").read_text(encoding="utf-8").strip()
    return Prompt(name, version, body + "\n\n" + contract)


@dataclass(frozen=True)
class MissionDigest:
    """The outcome of a finished mission."""

    title: str
    goal: str
    outcome: str


def render_turn(user_message: str, summary: str | None) -> str:
    """The extraction input for one turn, fenced as data."""
    parts = [f"Owner: {escape_data(user_message.strip())}"]
    if summary and summary.strip():
        parts.append(f"Summary of the turn: {escape_data(summary.strip())}")
    return "<conversation>\n" + "\n".join(parts) + "\n</conversation>"


def render_turns(turns: Sequence[dict[str, str]]) -> str:
    """The extraction input for turns about to be compacted."""
    lines = []
    for turn in turns:
        role = "Owner" if turn.get("role", "user") == "user" else "Assistant"
        lines.append(f"{role}: {escape_data(turn.get('content', '').strip())}")
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
    """Turns for ``compact``: a JSON array of {"role", "content"}, or plain text (one turn)."""
    stripped = text.strip()
    if not stripped:
        raise InvalidInputError("the turns file is empty")
    if stripped.startswith("["):
        try:
            document = json.loads(stripped)
        except json.JSONDecodeError as error:
            raise InvalidInputError(f"the turns file is not valid JSON: {error.msg}") from None
        if not isinstance(document, list) or not all(
            isinstance(t, dict) and isinstance(t.get("content"), str) for t in document
        ):
            raise InvalidInputError(
                'turns must be a JSON array of {"role": "user" | "assistant", "content": "..."}'
            )
        return [{"role": str(t.get("role", "user")), "content": t["content"]} for t in document]
    return [{"role": "user", "content": stripped}]


def parse_mission(text: str) -> MissionDigest:
    """A digest for ``mission``: JSON {"title", "goal", "outcome"} or text whose first line is
    the title."""
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
        return MissionDigest(document["title"], str(document.get("goal") or ""), outcome)
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
        for part in (proposal.content, proposal.subject, proposal.object, *proposal.entities)
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
        raw = self.gateway.complete(self.operation, prompt.text, messages)
        try:
            return Extraction(parse_batch_text(raw), 1, None, model, prompt.label)
        except ProposalBatchError as error:
            first_error = str(error)
        messages += [
            Message("assistant", raw),
            Message(
                "user",
                f"Your answer broke the contract: {first_error}. Answer again with only the "
                'corrected JSON object {"memories": [...]}.',
            ),
        ]
        raw = self.gateway.complete(self.operation, prompt.text, messages)
        try:
            return Extraction(parse_batch_text(raw), 2, None, model, prompt.label)
        except ProposalBatchError as error:
            log.warning(
                "extraction broke the contract twice (%s); nothing proposed. Raw output: %r",
                error,
                raw[:4000],
            )
            return Extraction((), 2, f"contract broken twice: {error}", model, prompt.label)
