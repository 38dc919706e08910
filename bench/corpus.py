"""The generated, seeded corpus every benchmark draws from.

Two profiles over one module:

- ``memories()`` and ``questions()``: the recall profile (bench_recall, bench_http,
  bench_extraction). A small cast (30 people, 20 places) so that generated questions name people
  and places the store knows; every item carries its number, so no two are alike.
- ``Corpus``: the write profile (bench_write). Memories as an extractor would propose them
  (kind, entities, occurred_at, subject/predicate/object for facts), written from templates
  whose many independent slots (people, cities, venues, dates, amounts, topics) vary in every
  sentence, so few pairs come near the 0.95 cosine at which the promotion policy calls two
  memories duplicates; the write path then stores, rather than reinforces, what it is given.

No text contains a sensitive phrase or anything credential-like.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from string import Formatter

import moved_modules  # noqa: F401  (an old checkout's modules under today's paths)
from vocabulary import (
    ACTIVITIES,
    AILMENTS,
    APPOINTMENTS,
    AREAS,
    BOOKS,
    CITIES,
    COMPANIES,
    EVENTS,
    FIRST_NAMES,
    FOODS,
    GARDENS,
    HOBBIES,
    HOMES,
    INTERESTS,
    ITEMS,
    JOBS,
    LAST_NAMES,
    NAMES,
    PLACES,
    PLANTS,
    QUESTION_TEMPLATES,
    RELATIONS,
    REPAIRS,
    ROUTES,
    TOPICS,
    VENUES,
    WEATHER,
)

from memoryd.memory.model import Importance, Kind, Proposal
from memoryd.providers.tokenizer import O200kTokenizer

# ---------------------------------------------------------------------- recall profile


@dataclass(frozen=True)
class Item:
    """One memory to store directly (recall profile)."""

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
        place, activity, topic = rng.choice(PLACES), rng.choice(ACTIVITIES), rng.choice(INTERESTS)
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
            content = f"{name} seems to prefer {topic} over {rng.choice(INTERESTS)} ({number})"
            yield Item(Kind.INFERENCE, content, None, None, round(rng.uniform(0.4, 0.9), 2))


def questions(count: int, *, seed: int) -> list[str]:
    """Recall messages of the kinds an assistant sees, about the recall profile's cast."""
    rng = random.Random(seed)
    return [
        rng.choice(QUESTION_TEMPLATES).format(
            name=rng.choice(NAMES),
            place=rng.choice(PLACES),
            topic=rng.choice(INTERESTS),
            activity=rng.choice(ACTIVITIES),
        )
        for _ in range(count)
    ]


# ----------------------------------------------------------------------- write profile

# Event templates and the slots whose values the event names as entities. A slot name ending
# in a digit draws again from the same list ("city2": a second, independent city).
EVENT_TEMPLATES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Met {person} at {venue} in {city} on {day} to talk about {topic}.", ("person", "city")),
    (
        "Bought {item} from {person} in {city} on {day} for {money}, after comparing it with "
        "{item2}.",
        ("person", "city"),
    ),
    (
        "Ran {km} km {route} in {city} with {person} on {day}; it was {weather}, and we stopped "
        "for {food} afterwards.",
        ("city", "person"),
    ),
    (
        "Flew from {city} to {city2} with {person} on {day} to discuss {topic}; the flight "
        "landed {late} minutes late.",
        ("city", "city2", "person"),
    ),
    (
        "Dinner with {person} and {relation} at {venue} in {city} on {day}; we had {food}.",
        ("person", "city"),
    ),
    (
        "Transferred {money} to {relation} on {day} towards {topic}; {person} in {city} covered "
        "the rest.",
        ("person", "city"),
    ),
    (
        "Finished reading {book} on the train to {city} on {day}; {person} lent me their copy "
        "after we talked about {topic}.",
        ("book", "person", "city"),
    ),
    (
        "Saw {person}, {appointment}, in {city} on {day} at {clock} about {ailment}; the bill "
        "was {money}.",
        ("person", "city"),
    ),
    (
        "Helped {relation} move from {city} to {city2} on {day}; the van cost {money}.",
        ("city", "city2"),
    ),
    (
        "Signed the lease for {home} {area} in {city} on {day}; the landlord, {person}, asked "
        "for {money} a month.",
        ("city", "person"),
    ),
    (
        "Went to {event} in {city} on {day} with {person}, who knew the organiser.",
        ("city", "person"),
    ),
    (
        "Left {item} behind at {venue} in {city} on {day} around {clock}; {person} found it and "
        "kept it safe.",
        ("city", "person"),
    ),
    (
        "Sorted out {topic} with help from {person} at {venue} in {city} on {day}; it took "
        "{hours} hours.",
        ("person", "city"),
    ),
    (
        "Planted {plant} with {person} {garden} in {city} on {day}, just before {weather} weather.",
        ("person", "city"),
    ),
    (
        "Booked a table for {guests} at {venue} in {city} for {day} at {clock}, to celebrate "
        "{person}'s promotion.",
        ("city", "person"),
    ),
    (
        "Picked up {person} from the airport in {city} at {clock} on {day}; the drive home took "
        "{drive} minutes.",
        ("person", "city"),
    ),
    (
        "Gave a short talk on {topic} at {event} in {city} on {day}, invited by {person}; about "
        "{audience} people came.",
        ("city", "person"),
    ),
    (
        "{person} at the garage in {city} {repair} on {day}; it cost {money} and the car was "
        "ready by {weekday}.",
        ("person", "city"),
    ),
)
# Fact templates: predicate, the slot that is the object, the sentence. The subject is {person}.
FACT_TEMPLATES: tuple[tuple[str, str, str], ...] = (
    ("lives in", "city", "{person} lives in {city}, since {year}."),
    ("works as", "job", "{person} works as {job}."),
    ("main hobby", "hobby", "{person} spends most weekends on {hobby} these days."),
    ("favourite dish", "food", "{person}'s favourite dish is {food}."),
)
SHORT_TEMPLATES = (
    "{first} moved to {city} in {month} {year}.",
    "Lunch with {first} at {venue} on {weekday}.",
    "Paid {money} for {item} last {weekday} afternoon.",
    "{first} is learning {hobby} in {city} this year.",
    "Called {relation} about {topic} this morning.",
)
WORDS: dict[str, tuple[str, ...]] = {
    "first": FIRST_NAMES,
    "relation": RELATIONS,
    "city": CITIES,
    "venue": VENUES,
    "topic": TOPICS,
    "item": ITEMS,
    "book": BOOKS,
    "event": EVENTS,
    "route": ROUTES,
    "weather": WEATHER,
    "appointment": APPOINTMENTS,
    "ailment": AILMENTS,
    "home": HOMES,
    "area": AREAS,
    "garden": GARDENS,
    "repair": REPAIRS,
    "plant": PLANTS,
    "hobby": HOBBIES,
    "food": FOODS,
}
# Whole-number slots: [low, high).
NUMBERS: dict[str, tuple[int, int]] = {
    "km": (3, 43),
    "late": (0, 240),
    "hours": (1, 12),
    "guests": (2, 13),
    "drive": (15, 120),
    "audience": (10, 400),
    "year": (2015, 2026),
}
FACT_SHARE = 0.15


@dataclass(frozen=True)
class Draft:
    """One generated memory: its sentence and the structure an extractor would attach."""

    kind: Kind
    content: str
    entities: tuple[str, ...]
    occurred_at: datetime | None = None
    subject: str | None = None
    predicate: str | None = None
    object: str | None = None

    def proposal(self) -> Proposal:
        """As an extracted proposal with high confidence."""
        return Proposal(
            kind=self.kind,
            content=self.content,
            confidence=0.9,
            changes_behavior=False,
            subject=self.subject,
            predicate=self.predicate,
            object=self.object,
            entities=self.entities,
            occurred_at=self.occurred_at,
        )


class Corpus:
    """Seeded generator of varied, realistic memory sentences (the write profile)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def draft(self) -> Draft:
        """One memory: mostly events (which activate), some facts (which wait for the owner)."""
        if self.rng.random() < FACT_SHARE:
            return self.fact()
        return self.event()

    def event(self) -> Draft:
        """One event memory, dated somewhere in 2019-2025."""
        template, entity_slots = self.rng.choice(EVENT_TEMPLATES)
        at = self._when()
        values = self._fill(template, at)
        entities = tuple(dict.fromkeys(values[slot] for slot in entity_slots))
        return Draft(Kind.EVENT, template.format(**values), entities, occurred_at=at)

    def fact(self) -> Draft:
        """One fact about a person, with subject, predicate and object."""
        predicate, object_slot, template = self.rng.choice(FACT_TEMPLATES)
        values = self._fill(template, self._when())
        who = values["person"]
        return Draft(
            Kind.FACT,
            template.format(**values),
            (who,),
            subject=who,
            predicate=predicate,
            object=values[object_slot],
        )

    def short_sentence(self) -> str:
        """A sentence of about ten words."""
        template = self.rng.choice(SHORT_TEMPLATES)
        return template.format(**self._fill(template, self._when()))

    def prose(self, tokenizer: O200kTokenizer, tokens: int) -> str:
        """Diary-like prose cut to exactly ``tokens`` o200k tokens."""
        sentences: list[str] = []
        while tokenizer.count(" ".join(sentences)) < tokens + 20:
            sentences.append(self.draft().content)
        ids = tokenizer.encode(" ".join(sentences))[:tokens]
        return tokenizer.decode(ids)

    def _fill(self, template: str, at: datetime) -> dict[str, str]:
        """A value for every slot of ``template``, drawn in order; a repeated slot repeats."""
        values: dict[str, str] = {}
        for _, slot, _, _ in Formatter().parse(template):
            if slot and slot not in values:
                values[slot] = self._draw(slot.rstrip("0123456789"), at)
        return values

    def _draw(self, slot: str, at: datetime) -> str:
        """One value for a slot; ``day`` and ``clock`` say when the memory happened."""
        rng = self.rng
        if slot in WORDS:
            return rng.choice(WORDS[slot])
        if slot in NUMBERS:
            return str(rng.randrange(*NUMBERS[slot]))
        if slot == "person":
            return f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}"
        if slot == "job":
            return f"{rng.choice(JOBS)} at {rng.choice(COMPANIES)}"
        if slot == "money":
            return f"{rng.choice(('€', '£', '$', 'CHF '))}{rng.randrange(5, 4000)}"
        if slot == "day":
            return f"{at.day} {at:%B %Y}"
        if slot == "clock":
            return f"{at:%H:%M}"
        if slot == "weekday":
            return f"{self._when():%A}"
        if slot == "month":
            return f"{self._when():%B}"
        raise KeyError(f"no generator for slot {slot!r}")

    def _when(self) -> datetime:
        """A minute in the seven years from 2019."""
        start = datetime(2019, 1, 1, tzinfo=UTC)
        return start + timedelta(minutes=self.rng.randrange(7 * 365 * 24 * 60))
