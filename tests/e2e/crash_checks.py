"""What test_crash_safety.py checks after each kill of a KB ingest, propose or extraction
victim: nothing half written and every acknowledged write there.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections import Counter, defaultdict
from contextlib import closing
from datetime import timedelta
from typing import Any

from memoryd.clock import utc_now
from memoryd.jobs.model import JobStatus, RetryPolicy
from memoryd.kb.model import ChunkKey, DocumentStatus
from memoryd.kb.vector_fill import EMBED_RETRY
from memoryd.memory.model import Memory, Status
from memoryd.service import MemoryService
from memoryd.words import query_terms
from tests.crash_child import TURN_MARK, turn_reply_items

from .crash_harness import EMBEDDER, Store, Tally, Victim

EMPTY_HASH = hashlib.sha256(b"   \n").hexdigest()  # what the kb victim sends to fail
MADE_UP = re.compile(r"(?:[bcdfghjklmnpqrstvwxz][aeiou]){3,4}")  # tests.crash_child.words

# ---------------------------------------------------------------------------- the checks


class Operation:
    """One operation's victim parameters and the checks after each kill."""

    def __init__(self, store: Store, rng: random.Random, tally: Tally) -> None:
        self.store = store
        self.rng = rng
        self.tally = tally

    def params(self, cycle: int) -> dict[str, Any]:
        """The victim's parameters for one cycle (the parent may prepare the store here)."""
        return {"seed": self.rng.randrange(2**32), "cycle": cycle}

    def check(self, service: MemoryService, victim: Victim) -> None:
        """After a kill."""
        raise NotImplementedError

    def finish(self) -> None:
        """After the last kill: resume what is left and check the final state."""


def check_integrity(service: MemoryService, tally: Tally) -> None:
    errors = service.store.integrity_errors()
    tally.integrity_errors += len(errors)
    assert errors == [], errors


class KbIngest(Operation):
    """Documents: all chunks of a ready one (with its last acknowledged text, or a newer one
    whose ingest was cut off), none of a failed one."""

    def __init__(self, store: Store, rng: random.Random, tally: Tally) -> None:
        super().__init__(store, rng, tally)
        self.ready: dict[str, str] = {}  # uri → content hash, as last seen
        self.failed: set[str] = set()

    def params(self, cycle: int) -> dict[str, Any]:
        known = sorted(self.ready)
        return {**super().params(cycle), "ready": self.rng.sample(known, min(6, len(known)))}

    def check(self, service: MemoryService, victim: Victim) -> None:
        check_integrity(service, self.tally)
        kb = service.store.kb
        events: dict[str, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
        for word, payload in victim.lines:
            events[payload["uri"]].append((word, payload))
        checked = [self._check_document(service, uri, seen) for uri, seen in events.items()]
        # A kill between the chunks' commit and their last vector leaves chunks pending:
        # keyword-searchable, invisible to the vector leg, and owned by a persisted job that a
        # later worker finishes (the dead victim's claim is taken back after its lease).
        later = utc_now() + timedelta(seconds=EMBED_RETRY.lease_seconds + 1)
        service.kb.run_vector_jobs(now=later)
        for document in kb.documents():
            if document.status is DocumentStatus.READY:
                assert kb.pending_chunks(document.id, 1) == [], f"{document.id}: vectors lost"
                counted = kb.vector_counts([document.id]).get(document.id, 0)
                assert counted == document.chunk_count, (document.id, counted)
        for document_id in checked:
            if document_id is not None:
                self._check_search(service, document_id)
        # Nothing half ingested anywhere: the chunks of ready documents are all there is.
        documents = kb.documents()
        ready = [d for d in documents if d.status is DocumentStatus.READY]
        assert kb.chunk_count() == sum(d.chunk_count for d in ready)
        for document in documents:
            if document.status is not DocumentStatus.READY:
                assert kb.chunks(document.id) == [], document

    def _check_document(
        self, service: MemoryService, uri: str, seen: list[tuple[str, dict[str, Any]]]
    ) -> str | None:
        """The document's row and chunks; its id when it is ready (searched once its
        vectors are filled)."""
        kb = service.store.kb
        hashes = {self.ready[uri]} if uri in self.ready else set()
        must_exist = uri in self.ready or uri in self.failed
        acked: dict[str, Any] | None = None
        for word, payload in seen:
            if word == "TRY":
                if payload["hash"] != EMPTY_HASH:
                    hashes.add(payload["hash"])  # may have landed before the kill
                continue
            self.tally.acked += 1
            if payload["outcome"] == "ok":
                must_exist = True
                hashes = {payload["hash"]}
                acked = payload
            else:
                # Nothing to index: a stored document keeps its chunks, a new source leaves
                # no document at all.
                assert payload["outcome"] == "failed", payload
                assert payload["hash"] == EMPTY_HASH, payload
                assert (payload["doc"] is None) == (not must_exist), payload
        document = kb.document_by_uri(uri)
        if document is None:
            assert not must_exist, f"acknowledged document {uri} is gone"
            return None
        chunks = kb.chunks(document.id)
        if document.status is DocumentStatus.FAILED:
            assert uri not in self.ready and chunks == [], (document, len(chunks))
            self.failed.add(uri)
            return None
        assert document.status is DocumentStatus.READY, document
        assert document.content_hash in hashes, (uri, document.content_hash, hashes)
        if acked is not None:
            assert document.id == acked["doc"]
            if document.content_hash == acked["hash"]:
                assert document.chunk_count == acked["chunks"]
        assert document.chunk_count > 0
        assert [c.position for c in chunks] == list(range(document.chunk_count)), uri
        pending = kb.pending_chunks(document.id, document.chunk_count)
        if acked is not None and document.content_hash == acked["hash"]:
            assert pending == [], f"{uri}: acknowledged (waited for) but vectors missing"
        if pending:
            self.tally.extra["pending chunks"] = self.tally.extra.get("pending chunks", 0) + len(
                pending
            )
            vector = EMBEDDER.embed([pending[0].embedded_text])[0]
            hidden = ChunkKey(document.id, pending[0].position)
            assert hidden not in [k for k, _ in kb.nearest_chunks(vector, 10)], hidden
        self.ready[uri] = document.content_hash or ""
        return document.id

    def _check_search(self, service: MemoryService, document_id: str) -> None:
        """Every chunk of a ready document is found by the vector and the keyword search."""
        kb = service.store.kb
        chunks = kb.chunks(document_id)
        vectors = EMBEDDER.embed([c.embedded_text for c in chunks])
        for chunk, vector in zip(chunks, vectors, strict=True):
            key = ChunkKey(document_id, chunk.position)
            assert key in [k for k, _ in kb.nearest_chunks(vector, 3)], f"{key}: no vector hit"
            # The victim's made-up words, not the headings' words that every chunk shares.
            terms = [
                t for t in query_terms(chunk.text[chunk.overlap_chars :]) if MADE_UP.fullmatch(t)
            ]
            assert key in kb.keyword_chunks(terms[:6], 10), f"{key}: no keyword hit"
        self.tally.extra["chunks checked"] = self.tally.extra.get("chunks checked", 0) + len(chunks)

    def finish(self) -> None:
        self.store.close()
        with closing(self.store.open()) as service:
            check_integrity(service, self.tally)
            kb = service.store.kb
            for document in kb.documents():
                chunks = kb.chunks(document.id)
                if document.status is DocumentStatus.READY:
                    assert len(chunks) == document.chunk_count > 0, document
                else:
                    assert chunks == [], document
            self.tally.extra["documents"] = len(kb.documents())


class Propose(Operation):
    """Batches of five: all five memories or none, acknowledged ones present, each findable
    by its vector and its words."""

    def __init__(self, store: Store, rng: random.Random, tally: Tally) -> None:
        super().__init__(store, rng, tally)
        self.count = 0

    def check(self, service: MemoryService, victim: Victim) -> None:
        check_integrity(service, self.tally)
        memories = service.store.memories
        total = memories.count()
        added = total - self.count
        newest = memories.query(limit=added) if added else []
        assert len(newest) == added
        by_content = {m.content: m for m in newest}
        assert len(by_content) == added, "two memories with one text"
        acks = {a["batch"]: a for a in victim.of("ACK")}
        tries = victim.of("TRY")
        landed = 0
        for index, tried in enumerate(tries):
            present = [by_content.get(c) for c in tried["contents"]]
            if not any(present):
                assert tried["batch"] not in acks, f"acknowledged batch {tried['batch']} is gone"
                continue
            assert all(present), f"batch {tried['batch']} landed in part: {present}"
            landed += 1
            ack = acks.get(tried["batch"])
            if ack is None:
                assert index == len(tries) - 1, f"batch {tried['batch']} landed, never acked"
            else:
                self.tally.acked += 5
                assert [m.id for m in present if m] == ack["ids"]
                assert ack["outcomes"] == ["activated"] * 3 + ["pending"] * 2
            if index == len(tries) - 1 or self.rng.random() < 0.1:
                self._check_batch(service, [m for m in present if m])
        assert added == 5 * landed, f"{added} new memories for {landed} whole batches"
        audit = Counter(
            e.memory_id
            for e in service.store.audit.for_memories([m.id for m in newest])
            if e.action == "create"
        )
        assert all(audit[m.id] == 1 for m in newest), "a memory without its create audit"
        self.count = total

    def _check_batch(self, service: MemoryService, batch: list[Memory]) -> None:
        """Statuses as the policy decided, and each memory found by its own vector and
        words."""
        assert [m.status for m in batch] == [Status.ACTIVE] * 3 + [Status.PENDING] * 2
        assert batch[3].slot is not None
        vectors = EMBEDDER.embed([m.content for m in batch])
        for memory, vector in zip(batch, vectors, strict=True):
            hits = service.store.vectors.nearest(vector, [memory.status], 1)
            assert [h.memory_id for h in hits] == [memory.id], memory
        words = [t for m in batch[:3] for t in query_terms(m.content) if MADE_UP.fullmatch(t)]
        found = {hit.memory_id for hit in service.store.text.search(words, 10).hits}
        assert {m.id for m in batch[:3]} <= found, "an active memory missing from text search"

    def finish(self) -> None:
        self.store.close()
        with closing(self.store.open()) as service:
            check_integrity(service, self.tally)
            rows = service.list_memories()
            assert len(rows) == service.store.memories.count() == self.count
            assert Counter(m.status for m in rows) == {
                Status.ACTIVE: len(rows) * 3 // 5,
                Status.PENDING: len(rows) * 2 // 5,
            }
            self.tally.extra["memories"] = len(rows)


class Observe(Operation):
    """Extraction jobs: done with exactly its memories, or not done and none; acknowledged
    turns and finished jobs present; afterwards every job runs exactly once."""

    def __init__(self, store: Store, rng: random.Random, tally: Tally) -> None:
        super().__init__(store, rng, tally)
        self.tags: dict[str, str] = {}  # job id → turn tag

    def check(self, service: MemoryService, victim: Victim) -> None:
        check_integrity(service, self.tally)
        jobs = {j.id: j for j in service.store.jobs.recent(1_000_000)}
        for ack in victim.of("ACK"):
            if "turn" in ack:
                self.tally.acked += 1
                assert ack["queued"] and ack["job"] in jobs, f"acknowledged turn lost: {ack}"
                self.tags[ack["job"]] = ack["turn"]
        memories = self._by_job(service, jobs)
        for ack in victim.of("ACK"):
            if "job" in ack and "turn" not in ack:
                self.tally.acked += 1 + len(ack["memories"])
                assert ack["status"] == "done", ack
                assert jobs[ack["job"]].status is JobStatus.DONE
                assert sorted(ack["memories"]) == sorted(m.id for m in memories[ack["job"]])
        self._check_jobs(jobs, memories)

    def _by_job(self, service: MemoryService, jobs: dict[str, Any]) -> dict[str, list[Memory]]:
        found: dict[str, list[Memory]] = defaultdict(list)
        contents: Counter[str] = Counter()
        for memory in service.list_memories():
            assert memory.source_ref is not None and memory.source_ref.startswith("job:")
            found[memory.source_ref.removeprefix("job:")].append(memory)
            contents[memory.content] += 1
        assert set(found) <= set(jobs), "memories of a job that does not exist"
        doubled = [c for c, n in contents.items() if n > 1]
        assert not doubled, f"a turn was extracted twice: {doubled[:3]}"
        return found

    def _check_jobs(self, jobs: dict[str, Any], memories: dict[str, list[Memory]]) -> None:
        for job in jobs.values():
            assert job.status is not JobStatus.FAILED, job
            tag = self.tags.get(job.id)
            if tag is None and job.status is not JobStatus.DONE:
                found = re.search(re.escape(TURN_MARK) + r"\w+", job.payload["user"])
                assert found is not None, job.payload
                tag = self.tags[job.id] = found.group()
            mine = sorted(m.content for m in memories.get(job.id, []))
            if job.status is JobStatus.DONE:
                if tag is not None:
                    assert mine == sorted(i["content"] for i in turn_reply_items(tag)), job
                else:
                    assert len(mine) == 2 and all(TURN_MARK in c for c in mine), job
            else:
                assert mine == [], f"job {job.id} is {job.status.value} but has memories"

    def finish(self) -> None:
        policy = RetryPolicy(lease_seconds=1)
        self.store.close()
        with closing(self.store.open(retry_policy=policy)) as service:
            jobs = service.store.jobs.recent(1_000_000)
            statuses = Counter(j.status.value for j in jobs)
            # Claims of killed victims (running) come back once their lease is over; "now" a
            # while ahead also passes any retry wait.
            reports = service.run_jobs(now=utc_now() + timedelta(hours=1))
            assert len(reports) == statuses["queued"] + statuses["running"], statuses
            after = {j.id: j for j in service.store.jobs.recent(1_000_000)}
            assert {j.status for j in after.values()} == {JobStatus.DONE}, Counter(
                j.status.value for j in after.values()
            )
            self._check_jobs(after, self._by_job(service, after))
            check_integrity(service, self.tally)
            self.tally.extra["jobs"] = len(after)
            self.tally.extra["reclaimed"] = statuses["running"]
            self.tally.extra["drained"] = statuses["queued"]
