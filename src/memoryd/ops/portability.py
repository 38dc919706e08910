"""Export and import as JSON Lines (SPEC §9): the owner's data is never locked in.

One record per line, in a fixed order so the same store always exports the same bytes: a
header (format, version, embedding model), memories by id (with their chain links, retrieval
statistics and, with ``--with-vectors``, their vectors), the audit log in write order, entity
aliases, documents with their chunks, jobs, the owner's evaluation cases, the conversation
messages already imported (``import-chats``), the small key-value table, then a footer with the
counts and the SHA-256 of every line before it. Import goes into an empty store in one
transaction, and re-embeds whatever came without vectors.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, TextIO

from memoryd.clock import parse_instant
from memoryd.errors import InvalidInputError, MemorydError
from memoryd.evaluation.model import EvalCase
from memoryd.jobs.model import Job, JobStatus
from memoryd.kb.model import Chunk, Document
from memoryd.memory.model import (
    Actor,
    AuditEntry,
    Importance,
    Kind,
    Memory,
    Source,
    Status,
    embedded_text,
)
from memoryd.memory.slot_vocabulary import LEGACY_SLOT_SCHEME, SLOT_SCHEME_KEY
from memoryd.providers.embedder import Embedder
from memoryd.storage.kb_rows import DOCUMENT_COLUMNS, document_from_row, document_params
from memoryd.storage.protocols import EmbeddingSignature, Store

if TYPE_CHECKING:
    from memoryd.providers.embedder import Vector

FORMAT = "memoryd-export"
VERSION = 1
# Keys of the store's own bookkeeping that an import must not copy.
_NOT_EXPORTED_META = frozenset({"embedding_model", "embedding_dimension"})
_BATCH = 500
_DOCUMENT_FIELDS = tuple(column.strip() for column in DOCUMENT_COLUMNS.split(","))


class ImportError_(MemorydError):
    """An export file that cannot be imported (named so as not to shadow the builtin)."""


@dataclass(frozen=True)
class Summary:
    """What an export wrote or an import read: records per type and the checksum."""

    counts: dict[str, int]
    sha256: str

    def to_json(self) -> dict[str, Any]:
        """JSON shape."""
        return {"counts": dict(self.counts), "sha256": self.sha256}


def export_records(store: Store, *, with_vectors: bool) -> Iterator[dict[str, Any]]:
    """Every record of the store, in export order (header first, no footer)."""
    signature = store.embedding_signature()
    yield {
        "type": "header",
        "format": FORMAT,
        "version": VERSION,
        "embedding_model": signature.model if signature else None,
        "embedding_dimension": signature.dimension if signature else None,
        "with_vectors": with_vectors,
    }
    memories = store.memories.query(newest_first=False)
    for start in range(0, len(memories), _BATCH):
        group = memories[start : start + _BATCH]
        vectors = store.memories.vectors([m.id for m in group]) if with_vectors else {}
        for memory in group:
            record: dict[str, Any] = {"type": "memory", **_memory_json(memory)}
            if memory.id in vectors:
                record["vector"] = _vector_json(vectors[memory.id])
            yield record
    for entry in store.audit.for_memories([m.id for m in memories]):
        yield {"type": "audit", **entry.to_json()}
    for entity, alias in store.entities.alias_pairs():
        yield {"type": "alias", "entity": entity, "alias": alias}
    documents = sorted(store.kb.documents(), key=lambda d: d.id)
    for document in documents:
        yield {"type": "document", **_document_json(document)}
        chunks = store.kb.chunks(document.id)
        vectors_of = store.kb.vectors_by_position(document.id) if with_vectors else {}
        for chunk in chunks:
            record = {"type": "chunk", **_chunk_json(chunk)}
            if chunk.position in vectors_of:
                record["vector"] = _vector_json(vectors_of[chunk.position])
            yield record
    for job in sorted(store.jobs.recent(1 << 62), key=lambda j: j.id):
        yield {"type": "job", **_job_json(job)}
    for case in store.evals.all():
        yield {"type": "eval_case", **case.to_json()}
    for source, conversation, message, job_id, at in store.imported_chats.rows():
        yield {"type": "imported_chat", "source": source, "conversation_id": conversation,
               "message_id": message, "job_id": job_id, "imported_at": _iso(at)}  # fmt: skip
    for key, value in sorted(store.meta_items().items()):
        if key not in _NOT_EXPORTED_META:
            yield {"type": "meta", "key": key, "value": value}


def export_store(store: Store, out: TextIO, *, with_vectors: bool = False) -> Summary:
    """Write the store as JSON Lines to ``out``; the footer carries counts and checksum."""
    digest = hashlib.sha256()
    counts: Counter[str] = Counter()
    with store.snapshot():
        for record in export_records(store, with_vectors=with_vectors):
            line = _line(record)
            digest.update(line.encode("utf-8"))
            counts[record["type"]] += 1
            out.write(line)
    summary = Summary(dict(counts), digest.hexdigest())
    out.write(_line({"type": "footer", **summary.to_json()}))
    return summary


def import_store(store: Store, lines: Iterable[str], embedder: Embedder) -> Summary:
    """Load an export into an empty store, in one transaction. Records without a vector (or
    whose vectors come from another model) are embedded again."""
    if store.memories.count() or store.kb.documents(limit=1) or store.evals.all():
        raise InvalidInputError(
            "import needs an empty store: this one already holds memories, documents or "
            "evaluation cases; create a new store with `memoryd init` (or another --db) and "
            "import there"
        )
    records = list(_parse(lines))
    header, footer = records[0], records[-1]
    body = records[1:-1]
    digest = hashlib.sha256()
    digest.update(_line(header).encode("utf-8"))
    for record in body:
        digest.update(_line(record).encode("utf-8"))
    counts = Counter(record["type"] for record in [header, *body])
    if footer.get("sha256") != digest.hexdigest() or footer.get("counts") != dict(counts):
        raise ImportError_(
            "the export file does not match its own checksum (truncated or edited); export it again"
        )
    signature = store.embedding_signature()
    same_space = signature is not None and signature == EmbeddingSignature(
        str(header.get("embedding_model")), int(header.get("embedding_dimension") or 0)
    )
    memories = [r for r in body if r["type"] == "memory"]
    chunk_records = [r for r in body if r["type"] == "chunk"]
    memory_vectors = _vectors_for(
        memories,
        same_space,
        embedder,
        lambda r: embedded_text(str(r["content"]), [str(c) for c in r.get("cues") or ()]),
        lambda r: r.get("purged_at") is None,
    )
    chunk_vectors = _vectors_for(
        chunk_records,
        same_space,
        embedder,
        lambda r: _chunk_from(r).embedded_text,
        lambda r: True,
    )
    with store.transaction():
        if not any(r["type"] == "meta" and r.get("key") == SLOT_SCHEME_KEY for r in body):
            # An export from before canonical slots: its facts are re-slotted after the import.
            store.set_meta(SLOT_SCHEME_KEY, LEGACY_SLOT_SCHEME)
        parsed = [_memory_from(record) for record in memories]
        for memory, vector in zip(parsed, memory_vectors, strict=True):
            store.memories.insert(replace(memory, supersedes=None, superseded_by=None), vector)
        # Links go in once every row exists: back links first (they also set the old row's
        # forward link), then every forward link as exported (a merge's group members all
        # point at the one row that points back at only one of them).
        for memory in parsed:
            if memory.supersedes:
                store.memories.link_supersede(memory.supersedes, memory.id, back_link=True)
        for memory in parsed:
            if memory.superseded_by:
                store.memories.link_supersede(memory.id, memory.superseded_by, back_link=False)
        for record in body:
            kind = record["type"]
            if kind == "audit":
                store.audit.append(_audit_from(record))
            elif kind == "alias":
                store.entities.add_alias(str(record["entity"]), str(record["alias"]))
            elif kind == "job":
                store.jobs.enqueue(_job_from(record))
            elif kind == "imported_chat":
                # So importing the same conversations into this store again queues nothing.
                store.imported_chats.record(
                    str(record["source"]),
                    str(record["conversation_id"]),
                    [(str(record["message_id"]), str(record["job_id"]))],
                    _required(record.get("imported_at")),
                )
            elif kind == "meta":
                store.set_meta(str(record["key"]), str(record["value"]))
            elif kind == "eval_case":
                store.evals.save(_eval_case_from(record))
        chunks_by_document: dict[str, list[tuple[Chunk, Vector]]] = {}
        for record, vector in zip(chunk_records, chunk_vectors, strict=True):
            chunk = _chunk_from(record)
            assert vector is not None
            chunks_by_document.setdefault(chunk.document_id, []).append((chunk, vector))
        for record in body:
            if record["type"] == "document":
                document = _document_from(record)
                store.kb.save_document(document)
                pairs = chunks_by_document.get(document.id, [])
                if pairs:
                    store.kb.replace_chunks(
                        document.id, [c for c, _ in pairs], [v for _, v in pairs]
                    )
    return Summary(dict(counts), digest.hexdigest())


def _vectors_for(
    records: list[dict[str, Any]],
    same_space: bool,
    embedder: Embedder,
    text_of: Any,
    wants_vector: Any,
) -> list[Vector | None]:
    """Stored vectors when they are in this store's space, else fresh embeddings."""
    vectors: list[Vector | None] = [None] * len(records)
    missing: list[int] = []
    for index, record in enumerate(records):
        if not wants_vector(record):
            continue
        if same_space and record.get("vector") is not None:
            import numpy as np

            vectors[index] = np.asarray(record["vector"], dtype=np.float32)
        else:
            missing.append(index)
    for start in range(0, len(missing), 64):
        group = missing[start : start + 64]
        embedded = embedder.embed([text_of(records[i]) for i in group])
        for index, vector in zip(group, embedded, strict=True):
            vectors[index] = vector
    return vectors


def _parse(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    number = 0
    seen_header = False
    last: dict[str, Any] | None = None
    for number, raw in enumerate(_text_lines(lines), start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except json.JSONDecodeError as error:
            raise ImportError_(f"line {number} is not JSON ({error.msg})") from None
        if not isinstance(record, dict) or "type" not in record:
            raise ImportError_(f"line {number} is not a memoryd export record")
        if not seen_header:
            if record["type"] != "header" or record.get("format") != FORMAT:
                raise ImportError_("this is not a memoryd export (no memoryd-export header)")
            if record.get("version") != VERSION:
                raise ImportError_(
                    f"export version {record.get('version')} is not supported (this memoryd "
                    f"reads version {VERSION})"
                )
            seen_header = True
        last = record
        yield record
    if not seen_header:
        raise ImportError_("the export file is empty")
    if last is None or last["type"] != "footer":
        raise ImportError_(
            f"the export file ends at line {number} without its footer (truncated); export it again"
        )


def _text_lines(lines: Iterable[str]) -> Iterator[str]:
    """The file's lines; one that is not UTF-8 (a PDF, a database, a zip) is refused by name."""
    iterator = iter(lines)
    number = 0
    while True:
        number += 1
        try:
            line = next(iterator)
        except StopIteration:
            return
        except UnicodeDecodeError:
            raise ImportError_(
                f"this is not a memoryd export: line {number} is not UTF-8 text; give the "
                "JSON Lines file `memoryd export --out FILE` wrote"
            ) from None
        yield line


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n"


def _vector_json(vector: Vector) -> list[float]:
    return [float(x) for x in vector]


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _time(value: Any) -> datetime | None:
    return parse_instant(str(value)) if value else None


def _required(value: Any) -> datetime:
    parsed = _time(value)
    if parsed is None:
        raise ImportError_("a record misses a required time")
    return parsed


def _memory_json(memory: Memory) -> dict[str, Any]:
    shaped: dict[str, Any] = {**memory.to_json()}
    shaped.pop("purged", None)
    return shaped


def _memory_from(record: dict[str, Any]) -> Memory:
    return Memory(
        id=str(record["id"]),
        kind=Kind(record["kind"]),
        status=Status(record["status"]),
        content=str(record["content"]),
        source=Source(record["source"]),
        created_at=_required(record["created_at"]),
        last_confirmed_at=_required(record["last_confirmed_at"]),
        confidence=float(record["confidence"]),
        subject=record.get("subject"),
        predicate=record.get("predicate"),
        object=record.get("object"),
        slot=record.get("slot"),
        entities=tuple(record.get("entities") or ()),
        importance=Importance(record["importance"]) if record.get("importance") else None,
        changes_behavior=bool(record.get("changes_behavior")),
        occurred_at=_time(record.get("occurred_at")),
        source_ref=record.get("source_ref"),
        extractor_model=record.get("extractor_model"),
        prompt_version=record.get("prompt_version"),
        last_retrieved_at=_time(record.get("last_retrieved_at")),
        retrieval_hits=int(record.get("retrieval_hits") or 0),
        supersedes=record.get("supersedes"),
        superseded_by=record.get("superseded_by"),
        purged_at=_time(record.get("purged_at")),
        same_slot_as=record.get("same_slot_as"),
        cues=tuple(str(cue) for cue in record.get("cues") or ()),
    )


def _audit_from(record: dict[str, Any]) -> AuditEntry:
    return AuditEntry(
        memory_id=str(record["memory_id"]),
        at=_required(record["at"]),
        actor=Actor(record["actor"]),
        rule=record.get("rule"),
        action=str(record["action"]),
        from_status=Status(record["from_status"]) if record.get("from_status") else None,
        to_status=Status(record["to_status"]),
        reason=str(record["reason"]),
    )


def _document_json(document: Document) -> dict[str, Any]:
    return dict(zip(_DOCUMENT_FIELDS, document_params(document, _iso), strict=True))


def _document_from(record: dict[str, Any]) -> Document:
    try:
        # Exports written before documents had metadata carry none; exports made before
        # redaction counts have none (nothing was counted then).
        defaults = {"metadata": None, "redactions": 0}
        values = [
            record.get(f, defaults[f]) if f in defaults else record[f] for f in _DOCUMENT_FIELDS
        ]
        return document_from_row(values, _required)
    except KeyError as missing:
        raise ImportError_(f"a document record has no {missing}") from None


def _chunk_json(chunk: Chunk) -> dict[str, Any]:
    return {
        "document_id": chunk.document_id,
        "position": chunk.position,
        "headings": list(chunk.headings),
        "breadcrumb": chunk.breadcrumb,
        "text": chunk.text,
        "tokens": chunk.tokens,
        "overlap_chars": chunk.overlap_chars,
        "pages": [list(page) for page in chunk.pages],
    }


def _chunk_from(record: dict[str, Any]) -> Chunk:
    return Chunk(
        document_id=str(record["document_id"]),
        position=int(record["position"]),
        headings=tuple(record.get("headings") or ()),
        breadcrumb=str(record["breadcrumb"]),
        text=str(record["text"]),
        tokens=int(record["tokens"]),
        overlap_chars=int(record.get("overlap_chars") or 0),
        pages=tuple((int(p), int(o)) for p, o in record.get("pages") or ()),
    )


def _eval_case_from(record: dict[str, Any]) -> EvalCase:
    try:
        return EvalCase(
            id=str(record["id"]),
            question=str(record["question"]),
            expected=tuple(str(i) for i in record.get("expected") or ()),
            noise=tuple(str(i) for i in record.get("noise") or ()),
            created_at=_required(record["created_at"]),
        )
    except KeyError as missing:
        raise ImportError_(f"an eval_case record has no {missing}") from None


def _job_json(job: Job) -> dict[str, Any]:
    shaped = job.to_json()
    shaped["payload"] = job.payload
    shaped["claimed_at"] = _iso(job.claimed_at)
    return shaped


def _job_from(record: dict[str, Any]) -> Job:
    return Job(
        id=str(record["id"]),
        kind=str(record["kind"]),
        payload=dict(record.get("payload") or {}),
        status=JobStatus(record["status"]),
        attempts=int(record.get("attempts") or 0),
        next_attempt_at=_required(record["next_attempt_at"]),
        created_at=_required(record["created_at"]),
        claimed_at=_time(record.get("claimed_at")),
        finished_at=_time(record.get("finished_at")),
        last_error=record.get("last_error"),
        result=record.get("result"),
    )
