"""The predicate vocabulary of each subject, read from the store: which slot a new fact
takes, which predicates the extraction prompt lists, and the one-time re-slot of a store
whose slots were keyed before canonical forms (the policy itself is
:mod:`memoryd.memory.slot_policy`)."""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from memoryd.errors import EmbeddingUnavailableError
from memoryd.memory.model import Actor, Kind, Memory, Proposal, Status
from memoryd.memory.slot_policy import (
    OWNER,
    SlotPolicy,
    SlottedFact,
    VocabularyEntry,
    canonical_subject,
    canonical_words,
    names_to_compare,
    plan_reslot,
    plan_slot,
    similarity_text,
    slot_names,
)
from memoryd.providers.embedder import Embedder, LocalMiniLM

if TYPE_CHECKING:
    from memoryd.memory.ledger import Ledger
    from memoryd.providers.embedder import Vector
    from memoryd.storage.protocols import Store

log = logging.getLogger("memoryd")

# The meta key that says how the store's slots are keyed: "1" (absent) casefolded words,
# "2" the canonical forms of memoryd.memory.slot_policy.
SLOT_SCHEME_KEY = "slot_scheme"
SLOT_SCHEME = "2"
LEGACY_SLOT_SCHEME = "1"
RESLOT_RULE = "canonical-slots"
# Predicate vectors kept in memory (short texts; a subject rarely has more than a few dozen).
PREDICATE_CACHE = 4096
# How much of the vocabulary an extraction prompt lists.
MAX_LISTED_SUBJECTS = 8
MAX_LISTED_PREDICATES = 40


class SlotVocabulary:
    """Places new facts in their subject's slots, comparing predicates with the embedder the
    threshold was calibrated for (the store's own when it is that model, else a local copy
    of it, loaded on first need)."""

    def __init__(self, *, store: Store, embedder: Embedder, policy: SlotPolicy) -> None:
        self.store, self.embedder, self.policy = store, embedder, policy
        self._vectors: dict[str, Vector] = {}
        self._local: Embedder | None = None
        self._lock = threading.Lock()

    def place(self, proposal: Proposal) -> Proposal:
        """``proposal`` with the slot its subject's vocabulary gives it: unchanged when it is
        not a fact with a subject and a predicate, or when its own slot is the answer. Call
        inside the write transaction, so the vocabulary read is the one written against."""
        subject, predicate = proposal.subject, proposal.predicate
        if proposal.kind is not Kind.FACT or not subject or not predicate:
            return proposal
        facts = self.store.memories.live_facts_about([canonical_subject(subject)])
        entries = [
            VocabularyEntry(m.predicate, m.slot, m.same_slot_as)
            for m in facts
            if m.predicate and m.slot
        ]
        names = names_to_compare(subject, predicate, entries)
        cosines = {}
        if names:
            try:
                cosines = self._cosines(predicate, names)
            except EmbeddingUnavailableError as error:
                # The fact is still kept, in its own slot; the owner can read why here.
                log.warning("predicates not compared (%s); %r keeps its own slot", error, predicate)
        choice = plan_slot(subject, predicate, entries, cosines, self.policy)
        if choice.same_slot_as is None:
            return proposal
        return replace(proposal, placed=choice)

    def _cosines(self, predicate: str, names: list[str]) -> dict[str, float]:
        texts = [similarity_text(predicate), *(similarity_text(name) for name in names)]
        vectors = self._vectors_of(texts)
        first = vectors[0]
        return {
            name: float(first @ vector) for name, vector in zip(names, vectors[1:], strict=True)
        }

    def _vectors_of(self, texts: list[str]) -> list[Vector]:
        missing = [text for text in dict.fromkeys(texts) if text not in self._vectors]
        if missing:
            embedded = self._embedder().embed(missing)
            with self._lock:
                if len(self._vectors) + len(missing) > PREDICATE_CACHE:
                    self._vectors.clear()
                self._vectors.update(zip(missing, embedded, strict=True))
        return [self._vectors[text] for text in texts]

    def _embedder(self) -> Embedder:
        store_embedder = self.embedder
        if store_embedder.model == self.policy.calibrated_for:
            return store_embedder
        with self._lock:
            if self._local is None:
                self._local = LocalMiniLM()
            return self._local


def known_predicates(store: Store, text: str) -> list[tuple[str, list[str]]]:
    """The vocabulary an extraction prompt lists: for the owner, and for each other subject
    the ``text`` names, the subject (as last written) and the names of its slots, oldest
    first. Predicates only, never values, each under its own subject."""
    subjects = store.memories.fact_subjects()
    if not subjects:
        return []
    words = f" {canonical_words(text)} "
    wanted = [OWNER] if OWNER in subjects else []
    wanted += [key for key in subjects if key != OWNER and f" {key} " in words]
    wanted = wanted[:MAX_LISTED_SUBJECTS]
    by_subject: dict[str, list[Memory]] = {key: [] for key in wanted}
    for memory in store.memories.live_facts_about(wanted):
        if memory.subject and memory.predicate and memory.slot:
            key = canonical_subject(memory.subject)
            if key in by_subject:
                by_subject[key].append(memory)
    listed = []
    for key, facts in by_subject.items():
        if not facts:
            continue
        shown = OWNER if key == OWNER else (facts[-1].subject or key).strip()
        entries = [VocabularyEntry(m.predicate or "", m.slot or "", m.same_slot_as) for m in facts]
        names = list(dict.fromkeys(slot_names(entries).values()))
        listed.append((shown, names[:MAX_LISTED_PREDICATES]))
    return listed


def reslot_if_needed(store: Store, ledger: Ledger, at: datetime) -> int | None:
    """Re-slot the store once, when its slots were keyed before canonical forms: under the
    write lock, in one transaction, recorded in meta (so a second process opening the store
    at the same time finds it done). The number of facts that stepped back to pending, or
    None when there was nothing to do."""
    if store.get_meta(SLOT_SCHEME_KEY) == SLOT_SCHEME:
        return None
    with store.transaction():
        if store.get_meta(SLOT_SCHEME_KEY) == SLOT_SCHEME:
            return None
        demoted = _reslot(store, ledger, at)
        store.set_meta(SLOT_SCHEME_KEY, SLOT_SCHEME)
    if demoted:
        log.warning(
            "re-slotted facts by their canonical subject and predicate: %d now share a slot "
            "with an older active fact and wait for the owner's review as its supersede",
            demoted,
        )
    return demoted


def _reslot(store: Store, ledger: Ledger, at: datetime) -> int:
    memories = store.memories
    slotted = memories.slotted()
    by_id = {memory.id: memory for memory in slotted}
    plan = plan_reslot(
        [
            SlottedFact(
                m.id,
                m.status is Status.ACTIVE,
                m.subject,
                m.predicate,
                m.slot or "",
                m.same_slot_as,
                m.created_at,
            )
            for m in slotted
        ]
    )
    for demotion in plan.demotions:
        keeper = by_id[demotion.keeper_id]
        ledger.change_status(
            by_id[demotion.memory_id],
            Status.PENDING,
            actor=Actor.SYSTEM,
            action="reslot",
            at=at,
            rule=RESLOT_RULE,
            reason=(
                f"same slot as {keeper.id} ({_label(keeper)}) after predicates were "
                "canonicalised; confirm it to replace that fact, or archive it"
            ),
        )
    demoted = {demotion.memory_id for demotion in plan.demotions}
    # Active facts that move leave their old slot first, so no two actives meet on the way.
    for memory in slotted:
        slot, key = plan.slots[memory.id]
        if memory.status is Status.ACTIVE and memory.id not in demoted and slot != memory.slot:
            memories.set_slot(memory.id, None, memory.same_slot_as, key)
    for memory in slotted:
        slot, key = plan.slots[memory.id]
        memories.set_slot(memory.id, slot, memory.same_slot_as, key)
    return len(plan.demotions)


def _label(memory: Memory) -> str:
    if memory.predicate and memory.object:
        return f"{memory.predicate}: {memory.object}"
    return memory.content
