"""The owner's evaluation set on both backends: cases are added (by id prefix, a repeated
question joins its case), listed and removed; a run scores recall@k, block recall and noise
right on a small store without stamping anything; candidate recall settings and a candidate
embedder move the scores the way they should without changing the store; export and import
keep the cases."""

from __future__ import annotations

import io
from typing import Any

import pytest

from memoryd.errors import EvalCaseNotFoundError, InvalidInputError, MemoryNotFoundError
from memoryd.evaluation import candidate_view as eval_space
from memoryd.evaluation.policy import parse_overrides
from memoryd.ops.portability import export_store, import_store
from memoryd.service import MemoryService

from .conftest import Backend

MEMORIES = (
    "The owner's kayak is yellow and sleeps in the boathouse",
    "The owner's dentist is Doctor Okafor on Rua Augusta",
    "The owner plays viola in a community orchestra on Thursdays",
    "The owner is allergic to penicillin",
)
KAYAK = "Where does my kayak sleep?"
DENTIST = "Who is my dentist?"


def _remembered(service: MemoryService) -> list[str]:
    ids = []
    for text in MEMORIES:
        result = service.remember(text)
        assert result.memory is not None
        ids.append(result.memory.id)
    return ids


def _overall(run: Any) -> tuple[Any, Any, int]:
    return run.recall_at_k, run.block_recall, run.noise_shown


def test_cases_are_added_listed_removed_and_scored_without_stamping(
    service: MemoryService,
) -> None:
    kayak, dentist, viola, penicillin = _remembered(service)

    first = service.eval_add(KAYAK, expected=[kayak[:-4]], noise=[viola])
    joined = service.eval_add(f"  {KAYAK} ", noise=[penicillin])
    wrong = service.eval_add(DENTIST, expected=[viola], noise=[dentist])

    assert joined.id == first.id
    assert joined.expected == (kayak,) and joined.noise == (viola, penicillin)
    # Refusals name the problem and store nothing.
    with pytest.raises(MemoryNotFoundError):
        service.eval_add("Where is the boathouse?", expected=[kayak, "01NOSUCHMEMORY"])
    with pytest.raises(InvalidInputError, match="both expected and noise"):
        service.eval_add("Where is the boathouse?", expected=[kayak], noise=[kayak])
    with pytest.raises(InvalidInputError, match="question is empty"):
        service.eval_add("   ", expected=[kayak])
    with pytest.raises(InvalidInputError, match="expect"):
        service.eval_add("Where is the boathouse?")
    assert [c.question for c in service.eval_cases()] == [KAYAK, DENTIST]

    run = service.eval_run(k=1)

    kayak_score, dentist_score = run.baseline.scores
    assert kayak_score.found_in_top == (kayak,) and kayak_score.recall_at_k == 1.0
    assert kayak_score.found_in_block == (kayak,) and kayak_score.noise_in_block == ()
    # The dentist case expects the wrong memory and calls the right one noise. Its block is
    # short, so the memories below the relative cut join it within the floor's characters
    # (RecallPolicy.cut_floor_chars): the expected one is in the block, not in the top 1.
    assert dentist_score.recall_at_k == 0.0 and dentist_score.block_recall == 1.0
    assert dentist_score.noise_in_block == (dentist,)
    assert _overall(run.baseline) == (0.5, 1.0, 1)
    assert run.baseline.noise_total == 3 and run.candidate is None
    service.settle()
    assert all(m.retrieval_hits == 0 and m.last_retrieved_at is None
               for m in service.list_memories())  # fmt: skip

    # A memory that is no longer active is reported, not silently scored as a miss.
    service.archive(kayak)
    assert service.eval_run(k=1).baseline.scores[0].inactive == (kayak,)

    # The shortest prefix that names only this case (ids made in the same millisecond may
    # differ only in their last characters).
    unique = next(n for n in range(4, len(wrong.id) + 1) if not first.id.startswith(wrong.id[:n]))
    removed = service.eval_remove(wrong.id[:unique])
    assert removed.question == DENTIST
    assert [c.id for c in service.eval_cases()] == [first.id]
    with pytest.raises(EvalCaseNotFoundError):
        service.eval_remove(wrong.id)


def test_candidate_settings_and_embedder_move_the_scores_and_change_nothing(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    kayak, dentist, viola, penicillin = _remembered(service)
    service.eval_add(KAYAK, expected=[kayak], noise=[viola, penicillin, dentist])
    signature = service.store.embedding_signature()

    strict_settings = ["recall.open_score=1.01", "recall.small_store_open_score=1.01",
                       "recall.strong_text_coverage=1.01"]  # fmt: skip
    loose_settings = ["recall.vector_gate=0", "recall.relative_cut=0", "recall.text_min_cosine=0",
                      "recall.open_score=0"]  # fmt: skip
    strict = service.eval_run(k=3, overrides=parse_overrides(strict_settings))
    loose = service.eval_run(k=3, overrides=parse_overrides(loose_settings))
    blind = service.eval_run(k=3, embedder=_Blind(service.embedder.dimension))

    assert _overall(strict.baseline) == (1.0, 1.0, 0)
    assert strict.candidate is not None and loose.candidate is not None
    assert strict.candidate.label == (
        "recall.open_score=1.01, recall.small_store_open_score=1.01, "
        "recall.strong_text_coverage=1.01"
    )
    # Nothing is strong enough to open the block (nor the search's list).
    assert _overall(strict.candidate) == (0.0, 0.0, 0)
    # Every gate open: the other memories crowd into the block as noise.
    assert loose.candidate.block_recall == 1.0 and loose.candidate.noise_shown >= 2
    # A model that sees every text alike: its report says so, and it finds noise too.
    assert blind.candidate is not None and blind.candidate.label == "embedder blind-test"
    assert "all 4 active memories embedded in memory" in blind.candidate.note
    # (in its ranking; the relative cut keeps the block to the one memory two legs found)
    assert any(set(score.top) & set(score.case.noise) for score in blind.candidate.scores)
    # Past the limit, only what the current legs found and the case's memories are embedded.
    monkeypatch.setattr(eval_space, "FULL_SPACE_LIMIT", 3)
    pooled = service.eval_run(k=3, embedder=_Blind(service.embedder.dimension)).candidate
    assert pooled is not None and pooled.note.startswith("4 of 4 active memories embedded")
    assert service.store.embedding_signature() == signature
    assert all(done == 0 for done, _ in service.store.next_vectors.counts().values())
    with pytest.raises(InvalidInputError, match=r"did you mean 'recall\.vector_gate'"):
        parse_overrides(["recall.vectorgate=0.3"])
    with pytest.raises(InvalidInputError, match="must be a number"):
        parse_overrides(["recall.vector_gate=high"])


def test_export_and_import_keep_the_cases(service: MemoryService, backend: Backend) -> None:
    kayak, _, viola, _ = _remembered(service)
    case = service.eval_add(KAYAK, expected=[kayak], noise=[viola])
    exported = io.StringIO()
    summary = export_store(service.store, exported, with_vectors=True)
    target = backend.open_fresh()

    import_store(target.store, io.StringIO(exported.getvalue()).readlines(), target.embedder)

    assert summary.counts["eval_case"] == 1
    assert target.eval_cases() == [case]
    assert target.eval_run(k=1).baseline.scores[0].found_in_block == (kayak,)
    with pytest.raises(InvalidInputError, match="needs an empty store"):
        import_store(target.store, io.StringIO(exported.getvalue()).readlines(), target.embedder)


class _Blind:
    """A candidate embedding model that gives every text the same vector."""

    model = "blind-test"

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension

    def embed(self, texts: list[str]) -> Any:
        import numpy as np

        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        vectors[:, 0] = 1.0
        return vectors
