"""The vector leg (SPEC §4): the active memories nearest the message's embedding, and the
cosines every candidate is measured by. For a message of several sentences
(recall/sentences_policy.py, ``RecallPolicy.sentence_vectors``) the sentences are embedded in
one more call beside the message's (both while the other legs read), or pooled from the
message's own model run (``RecallPolicy.sentence_late``), the nearest memories of the message
and of each sentence read in one pass over the index (``VectorSearch.nearest_each``), and
their rankings joined into the leg's one."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, TypeVar

from memoryd.memory.model import Kind, Status
from memoryd.providers.embedder import Embedder, span_vectors
from memoryd.providers.embedding_beside import work_begun
from memoryd.recall.sentences_policy import sentence_spans
from memoryd.storage.protocols import Store, VectorHit

if TYPE_CHECKING:
    from memoryd.providers.embedder import Matrix, Vector
    from memoryd.recall.read import LegPlan

T = TypeVar("T")

# The reciprocal ranks' constant the rankings are joined with (RecallPolicy.rrf_k's value).
JOIN_K = 5


def vector_leg(
    store: Store, vector: Vector, depth: int, kinds: Sequence[Kind] = ()
) -> list[VectorHit]:
    """Active memories closest to the query's embedding, with their cosines."""
    return store.vectors.nearest(vector, [Status.ACTIVE], depth, kinds)


def vectors_begun(embedder: Embedder, texts: list[str], beside: bool) -> Future[Matrix]:
    """The vectors of a message's sentences (``texts``), one embedder call: on a worker
    thread when ``beside``, else here (an error is raised when the result is read)."""
    return _begun(lambda: embedder.embed(texts), beside)


def awaited_vectors(pending: Future[Matrix]) -> Matrix:
    """The sentences' vectors, once their embedding (begun with the legs) is done."""
    return pending.result()


def _begun(work: Callable[[], T], beside: bool) -> Future[T]:
    """``work()`` on a worker thread when ``beside``, else done here; either way its error is
    raised when the result is read (the vector leg fails alone)."""
    if beside:
        return work_begun(work)
    done: Future[T] = Future()
    try:
        done.set_result(work())
    except Exception as error:
        done.set_exception(error)
    return done


def late_begun(
    embedder: Embedder, text: str, sentences: list[str], beside: bool
) -> tuple[Future[Vector], Future[Matrix]] | None:
    """The message's vector and its sentences', from one model run of ``text`` pooled by
    sentence (:func:`~memoryd.providers.embedder.span_vectors`): on a worker thread when
    ``beside``. None when a sentence is not found in ``text`` as it is; an embedder that
    cannot pool spans (or a message over one window) embeds the message, then the sentences."""
    spans = sentence_spans(text, tuple(sentences))
    if spans is None:
        return None

    def run() -> tuple[Vector, Matrix]:
        pooled = span_vectors(embedder, text, spans)
        return (
            pooled if pooled is not None else (embedder.embed([text])[0], embedder.embed(sentences))
        )

    both = _begun(run, beside)
    vector: Future[Vector] = Future()
    matrix: Future[Matrix] = Future()

    def split(done: Future[tuple[Vector, Matrix]]) -> None:
        error = done.exception()
        if error is not None:
            vector.set_exception(error)
            matrix.set_exception(error)
        else:
            vector.set_result(done.result()[0])
            matrix.set_result(done.result()[1])

    both.add_done_callback(split)
    return vector, matrix


def sentence_vector_leg(
    store: Store, vectors: Sequence[Vector], plan: LegPlan, kinds: Sequence[Kind] = ()
) -> tuple[list[str], dict[str, float]]:
    """The vector leg's ranking for the message (``vectors[0]``) and its sentences (the
    rest), at most ``plan.depth``, and each ranked memory's cosine: the message's own, or
    the best of the message's and its sentences' when ``plan.sentence_cosine``."""
    depth = plan.depth
    found = store.vectors.nearest_each(vectors, [Status.ACTIVE], depth, kinds)
    ranked = joined(found, plan.sentence_weight, depth)
    measured = [{hit.memory_id: hit.cosine for hit in hits} for hits in found]
    if not plan.sentence_cosine:
        return ranked, best_cosines(store, vectors[:1], ranked, measured[:1])
    return ranked, best_cosines(store, vectors, ranked, measured)


def joined(found: Sequence[Sequence[VectorHit]], weight: float, depth: int) -> list[str]:
    """The first ``depth`` memories of the message's hits (``found[0]``) and its sentences'
    (the rest) joined: by reciprocal rank, each sentence's ranking weighing ``weight`` against
    the message's 1; by the best cosine any of them measured when ``weight`` is 0. Ties: the
    message's own order, then the memory's id."""
    score: dict[str, float] = {}
    for at, hits in enumerate(found):
        share = 1.0 if at == 0 else weight
        for rank, hit in enumerate(hits, start=1):
            if weight > 0:
                value = score.get(hit.memory_id, 0.0) + share / (JOIN_K + rank)
            else:
                value = max(score.get(hit.memory_id, -2.0), hit.cosine)
            score[hit.memory_id] = value
    first = {hit.memory_id: rank for rank, hit in enumerate(found[0])}
    order = sorted(score, key=lambda i: (-score[i], first.get(i, len(first)), i))
    return order[:depth]


def best_cosines(
    store: Store,
    vectors: Matrix | Sequence[Vector],
    memory_ids: Sequence[str],
    measured: Sequence[Mapping[str, float]],
) -> dict[str, float]:
    """Each memory's best cosine to ``vectors`` (``measured[i]``: the ones known for
    ``vectors[i]``; the rest from the memories' stored vectors, read once). A memory with
    neither is left out."""
    import numpy as np

    missing = [i for i in memory_ids if any(i not in known for known in measured)]
    computed = {
        i: [float(v) for v in row]
        for i, row in stored_products(store, missing, np.asarray(vectors, dtype=np.float32).T)
    }
    result: dict[str, float] = {}
    for memory_id in memory_ids:
        row = computed.get(memory_id)
        values = [
            known[memory_id] if memory_id in known else row[at] if row is not None else None
            for at, known in enumerate(measured)
        ]
        present = [v for v in values if v is not None]
        if present:
            result[memory_id] = max(present)
    return result


def more_cosines(
    store: Store,
    vectors: Matrix | Sequence[Vector],
    memory_ids: Sequence[str],
    known: dict[str, float],
) -> dict[str, float]:
    """``known`` cosines with those of ``memory_ids`` not in it: each one's best cosine to
    ``vectors`` (the message's alone, or with its sentences'), from their stored vectors."""
    missing = [i for i in memory_ids if i not in known]
    if not missing:
        return known
    return {**known, **best_cosines(store, vectors, missing, [{} for _ in vectors])}


def cosines_of(
    store: Store, vector: Vector, memory_ids: Sequence[str], known: Mapping[str, float]
) -> dict[str, float]:
    """Every memory's cosine to the query vector: ``known`` ones as given, the others from
    their stored vectors (memories without one are left out)."""
    import numpy as np

    result = dict(known)
    missing = [i for i in memory_ids if i not in result]
    query = np.asarray(vector, dtype=np.float32)
    result.update((i, float(value)) for i, value in stored_products(store, missing, query))
    return result


def stored_products(
    store: Store, memory_ids: Sequence[str], vectors: Any
) -> Iterator[tuple[str, Any]]:
    """Each of ``memory_ids`` with a stored vector, with that vector's products with
    ``vectors`` (one vector: a number; a matrix of them as columns: a row), read at once."""
    import numpy as np

    stored = store.memories.vectors(memory_ids) if memory_ids else {}
    if not stored:
        return iter(())
    ids = list(stored)
    matrix = np.asarray([stored[i] for i in ids], dtype=np.float32)
    return zip(ids, matrix @ vectors, strict=True)
