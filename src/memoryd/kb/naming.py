"""Which documents a question names, read against the store: routing by name, fiscal year and
form (:mod:`memoryd.kb.routing`), and, when the question names no document by name, by a word
it writes in capitals that a document's first page shows (a ticker on a filing's cover).

"MSFT EPS for fiscal 2022" holds no word of "Microsoft Corporation", but Microsoft's cover
page shows "MSFT"; a word the first page of at most three documents shows stands for their
names, and the fiscal year then picks among them as it does for a name. Failing that, a fiscal
year at most three of the library's filings end names them ("KO diluted EPS for 2016": no page
of Coca-Cola's filings shows "KO", one filing ends fiscal 2016).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from memoryd.kb.abbreviation_policy import (
    Expansion,
    candidates,
    expand_names,
    expanded_terms,
    label_words,
)
from memoryd.kb.bridges import LIBRARY, TieCache, bridged
from memoryd.kb.model import Document
from memoryd.kb.routing import (
    MAX_SYMBOL_DOCUMENTS,
    SYMBOL_POOL,
    Identity,
    QueryNames,
    Route,
    identities,
    identity,
    query_names,
    route,
    symbols,
    with_names,
    year_routes,
)
from memoryd.kb.search import KbSearchPolicy
from memoryd.storage.kb_protocols import KnowledgeStore

# What ``--explain`` says of a document named by a word its first page shows.
SHOWN = "its first page shows "


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
        return by_years(kb, named) if policy.route_by_year else []
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
            (f"{SHOWN}{shown[r.document_id]!r}", *r.reasons[1:]),
        )
        if r.document_id in shown
        else r
        for r in route(with_names(named, aliases), list(every.values()))
    ]


def by_years(kb: KnowledgeStore, named: QueryNames) -> list[Route]:
    """The filings of a fiscal year the question names, when at most three of the library's
    filings end it (:func:`memoryd.kb.routing.year_routes`); none in a library of more than
    ``bridges.LIBRARY`` documents, which is not listed whole."""
    if not named.years:
        return []
    library = small_library(kb)
    return year_routes(named, library) if library is not None else []


def small_library(kb: KnowledgeStore) -> list[Identity] | None:
    """Every document's identity when the library holds at most the documents whose ties a
    question may use (``bridges.LIBRARY``), else None: a larger one is not listed whole."""
    library = kb.documents(limit=LIBRARY + 1)
    if len(library) > LIBRARY:
        return None
    return identities((d.id, d.title, d.source_uri) for d in library)


# Label names kept per document version (id, content hash, update time), at most this many.
LABEL_CACHE_DOCUMENTS = 256


class LabelCache(dict[tuple[str, str | None, str], dict[str, list[list[str]]]]):
    """Each named document version's labels split into words, and the library's ties
    (:mod:`memoryd.kb.bridges`)."""

    def __init__(self) -> None:
        super().__init__()
        self.ties = TieCache()


def spell_out(
    kb: KnowledgeStore,
    text: str,
    named: Sequence[Document],
    terms: Sequence[str],
    policy: KbSearchPolicy,
    cache: LabelCache,
) -> tuple[list[Expansion], list[str]]:
    """The question's abbreviations spelled out from the named documents' row labels
    (:mod:`memoryd.kb.abbreviation_policy`), then, with ``policy.bridge_labels``, its words
    carried to the named labels the library's shared numbers tie them to
    (:mod:`memoryd.kb.bridges`), and the words they add to ``terms``. Each document's labels
    are read and split once per version of it (``cache``)."""
    if not named or not (policy.expand_labels or policy.bridge_labels):
        return [], []
    by_label: dict[str, list[list[str]]] = {}
    for document in named:
        key = (document.id, document.content_hash, document.updated_at.isoformat())
        if key not in cache:
            if len(cache) >= LABEL_CACHE_DOCUMENTS:
                cache.clear()
            cache[key] = {label: label_words([label]) for label in kb.row_labels([document.id])}
        by_label.update(cache[key])
    spelled: list[Expansion] = []
    if policy.expand_labels and candidates(text):
        spelled = expand_names(text, [words for names in by_label.values() for words in names])
    if policy.bridge_labels:
        spelled += bridged(
            kb, text, terms, named, list(by_label), cache.ties, policy.bridge_differences
        )
    return spelled, [t for t in expanded_terms(spelled) if t not in terms]


def topic_terms(
    terms: Sequence[str], routes: Sequence[Route], documents: Mapping[str, Document], text: str
) -> list[str]:
    """``terms`` without the words that name the routed documents (their registrant's name,
    the question's words in capitals, a ticker among them): within those documents every chunk
    is about that company, so those words rank its cover page, exhibit list and signatures,
    not the answer. The fiscal year stays (a
    statement shows several years). ``terms`` itself when nothing else is left."""
    if not routes:
        return list(terms)
    # Words in capitals too ("MSFT", "SEC", "LLC"): within a filing they name its company,
    # its regulator, its subsidiaries, page after page. (Leaving out only a ticker that routed
    # lost one of the 48 questions written from the page at rank 1 and changed no analyst
    # measure.)
    naming: set[str] = {s.casefold() for s in symbols(text)}
    for found in routes:
        document = documents.get(found.document_id)
        if document is not None:
            ident = identity(document.id, document.title, document.source_uri)
            naming |= ident.names
    topic = [t for t in terms if t not in naming]
    return topic or list(terms)
