"""The owner's evaluation set against the store: adding, listing and removing cases, and running
them against the current configuration and, side by side, a candidate one (other recall
settings, or another embedding model held in memory). A run reads only: nothing it recalls is
stamped as retrieved, and a candidate changes nothing stored."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypedDict

from memoryd.errors import EvalCaseNotFoundError, InvalidInputError
from memoryd.evaluation import candidate_view as eval_space
from memoryd.evaluation.candidate_view import candidate_space
from memoryd.evaluation.policy import (
    DEFAULT_K,
    MAX_K,
    CaseScore,
    EvalCase,
    EvalReport,
    EvalReportJson,
    overrides_label,
    plan_case,
    policy_with,
)
from memoryd.ids import resolve_prefix
from memoryd.memory.model import Status
from memoryd.providers.embedder import Embedder
from memoryd.recall.run import Retriever
from memoryd.trust.credential_screening import screened_field

if TYPE_CHECKING:
    from datetime import tzinfo

    from memoryd.clock import Clock
    from memoryd.ids import IdGenerator
    from memoryd.providers.tokenizer import TokenCodec
    from memoryd.recall.policy import RecallPolicy
    from memoryd.storage.protocols import Store


class EvalRunJson(TypedDict):
    # The current settings' report and, with overrides, the candidate's.
    baseline: EvalReportJson
    candidate: EvalReportJson | None


@dataclass(frozen=True)
class EvalRun:
    """The current configuration's report and, when one was asked for, the candidate's."""

    baseline: EvalReport
    candidate: EvalReport | None = None

    def to_json(self) -> EvalRunJson:
        """JSON shape (``eval run --json``, ``POST /v1/eval/run``)."""
        return {
            "baseline": self.baseline.to_json(),
            "candidate": self.candidate.to_json() if self.candidate else None,
        }


class OwnerEval:
    """The evaluation cases and their runs; ``resolve_memory`` turns an id or a unique prefix
    into a memory id (MemoryNotFoundError otherwise)."""

    def __init__(
        self,
        *,
        store: Store,
        embedder: Embedder,
        tokenizer: TokenCodec,
        recall_policy: RecallPolicy,
        clock: Clock,
        zone: tzinfo,
        ids: IdGenerator,
        resolve_memory: Callable[[str], str],
    ) -> None:
        self.store, self.embedder, self.tokenizer = store, embedder, tokenizer
        self.recall_policy, self.clock, self.zone = recall_policy, clock, zone
        self.ids = ids
        self._resolve_memory = resolve_memory

    def add(
        self,
        question: str,
        *,
        expected: Sequence[str] = (),
        noise: Sequence[str] = (),
        now: datetime | None = None,
    ) -> EvalCase:
        """Owner action: recall should find the ``expected`` memories for ``question`` and not
        show the ``noise`` ones (ids or unique prefixes). A question already in the set gets
        the new ids joined to its case (the latest verdict on a memory wins)."""
        at = now or self.clock()
        question = screened_field(question, "evaluation question")
        expected_ids = [self._resolve_memory(i) for i in expected]
        noise_ids = [self._resolve_memory(i) for i in noise]
        evals = self.store.evals
        with self.store.transaction():
            existing = evals.by_question(question.strip())
            case = plan_case(existing, self.ids.new_id(at), question, expected_ids, noise_ids, at)
            evals.save(case)
        return case

    def cases(self) -> list[EvalCase]:
        """The evaluation set, oldest case first."""
        return self.store.evals.all()

    def remove(self, case_id: str) -> EvalCase:
        """Owner action: drop one evaluation case (its id or a unique prefix)."""
        evals = self.store.evals
        with self.store.transaction():
            whole = resolve_prefix(
                case_id,
                ("evaluation case", "evaluation cases"),
                get=evals.get,
                starting=evals.ids_starting,
                label=lambda case: case.question,
                not_found=EvalCaseNotFoundError,
            )
            case = evals.get(whole)
            assert case is not None
            evals.delete(whole)
        return case

    def run(
        self,
        *,
        k: int = DEFAULT_K,
        overrides: Mapping[str, Any] | None = None,
        embedder: Embedder | None = None,
        now: datetime | None = None,
    ) -> EvalRun:
        """Score every case against the current configuration: recall@k (expected memories in
        the top ``k`` of ``search_memory``), block recall and noise (in recall's block). With
        ``overrides`` (``{"recall.vector_gate": 0.3}``, see ``memoryd.evaluation.policy``) or
        another ``embedder`` (its vectors held in memory), a candidate report too. Nothing is
        stamped as retrieved and nothing stored changes."""
        if not 1 <= k <= MAX_K:
            raise InvalidInputError(f"k must be between 1 and {MAX_K}", fields=("k",))
        at = now or self.clock()
        cases = self.cases()
        baseline = self._report("current", self._retriever(), cases, k, at)
        if not overrides and embedder is None:
            return EvalRun(baseline)
        labels = [overrides_label(overrides)] if overrides else []
        labels += [f"embedder {embedder.model}"] if embedder is not None else []
        label = ", ".join(labels)
        if not cases:  # nothing to score: no memory is embedded for nothing
            return EvalRun(baseline, EvalReport(label, k, ()))
        policy = policy_with(self.recall_policy, overrides) if overrides else self.recall_policy
        candidate = self._retriever(policy=policy)
        note = ""
        if embedder is not None:
            space = candidate_space(self.store, embedder, self._pool(cases, at))
            candidate = self._retriever(store=space.store, embedder=embedder, policy=policy)
            note = space.note
        return EvalRun(baseline, self._report(label, candidate, cases, k, at, note))

    def _retriever(
        self,
        *,
        store: Store | None = None,
        embedder: Embedder | None = None,
        policy: RecallPolicy | None = None,
    ) -> Retriever:
        """A retriever over this configuration, or over the candidate's parts where given."""
        return Retriever(
            store=store or self.store,
            embedder=embedder or self.embedder,
            tokenizer=self.tokenizer,
            policy=policy or self.recall_policy,
            clock=self.clock,
            zone=self.zone,
        )

    def _pool(self, cases: Sequence[EvalCase], at: datetime) -> set[str] | None:
        """None (embed every active memory) while the store is small enough; else what any
        leg found for each question, and the cases' own memories."""
        store = self.store
        if store.memories.count(status=Status.ACTIVE) <= eval_space.FULL_SPACE_LIMIT:
            return None
        retriever = self._retriever()
        pool: set[str] = set()
        for case in cases:
            pool.update(case.expected, case.noise)
            pool.update(retriever.evidence(case.question, at).candidates)
        return pool

    def _report(
        self,
        label: str,
        retriever: Retriever,
        cases: Sequence[EvalCase],
        k: int,
        at: datetime,
        note: str = "",
    ) -> EvalReport:
        rows = self.store.memories
        scores = []
        for case in cases:
            ranked = retriever.search(case.question, None, (None, None), k, at, stamp=False)
            recalled = retriever.recall(case.question, None, at, stamp=False)
            block = [m.id for m in recalled.packed.lessons]
            block += [s.memory.id for s in recalled.packed.items]
            mine = rows.get_many([*case.expected, *case.noise])
            inactive = tuple(
                i
                for i in (*case.expected, *case.noise)
                if i not in mine or mine[i].status is not Status.ACTIVE
            )
            top = tuple(s.memory.id for s in ranked.items)
            scores.append(CaseScore(case, top, tuple(block), inactive))
        return EvalReport(label, k, tuple(scores), note)


__all__ = ["DEFAULT_K", "EvalCaseNotFoundError", "EvalRun", "OwnerEval"]
