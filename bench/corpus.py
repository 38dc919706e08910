"""A generated, varied corpus of personal memories for the latency benchmarks."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

from memoryd.model import Importance, Kind

NAMES = [
    "Ana", "Marco", "Priya", "Tom", "Lena", "Kenji", "Sofia", "Omar", "Chloe", "Rafael", "Ines",
    "Jonas", "Mei", "Lucas", "Amara", "Felix", "Nadia", "Diego", "Hana", "Ivan", "Zoe", "Malik",
    "Clara", "Theo", "Yara", "Bruno", "Elif", "Noah", "Aisha", "Pedro",
]  # fmt: skip
PLACES = [
    "Lisbon", "Porto", "Sintra", "Berlin", "Kyoto", "Bali", "Madrid", "Oslo", "Cairo", "Lima",
    "the office", "the gym", "the market", "the beach", "the library", "the park", "Taberna Sal",
    "the climbing hall", "the dentist", "the airport",
]  # fmt: skip
ACTIVITIES = [
    "had dinner", "went climbing", "played chess", "watched a film", "went for a run",
    "cooked pasta", "visited a museum", "fixed the bike", "talked about work", "went shopping",
    "took photos", "went swimming", "planned a trip", "read a novel", "played football",
    "painted the fence", "bought a plant", "learned a song", "went to a concert", "baked bread",
]  # fmt: skip
TOPICS = [
    "green tea", "jazz", "sci-fi novels", "spicy food", "early mornings", "board games", "cats",
    "sailing", "Rust", "photography", "gardening", "chess", "running", "Italian wine", "sushi",
]  # fmt: skip
QUESTIONS = [
    "What did I do with {name} last week?",
    "When did I last go to {place}?",
    "Does {name} like {topic}?",
    "What do I know about {name}?",
    "Where did I {activity} recently?",
    "Any plans involving {place}?",
    "What are my preferences about {topic}?",
    "Who did I meet in {place} in August?",
]


@dataclass(frozen=True)
class Item:
    """One memory to store."""

    kind: Kind
    content: str
    occurred_at: datetime | None
    importance: Importance | None
    confidence: float


def memories(count: int, *, seed: int, now: datetime) -> Iterator[Item]:
    """``count`` distinct memories: mostly events, some facts, a few lessons and inferences."""
    rng = random.Random(seed)
    for number in range(count):
        roll = rng.random()
        name, other = rng.sample(NAMES, 2)
        place, activity, topic = rng.choice(PLACES), rng.choice(ACTIVITIES), rng.choice(TOPICS)
        when = now - timedelta(days=rng.uniform(0, 720))
        if roll < 0.7:
            content = (
                f"{activity.capitalize()} with {name} at {place} on {when:%A %d %B %Y}"
                f" (#{number}); {other} joined later"
            )
            yield Item(Kind.EVENT, content, when, None, 0.9)
        elif roll < 0.9:
            content = f"{name} really enjoys {topic} and mentioned {place} (note {number})"
            yield Item(Kind.FACT, content, None, None, 1.0)
        elif roll < 0.95:
            content = (
                f"When talking about {topic}, keep it short and mention {name} (rule {number})"
            )
            importance = Importance.HIGH if number % 50 == 0 else Importance.MEDIUM
            yield Item(Kind.LESSON, content, None, importance, 1.0)
        else:
            content = f"{name} seems to prefer {topic} over {rng.choice(TOPICS)} ({number})"
            yield Item(Kind.INFERENCE, content, None, None, round(rng.uniform(0.4, 0.9), 2))


def questions(count: int, *, seed: int) -> list[str]:
    """Recall messages of the kinds an assistant sees."""
    rng = random.Random(seed)
    return [
        rng.choice(QUESTIONS).format(
            name=rng.choice(NAMES),
            place=rng.choice(PLACES),
            topic=rng.choice(TOPICS),
            activity=rng.choice(ACTIVITIES),
        )
        for _ in range(count)
    ]
