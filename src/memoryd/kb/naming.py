"""Which documents a question names, read against the store: routing by name, fiscal year and
form (:mod:`memoryd.kb.routing`), and, when the question names no document by name, by a word
it writes in capitals that a document's first page shows (a ticker on a filing's cover).

"MSFT EPS for fiscal 2022" holds no word of "Microsoft Corporation", but Microsoft's cover
page shows "MSFT"; a word the first page of at most three documents shows stands for their
names, and the fiscal year then picks among them as it does for a name.
"""

from __future__ import annotations

from collections.abc import Iterable

from memoryd.kb.model import Document
from memoryd.kb.routing import (
    MAX_SYMBOL_DOCUMENTS,
    SYMBOL_POOL,
    Route,
    identities,
    query_names,
    route,
    symbols,
    with_names,
)
from memoryd.kb.search import KbSearchPolicy
from memoryd.storage.kb_protocols import KnowledgeStore


def named_documents(
    kb: KnowledgeStore, text: str, candidates: Iterable[Document], policy: KbSearchPolicy
) -> list[Route]:
    """The documents among ``candidates`` (those the legs found) the question names, else
    those whose first page shows one of its words in capitals (at most three), each with why."""
    known = identities((d.id, d.title, d.source_uri) for d in candidates)
    named = query_names(text)
    routes = route(named, known)
    if routes or not policy.route_by_symbols:
        return routes
    shown: dict[str, str] = {}
    for symbol in symbols(text):
        keys = kb.keyword_chunks([symbol.casefold()], SYMBOL_POOL)
        firsts = {
            key.document_id
            for key, chunk in kb.chunks_by_key(keys).items()
            if (chunk.page_range[0] == 1 if chunk.page_range else key.position == 0)
        }
        if 0 < len(firsts) <= MAX_SYMBOL_DOCUMENTS:
            shown.update(dict.fromkeys(firsts - shown.keys(), symbol))
    if not shown:
        return []
    holders = kb.documents_by_id(sorted(shown))
    every = {
        i.document_id: i
        for i in [*known, *identities((d.id, d.title, d.source_uri) for d in holders.values())]
    }
    aliases = {word for doc_id in shown for word in every[doc_id].names}
    return [
        Route(
            r.document_id,
            r.title,
            (f"its first page shows {shown[r.document_id]!r}", *r.reasons[1:]),
        )
        if r.document_id in shown
        else r
        for r in route(with_names(named, aliases), list(every.values()))
    ]
