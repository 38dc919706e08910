"""The owner's evaluation set against the store: adding, listing and removing cases, and running
them against the current configuration and, side by side, a candidate one (other recall
settings, or another embedding model held in memory). A run reads only: nothing it recalls is
stamped as retrieved, and a candidate changes nothing stored."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memoryd.collaborators import Collaborators
from memoryd.errors import EvalCaseNotFoundError, InvalidInputError
from memoryd.evaluation import candidate_view as eval_space
from memoryd.evaluation.candidate_view import candidate_space
from memoryd.evaluation.policy import (
    DEFAULT_K,
    MAX_K,
    CaseScore,
    EvalCase,
    EvalReport,
    overrides_label,
    plan_case,
    policy_with,
)
from memoryd.ids import resolve_prefix
from memoryd.memory.model import Status
from memoryd.providers.embedder import Embedder
from memoryd.recall.run import Retriever, SharedPartsRetriever
from memoryd.trust.credential_screening import screened_field


@dataclass(frozen=True)
class EvalRun:
    """The current configuration's report and, when one was asked for, the candidate's."""

    baseline: EvalReport
    candidate: EvalReport | None = None

    def to_json(self) -> dict[str, Any]:
        """JSON shape (``eval run --json``, ``POST /v1/eval/run``)."""
        return {
            "baseline": self.baseline.to_json(),
            "candidate": self.candidate.to_json() if self.candidate else None,
        }


class OwnerEval:
    """The evaluation cases and their runs; ``resolve_memory`` turns an id or a unique prefix
    into a memory id (MemoryNotFoundError otherwise)."""

    def __init__(self, parts: Collaborators, resolve_memory: Callable[[str], str]) -> None:
        self.parts = parts
        self._resolve_memory = resolve_memory

    def add(
        self,
        question: str,
        expected: Sequence[str],
        noise: Sequence[str],
        now: datetime | None,
    ) -> EvalCase:
        """See :meth:`memoryd.service.MemoryService.eval_add`."""
        parts = self.parts
        at = parts.now(now)
        question = screened_field(question, "evaluation question")
        expected_ids = [self._resolve_memory(i) for i in expected]
        noise_ids = [self._resolve_memory(i) for i in noise]
        evals = parts.store.evals
        with parts.store.transaction():
            existing = evals.by_question(question.strip())
            case = plan_case(existing, parts.ids.new_id(at), question, expected_ids, noise_ids, at)
            evals.save(case)
        return case

    def cases(self) -> list[EvalCase]:
        """Every case, oldest first."""
        return self.parts.store.evals.all()

    def remove(self, case_id: str) -> EvalCase:
        """See :meth:`memoryd.service.MemoryService.eval_remove`."""
        evals = self.parts.store.evals
        with self.parts.store.transaction():
            whole = resolve_prefix(
                case_id,
                ("evaluation case", "evaluation cases"),
                exists=lambda i: evals.get(i) is not None,
                starting=evals.ids_starting,
                labels=lambda ids: {i: c.question for i in ids if (c := evals.get(i))},
                not_found=EvalCaseNotFoundError,
            )
            case = evals.get(whole)
            assert case is not None
            evals.delete(whole)
        return case

    def run(
        self,
        k: int,
        overrides: Mapping[str, Any],
        embedder: Embedder | None,
        now: datetime | None,
    ) -> EvalRun:
        """See :meth:`memoryd.service.MemoryService.eval_run`."""
        if not 1 <= k <= MAX_K:
            raise InvalidInputError(f"k must be between 1 and {MAX_K}", fields=("k",))
        parts = self.parts
        at = parts.now(now)
        cases = self.cases()
        baseline = self._report("current", SharedPartsRetriever(parts), cases, k, at)
        if not overrides and embedder is None:
            return EvalRun(baseline)
        labels = [overrides_label(overrides)] if overrides else []
        labels += [f"embedder {embedder.model}"] if embedder is not None else []
        label = ", ".join(labels)
        if not cases:  # nothing to score: no memory is embedded for nothing
            return EvalRun(baseline, EvalReport(label, k, ()))
        candidate = parts
        if overrides:
            policy = policy_with(parts.recall_policy, overrides)
            candidate = dataclasses.replace(candidate, recall_policy=policy)
        note = ""
        if embedder is not None:
            space = candidate_space(parts.store, embedder, self._pool(cases, at))
            candidate = dataclasses.replace(candidate, store=space.store, embedder=embedder)
            note = space.note
        retriever = SharedPartsRetriever(candidate)
        return EvalRun(baseline, self._report(label, retriever, cases, k, at, note))

    def _pool(self, cases: Sequence[EvalCase], at: datetime) -> set[str] | None:
        """None (embed every active memory) while the store is small enough; else what any
        leg found for each question, and the cases' own memories."""
        store = self.parts.store
        if store.memories.count(status=Status.ACTIVE) <= eval_space.FULL_SPACE_LIMIT:
            return None
        retriever = SharedPartsRetriever(self.parts)
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
        rows = self.parts.store.memories
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
