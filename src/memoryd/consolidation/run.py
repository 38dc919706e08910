"""A consolidation run (SPEC §5): each stage plans purely (``memoryd.consolidation.policy``), then
its
steps are applied through the ledger. The LLM stages (merge, reflect) ask their route as they
go. A dry run takes the same path and writes nothing.

Before every write the run renews its lease; when the lease is lost the run stops there.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from memoryd.consolidation.policy import (
    UNANSWERED_CUES_KEY,
    Action,
    ConsolidationPolicy,
    MergeReply,
    Stage,
    Step,
    group_near_duplicates,
    plan_archive_episodic,
    plan_decay_inferences,
    plan_decay_semantic,
    plan_dedupe_pending,
    plan_demote_pending,
    plan_merge,
    reflection_due,
    unanswered_cues,
    waiting_for_cues,
    with_unanswered,
)
from memoryd.errors import ConsolidationBusyError, ProposalBatchError
from memoryd.extraction.example_echo_policy import drop_echoed_cues, prompt_examples
from memoryd.extraction.extractor import (
    Extractor,
    load_prompt,
    parse_merge,
    render_events,
    render_merge,
)
from memoryd.memory.ledger import Ledger, Replaced
from memoryd.memory.lookups import embed_texts, require_memory
from memoryd.memory.model import Actor, Kind, Memory, Provenance, Source, Status, embedded_text
from memoryd.memory.proposal_policy import cues_schema, merge_schema, parse_cues_answer
from memoryd.memory.writes import Propose
from memoryd.providers.llm import (
    Gateway,
    LLMConfigError,
    LLMUnavailableError,
    Message,
    off_notice,
)
from memoryd.results import ConsolidationReport
from memoryd.trust.credential_screening import find_credential

if TYPE_CHECKING:
    from memoryd.providers.embedder import Embedder
    from memoryd.storage.protocols import Store

log = logging.getLogger("memoryd")

Renew = Callable[[], None]
"""Renews the run's lease, or raises :class:`ConsolidationLeaseLost`."""


class StageSkipped(Exception):
    """A consolidation stage that cannot run here (no LLM route), with the reason."""


class ConsolidationLeaseLost(ConsolidationBusyError):
    """Another instance took the consolidation lease while this run held it; the run stopped
    before writing anything more."""


def _no_renewal() -> None:
    """A dry run writes nothing, so it holds no lease to renew."""


def ask_cues(gateway: Gateway, content: str) -> tuple[str, ...]:
    """The cues the ``extract`` route writes for one memory (the ``cues`` prompt, its answer
    constrained to ``{"cues": [...]}`` where the endpoint allows); ProposalBatchError when
    the answer breaks that contract."""
    prompt = load_prompt("cues").text
    answer = gateway.complete_json(
        "extract",
        prompt,
        [Message("user", render_merge([content]))],
        cues_schema(),
        "memory_cues",
    )
    cues = parse_cues_answer(answer.text)
    return drop_echoed_cues(cues, content, prompt_examples(prompt))


def stage_summary(steps: Sequence[Step], dry_run: bool) -> str:
    """One stage's line: what it planned, or what it changed and what it kept as it was (a
    merge the guard refused, a memory whose cues answer was unusable) — never a kept step
    counted as applied."""
    if dry_run:
        return f"{len(steps)} planned"
    kept = sum(step.action is Action.KEEP for step in steps)
    return f"{len(steps) - kept} applied" + (f", {kept} kept" if kept else "")


class ConsolidationRun:
    """Runs the stages of one consolidation over the service's store."""

    def __init__(
        self,
        *,
        store: Store,
        embedder: Embedder,
        gateway: Gateway,
        ledger: Ledger,
        propose: Propose,
    ) -> None:
        self.store, self.embedder, self.gateway = store, embedder, gateway
        self.ledger, self.propose = ledger, propose

    def run(
        self,
        at: datetime,
        rules: ConsolidationPolicy,
        *,
        dry_run: bool,
        renew: Renew = _no_renewal,
    ) -> ConsolidationReport:
        """Every stage in order; one failing stage is reported and the others still run. A
        lost lease (``renew`` raising) stops the whole run."""
        memories = self.store.memories
        planners: list[tuple[Stage, Callable[[], list[Step]]]] = [
            (Stage.MERGE, lambda: self._merge_stage(at, rules, dry_run, renew)),
            (Stage.DEDUPE_PENDING, lambda: self._plan_dedupe_pending(rules)),
            (Stage.ARCHIVE_EPISODIC, lambda: plan_archive_episodic(
                memories.query(status=Status.ACTIVE, kind=Kind.EVENT), at, rules)),
            (Stage.DECAY_SEMANTIC, lambda: plan_decay_semantic(
                memories.query(status=Status.ACTIVE, kind=Kind.FACT), at, rules)),
            (Stage.DECAY_INFERENCES, lambda: plan_decay_inferences(
                memories.query(status=Status.ACTIVE, kind=Kind.INFERENCE), at, rules)),
            (Stage.REFLECT, lambda: self._reflect_stage(at, rules, dry_run, renew)),
            (Stage.DEMOTE_PENDING, lambda: plan_demote_pending(
                memories.query(status=Status.PENDING), at, rules)),
            (Stage.WRITE_CUES, lambda: self._cues_stage(rules, dry_run, renew)),
        ]  # fmt: skip
        # The LLM stages write as they go; the others return plans applied here.
        self_applying = {Stage.MERGE, Stage.REFLECT, Stage.WRITE_CUES}
        done: list[Step] = []
        stages: dict[str, str] = {}
        for stage, plan in planners:
            renew()  # the run is alive (raises when the lease is lost)
            try:
                steps = plan()
                if not dry_run and steps and stage not in self_applying:
                    self._apply(steps, at, renew)
            except StageSkipped as skipped:
                stages[stage.value] = f"skipped: {skipped}"
                continue
            except ConsolidationLeaseLost:
                raise
            except (LLMUnavailableError, LLMConfigError, ProposalBatchError) as error:
                # A model away, slow, misconfigured or answering out of contract is not a bug:
                # said in one line (the stage's line says it too), without a traceback.
                log.warning("consolidation stage %s failed: %s", stage.value, error)
                stages[stage.value] = f"failed: {error}"
                continue
            except Exception as error:  # one stage failing must not stop the others
                log.exception("consolidation stage %s failed", stage.value)
                stages[stage.value] = f"failed: {error}"
                continue
            done.extend(steps)
            stages[stage.value] = stage_summary(steps, dry_run)
        return ConsolidationReport(dry_run, tuple(done), stages)

    def _merge_stage(
        self, at: datetime, rules: ConsolidationPolicy, dry_run: bool, renew: Renew
    ) -> list[Step]:
        """Groups of near-duplicate active facts or inferences, each merged by the ``merge``
        route into one row that supersedes them, unless :func:`plan_merge` keeps them."""
        gateway = self.gateway
        if not gateway.configured("merge"):
            raise StageSkipped(off_notice("merging"))
        store = self.store
        memories = [
            *store.memories.query(status=Status.ACTIVE, kind=Kind.FACT),
            *store.memories.query(status=Status.ACTIVE, kind=Kind.INFERENCE),
        ]
        vectors = store.memories.vectors([m.id for m in memories])
        pairs: list[tuple[str, str, float]] = []
        for memory in memories:
            vector = vectors.get(memory.id)
            if vector is None:
                continue
            hits = store.vectors.nearest(vector, [Status.ACTIVE], 6, [memory.kind])
            pairs.extend(
                (memory.id, h.memory_id, h.cosine) for h in hits if h.memory_id != memory.id
            )
        steps: list[Step] = []
        prompt = load_prompt("merge")
        for group in group_near_duplicates(memories, pairs, rules):
            reply: MergeReply | None = None
            if not dry_run:
                try:
                    answer = gateway.complete_json(
                        "merge",
                        prompt.text,
                        [Message("user", render_merge([m.content for m in group]))],
                        merge_schema(),
                        "memory_merge",
                    )
                    reply = MergeReply(text=parse_merge(answer.text))
                except ProposalBatchError as error:
                    reply = MergeReply(error=str(error))
            step = plan_merge(group, reply, rules)
            if reply is not None and reply.text is not None and step.action is Action.MERGE:
                renew()  # a merge group can take a while: never write on a lost lease
                self._write_merge(group, reply.text, prompt.label, at)
            steps.append(step)
        return steps

    def _write_merge(self, group: Sequence[Memory], merged: str, label: str, at: datetime) -> None:
        vector = embed_texts(self.embedder, [merged])[0]
        route = self.gateway.routes.get("merge")
        ledger = self.ledger
        new = ledger.successor(
            group[0],
            at,
            content=merged,
            confidence=max(m.confidence for m in group),
            entities=tuple(dict.fromkeys(e for m in group for e in m.entities)),
            last_confirmed_at=max(m.last_confirmed_at for m in group),
            extractor_model=route.model if route else None,
            prompt_version=label,
        )
        rule = Stage.MERGE.value
        with self.store.transaction():
            ledger.supersede(
                [Replaced(memory, f"merged into {new.id}", rule) for memory in group],
                new,
                vector,
                actor=Actor.SYSTEM,
                at=at,
                reason=f"merge of {len(group)} near-duplicates",
                rule=rule,
            )

    def _reflect_stage(
        self, at: datetime, rules: ConsolidationPolicy, dry_run: bool, renew: Renew
    ) -> list[Step]:
        """Ten or more events in the last week: ask the ``reflect`` route for up to three
        insights, which land pending. At most once per day."""
        gateway = self.gateway
        store = self.store
        if not gateway.configured("reflect"):
            raise StageSkipped(off_notice("reflection"))
        day = at.date().isoformat()
        if store.get_meta("last_reflection_day") == day:
            return []
        since = at - timedelta(days=rules.reflect_window_days)
        events = store.memories.events_between(since, at + timedelta(seconds=1), 200)
        if not reflection_due(events, at, rules):
            return []
        if dry_run:
            return [Step(Stage.REFLECT, "", Action.PROPOSE,
                         f"would ask for up to {rules.reflect_max_insights} insights from "
                         f"{len(events)} events")]  # fmt: skip
        extraction = Extractor(gateway, "reflect").extract(
            load_prompt("reflect"), render_events(events)
        )
        if extraction.error is not None:
            # Not "0 applied": the day stays unreflected, so the next run asks again.
            raise ProposalBatchError(f"the reflect answer: {extraction.error}")
        insights = [
            replace(p, kind=Kind.INFERENCE) for p in extraction.proposals if not p.general_knowledge
        ][: rules.reflect_max_insights]
        renew()  # the LLM may have taken long: never write on a lost lease
        with store.transaction():
            made_by = Provenance(
                Source.REFLECTION, None, extraction.model, extraction.prompt_version
            )
            results = self.propose(insights, made_by, at, None)
            store.set_meta("last_reflection_day", day)
        return [
            Step(
                Stage.REFLECT,
                r.memory.id,
                Action.PROPOSE,
                f"insight from {len(events)} events: {r.outcome.value}",
            )
            for r in results
            if r.memory is not None
        ]

    def _cues_stage(self, rules: ConsolidationPolicy, dry_run: bool, renew: Renew) -> list[Step]:
        """Active and pending memories without cues (made by `remember`, an import, an older
        prompt) get them from the ``extract`` route, one call each, oldest first; a memory
        that has cues is never asked again. An answer that breaks the contract or carries a
        credential writes nothing for that memory, and the same model is not asked about it
        again (another model is)."""
        gateway = self.gateway
        if not gateway.configured("extract"):
            raise StageSkipped(off_notice("writing cues"))
        store = self.store
        route = gateway.routes.get("extract")
        model = f"{route.provider} {route.model} {route.base_url or ''}" if route else "extract"
        unanswered = unanswered_cues(store.get_meta(UNANSWERED_CUES_KEY), model)
        waiting = waiting_for_cues(
            (m for status in (Status.ACTIVE, Status.PENDING)
             for m in store.memories.query(status=status, newest_first=False)),
            unanswered,
            rules.cues_per_run,
        )  # fmt: skip
        if dry_run:
            return [
                Step(Stage.WRITE_CUES, m.id, Action.CUE, "would ask the model for cues")
                for m in waiting
            ]
        steps: list[Step] = []
        refused: list[str] = []
        try:
            for memory in waiting:
                step = self._write_cues(gateway, memory, renew)
                steps.append(step)
                if step.action is Action.KEEP:
                    refused.append(memory.id)
        finally:  # also when the model goes away mid-stage: what it refused stays refused
            if refused:
                with store.transaction():
                    stored = store.get_meta(UNANSWERED_CUES_KEY)
                    store.set_meta(UNANSWERED_CUES_KEY, with_unanswered(stored, model, refused))
        return steps

    def _write_cues(self, gateway: Gateway, memory: Memory, renew: Renew) -> Step:
        """One memory's cues asked and written; a KEEP step saying why when none are usable."""
        try:
            cues = ask_cues(gateway, memory.content)
        except ProposalBatchError as error:
            return Step(Stage.WRITE_CUES, memory.id, Action.KEEP, str(error))
        if not cues or find_credential("\n".join(cues)) is not None:
            reason = "no cues" if not cues else "refused: the cues look like a credential"
            return Step(Stage.WRITE_CUES, memory.id, Action.KEEP, reason)
        cued = replace(memory, cues=cues)
        vector = embed_texts(self.embedder, [embedded_text(memory.content, cues)])[0]
        renew()  # the model may have taken long: never write on a lost lease
        with self.store.transaction():
            self.store.memories.set_cues(cued, vector)
        return Step(Stage.WRITE_CUES, memory.id, Action.CUE, ", ".join(cues))

    def _plan_dedupe_pending(self, rules: ConsolidationPolicy) -> list[Step]:
        store = self.store
        pending = store.memories.query(status=Status.PENDING, newest_first=False)
        if len(pending) < 2:
            return []
        by_id = {m.id: m for m in pending}
        stored = store.memories.vectors([m.id for m in pending])
        pairs = []
        for memory in pending:
            vector = stored.get(memory.id)
            if vector is None:
                continue
            for hit in store.vectors.nearest(vector, [Status.PENDING], 2):
                if hit.memory_id != memory.id and hit.memory_id in by_id:
                    pairs.append((memory, by_id[hit.memory_id], hit.cosine))
        return plan_dedupe_pending(pairs, rules)

    def _apply(self, steps: Sequence[Step], at: datetime, renew: Renew) -> None:
        """One stage's steps, all in one transaction."""
        ledger = self.ledger
        successors = [s for s in steps if s.action is Action.SUPERSEDE]
        vectors = dict(
            zip(
                [s.memory_id for s in successors],
                embed_texts(
                    self.embedder,
                    [require_memory(self.store, s.memory_id).content for s in successors],
                ),
                strict=True,
            )
        )
        renew()  # embedding a large stage can take a while: never write on a lost lease
        with self.store.transaction():
            for step in steps:
                memory = require_memory(self.store, step.memory_id)
                rule = step.stage.value
                if step.action is Action.SUPERSEDE:
                    assert step.new_confidence is not None
                    new = ledger.successor(memory, at, confidence=step.new_confidence)
                    ledger.supersede(
                        [Replaced(memory, f"{step.reason}; superseded by {new.id}", rule)],
                        new,
                        vectors[memory.id],
                        actor=Actor.SYSTEM,
                        at=at,
                        reason=f"confidence {memory.confidence:.2f} → "
                        f"{step.new_confidence:.2f}: {step.reason}",
                        rule=rule,
                    )
                    continue
                status = Status.REJECTED if step.action is Action.REJECT else Status.ARCHIVED
                ledger.change_status(
                    memory,
                    status,
                    actor=Actor.SYSTEM,
                    action=step.action.value,
                    at=at,
                    reason=step.reason,
                    rule=rule,
                )
