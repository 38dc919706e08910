"""The store as ``memoryd reembed`` reaches it: plan, run, and what a stopped run kept.

A re-embed is the one command that opens the store without a service: a service refuses a store
whose vectors came from another model than the configured one, and moving a store to the
configured model is exactly when that holds. The CLI still never touches the store itself; it
asks this sub-facade, as the other commands ask the service's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memoryd.ops.reembed import plan_reembed, recorded_signature, reembed

if TYPE_CHECKING:
    from memoryd.ops.reembed import ProgressListener, ReembedPlan, ReembedResult
    from memoryd.providers.embedder import Embedder
    from memoryd.providers.tokenizer import TokenCounter
    from memoryd.storage.protocols import Store


class ReembedAdmin:
    """A store's re-embed: what it would take, running it, and how far a stopped one got.
    ``tokenizer`` counts a plan's tokens (o200k when none is given)."""

    def __init__(self, store: Store, tokenizer: TokenCounter | None = None) -> None:
        self._store, self._tokenizer = store, tokenizer

    def plan(self, embedder: Embedder, *, batch_size: int) -> ReembedPlan:
        """What moving the store to ``embedder``'s vectors would take (nothing changes)."""
        counter = self._tokenizer
        if counter is None:
            from memoryd.providers.tokenizer import O200kTokenizer

            counter = O200kTokenizer()
        return plan_reembed(self._store, embedder.model, counter, batch_size=batch_size)

    def run(self, embedder: Embedder, *, progress: ProgressListener | None = None) -> ReembedResult:
        """Fill the second vector set from ``embedder``, then switch the store to it."""
        return reembed(self._store, embedder, progress=progress)

    def kept(self) -> tuple[int, int]:
        """New vectors made so far, of all the texts to embed (what a stopped run keeps)."""
        counts = self._store.next_vectors.counts().values()
        done, total = (sum(column) for column in zip(*counts, strict=True))
        return done, total

    def store_model(self) -> str:
        """The model whose vectors the store uses now."""
        return recorded_signature(self._store).model
