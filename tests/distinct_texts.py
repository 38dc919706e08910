"""Sentences for long simulations that the store will not take for near-duplicates.

Write paths treat a cosine of 0.95 or more as "the same memory" (reinforce or drop), so a test
that needs hundreds of separate memories builds them from disjoint word pools and keeps only
sentences whose embedding stays clearly apart from every sentence already kept.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np

from memoryd.providers.embedder import Embedder

PEOPLE = (
    "Marta", "Joaquim", "Ines", "Tomasz", "Priya", "Kofi", "Yuki", "Lars", "Amara", "Diego",
    "Fatima", "Sven", "Mei", "Oluwaseun", "Rafael", "Ingrid", "Hamid", "Chiara", "Bongani",
    "Elif", "Nikolai", "Aiko", "Tariq", "Saoirse",
)  # fmt: skip
ACTIVITIES = (
    "repaired a bicycle", "baked sourdough bread", "climbed a granite crag",
    "watched a chess final",
    "planted tomato seedlings", "sang at a karaoke bar", "painted a watercolour of the harbour",
    "assembled a bookshelf", "went sea kayaking", "argued about tax forms", "toured a brewery",
    "built a birdhouse", "learned to juggle", "visited a dentist", "adopted a stray kitten",
    "cooked a Thai curry", "restored an old radio", "hiked to a waterfall", "played padel",
    "studied Portuguese verbs", "flew a kite", "mended a fishing net", "rehearsed a cello duet",
    "sorted vinyl records", "went ice skating", "picked wild mushrooms", "wrote a wedding speech",
    "fixed a leaking tap", "ran a charity 10k", "carved a wooden spoon",
)  # fmt: skip
PLACES = (
    "in Porto", "near the old lighthouse", "at the Kraków market", "in a Nairobi suburb",
    "on the Lisbon waterfront", "in a Kyoto alley", "at the community garden", "in Reykjavik",
    "beside the canal in Ghent", "at a mountain hut above Zermatt", "in a Marrakesh riad",
    "at the university library", "in Valparaíso", "on a ferry to Hydra", "in a Berlin courtyard",
    "at the village fete", "in Hanoi's old quarter", "on a farm outside Mendoza",
)  # fmt: skip
TOPICS = (
    "jazz records", "spicy food", "early mornings", "board games", "cold showers", "night trains",
    "Italian cinema", "rock climbing", "crossword puzzles", "fermented tea", "opera", "sailing",
    "vintage cameras", "sci-fi novels", "marathon running", "pottery", "tango", "birdwatching",
    "mechanical keyboards", "houseplants", "stand-up comedy", "chess problems", "oat milk",
    "Nordic noir", "flamenco guitar", "trail maps", "espresso", "sushi", "cycling holidays",
    "podcasts about history", "astronomy", "woodworking", "Brazilian football", "karaoke",
)  # fmt: skip


# Vectors by model, shared by every CachingEmbedder of the test process: the SQLite and the
# PostgreSQL run of a simulation embed the same sentences.
_VECTORS: dict[str, dict[str, np.ndarray]] = {}


class CachingEmbedder:
    """The same model, remembering each text's vector: long simulations embed the same
    pending texts every night, and the model is deterministic."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.cache = _VECTORS.setdefault(f"{inner.model}/{inner.dimension}", {})

    @property
    def model(self) -> str:
        """The wrapped model's id, so the store accepts it."""
        return self.inner.model

    @property
    def dimension(self) -> int:
        """The wrapped model's dimension."""
        return self.inner.dimension

    def embed(self, texts: list[str]) -> np.ndarray:
        """Vectors for texts, computing only the ones not seen before."""
        missing = list(dict.fromkeys(t for t in texts if t not in self.cache))
        if missing:
            self.cache.update(zip(missing, self.inner.embed(missing), strict=True))
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self.cache[t] for t in texts])


def distinct(candidates: Iterator[str], count: int, embedder: Embedder, limit: float) -> list[str]:
    """The first ``count`` candidates whose cosine to every one kept before stays under
    ``limit``."""
    kept: list[str] = []
    vectors = np.zeros((count, embedder.dimension), dtype=np.float32)
    for chunk in _chunks(candidates, 256):
        for text, vector in zip(chunk, embedder.embed(chunk), strict=True):
            unit = np.asarray(vector, dtype=np.float32)
            unit = unit / np.linalg.norm(unit)
            if kept and float(np.max(vectors[: len(kept)] @ unit)) >= limit:
                continue
            vectors[len(kept)] = unit
            kept.append(text)
            if len(kept) == count:
                return kept
    raise AssertionError(f"only {len(kept)} distinct sentences; widen the word pools")


def event_candidates() -> Iterator[str]:
    """'Marta and I repaired a bicycle in Porto' in every combination, spread out."""
    combos = itertools.product(PEOPLE, ACTIVITIES, PLACES)
    shuffled = sorted(combos, key=lambda c: hash_key("|".join(c)))
    for person, activity, place in shuffled:
        yield f"{person} and I {activity} {place}"


def inference_candidates() -> Iterator[str]:
    """The assistant's conclusions, one topic pair each."""
    pairs = sorted(itertools.permutations(TOPICS, 2), key=lambda p: hash_key("|".join(p)))
    for liked, disliked in pairs:
        yield f"The owner seems to enjoy {liked} more than {disliked}"


def guess_candidates() -> Iterator[str]:
    """Low-confidence facts an extractor might guess from a turn."""
    forms = ("might be into {0}", "possibly collects things related to {0}",
             "could be allergic to {0}", "may have once tried {0}", "perhaps dislikes {0}",
             "was maybe talking about {0} with a neighbour",
             "probably reads blogs on {0}")  # fmt: skip
    combos = sorted(itertools.product(forms, TOPICS), key=lambda c: hash_key("|".join(c)))
    for form, topic in combos:
        yield "The owner " + form.format(topic)


def hash_key(text: str) -> int:
    """A stable shuffle key (Python's own str hash changes per process)."""
    value = 2166136261
    for byte in text.encode():
        value = ((value ^ byte) * 16777619) % (1 << 32)
    return value


def _chunks(values: Iterator[str], size: int) -> Iterator[list[str]]:
    while chunk := list(itertools.islice(values, size)):
        yield chunk
