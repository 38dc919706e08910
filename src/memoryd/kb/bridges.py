"""The library's ties (:mod:`memoryd.kb.bridge_policy`) read against the store: each document's
ties are mined from its chunks once per version of it and kept; a question's words that no label
of the named documents uses are carried over to the labels they are tied to."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from memoryd.kb.abbreviation_policy import Expansion, label_names, label_words
from memoryd.kb.bridge_policy import Tie, bridge, document_ties, words_of
from memoryd.kb.model import Document
from memoryd.kb.routing import identity, spell_fiscal_years, symbols
from memoryd.storage.kb_protocols import KnowledgeStore
from memoryd.words import query_terms

# Documents whose ties are kept, at most (the oldest go first).
TIE_CACHE_DOCUMENTS = 512
Version = tuple[str, str | None, str]
# The newest documents of the library whose ties a question may use, besides the named ones.
LIBRARY = 200


def version(document: Document) -> Version:
    """A document's version: its id, content hash and update time."""
    return (document.id, document.content_hash, document.updated_at.isoformat())


class TieCache(dict[Version, list[Tie]]):
    """Each document version's ties, mined once, and the last library's ties with the names
    abbreviations are spelled out from."""

    def __init__(self) -> None:
        super().__init__()
        self.library: tuple[tuple[Version, ...], list[Tie], list[list[str]]] = ((), [], [])

    def of_library(
        self, kb: KnowledgeStore, documents: Sequence[Document]
    ) -> tuple[list[Tie], list[list[str]]]:
        """The ties of ``documents`` and their wordings as label names, kept while the same
        document versions are asked for."""
        versions = tuple(sorted(version(d) for d in documents))
        if versions != self.library[0]:
            ties = self.ties(kb, documents)
            names = label_words(" ".join(t.wording) for t in ties)
            self.library = (versions, ties, names)
        return self.library[1], self.library[2]

    def ties(self, kb: KnowledgeStore, documents: Iterable[Document]) -> list[Tie]:
        """The ties of ``documents``, mining those not yet kept."""
        every: list[Tie] = []
        for document in documents:
            key = version(document)
            if key not in self:
                while len(self) >= TIE_CACHE_DOCUMENTS:
                    del self[next(iter(self))]
                self[key] = document_ties([c.text for c in kb.chunks(document.id)])
            every.extend(self[key])
        return every


def bridged(
    kb: KnowledgeStore,
    text: str,
    named: Sequence[Document],
    named_labels: Sequence[str],
    cache: TieCache,
) -> list[Expansion]:
    """The named documents' labels (``named_labels``) that the question's words reach through
    the ties of the library's newest documents and the named ones, or none."""
    if not named:
        return []
    naming = {s.casefold() for s in symbols(text)}
    for document in named:
        ident = identity(document.id, document.title, document.source_uri)
        naming |= ident.names | ident.title_words
    words = [
        w
        for w in query_terms(spell_fiscal_years(text))
        if w not in naming and not any(ch.isdigit() for ch in w)
    ]
    documents = list({d.id: d for d in [*named, *kb.documents(limit=LIBRARY)]}.values())
    ties, library = cache.of_library(kb, documents)
    heads = [
        (words_of(names[0]), words_of(" ".join(names[1:])))
        for label in named_labels
        if (names := label_names(label))
    ]
    own = cache.ties(kb, named)
    return bridge(words, text, list(dict.fromkeys(heads)), library, ties, own)
