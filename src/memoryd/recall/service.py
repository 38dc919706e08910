"""Reading's front door (``service.retrieval``): recall, the context pack, search, and the
evidence behind them. Built from the retriever and the knowledge base it packs beside."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memoryd.kb.service import KnowledgeBase
from memoryd.memory.model import Kind
from memoryd.recall.context import build_context
from memoryd.recall.context_policy import ContextPack
from memoryd.recall.legs import Evidence
from memoryd.recall.run import Retriever
from memoryd.results import RecallResult, SearchResult


class Retrieval:
    """Recall and search over the memories; the context pack over memories and documents."""

    def __init__(self, retriever: Retriever, kb: KnowledgeBase) -> None:
        self._retriever = retriever
        self._kb = kb

    def recall(
        self,
        message: str,
        *,
        budget: int | None = None,
        now: datetime | None = None,
        stamp: bool = True,
    ) -> RecallResult:
        """The memory block for this turn: candidates gated, fused, weighted, cut where the
        evidence thins out and packed within the token budget, standing lessons first. An
        empty memories section when nothing is relevant. Stamps what it packed (retrieval
        hits, last retrieved), unless ``stamp`` is False: a preview, such as the owner trying
        a message on the web page, that consolidation must not count as use."""
        return self._retriever.recall(message, budget, now, stamp)

    def context(
        self,
        message: str,
        *,
        budget: int | None = None,
        now: datetime | None = None,
        explain: bool = False,
        stamp: bool = True,
        pinned_collections: Sequence[str] = (),
    ) -> ContextPack:
        """The one context pack for this turn: standing lessons, then the memories recall
        admits and the document chunks search_kb admits (each through its own gates),
        interleaved by one calibrated score (:mod:`memoryd.recall.context_policy` says how),
        chunks that repeat a memory left out, all in one fenced block within ``budget`` o200k
        tokens (default: the recall budget). ``dropped`` says what was left out and why;
        ``explain`` adds each item's ranks and weights to the JSON. Stamps the memories it
        packed, as recall does, unless ``stamp`` is False."""
        return build_context(
            self._retriever,
            self._kb,
            message,
            budget=budget,
            now=now,
            explain=explain,
            stamp=stamp,
            pinned_collections=pinned_collections,
        )

    def search(
        self,
        query: str,
        *,
        kind: Kind | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 10,
        now: datetime | None = None,
        stamp: bool = True,
    ) -> SearchResult:
        """A deliberate lookup: the same legs and gates as recall, filtered by kind and by an
        explicit time range, returned as a ranked list (no cut, no packing). Stamps what it
        returns, unless ``stamp`` is False (the owner browsing, not the model using)."""
        return self._retriever.search(query, kind, (since, until), limit, now, stamp)

    def leg_rankings(
        self, message: str, *, now: datetime | None = None
    ) -> tuple[dict[str, list[str]], dict[str, str]]:
        """Each leg's own ranking of active memory ids for ``message`` (before the gates and
        fusion), and each leg's state; for ablations and diagnostics."""
        found = self._retriever.evidence(message, now)
        return found.rankings, found.legs

    def evidence(self, message: str, *, now: datetime | None = None) -> Evidence:
        """What the vector, text, entity and time legs find for ``message``, with everything
        the gates judge (cosines, words, names, window); for diagnostics and calibration:
        ``memoryd.recall.score.rank`` turns it into recall's ranking under any policy."""
        return self._retriever.evidence(message, now)

    def settle(self) -> None:
        """Wait until the retrieval stamps of earlier recalls are written (reads through the
        service do this themselves)."""
        self._retriever.settle()
