"""The context pack (the one call an assistant needs before each turn): recall's memories and
search_kb's chunks, each through its own gates, put on one score and packed into one fenced
block by :mod:`memoryd.recall.context_policy` and :mod:`memoryd.recall.context_pack_policy`.
This module gathers; the policies decide."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from memoryd.errors import InvalidInputError
from memoryd.kb.results import KbHit, KbSearchResult
from memoryd.kb.search import MAX_QUERY_CHARS
from memoryd.kb.service import KnowledgeBase
from memoryd.recall.context_pack_policy import pack_context
from memoryd.recall.context_policy import (
    ContextPack,
    ContextPolicy,
    PackDrop,
    calibrate,
    chunk_id,
    recall_drops,
    without_repeats,
)
from memoryd.recall.gate_policy import read_query
from memoryd.recall.run import Retriever

if TYPE_CHECKING:
    from memoryd.providers.embedder import Vector

log = logging.getLogger("memoryd")


def build_context(
    retriever: Retriever,
    kb: KnowledgeBase,
    message: str,
    *,
    budget: int | None,
    now: datetime | None,
    explain: bool,
    stamp: bool,
    pinned_collections: Sequence[str],
    policy: ContextPolicy | None = None,
) -> ContextPack:
    """See :meth:`memoryd.service.MemoryService.context`."""
    policy = policy or ContextPolicy()
    if not message.strip():
        raise InvalidInputError("the message is empty; pass the owner's message for this turn")
    limit = retriever.budget(budget)
    recalled = retriever.ranked(message, now)
    legs = dict(recalled.evidence.legs)
    found = _search_kb(kb, recalled.read.text, pinned_collections, policy, legs)
    hits = found.hits if found is not None else ()
    lesson_ids = {m.id for m in recalled.lessons}
    recall_policy = retriever.policy
    scored = calibrate(
        recalled.read.text,
        [s for s in recalled.kept if s.memory.id not in lesson_ids],
        hits,
        read_query(recalled.evidence.facts, recall_policy),
        policy,
        recall_policy,
        _meaning(kb, hits, recalled.evidence.vector),
    )
    items, repeats = without_repeats(scored, recalled.lessons, policy)
    text, tokens, lessons, packed, over = pack_context(
        recalled.lessons, items, retriever.tokenizer, limit
    )
    packed_ids = [m.id for m in lessons] + [i.id for i in packed if i.memory is not None]
    if packed_ids and stamp:
        retriever.stamp_later(packed_ids, recalled.at)
    below = [
        PackDrop("chunk", f"{key.document_id}#{key.position}", reason)
        for key, reason in (found.stopped if found is not None else ())
    ]
    return ContextPack(
        text=text,
        tokens=tokens,
        budget=limit,
        lessons=tuple(lessons),
        items=tuple(packed),
        dropped=tuple(recall_drops(recalled.dropped(lessons)) + below + repeats + over),
        legs=legs,
        silence=recalled.ranking.silence,
        explained=explain,
    )


def _meaning(kb: KnowledgeBase, hits: Sequence[KbHit], vector: Vector | None) -> dict[str, float]:
    """The cosine to the message of each chunk that search_kb's word gate alone admitted, by
    chunk id: recall checks a word match against the meaning, search_kb's word gate does not.
    Nothing when the message has no vector (the embedding route down: recall then skips the
    check too) or the chunk none yet; a failed read costs the check, not the pack."""
    wanted = [h for h in hits if h.ranked.vector_rank is None and h.ranked.keyword_rank is not None]
    if vector is None or not wanted:
        return {}
    import numpy as np

    measured: dict[str, float] = {}
    try:
        stored: dict[str, Mapping[int, Vector]] = {}
        for hit in wanted:
            document = hit.document.id
            if document not in stored:
                stored[document] = kb.store.kb.vectors_by_position(document)
            chunk = stored[document].get(hit.chunk.position)
            if chunk is not None and len(chunk) == len(vector):
                measured[chunk_id(hit)] = float(np.dot(chunk, vector))  # both L2-normalised
    except Exception as error:
        log.warning("context: reading chunk vectors failed: %s", error, exc_info=True)
    return measured


def _search_kb(
    kb: KnowledgeBase,
    query: str,
    pinned: Sequence[str],
    policy: ContextPolicy,
    legs: dict[str, str],
) -> KbSearchResult | None:
    """search_kb for the message (read as recall read it); it may fail alone, as a recall leg
    may: the pack then holds memories only and ``legs["kb"]`` says why."""
    if not kb.store.kb.documents(limit=1):
        legs["kb"] = "empty"
        return None
    try:
        found = kb.search(query[:MAX_QUERY_CHARS], pinned_collections=pinned,
                          limit=policy.kb_candidates)  # fmt: skip
    except InvalidInputError:
        raise  # a pinned collection's bad name is the caller's to fix
    except Exception as error:  # the embedding route down must not cost the memories
        log.warning("context: search_kb failed: %s", error, exc_info=True)
        legs["kb"] = f"failed: {error}"
        return None
    legs["kb"] = "ok" if found.hits else "empty"
    return found
