"""search_kb's ranking and read_kb's spans: pure, no I/O (SPEC §6).

Two gated legs. A vector hit counts only at cosine ≥ 0.25; a keyword hit only when it shares at
least two non-stop words with the query; both count alike. Each leg gives reciprocal-rank
points; a document's source weight and a pinned collection's 1.5× multiply them (weights, never
filters). Diversity is a preference, not a cap: at equal score a document's later chunks rank
behind other documents' first ones, but a question about one long document still gets all of
its best chunks.

read_kb returns a whole document, one section, a chunk range or a page range, cut at the token
budget; the service fetches the chunks and these functions decide what of them is returned.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memoryd.errors import InvalidInputError
from memoryd.kb.chunking import join_chunks
from memoryd.kb.model import SOURCE_WEIGHTS, Chunk, ChunkKey, Document, DocumentStatus, SourceType

if TYPE_CHECKING:
    from memoryd.providers.tokenizer import TokenCodec

# read_kb never returns more than this many tokens, whatever the caller asks.
READ_DEFAULT_TOKENS = 2000
READ_MAX_TOKENS = 8000
# search_kb refuses a longer query.
MAX_QUERY_CHARS = 2000


@dataclass(frozen=True)
class KbSearchPolicy:
    """search_kb's thresholds and weights."""

    min_cosine: float = 0.25
    min_shared_words: int = 2
    vector_weight: float = 1.0
    # Why equal weights: keyword hits at a tenth of the vector's cost 0.03 nDCG@10 on SciFact
    # and, on real financial filings, more than half of the top-1 answers.
    keyword_weight: float = 1.0
    pinned_boost: float = 1.5
    # Each leg's candidates of the documents a question names (its company, period, form or
    # title), ranked among themselves: their points are added at this weight (0: no routing).
    route_weight: float = 1.0
    # Table rows searched alone (:mod:`memoryd.kb.rows`), a keyword leg of their chunks: within
    # the named documents, and with ``rows_everywhere`` over the whole library too. Why half:
    # at 1.0 the rows lifted the analyst questions' top 10 from 0.41 to 0.61 but dropped the
    # 48 questions written from the page from 0.90 to 0.79 (table chunks crowd out prose);
    # at 0.5 they give 0.54 and 0.92 (bench/README.md).
    row_weight: float = 0.5
    rows_everywhere: bool = True
    # Candidates read once from each leg: the first ``pool`` rank the whole library, and those
    # of the documents a question names (up to ``routed_pool``) rank within them. Why one
    # deep read: searching each leg again within the named documents cost three more searches
    # and gave the same answers (bench/README.md).
    deep_pool: int = 400
    routed_pool: int = 40
    # Chunks of the best rows that count (in the library, and within the named documents). Why
    # 10: with 40, statement chunks whose rows matched a common word or two stacked row points
    # over the 48's prose answers (hit@5 0.81 to 0.77); at 10 neither set drops (bench/README).
    row_pool: int = 10
    # Table rows found by the vector of their label (:func:`memoryd.kb.rows.label_text`): a
    # vector leg of their chunks within the named documents (``row_vectors_everywhere``: the
    # library too), the ``row_pool`` best rows at or above ``row_min_cosine``: a question near a
    # label reaches the row without a shared word. Why half a leg, named documents only: the
    # same gains as the library at 0.3 or 0.5 (analysts' first 0.22 → 0.24, page in the top 5
    # 0.38 → 0.41; the 48's hit@5 0.81 → 0.83) for no search time (the library's rows: 1.4x);
    # at 1.0 the 48 lose rank 1 (0.50 → 0.44) (bench/README.md).
    row_vector_weight: float = 0.5
    row_min_cosine: float = 0.3
    row_vectors_everywhere: bool = False
    # A question's abbreviations ("EPS", "R&D", "capex") spelled out from the row labels of
    # the documents it names (:mod:`memoryd.kb.abbreviation_policy`): the phrases' words join
    # the keyword legs and, with ``expand_label_vector``, the row-label leg's question too.
    expand_labels: bool = True
    # A question that names no document by name but writes a word in capitals that the first
    # page of at most three documents shows (a ticker on a filing's cover: "MSFT") names them;
    # with ``route_by_year``, failing that, a fiscal year at most three filings end names them.
    route_by_symbols: bool = True
    route_by_year: bool = True
    # Within the named documents the keyword legs leave out the words that named them.
    route_topic_only: bool = True
    expand_label_vector: bool = True
    # A question's words that no label of the named documents uses, carried to the labels the
    # library's shared numbers tie them to ("capex" → Costco's "capital expenditures", $3,891 →
    # "Additions to property and equipment"; :mod:`memoryd.kb.bridge_policy`), as abbreviations.
    bridge_labels: bool = True
    # Ties by a difference of two rows ("working capital"; bridge_policy.difference_ties). Chosen
    # on the even analyst half (top 10 .83 → .85); odd half top 10 .74 → .76, the 48 unchanged.
    bridge_differences: bool = True
    # Results on a page of one document merged (kb.result_policy): fusion ranks ``merge_depth``
    # times the places asked for, so merging still fills them. Why: two or three chunks of one
    # page often held three of the top 5 (bench/README.md, "One page, one result").
    merge_pages: bool = True
    merge_depth: int = 4
    # At most this many chunks shown in one result (None: every chunk found on its pages).
    merge_most: int | None = 3
    # Chunks with a row sharing the question's words (share of the label's, the question's, with
    # "question, heading" those the chunk's heading holds too, or "both", ≥ min) under a header
    # naming its year gain weight / (constant + rank), by share, then ("cover, rows") by rows
    # under that year (result_policy.row_evidence and heading_words; numbers in bench/README).
    row_evidence_weight: float = 0.2
    row_evidence_share: str = "question, heading"
    row_evidence_min: float = 0.5
    row_evidence_order: str = "cover, rows"
    row_evidence_constant: int = 5
    # Only the named documents' rows are evidence when the question names any (bench/README).
    row_evidence_named: bool = True
    # The fullest table of a document showing a best row's figure under the year ahead of its
    # copies (result_policy.sources_first). Even analysts: first .48 → .50, page top 5 .61 →
    # .65; odd .39 → .48, page .70 both; the 48 and SciFact's top 10 unchanged (bench/README).
    row_sources_first: bool = True
    # At most this many chunks of one document (None: no cap, only the diversity preference).
    per_document: int | None = None
    # Why 60: the usual reciprocal-rank constant; it keeps rank 1 from dwarfing ranks 2–10.
    rank_constant: int = 60
    # Candidates read from each leg before fusion.
    pool: int = 100
    default_limit: int = 5
    max_limit: int = 20


@dataclass(frozen=True)
class DocumentWeighting:
    """What fusion needs to know of a chunk's document."""

    source_type: SourceType
    collection: str


@dataclass(frozen=True)
class RankedChunk:
    """A fused result with its parts, for ``--explain`` and tests."""

    key: ChunkKey
    score: float
    cosine: float | None
    vector_rank: int | None
    keyword_rank: int | None
    shared_words: int
    weight: float
    # Ranks in the legs searched within the documents the question names (None: not there).
    routed_vector_rank: int | None = None
    routed_keyword_rank: int | None = None
    # Rank of the chunk's best table row in the row leg, globally and within named documents.
    row_rank: int | None = None
    routed_row_rank: int | None = None
    # Rank of the chunk's nearest row label in the row vector leg, globally and within named
    # documents.
    row_vector_rank: int | None = None
    routed_row_vector_rank: int | None = None
    # Rank among the results holding a row that names the question's line item and year.
    row_evidence_rank: int | None = None


def gate_vector(
    hits: Sequence[tuple[ChunkKey, float]], policy: KbSearchPolicy
) -> list[tuple[ChunkKey, float]]:
    """Vector hits at or above the cosine floor, best first."""
    return [(key, cosine) for key, cosine in hits if cosine >= policy.min_cosine]


def gate_keyword(
    hits: Sequence[ChunkKey], shared: Mapping[ChunkKey, int], policy: KbSearchPolicy
) -> list[ChunkKey]:
    """Keyword hits (in BM25 order) sharing enough non-stop words with the query."""
    return [key for key in hits if shared.get(key, 0) >= policy.min_shared_words]


def fuse(
    vector_hits: Sequence[tuple[ChunkKey, float]],
    keyword_hits: Sequence[ChunkKey],
    shared: Mapping[ChunkKey, int],
    documents: Mapping[str, DocumentWeighting],
    pinned: frozenset[str],
    policy: KbSearchPolicy,
    limit: int,
    *,
    routed_vector_hits: Sequence[tuple[ChunkKey, float]] = (),
    routed_keyword_hits: Sequence[ChunkKey] = (),
    row_hits: Sequence[ChunkKey] = (),
    routed_row_hits: Sequence[ChunkKey] = (),
    row_vector_hits: Sequence[tuple[ChunkKey, float]] = (),
    routed_row_vector_hits: Sequence[tuple[ChunkKey, float]] = (),
) -> list[RankedChunk]:
    """Gated legs fused by weighted reciprocal rank, weighted per document, best first (ties
    to documents not yet shown). The legs searched within the named documents add their
    points at ``route_weight``: evidence, not a filter."""
    if limit <= 0:
        return []
    vectors = gate_vector(vector_hits, policy)
    keywords = gate_keyword(keyword_hits, shared, policy)
    routed_vectors = gate_vector(routed_vector_hits, policy)
    routed_keywords = gate_keyword(routed_keyword_hits, shared, policy)
    cosine = {**dict(routed_vectors), **dict(vectors)}
    vector_rank = _ranks(key for key, _ in vectors)
    keyword_rank = _ranks(keywords)
    routed_vector_rank = _ranks(key for key, _ in routed_vectors)
    routed_keyword_rank = _ranks(routed_keywords)
    row_rank = _ranks(gate_keyword(row_hits, shared, policy))
    routed_row_rank = _ranks(gate_keyword(routed_row_hits, shared, policy))
    row_vector_rank = _ranks(k for k, c in row_vector_hits if c >= policy.row_min_cosine)
    routed_row_vector_rank = _ranks(
        k for k, c in routed_row_vector_hits if c >= policy.row_min_cosine
    )
    row_vector = policy.row_vector_weight * policy.vector_weight
    legs = (
        (policy.vector_weight, vector_rank),
        (policy.keyword_weight, keyword_rank),
        (policy.route_weight * policy.vector_weight, routed_vector_rank),
        (policy.route_weight * policy.keyword_weight, routed_keyword_rank),
        (policy.row_weight * policy.keyword_weight, row_rank),
        (policy.route_weight * policy.row_weight * policy.keyword_weight, routed_row_rank),
        (row_vector, row_vector_rank),
        (policy.route_weight * row_vector, routed_row_vector_rank),
    )
    # Each chunk's points from each leg, in the legs' order (summed as one sum, as before);
    # a RankedChunk is built only for the chunks returned.
    points: dict[ChunkKey, list[float]] = {}
    for leg_weight, ranks in legs:
        for key, rank in ranks.items():
            points.setdefault(key, []).append(leg_weight / (policy.rank_constant + rank))
    scored: list[tuple[float, str, int, ChunkKey, float]] = []
    for key, parts in points.items():
        document = documents.get(key.document_id)
        total = sum(parts)
        if document is None or total <= 0:
            continue
        weight = SOURCE_WEIGHTS[document.source_type]
        if document.collection in pinned:
            weight *= policy.pinned_boost
        scored.append((-(total * weight), key.document_id, key.position, key, weight))
    scored.sort(key=lambda r: r[:3])
    # The diversity preference: each chunk's ordinal within its document (0 for the best)
    # breaks ties of score in favour of documents not yet shown.
    seen: dict[str, int] = {}
    ordered: list[tuple[float, int, str, int, ChunkKey, float]] = []
    for score, document_id, position, key, weight in scored:
        ordinal = seen.get(document_id, 0)
        seen[document_id] = ordinal + 1
        if policy.per_document is None or ordinal < policy.per_document:
            ordered.append((score, ordinal, document_id, position, key, weight))
    ordered.sort(key=lambda r: r[:4])
    return [
        RankedChunk(
            key=key,
            score=-score,
            cosine=cosine.get(key),
            vector_rank=vector_rank.get(key),
            keyword_rank=keyword_rank.get(key),
            shared_words=shared.get(key, 0),
            weight=weight,
            routed_vector_rank=routed_vector_rank.get(key),
            routed_keyword_rank=routed_keyword_rank.get(key),
            row_rank=row_rank.get(key),
            routed_row_rank=routed_row_rank.get(key),
            row_vector_rank=row_vector_rank.get(key),
            routed_row_vector_rank=routed_row_vector_rank.get(key),
        )
        for score, _, _, _, key, weight in ordered[:limit]
    ]


def _ranks(keys: Iterable[ChunkKey]) -> dict[ChunkKey, int]:
    """Each key's rank (1 for the first) in the order given."""
    return {key: rank for rank, key in enumerate(keys, start=1)}


def below_gates(
    vector_hits: Sequence[tuple[ChunkKey, float]],
    keyword_hits: Sequence[ChunkKey],
    shared: Mapping[ChunkKey, int],
    policy: KbSearchPolicy,
    limit: int,
) -> list[tuple[ChunkKey, str]]:
    """The nearest chunks of each leg (at most ``limit`` per leg) that no gate admitted, with
    why: what ``--explain`` shows as dropped below the gates."""
    admitted = {key for key, _ in gate_vector(vector_hits, policy)}
    admitted.update(gate_keyword(keyword_hits, shared, policy))
    stopped: dict[ChunkKey, str] = {}
    for key, cosine in [h for h in vector_hits if h[0] not in admitted][:limit]:
        stopped[key] = f"below search_kb's gates: cosine {cosine:.2f} < {policy.min_cosine:.2f}"
    for key in [k for k in keyword_hits if k not in admitted and k not in stopped][:limit]:
        stopped[key] = (
            f"below search_kb's gates: shares {shared.get(key, 0)} of the query's words "
            f"(needs {policy.min_shared_words})"
        )
    return list(stopped.items())


def check_query(query: str, limit: int | None, policy: KbSearchPolicy) -> tuple[str, int]:
    """The query, stripped, and how many results it wants; a clear error when either is off."""
    text = query.strip()
    if not text:
        raise InvalidInputError("search_kb needs a query")
    if len(text) > MAX_QUERY_CHARS:
        raise InvalidInputError("the query is over 2,000 characters; shorten it")
    wanted = policy.default_limit if limit is None else limit
    if not 1 <= wanted <= policy.max_limit:
        raise InvalidInputError(f"limit must be between 1 and {policy.max_limit}")
    return text, wanted


def weighting(documents: Mapping[str, Document]) -> dict[str, DocumentWeighting]:
    """What fusion needs of each document, by id."""
    return {
        doc_id: DocumentWeighting(doc.source_type, doc.collection)
        for doc_id, doc in documents.items()
    }


SUFFIX_RULES = (("ies", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", ""), ("s", ""))


def stem(word: str) -> str:
    """A light English stem so 'cats' shares a word with 'cat' (as the porter index does)."""
    for suffix, keep in SUFFIX_RULES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: len(word) - len(suffix)] + keep
    return word


def check_read(
    document: Document,
    *,
    section: str | None,
    chunks: tuple[int, int] | None,
    pages: tuple[int, int] | None,
    max_tokens: int,
) -> None:
    """A clear error when ``document`` cannot be read or the request is off."""
    if document.status is not DocumentStatus.READY:
        raise InvalidInputError(
            f"document {document.id} is {document.status.value}"
            + (f": {document.error}" if document.error else "")
        )
    if not 1 <= max_tokens <= READ_MAX_TOKENS:
        raise InvalidInputError(f"max_tokens must be between 1 and {READ_MAX_TOKENS}")
    if sum(x is not None for x in (section, chunks, pages)) > 1:
        raise InvalidInputError("read a section, a chunk range or a page range: one at a time")


def check_chunk_range(document: Document, chunks: tuple[int, int]) -> None:
    """A clear error when ``chunks`` (first, last) is not a range of ``document``'s chunks."""
    first, last = chunks
    if first < 0 or last < first:
        raise InvalidInputError("a chunk range is first-last with 0 <= first <= last")
    if first >= document.chunk_count:
        raise InvalidInputError(f"document {document.id} has chunks 0-{document.chunk_count - 1}")


def section_chunks(document: Document, every: Sequence[Chunk], section: str) -> list[Chunk]:
    """The chunks under a heading named ``section`` (exactly, else containing it), or an error
    listing the document's sections."""
    wanted = " ".join(section.split()).casefold()
    exact = [c for c in every if any(h.casefold() == wanted for h in c.headings)]
    if exact:
        return exact
    partial = [c for c in every if any(wanted in h.casefold() for h in c.headings)]
    if partial:
        return partial
    names = list(dict.fromkeys(h for c in every for h in c.headings))
    listed = "; ".join(names[:20]) or "none (the document has no headings)"
    raise InvalidInputError(f"no section {section!r} in document {document.id}; sections: {listed}")


def fit_span(
    span: Sequence[Chunk], max_tokens: int, tokenizer: TokenCodec
) -> tuple[list[Chunk], str, int]:
    """The leading chunks of ``span`` that fit ``max_tokens`` (at least one, cut when it alone
    is over), their joined text and its token count."""
    taken: list[Chunk] = []
    used = 0
    for chunk in span:
        cost = chunk.tokens if not taken else tokenizer.count(chunk.text[chunk.overlap_chars :])
        if taken and used + cost > max_tokens:
            break
        taken.append(chunk)
        used += cost
    text = join_chunks([(c.text, c.overlap_chars) for c in taken])
    if used > max_tokens:  # a single chunk larger than the budget
        text, used = bounded(text, max_tokens, tokenizer)
    return taken, text, used


def page_span(
    document: Document, every: Sequence[Chunk], pages: tuple[int, int]
) -> tuple[list[Chunk], str, tuple[int, int]]:
    """Exactly the text of pages first–last (as converted): the chunks it comes from, the text
    and the pages it covers; an error when the document has no such pages."""
    first, last = pages
    if first < 1 or last < first:
        raise InvalidInputError("a page range is first-last with 1 <= first <= last")
    known = pages_of(every)
    if known is None:
        raise InvalidInputError(
            f"document {document.id} has no pages ({document.document_type}); read it by "
            "section or chunks"
        )
    if first > known[1]:
        raise InvalidInputError(f"document {document.id} has pages {known[0]}-{known[1]}")
    span = [c for c in every if _overlaps(c.page_range, first, last)]
    text, starts = _joined_with_pages(span)
    begin = starts.get(first, 0) if first > span[0].page_range[0] else 0  # type: ignore[index]
    following = [offset for page, offset in starts.items() if page > last]
    end = min(following) if following else len(text)
    return span, text[begin:end].strip("\n"), (max(first, known[0]), min(last, known[1]))


def bounded(text: str, max_tokens: int, tokenizer: TokenCodec) -> tuple[str, int]:
    """``text`` cut to its first ``max_tokens`` tokens, and its token count."""
    tokens = tokenizer.encode(text)
    if len(tokens) <= max_tokens:
        return text, len(tokens)
    head = tokenizer.decode(tokens[:max_tokens])
    return head, tokenizer.count(head)


def pages_of(chunks: Sequence[Chunk]) -> tuple[int, int] | None:
    """The pages a run of chunks covers, or None when they have none."""
    ranges = [c.page_range for c in chunks if c.page_range is not None]
    if not ranges:
        return None
    return min(r[0] for r in ranges), max(r[1] for r in ranges)


def _overlaps(pages: tuple[int, int] | None, first: int, last: int) -> bool:
    return pages is not None and pages[1] >= first and pages[0] <= last


def _joined_with_pages(chunks: Sequence[Chunk]) -> tuple[str, dict[int, int]]:
    """Consecutive chunks as one text (as :func:`join_chunks` joins them) and where each page
    begins in it."""
    text = ""
    starts: dict[int, int] = {}
    for index, chunk in enumerate(chunks):
        skip = chunk.overlap_chars if index else 0
        part = chunk.text[skip:]
        lead = len(part) - len(part.lstrip("\n"))
        base = len(text) + (2 if text else 0)
        for page, offset in chunk.pages:
            if offset >= skip and page not in starts:
                starts[page] = base + max(0, offset - skip - lead)
        piece = part.strip("\n")
        if piece:
            text = f"{text}\n\n{piece}" if text else piece
    return text, starts
