"""Recall's score (SPEC §4), pure: score each candidate the gates admitted by reciprocal ranks
weighted by kind and recency, open the block only when one candidate's calibrated relevance
(:mod:`memoryd.recall.relevance_policy`) is high enough, and cut where the evidence thins out.
The clock is passed in; the legs gather the evidence.

Why a score that opens the block: every leg returns something for any message, so without it
every question recalls a page of memories. The block is filled only when one admitted candidate
reaches ``open_score`` (hysteresis: a strong threshold to open, a weaker one to follow). The
fused score ((reciprocal ranks + the cosine) × kind × recency) orders the block and the
relative cut reads it: cut on the relevance instead, the block holds less evidence for the same
tokens on LoCoMo and BEAM both.
Diversity (``diversify``, off as shipped) lowers an item by its closeness to better ones.
A new word (``lift_novel``, off as shipped) raises an item holding a query word no better one
holds.
The coefficients and both thresholds are fitted on LoCoMo, BEAM and the owner paraphrase set
by ``bench/fit_recall_score.py``; docs/recall.md gives the out-of-set numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from types import MappingProxyType
from typing import TYPE_CHECKING

from memoryd.memory.model import Kind, Memory
from memoryd.recall.evidence_policy import Candidate, QueryFacts
from memoryd.recall.gate_policy import Gate, Reading, gate, read_query, unseen_share
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.relevance_policy import (
    UNKNOWN_COSINE,
    Context,
    Model,
    features,
)

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

# Recall's shipped settings, for callers that rank under them.
DEFAULT_POLICY = RecallPolicy()
# The typical close cosine of a message is the mean of its closest this many candidates.
TYPICAL_OF = 10


@dataclass(frozen=True)
class Scored:
    """An admitted candidate with every factor of its score, for ``--explain``."""

    memory: Memory
    score: float
    rrf: float
    recency: float
    weight: float
    age_days: float
    ranks: Mapping[str, int]
    gates: tuple[str, ...] = ()
    cosine: float | None = None
    # The calibrated relevance (0-1) and each feature's share of its logit.
    relevance: float = 0.0
    contributions: Mapping[str, float] = field(default_factory=dict)
    # The gates whose match the meaning only doubts (gate_policy.Gate.doubtful): they ranked
    # the item and did not open the block.
    doubtful: tuple[str, ...] = ()
    # Its highest cosine to a better item, when diversity lowered its score by it
    # (diversify).
    similar: float | None = None
    # The query words it holds that no better item holds, and what its score was raised by
    # for them (lift_novel).
    novel: tuple[str, ...] = ()
    lifted: float = 0.0

    def gate_labels(self) -> tuple[str, ...]:
        """The gates as ``--explain`` shows them: "text (doubtful)" for a doubted match."""
        return tuple(f"{g} (doubtful)" if g in self.doubtful else g for g in self.gates)


@dataclass(frozen=True)
class Dropped:
    """A candidate that did not make it into the block, and why (with its relevance and each
    feature's share of it, when it was scored)."""

    memory_id: str
    reason: str
    relevance: float | None = None
    contributions: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Ranking:
    """The admitted candidates best first, the ones the gates stopped, and why the memories
    section is empty when it is."""

    items: tuple[Scored, ...]
    dropped: tuple[Dropped, ...]
    silence: str | None = None
    # What every candidate was measured against (kept for the episode leg's late joiners).
    context: Context | None = None


def type_weight(memory: Memory, policy: RecallPolicy) -> float:
    """Kind weight; an inference's is scaled by its current confidence."""
    weight = policy.type_weights.get(memory.kind, 1.0)
    if memory.kind is Kind.INFERENCE:
        weight *= memory.confidence
    return weight


def age_days(memory: Memory, now: datetime) -> float:
    """Days since the memory was last confirmed (else created); never negative."""
    anchor = memory.last_confirmed_at or memory.created_at
    return max(0.0, (now - anchor).total_seconds() / 86400.0)


def recency(age: float, policy: RecallPolicy) -> float:
    """1 − w × (1 − 0.5^(age / half-life)): 1 today, never below 1 − w however old."""
    faded: float = 1.0 - 0.5 ** (age / policy.recency_half_life_days)
    return 1.0 - policy.recency_weight * faded


def measure_context(
    candidates: Mapping[str, Candidate],
    facts: QueryFacts,
    policy: RecallPolicy,
    reading: Reading,
    verdicts: Mapping[str, Gate] | None = None,
) -> Context:
    """What each candidate of this message is measured against: the best cosine and text
    coverage among the admitted ones, the typical close cosine, and what the message itself
    says (an unknown name, unseen words). ``verdicts`` are the candidates' gates, when the
    caller has them already."""
    # Measured over what the first legs found and the gates admitted: the episode leg's late
    # joiners, doubtful text matches and the candidates no gate admits change nothing (ranking
    # in two steps equals ranking at once, and a stray match never moves the others).
    verdicts = verdicts or {i: gate(c, facts, policy, reading) for i, c in candidates.items()}
    found = [c for i, c in candidates.items() if verdicts[i].opens]
    cosines = [c.cosine for c in found if c.cosine is not None]
    coverages = [reading.coverage(c.covering) for c in found]
    # In a small store every word is new to it: unseen words only tell from 40 memories on.
    telling = facts.memory_count >= policy.min_memories_for_shares
    closest = sorted(cosines, reverse=True)[:TYPICAL_OF]
    return Context(
        max(cosines, default=0.0) if facts.embedded else 0.0,
        max(coverages, default=0.0),
        sum(closest) / len(closest) if closest and facts.embedded else 0.0,
        bool(facts.unknown_names),
        unseen_share(facts) if telling else 0.0,
        facts.personal,
        facts.named,
        facts.definite,
    )


def candidate_features(
    candidate: Candidate,
    facts: QueryFacts,
    reading: Reading,
    context: Context,
    admitted: tuple[str, ...],
) -> dict[str, float]:
    """The relevance model's features of one candidate
    (:data:`memoryd.recall.relevance_policy.FEATURES`);
    only the legs whose gates it passed (``admitted``) count."""
    cosine = candidate.cosine if facts.embedded else None
    ranks = {leg: rank for leg, rank in candidate.ranks.items() if leg in admitted}
    words = candidate.covering if "text" in admitted else frozenset()
    return features(ranks, cosine, reading.coverage(words), context)


def rank_candidates(
    candidates: Mapping[str, Candidate],
    facts: QueryFacts,
    now: datetime,
    policy: RecallPolicy = DEFAULT_POLICY,
) -> Ranking:
    """Gate every candidate, then score the admitted ones: (Σ_admitted legs 1/(k + rank) +
    ``fused_cosine_weight`` × cosine / k) × type weight × recency, best first (ties: newer id
    first).
    Nothing is admitted unless one candidate's calibrated relevance reaches ``open_score``."""
    reading = read_query(facts, policy)
    verdicts = {i: gate(c, facts, policy, reading) for i, c in candidates.items()}
    context = measure_context(candidates, facts, policy, reading, verdicts)
    items, dropped, best = _judge(candidates, facts, now, policy, reading, context, verdicts)
    if items and best < opening_score(facts, policy) and not _words_open(facts, policy, context):
        why = _silence(facts, policy, best)
        dropped.extend(Dropped(s.memory.id, why, s.relevance, s.contributions) for s in items)
        return Ranking((), tuple(dropped), why, context)
    silence = None if items else _silence(facts, policy, best)
    return Ranking(_ordered(items), tuple(dropped), silence, context)


def extend_ranking(
    earlier: Ranking,
    candidates: Mapping[str, Candidate],
    facts: QueryFacts,
    now: datetime,
    policy: RecallPolicy = DEFAULT_POLICY,
) -> Ranking:
    """``earlier`` with ``candidates`` (new ones, or ones a later leg found again) judged and
    merged in, measured against the same context: the result of ranking everything at once,
    without judging the rest again."""
    if earlier.silence is not None:
        # What joins later (the episode leg) never opens the block: silence stays silence.
        seen = {d.memory_id for d in earlier.dropped}
        late = tuple(Dropped(i, earlier.silence) for i in candidates if i not in seen)
        return Ranking((), earlier.dropped + late, earlier.silence, earlier.context)
    reading = read_query(facts, policy)
    context = earlier.context or measure_context(candidates, facts, policy, reading)
    items, dropped, _ = _judge(candidates, facts, now, policy, reading, context)
    items.extend(s for s in earlier.items if s.memory.id not in candidates)
    dropped.extend(d for d in earlier.dropped if d.memory_id not in candidates)
    return Ranking(_ordered(items), tuple(dropped), None, context)


def _judge(
    candidates: Mapping[str, Candidate],
    facts: QueryFacts,
    now: datetime,
    policy: RecallPolicy,
    reading: Reading,
    context: Context,
    verdicts: Mapping[str, Gate] | None = None,
) -> tuple[list[Scored], list[Dropped], float]:
    """(admitted candidates scored, dropped ones with reasons, the best admitted relevance)."""
    items: list[Scored] = []
    dropped: list[Dropped] = []
    best = 0.0
    # Each candidate's calibrated relevance (relevance_policy.calibrated of its
    # candidate_features), with what every candidate shares worked out once.
    model = Model(policy.score_weights, policy.score_bias, context)
    embedded = facts.embedded
    for memory_id, candidate in candidates.items():
        known = verdicts.get(memory_id) if verdicts is not None else None
        verdict = known or gate(candidate, facts, policy, reading)
        # Its relevance reads the legs the meaning does not doubt (all of them when it has no
        # other): a doubtful match ranks the candidate, and never lifts it to open the block.
        doubtful = verdict.doubtful
        sure = (
            tuple(leg for leg in verdict.admitted if leg not in doubtful)
            if doubtful
            else verdict.admitted
        )
        found_by = sure or verdict.admitted or tuple(candidate.ranks)
        relevance, shares = model.relevance(
            {leg: rank for leg, rank in candidate.ranks.items() if leg in found_by},
            candidate.cosine if embedded else None,
            reading.coverage(candidate.covering) if "text" in found_by else 0.0,
        )
        if not verdict.admitted:
            reasons = "; ".join(f"{leg}: {why}" for leg, why in verdict.stopped.items())
            dropped.append(Dropped(memory_id, f"no gate passed ({reasons})", relevance, shares))
            continue
        if verdict.opens:
            best = max(best, relevance)
        ranks = {leg: candidate.ranks[leg] for leg in verdict.admitted}
        rrf = sum(1.0 / (policy.rrf_k + rank) for rank in ranks.values())
        if "feedback" in ranks:  # the feedback leg weighs `feedback_weight`, not 1
            rrf += (policy.feedback_weight - 1.0) / (policy.rrf_k + ranks["feedback"])
        rrf += policy.fused_cosine_weight * fused_cosine(candidate, facts) / policy.rrf_k
        age = age_days(candidate.memory, now)
        fresh = recency(age, policy)
        weight = type_weight(candidate.memory, policy)
        items.append(
            Scored(
                candidate.memory,
                rrf * weight * fresh,
                rrf,
                fresh,
                weight,
                age,
                MappingProxyType(ranks),
                verdict.admitted,
                candidate.cosine,
                relevance,
                MappingProxyType(shares),
                verdict.doubtful,
            )
        )
    return items, dropped, best


def fused_cosine(candidate: Candidate, facts: QueryFacts) -> float:
    """The cosine the fused score adds: the candidate's, the typical evidence cosine when no
    leg measured it (a name or a time window alone found it), none without an embedding."""
    if not facts.embedded:
        return 0.0
    return UNKNOWN_COSINE if candidate.cosine is None else max(0.0, candidate.cosine)


def _ordered(items: list[Scored]) -> tuple[Scored, ...]:
    """Best first; newer first among equal scores."""
    items.sort(key=lambda s: s.memory.id, reverse=True)
    items.sort(key=lambda s: -s.score)
    return tuple(items)


def opening_score(facts: QueryFacts, policy: RecallPolicy) -> float:
    """The relevance one candidate must reach to open the block in this store."""
    if facts.memory_count < policy.min_memories_for_shares:
        return policy.small_store_open_score
    return policy.open_score


def _words_open(facts: QueryFacts, policy: RecallPolicy, context: Context) -> bool:
    """In a small store, a text match holding ``strong_text_coverage`` of the message's word
    weight opens the block too: there every word is telling ("Where do I live?" of a store
    that says "lives on Rua das Flores", at cosine 0.14). On the large dev sets this rule
    changes nothing the score does not already decide; on the owner set's 20-memory stores it
    lets no unrelated question through."""
    small = facts.memory_count < policy.min_memories_for_shares
    return small and context.best_coverage >= policy.strong_text_coverage


def _silence(facts: QueryFacts, policy: RecallPolicy, best: float) -> str:
    needed = opening_score(facts, policy)
    found = f"the most relevant candidate's relevance is {best:.2f} < {needed:.2f}"
    if facts.unknown_names:
        names = ", ".join(facts.unknown_names)
        return f"no strong evidence: no memory mentions {names}, and {found}"
    return f"no strong evidence: {found}"


def episode_anchor(items: Sequence[Scored]) -> Memory | None:
    """The best admitted event with a date: its day's other events may join (episode leg)."""
    for item in items:
        if item.memory.kind is Kind.EVENT and item.memory.occurred_at is not None:
            return item.memory
    return None


def relative_cut(
    items: Sequence[Scored], policy: RecallPolicy
) -> tuple[list[Scored], list[Dropped]]:
    """Keep items scoring at least ``relative_cut`` × the best score, and below it the next
    ones while the kept memories hold at most ``cut_floor_chars`` characters; the rest are
    dropped."""
    if not items:
        return [], []
    floor = policy.relative_cut * items[0].score
    kept = [s for s in items if s.score >= floor]
    held = sum(len(s.memory.content) for s in kept)
    for item in items[len(kept) :]:
        held += len(item.memory.content)
        if held > policy.cut_floor_chars:
            break
        kept.append(item)
    dropped = [
        Dropped(s.memory.id, f"score {s.score:.4f} is far below the best ({items[0].score:.4f})")
        for s in items[len(kept) :]
    ]
    return kept, dropped


def diversify(
    items: Sequence[Scored], vectors: Mapping[str, ArrayLike], policy: RecallPolicy
) -> tuple[Scored, ...]:
    """``items`` (best first) with the first ``diversity_depth`` chosen one by one by their
    marginal score: the fused score less ``diversity_weight`` × the best score × (the highest
    cosine to an item chosen before it − ``diversity_floor``, when above it). Each keeps that
    score (what the relative cut reads) and that cosine (``similar``); the best stays first,
    an item without a vector is never lowered, and the rest follow by score."""
    weight = policy.diversity_weight
    depth = min(policy.diversity_depth, len(items))
    if weight <= 0 or depth < 2 or items[0].score <= 0 or not vectors:
        return tuple(items)
    import numpy as np

    top = list(items[:depth])
    held = [i for i, s in enumerate(top) if s.memory.id in vectors]
    matrix = np.zeros((depth, np.asarray(next(iter(vectors.values()))).size), dtype=np.float32)
    for i in held:
        vector = np.asarray(vectors[top[i].memory.id], dtype=np.float32)
        norm = float(np.linalg.norm(vector))
        if norm > 0:
            matrix[i] = vector / norm
    # Rows of zeros (no vector) have cosine 0 to everything: never lowered, never lowering.
    similar = matrix @ matrix.T
    scores = np.array([s.score for s in top], dtype=np.float64)
    floor = policy.diversity_floor
    penalty = weight * top[0].score
    closest = similar[0].astype(np.float64)
    chosen = [0]
    marginal: dict[int, tuple[float, float | None]] = {0: (top[0].score, None)}
    left = list(range(1, depth))
    while left:
        values = scores[left] - penalty * np.maximum(0.0, closest[left] - floor)
        pick = int(np.argmax(values))
        index = left.pop(pick)
        marginal[index] = (float(values[pick]), float(closest[index]))
        chosen.append(index)
        closest = np.maximum(closest, similar[index])
    lowered = [replace(top[i], score=marginal[i][0], similar=marginal[i][1]) for i in chosen]
    rest = list(items[depth:])
    # Stable: the chosen order holds among equal scores, and the rest join where they score.
    return tuple(sorted([*lowered, *rest], key=lambda s: -s.score))


def lift_novel(
    items: Sequence[Scored], words: Mapping[str, frozenset[str]], policy: RecallPolicy
) -> tuple[Scored, ...]:
    """``items`` (best first) with the first ``novelty_depth`` chosen one by one by their
    score, raised by ``novelty_bonus`` × the best score (never above it) when they hold a query
    word (``words``, by memory id) that no item chosen before holds. Each keeps that score
    (what the relative cut reads) and the words that raised it (``novel``); the best stays
    first, no item is lowered, and the rest follow by score."""
    depth = min(policy.novelty_depth, len(items))
    if policy.novelty_bonus <= 0 or depth < 2 or items[0].score <= 0:
        return tuple(items)
    best = items[0].score
    lift = policy.novelty_bonus * best
    top = list(items[:depth])
    held = [words.get(s.memory.id, frozenset()) for s in top]
    seen = set(held[0])
    chosen = [top[0]]
    left = list(range(1, depth))
    while left:
        values = [min(best, top[i].score + lift) if held[i] - seen else top[i].score for i in left]
        pick = max(range(len(left)), key=values.__getitem__)  # the first of equals
        index = left.pop(pick)
        item = top[index]
        if values[pick] > item.score:
            new = tuple(sorted(held[index] - seen))
            item = replace(item, score=values[pick], novel=new, lifted=values[pick] - item.score)
        chosen.append(item)
        seen |= held[index]
    # Each pick scores no more than the one before (a word once held lifts no one again), so
    # sorting keeps the chosen order; the rest, no higher than the last of them, follow.
    return tuple(sorted([*chosen, *items[depth:]], key=lambda s: -s.score))
