"""search_kb over the good corpus (SPEC §6): every format ingests with its title and its key
sentence is found with its breadcrumb, OCR included.

The good corpus (every format, OCR included) is ingested once for the contract suite into its
own store (the ``corpus`` fixture) and only read afterwards.
"""

from __future__ import annotations

from collections import Counter

import pytest

from memoryd.kb.model import DocumentStatus
from tests.kb_corpus import AD_SENTENCE, NAV_WORDS

from .kb_support import (
    FORMATS,
    OCR_FORMATS,
    Corpus,
    chunk_texts,
    expected_breadcrumb,
    hit_with,
    squash,
)


@pytest.mark.parametrize("key", FORMATS)
def test_every_format_ingests_with_its_title(corpus: Corpus, key: str) -> None:
    result = corpus.results[key]
    assert result.outcome == "ok", result.reason
    document = corpus.doc(key)
    assert document.status is DocumentStatus.READY
    assert document.title == corpus.samples[key].title
    assert document.chunk_count == len(corpus.service.store.kb.chunks(document.id)) > 0


@pytest.mark.parametrize("key", FORMATS)
def test_key_sentence_is_found_in_the_top_three_with_its_breadcrumb(
    corpus: Corpus, key: str
) -> None:
    sample = corpus.samples[key]
    hits = corpus.service.kb.search(sample.key_sentence).hits
    hit = hit_with(hits[:3], sample.key_sentence)
    assert hit is not None, [(h.document.title, h.chunk.text[:80]) for h in hits]
    assert hit.document.id == corpus.doc(key).id
    assert hit.chunk.breadcrumb == expected_breadcrumb(sample)


@pytest.mark.parametrize("key", OCR_FORMATS)
def test_text_inside_images_is_read(corpus: Corpus, key: str) -> None:
    document = corpus.doc(key)
    assert document.images_read >= 1
    assert any(
        squash(corpus.samples[key].key_sentence) in squash(text)
        for text in chunk_texts(corpus.service, document.id)
    )


def test_search_returns_every_matching_chunk_of_a_long_document(corpus: Corpus) -> None:
    """Diversity is a preference, not a cap: the PDF's matching chunks all come back (those
    of one page as one result)."""
    hits = corpus.service.kb.search(
        "lighthouse keeper station harbour towns survey overview", limit=20
    ).hits
    # Counted in chunks: the chunks found on one page come back as one result.
    per_document = Counter(h.document.id for h in hits for _ in h.chunks)
    pdf = corpus.doc("pdf")
    assert per_document[pdf.id] > 2
    shown = [c.position for h in hits if h.document.id == pdf.id for c in h.chunks]
    assert per_document[pdf.id] == len(set(shown))
    scores = [h.ranked.score for h in hits]
    assert scores == sorted(scores, reverse=True)


def test_html_navigation_and_ads_are_not_indexed(corpus: Corpus) -> None:
    texts = chunk_texts(corpus.service, corpus.doc("html").id)
    assert texts
    joined = squash("\n".join(texts))
    assert squash(corpus.samples["html"].key_sentence) in joined
    assert squash(AD_SENTENCE) not in joined
    for word in NAV_WORDS.split():
        assert word.casefold() not in joined, word
    hits = corpus.service.kb.search(AD_SENTENCE).hits
    assert not any(squash(AD_SENTENCE) in squash(h.chunk.text) for h in hits)
