"""The context pack (the one call an assistant needs before each turn): recall's memories and
search_kb's chunks, each through its own gates, put on one score and packed into one fenced
block by :mod:`memoryd.context_pack`. This module gathers; the policy decides."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime

from .context_pack import (
    ContextPack,
    ContextPolicy,
    PackDrop,
    calibrate,
    pack_context,
    recall_drops,
    without_repeats,
)
from .errors import InvalidInputError
from .kb.results import KbSearchResult
from .kb.search import MAX_QUERY_CHARS
from .kb.service import KnowledgeBase
from .recall import read_query
from .retriever import Retriever

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
    lesson_ids = {m.id for m in recalled.lessons}
    recall_policy = retriever.parts.recall_policy
    scored = calibrate(
        recalled.read.text,
        [s for s in recalled.kept if s.memory.id not in lesson_ids],
        found.hits if found is not None else (),
        read_query(recalled.evidence.facts, recall_policy),
        policy,
        recall_policy,
    )
    items, repeats = without_repeats(scored, recalled.lessons, policy)
    text, tokens, lessons, packed, over = pack_context(
        recalled.lessons, items, retriever.parts.tokenizer, limit
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
