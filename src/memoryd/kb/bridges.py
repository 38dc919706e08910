"""The library's ties (:mod:`memoryd.kb.bridge_policy`) read against the store: each document's
ties are mined from its chunks once per version of it and kept; a question's words that no label
of the named documents uses are carried over to the labels they are tied to."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from memoryd.kb.abbreviation_policy import Expansion, label_words
from memoryd.kb.bridge_policy import Tie, bridge, document_ties, label_head, postings
from memoryd.kb.model import Document
from memoryd.kb.routing import identity, symbols
from memoryd.storage.kb_protocols import KnowledgeStore

# Documents whose ties are kept, at most (the oldest go first).
TIE_CACHE_DOCUMENTS = 512
Version = tuple[str, str | None, str]
# The documents' versions, their ties, the ties' wordings as label names, the ties by stem.
Library = tuple[tuple[Version, ...], list[Tie], list[list[str]], dict[str, list[int]]]
# Wordings of at most this many words are what abbreviations are spelled out from.
SHORT = 8
# The newest documents of the library whose ties a question may use, besides the named ones.
LIBRARY = 200


def version(document: Document) -> Version:
    """A document's version: its id, content hash and update time."""
    return (document.id, document.content_hash, document.updated_at.isoformat())


class TieCache(dict[Version, list[Tie]]):
    """Each document version's ties, mined once, and the last library's ties with the names
    abbreviations are spelled out from (with and without the ties by differences)."""

    def __init__(self) -> None:
        super().__init__()
        self.library: dict[bool, Library] = {}

    def of_library(
        self, kb: KnowledgeStore, documents: Sequence[Document], differences: bool = True
    ) -> Library:
        """The ties of ``documents`` (those by a difference of two rows only with
        ``differences``), their wordings as label names and the ties by stem, kept while the
        same document versions are asked for."""
        versions = tuple(sorted(version(d) for d in documents))
        kept = self.library.get(differences)
        if kept is None or versions != kept[0]:
            ties = self.ties(kb, documents, differences)
            # Only a short wording can be spelled out whole (a prose window never is).
            names = label_words(" ".join(t.wording) for t in ties if len(t.wording) <= SHORT)
            kept = self.library[differences] = (versions, ties, names, postings(ties))
        return kept

    def ties(
        self, kb: KnowledgeStore, documents: Iterable[Document], differences: bool = True
    ) -> list[Tie]:
        """The ties of ``documents``, mining those not yet kept (without the ties by a
        difference of two rows unless ``differences``)."""
        every: list[Tie] = []
        for document in documents:
            key = version(document)
            if key not in self:
                while len(self) >= TIE_CACHE_DOCUMENTS:
                    del self[next(iter(self))]
                self[key] = document_ties([c.text for c in kb.chunks(document.id)])
            every.extend(t for t in self[key] if differences or not t.by_difference)
        return every


def bridged(
    kb: KnowledgeStore,
    text: str,
    terms: Sequence[str],
    named: Sequence[Document],
    named_labels: Sequence[str],
    cache: TieCache,
    differences: bool = True,
) -> list[Expansion]:
    """The named documents' labels (``named_labels``) that the question's words reach through
    the ties of the library's newest documents and the named ones, or none. ``terms``: the
    question's search words (its fiscal years spelled out); ``differences``: whether ties by a
    difference of two rows count."""
    if not named:
        return []
    naming = {s.casefold() for s in symbols(text)}
    for document in named:
        ident = identity(document.id, document.title, document.source_uri)
        naming |= ident.names | ident.title_words
    words = [w for w in terms if w not in naming and not any(ch.isdigit() for ch in w)]
    documents = list({d.id: d for d in [*named, *kb.documents(limit=LIBRARY)]}.values())
    _, ties, library, index = cache.of_library(kb, documents, differences)
    heads = [head for head in dict.fromkeys(label_head(label) for label in named_labels) if head[0]]
    own = cache.ties(kb, named, differences)
    return bridge(words, text, heads, library, ties, own, index)
