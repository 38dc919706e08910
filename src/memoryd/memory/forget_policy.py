"""What "forget" takes: which memories and documents name an entity or match a query (pure).

A memory or a chunk *names* an entity when the entity index tags it with the name or one of its
aliases, or when its text holds one of them as whole words, case-insensitively ("Ana", "ana's",
"ANA" — not "Banana" nor "Anastasia").

A memory or a chunk *matches* a query only when both hold (conservative on purpose: forgetting
is not undoable, so a doubtful row stays):

1. every content word of the query (stop words dropped) is in its text as a whole word; and
2. its vector's cosine with the query's is at least :data:`QUERY_MIN_COSINE` (which keeps out
   long text that holds the words only in passing).

A document with any chunk that names the entity or matches is removed whole, not only those
chunks: chunks overlap their neighbours and read spans widen into them, a neighbour's "she" is
still about Ana, and a document with holes would look complete while its source hash says it is
unchanged (a re-ingest of the same file would skip it). The owner's source file is theirs to
edit and ingest again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypedDict

from memoryd.errors import InvalidInputError
from memoryd.memory.entity_policy import MAX_NAME_WORDS, EntityMatcher, normalize_name
from memoryd.memory.model import Memory
from memoryd.words import query_terms

# Why 0.4 (measured with the local MiniLM): a short memory that holds every content word of a
# short query sits at 0.42-0.80 from it, whatever the sense ("bank" ~ "fishing on the river
# bank" is 0.42), so for memories the words decide and the listed plan is the owner's check. The
# cosine drops long text that holds the words only in passing: a ~200-word chunk mentioning
# "my dentist appointment moved" once sits at 0.24 from "dentist appointment", one about it at
# 0.62.
QUERY_MIN_COSINE = 0.4
PREVIEW_WORDS = 8
MAX_REQUEST_CHARS = 200


class ForgetRequestJson(TypedDict):
    # What the owner asked to forget.
    entity: str | None
    query: str | None


@dataclass(frozen=True)
class ForgetRequest:
    """Forget everything naming ``entity`` (with its aliases), or matching ``query``."""

    entity: str | None = None
    query: str | None = None

    @classmethod
    def checked(cls, entity: str | None, query: str | None) -> ForgetRequest:
        """One of the two, non-empty and short; a clear error otherwise."""
        entity = " ".join(entity.split()) if entity is not None else None
        query = " ".join(query.split()) if query is not None else None
        if (entity is None) == (query is None):
            raise InvalidInputError(
                "forget takes exactly one of an entity name or a query",
                fields=("entity", "query"),
            )
        given = entity if entity is not None else query
        field = "entity" if entity is not None else "query"
        assert given is not None
        if not given:
            raise InvalidInputError(f"the {field} to forget is empty", fields=(field,))
        if len(given) > MAX_REQUEST_CHARS:
            raise InvalidInputError(
                f"the {field} to forget is {len(given)} characters; at most {MAX_REQUEST_CHARS}",
                fields=(field,),
            )
        if entity is not None and not normalize_name(entity):
            raise InvalidInputError(
                f"the entity {entity!r} has no letters or digits to match", fields=("entity",)
            )
        if query is not None and not query_terms(query):
            raise InvalidInputError(
                f"the query {query!r} has only common words; name what to forget with at "
                "least one word that is not a stop word",
                fields=("query",),
            )
        return cls(entity, query)

    @property
    def label(self) -> str:
        """ "entity 'Ana'" or "query 'dentist appointment'"."""
        if self.entity is not None:
            return f"entity {self.entity!r}"
        return f"query {self.query!r}"


@dataclass(frozen=True)
class NameMatcher:
    """An entity's names (its own and its aliases) found as whole words in text."""

    names: tuple[str, ...]
    _matcher: EntityMatcher

    @classmethod
    def build(cls, names: Iterable[str]) -> NameMatcher:
        """Matches any of ``names`` (normalised as entity names are)."""
        keys = {normalize_name(name): 0 for name in names if normalize_name(name)}
        longest = max((len(key.split()) for key in keys), default=1)
        # EntityMatcher.build drops common words; here the owner named them, so none is dropped.
        matcher = EntityMatcher(keys=keys, longest=min(longest, MAX_NAME_WORDS))
        return cls(tuple(sorted(keys)), matcher)

    def tagged(self, entities: Sequence[str]) -> bool:
        """Whether an entity tag is one of the names."""
        return any(normalize_name(tag) in self._matcher.keys for tag in entities)

    def named_in(self, text: str) -> bool:
        """Whether ``text`` holds one of the names as whole words (any case)."""
        return bool(self._matcher.mentions(normalize_name(text).split()))


def entity_names(name: str, aliases: Iterable[tuple[str, int]]) -> tuple[str, ...]:
    """``name`` and every alias of the entities ``name`` is a name or alias of, from the
    entity index's (alias or name, entity id) pairs."""
    key = normalize_name(name)
    pairs = list(aliases)
    ids = {entity_id for alias, entity_id in pairs if normalize_name(alias) == key}
    found = {name: None}
    for alias, entity_id in pairs:
        if entity_id in ids:
            found.setdefault(alias, None)
    return tuple(found)


def memory_text(memory: Memory) -> str:
    """Every field of a memory that could hold a name."""
    return " \n ".join(part for part in (memory.content, memory.subject, memory.object) if part)


def holds_terms(text: str, terms: Sequence[str]) -> bool:
    """Whether every one of ``terms`` is a whole word of ``text``."""
    words = set(query_terms(text))
    return all(term in words for term in terms)


def preview(text: str, words: int = PREVIEW_WORDS) -> str:
    """The first words of ``text``, "…" when there were more."""
    split = text.split()
    head = " ".join(split[:words])
    return head + (" …" if len(split) > words else "")


class ForgottenMemoryJson(TypedDict):
    # A memory forget erases (or would).
    id: str
    status: str
    kind: str
    preview: str
    why: str


@dataclass(frozen=True)
class ForgottenMemory:
    """A memory a forget erases, as the owner is shown it before."""

    id: str
    status: str
    kind: str
    preview: str
    why: str

    def to_json(self) -> ForgottenMemoryJson:
        """JSON shape for the CLI and the API."""
        return {"id": self.id, "status": self.status, "kind": self.kind,
                "preview": self.preview, "why": self.why}  # fmt: skip


class ForgottenChunkJson(TypedDict):
    # A document chunk forget erases (or would).
    document_id: str
    chunk: int
    preview: str
    why: str


@dataclass(frozen=True)
class ForgottenChunk:
    """A chunk that names the entity or matches; its whole document goes."""

    document_id: str
    position: int
    preview: str
    why: str

    def to_json(self) -> ForgottenChunkJson:
        """JSON shape for the CLI and the API."""
        return {"document_id": self.document_id, "chunk": self.position,
                "preview": self.preview, "why": self.why}  # fmt: skip


class ForgottenDocumentJson(TypedDict):
    # A document forget erases (or would).
    id: str
    title: str
    chunks: int
    matching_chunks: list[int]


@dataclass(frozen=True)
class ForgottenDocument:
    """A document removed whole because some of its chunks name the entity or match."""

    id: str
    title: str
    chunk_count: int
    matching: tuple[int, ...]

    def to_json(self) -> ForgottenDocumentJson:
        """JSON shape for the CLI and the API."""
        return {"id": self.id, "title": self.title, "chunks": self.chunk_count,
                "matching_chunks": list(self.matching)}  # fmt: skip


class ForgetJson(TypedDict):
    # The forget plan, or what it erased.
    request: ForgetRequestJson
    summary: str
    names: list[str]
    dry_run: bool
    erased: bool
    request_id: str | None
    at: str
    memories: list[ForgottenMemoryJson]
    chunks: list[ForgottenChunkJson]
    documents: list[ForgottenDocumentJson]


@dataclass(frozen=True)
class ForgetResult:
    """What a forget erased (or, in a dry run, would erase)."""

    request: ForgetRequest
    names: tuple[str, ...]
    memories: tuple[ForgottenMemory, ...]
    chunks: tuple[ForgottenChunk, ...]
    documents: tuple[ForgottenDocument, ...]
    dry_run: bool
    at: datetime
    request_id: str | None = None

    @property
    def empty(self) -> bool:
        """Whether nothing names the entity or matches."""
        return not self.memories and not self.chunks

    @property
    def summary(self) -> str:
        """ "forget entity 'Ana': 7 memories, 3 chunks in 2 documents" (no content)."""
        memories = _count(len(self.memories), "memory", "memories")
        chunks = _count(len(self.chunks), "chunk", "chunks")
        documents = _count(len(self.documents), "document", "documents")
        where = f" in {documents}" if self.documents else ""
        return f"forget {self.request.label}: {memories}, {chunks}{where}"

    def to_json(self) -> ForgetJson:
        """JSON shape for the CLI and the API."""
        return {
            "request": {"entity": self.request.entity, "query": self.request.query},
            "summary": self.summary,
            "names": list(self.names),
            "dry_run": self.dry_run,
            "erased": not self.dry_run and not self.empty,
            "request_id": self.request_id,
            "at": self.at.isoformat(),
            "memories": [m.to_json() for m in self.memories],
            "chunks": [c.to_json() for c in self.chunks],
            "documents": [d.to_json() for d in self.documents],
        }


def _count(number: int, one: str, many: str) -> str:
    return f"{number} {one if number == 1 else many}"
