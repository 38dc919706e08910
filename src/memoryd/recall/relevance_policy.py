"""One calibrated relevance score per recall candidate (SPEC §4), pure.

Each candidate carries the evidence its legs found: its rank in the vector and text legs, its
cosine to the message, the share of the message's word weight (IDF) it holds, whether a
selective name, an explicit time window or the best event's day brought it, and, for the whole
message, whether it names someone no memory mentions and how much of its weight lies in words
no memory holds. A logistic model turns these into the probability that the candidate is
evidence for the message; its coefficients are fitted on two dev sets of different styles by
``bench/fit_recall_score.py`` and shipped in :class:`memoryd.recall.policy.RecallPolicy`.

Features are also measured against the message's other candidates (how far below the closest
cosine and the best text coverage): a conversation of long technical messages and one of short
chat turns put cosines on different scales, and the gaps carry across where the level does not.
One feature is the message's own: its background, the mean cosine of its closest candidates. A
message about what the store holds finds several memories near it; a question about nothing
there ("Why is the sky blue?" of a store that says "the owner's favourite colour is deep
blue") finds one by a shared word and little around it. Measured on all three dev sets, a
candidate's cosine minus this background (or its z-score, or its margin over the 10th or 50th
neighbour) tells evidence from chance *worse* than the cosine itself; the background added to
it tells it better (docs/recall.md, "Calibration"). Another is whether the message is about its
writer's own life (:mod:`memoryd.recall.address_policy`): a personal question's answer is often
a paraphrase, at cosines a general question reaches by chance.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import mul

# The message's own features, alike for every candidate of one message (:func:`message_values`).
MESSAGE_FEATURES = ("unknown_name", "unseen_share", "personal", "named", "definite")
FEATURES = (
    "cosine",
    "cosine_gap",
    "background",
    "vector_rank",
    "text_rank",
    "coverage",
    "coverage_gap",
    "entity",
    "time",
    "episode",
    *MESSAGE_FEATURES,
)
# Without an embedding (the route down), a candidate's cosine is unknown: it is taken as this
# typical evidence cosine, so text and names still decide alone.
UNKNOWN_COSINE = 0.3


@dataclass(frozen=True)
class Context:
    """What a candidate is measured against: the message's best cosine and best text
    coverage among all candidates, and the message-level evidence."""

    best_cosine: float
    best_coverage: float
    # The mean cosine of the closest few candidates: the message's background in this store.
    typical_cosine: float
    unknown_name: bool
    unseen_share: float
    # How clearly the message is about its writer's own life (recall/address_policy.py).
    personal: float = 0.0
    # Whether the message names someone or something the store knows.
    named: bool = False
    # Whether it points at one thing of its writer's world with a bare "the …".
    definite: bool = False


def rank_feature(rank: int | None) -> float:
    """1 at rank 1, falling as 1/√rank; 0 when the leg did not find it."""
    return 0.0 if rank is None else 1.0 / math.sqrt(rank)


def features(
    ranks: Mapping[str, int], cosine: float | None, coverage: float, context: Context
) -> dict[str, float]:
    """The named features of one candidate (:data:`FEATURES`)."""
    value = UNKNOWN_COSINE if cosine is None else cosine
    best = max(context.best_cosine, value)
    return {
        "cosine": value,
        "cosine_gap": best - value if cosine is not None else 0.0,
        "background": context.typical_cosine if cosine is not None else 0.0,
        "vector_rank": rank_feature(ranks.get("vector")),
        "text_rank": rank_feature(ranks.get("text")),
        "coverage": coverage,
        "coverage_gap": max(context.best_coverage, coverage) - coverage,
        "entity": 1.0 if "entity" in ranks else 0.0,
        "time": 1.0 if "time" in ranks else 0.0,
        "episode": 1.0 if "episode" in ranks else 0.0,
        **dict(zip(MESSAGE_FEATURES, message_values(context), strict=True)),
    }


def message_values(context: Context) -> tuple[float, ...]:
    """The values of :data:`MESSAGE_FEATURES` for the message ``context`` describes."""
    return (
        1.0 if context.unknown_name else 0.0,
        context.unseen_share,
        context.personal,
        1.0 if context.named else 0.0,
        1.0 if context.definite else 0.0,
    )


def contributions(values: Mapping[str, float], weights: Mapping[str, float]) -> dict[str, float]:
    """Each feature's share of the logit (value × its coefficient), for ``--explain``."""
    return {name: values[name] * weights.get(name, 0.0) for name in values}


def probability(values: Mapping[str, float], weights: Mapping[str, float], bias: float) -> float:
    """The logistic model: σ(bias + Σ value × coefficient)."""
    return _sigmoid(bias + sum(values[name] * weights.get(name, 0.0) for name in values))


def calibrated(
    values: Mapping[str, float], weights: Mapping[str, float], bias: float
) -> tuple[float, dict[str, float]]:
    """:func:`probability` and :func:`contributions` in one pass over the features (the same
    numbers: the logit sums the same products in the same order)."""
    shares = {name: value * weights.get(name, 0.0) for name, value in values.items()}
    return _sigmoid(bias + sum(shares.values())), shares


class Model:
    """:func:`calibrated` of :func:`features` for every candidate of one message, without
    the two dictionaries per candidate: the coefficients in :data:`FEATURES` order and the
    message's own features are worked out once. The same numbers, bit for bit: the same
    products, summed in the same order (a unit test compares them)."""

    __slots__ = ("_bias", "_context", "_message", "_weights")

    def __init__(self, weights: Mapping[str, float], bias: float, context: Context) -> None:
        self._bias = bias
        self._weights = tuple(weights.get(name, 0.0) for name in FEATURES)
        self._context = context
        self._message = message_values(context)

    def relevance(
        self, ranks: Mapping[str, int], cosine: float | None, coverage: float
    ) -> tuple[float, dict[str, float]]:
        """The candidate's relevance and each feature's share of its logit."""
        context = self._context
        if cosine is None:
            value, gap, background = UNKNOWN_COSINE, 0.0, 0.0
        else:
            value = cosine
            gap = max(context.best_cosine, value) - value
            background = context.typical_cosine
        vector, text = ranks.get("vector"), ranks.get("text")
        values = (
            value,
            gap,
            background,
            0.0 if vector is None else 1.0 / math.sqrt(vector),
            0.0 if text is None else 1.0 / math.sqrt(text),
            coverage,
            max(context.best_coverage, coverage) - coverage,
            1.0 if "entity" in ranks else 0.0,
            1.0 if "time" in ranks else 0.0,
            1.0 if "episode" in ranks else 0.0,
            *self._message,
        )
        products = list(map(mul, values, self._weights))
        return _sigmoid(self._bias + sum(products)), dict(zip(FEATURES, products, strict=True))


def _sigmoid(logit: float) -> float:
    if logit < -60:
        return 0.0
    return 1.0 / (1.0 + math.exp(-logit))


def as_row(values: Mapping[str, float]) -> Sequence[float]:
    """The features in :data:`FEATURES` order (for fitting)."""
    return [values[name] for name in FEATURES]
