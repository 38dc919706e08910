"""Writes: remember, propose, edit and purge. Each fetches the neighbours the promotion policy
needs, calls the pure ``plan_*`` function, and applies its decision through the ledger in one
transaction."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from memoryd.errors import CredentialRefusedError, InvalidInputError, InvalidOperationError
from memoryd.memory.entity_policy import extract_entities
from memoryd.memory.ledger import Ledger, Replaced
from memoryd.memory.lookups import (
    clean_text,
    embed_texts,
    require_memory,
    require_status,
    slot_holder,
)
from memoryd.memory.model import (
    Actor,
    Importance,
    Kind,
    Memory,
    Proposal,
    Provenance,
    Source,
    Status,
    embedded_text,
    normalize_key,
)
from memoryd.memory.promotion_policy import (
    CREDENTIAL_RULE,
    Decision,
    Match,
    Neighbors,
    Outcome,
    PromotionPolicy,
    SlotHolder,
    plan_promotion,
    plan_remember,
    same_slot_value,
    utc_day,
)
from memoryd.memory.slot_vocabulary import SlotVocabulary
from memoryd.results import WriteResult
from memoryd.trust.credential_screening import find_credential
from memoryd.words import strip_controls, visible_controls

if TYPE_CHECKING:
    from memoryd.clock import Clock
    from memoryd.ids import IdGenerator
    from memoryd.providers.embedder import Embedder, Vector
    from memoryd.storage.protocols import Store


Propose = Callable[[Sequence[Proposal], Provenance, datetime, str | None], list[WriteResult]]
"""The writer's ``propose`` as its callers see it: (proposals, provenance, at, tainted_by)."""

# How many near neighbours a dated event is compared with (see Neighbors.more_active).
EVENT_NEIGHBORS = 5


class MemoryWriter:
    """The write paths of the memory service."""

    def __init__(
        self,
        *,
        store: Store,
        embedder: Embedder,
        policy: PromotionPolicy,
        slots: SlotVocabulary,
        clock: Clock,
        ids: IdGenerator,
        ledger: Ledger,
    ) -> None:
        self.store, self.embedder, self.policy, self.slots = store, embedder, policy, slots
        self.clock, self.ids, self.ledger = clock, ids, ledger

    def remember(
        self,
        content: str,
        *,
        kind: Kind = Kind.FACT,
        subject: str | None = None,
        predicate: str | None = None,
        object: str | None = None,
        entities: Sequence[str] = (),
        importance: Importance | None = None,
        changes_behavior: bool = False,
        occurred_at: datetime | None = None,
        confidence: float = 1.0,
        actor: Actor = Actor.OWNER,
        now: datetime | None = None,
        tainted_by: str | None = None,
    ) -> WriteResult:
        """Keep something the owner asked for. The owner's own call is active at once; a
        model's tool call is too, unless the content could change behaviour, or
        ``tainted_by`` says the model read untrusted content first (then pending).
        Credentials are refused whoever asks."""
        at = now or self.clock()
        content = clean_text(content, "memory text")
        if (subject is None) != (predicate is None):
            raise InvalidInputError(
                "a fact slot needs both a subject and a predicate, or neither",
                fields=("subject", "predicate"),
            )
        proposal = Proposal(
            kind=kind,
            content=content,
            confidence=confidence,
            changes_behavior=changes_behavior,
            subject=_stripped(subject),
            predicate=_stripped(predicate),
            object=_stripped(object),
            entities=tuple(
                dict.fromkeys(n for n in (strip_controls(e).strip() for e in entities) if n)
            )
            or extract_entities(content),
            occurred_at=occurred_at or (at if kind is Kind.EVENT else None),
            importance=importance or (Importance.MEDIUM if kind is Kind.LESSON else None),
        )
        source = Source.OWNER if actor is Actor.OWNER else Source.REMEMBER
        provenance = Provenance(source=source)
        vector = embed_texts(self.embedder, [content])[0]
        with self.store.transaction():
            proposal = self.slots.place(proposal)
            neighbors = self._neighbors(proposal, vector, actor)
            decision = plan_remember(proposal, actor, neighbors, self.policy, tainted_by)
            if decision.rule == CREDENTIAL_RULE:
                # Whoever asked, a credential is refused loudly, not dropped quietly.
                raise CredentialRefusedError(
                    f"refusing to store this: it {decision.reason}. memoryd never stores "
                    "credentials; keep secrets in a password manager"
                )
            return self._apply(decision, proposal, vector, provenance, actor, at)

    def propose(
        self,
        proposals: Sequence[Proposal],
        provenance: Provenance,
        at: datetime,
        tainted_by: str | None = None,
    ) -> list[WriteResult]:
        """Let the promotion policy decide each proposal, all in one transaction;
        ``tainted_by`` says why the source text is suspect (then nothing activates alone)."""
        proposals = [_without_controls(p) for p in proposals]
        # Neighbours are found by content alone (the duplicate thresholds were set on it); a
        # memory with cues stores the vector of its content with its cues, in the same batch.
        cued = [embedded_text(p.content, p.cues) for p in proposals if p.cues]
        vectors = embed_texts(self.embedder, [p.content for p in proposals] + cued)
        stored_cued = iter(vectors[len(proposals) :])
        results: list[WriteResult] = []
        source = provenance.source
        with self.store.transaction():
            for given, vector in zip(proposals, vectors, strict=False):
                proposal = self.slots.place(given)
                neighbors = self._neighbors(proposal, vector, Actor.POLICY)
                decision = plan_promotion(proposal, source, neighbors, self.policy, tainted_by)
                stored = next(stored_cued) if given.cues else vector
                results.append(
                    self._apply(decision, proposal, stored, provenance, Actor.POLICY, at)
                )
        return results

    def edit(
        self,
        memory_id: str,
        content: str,
        *,
        object: str | None = None,
        now: datetime | None = None,
    ) -> Memory:
        """Owner action: supersede a memory with corrected text. The new row is active (the
        owner wrote it); the old one is archived and points at it."""
        at = now or self.clock()
        content = clean_text(content, "new text")
        credential = find_credential(content + "\n" + (object or ""))
        if credential is not None:
            raise CredentialRefusedError(
                f"refusing to store this: it looks like a {credential.label}. memoryd never "
                "stores credentials"
            )
        vector = embed_texts(self.embedder, [content])[0]
        ledger = self.ledger
        with self.store.transaction():
            old = require_memory(self.store, memory_id)
            require_status(old, (Status.PENDING, Status.ACTIVE), "edit")
            if old.purged_at is not None:
                raise InvalidOperationError(f"memory {memory_id} was purged and cannot be edited")
            new_object = _stripped(object) or _carried_object(old, content)
            new = ledger.successor(
                old,
                at,
                status=Status.ACTIVE,
                content=content,
                object=new_object,
                entities=extract_entities(content) or old.entities,
                confidence=1.0,
                source=Source.OWNER,
                source_ref=old.id,
                extractor_model=None,
                prompt_version=None,
                last_confirmed_at=at,
            )
            holder = slot_holder(self.store, old) if old.status is Status.PENDING else None
            replaced = [Replaced(old, f"edited by the owner into {new.id}")]
            if holder is not None:
                # The slot's history (holder → new) is the chain a reader follows; the edited
                # pending draft points forward at its replacement.
                replaced.insert(0, Replaced(holder, f"superseded by {new.id}, an owner edit"))
            ledger.supersede(
                replaced, new, vector, actor=Actor.OWNER, at=at, reason=f"owner edit of {old.id}"
            )
            return require_memory(self.store, new.id)

    def purge(self, memory_id: str, *, now: datetime | None = None) -> Memory:
        """Owner action: erase a memory's content for privacy, keeping a tombstone."""
        at = now or self.clock()
        with self.store.transaction():
            memory = require_memory(self.store, memory_id)
            if memory.purged_at is not None:
                return memory
            self.ledger.purge(
                memory, actor=Actor.OWNER, at=at, reason="content erased at the owner's request"
            )
        self.store.erase_traces()
        return require_memory(self.store, memory_id)

    def add_alias(self, name: str, alias: str) -> None:
        """Owner action: ``alias`` names the same entity as ``name`` (for the entity leg)."""
        if not name.strip() or not alias.strip():
            raise InvalidInputError("an alias needs both a name and the alias")
        with self.store.transaction():
            self.store.entities.add_alias(name.strip(), alias.strip())

    def _neighbors(self, proposal: Proposal, vector: Vector, actor: Actor) -> Neighbors:
        slot = proposal.slot
        holder = None
        pending_same = None
        memories = self.store.memories
        if slot is not None:
            holders = memories.in_slot(slot, Status.ACTIVE)
            if holders:
                holder = SlotHolder(holders[0].id, holders[0].object, holders[0].content)
            for memory in memories.in_slot(slot, Status.PENDING):
                if same_slot_value(proposal, memory.object, memory.content):
                    pending_same = memory.id
                    break
        owner = actor is Actor.OWNER
        # A dated event looks further: the nearest may be the same words on another day.
        dated = proposal.kind is Kind.EVENT and proposal.occurred_at is not None
        depth = EVENT_NEIGHBORS if dated else 1
        active = self._nearest(vector, Status.ACTIVE, depth)
        # The owner's own remember ignores rejections and pending drafts: skip the searches.
        pending = [] if owner else self._nearest(vector, Status.PENDING, depth)
        rejected = [] if owner else self._nearest(vector, Status.REJECTED, 1)
        return Neighbors(
            slot_active=holder,
            slot_pending_same_value=pending_same,
            nearest_active=active[0] if active else None,
            nearest_rejected=rejected[0] if rejected else None,
            nearest_pending=pending[0] if pending else None,
            more_active=tuple(active[1:]),
            more_pending=tuple(pending[1:]),
        )

    def _nearest(self, vector: Vector, status: Status, k: int) -> list[Match]:
        hits = self.store.vectors.nearest(vector, [status], k)
        if k == 1:
            return [Match(hit.memory_id, hit.cosine) for hit in hits]
        found = self.store.memories.get_many([hit.memory_id for hit in hits])
        matches = []
        for hit in hits:
            memory = found.get(hit.memory_id)
            when = memory.occurred_at if memory is not None else None
            matches.append(Match(hit.memory_id, hit.cosine, utc_day(when) if when else None))
        return matches

    def _apply(
        self,
        decision: Decision,
        proposal: Proposal,
        vector: Vector,
        provenance: Provenance,
        actor: Actor,
        at: datetime,
    ) -> WriteResult:
        note = proposal.placed.note() if proposal.placed is not None else None
        if note is not None:
            # Whatever the policy decided, the record says which slot it decided in.
            decision = replace(decision, reason=f"{decision.reason}; {note}")
        if decision.outcome is Outcome.DROPPED:
            return WriteResult(decision.outcome, decision.reason, decision.rule, None)
        if decision.outcome is Outcome.REINFORCED:
            assert decision.target_id is not None
            target = require_memory(self.store, decision.target_id)
            self.store.memories.mark_confirmed(target.id, at)
            # Reinforcement vouches for the row (an audited same-status change).
            self.ledger.change_status(target, target.status, actor=actor, at=at,
                action="reinforce", reason=decision.reason, rule=decision.rule)  # fmt: skip
            return WriteResult(
                decision.outcome,
                decision.reason,
                decision.rule,
                require_memory(self.store, target.id),
            )
        status = Status.ACTIVE if decision.outcome is Outcome.ACTIVATED else Status.PENDING
        memory = Memory(
            id=self.ids.new_id(at),
            kind=proposal.kind,
            status=status,
            content=proposal.content,
            source=provenance.source,
            created_at=at,
            last_confirmed_at=at,
            confidence=proposal.confidence,
            subject=proposal.subject,
            predicate=proposal.predicate,
            object=proposal.object,
            slot=proposal.slot,
            same_slot_as=proposal.same_slot_as,
            entities=proposal.entities or extract_entities(proposal.content),
            cues=proposal.cues,
            importance=proposal.importance
            or (Importance.MEDIUM if proposal.kind is Kind.LESSON else None),
            changes_behavior=proposal.changes_behavior,
            occurred_at=proposal.occurred_at,
            source_ref=provenance.source_ref,
            extractor_model=provenance.extractor_model,
            prompt_version=provenance.prompt_version,
        )
        replaced = []
        if decision.supersedes is not None:
            old = require_memory(self.store, decision.supersedes)
            replaced.append(Replaced(old, f"superseded by {memory.id}: {decision.reason}"))
        self.ledger.supersede(
            replaced, memory, vector, actor=actor, at=at, reason=decision.reason, rule=decision.rule
        )
        return WriteResult(
            decision.outcome,
            decision.reason,
            decision.rule,
            require_memory(self.store, memory.id),
            tuple(require_memory(self.store, old.memory.id) for old in replaced),
        )


def _without_controls(proposal: Proposal) -> Proposal:
    """A proposal as the store may keep it: no control characters, bidi overrides or NUL in
    any of its texts (a text of nothing else keeps them shown as ``\\uXXXX``)."""
    content = strip_controls(proposal.content).strip()
    return replace(
        proposal,
        content=content or visible_controls(proposal.content).strip(),
        subject=_stripped(proposal.subject),
        predicate=_stripped(proposal.predicate),
        object=_stripped(proposal.object),
        entities=tuple(
            dict.fromkeys(n for n in (strip_controls(e).strip() for e in proposal.entities) if n)
        ),
        cues=tuple(
            dict.fromkeys(c for c in (strip_controls(c).strip() for c in proposal.cues) if c)
        ),
    )


def _stripped(text: str | None) -> str | None:
    return (strip_controls(text).strip() or None) if text else None


def _carried_object(old: Memory, new_content: str) -> str | None:
    """Keep the old object only when the corrected text still says it."""
    if old.object and normalize_key(old.object) in normalize_key(new_content):
        return old.object
    return None
