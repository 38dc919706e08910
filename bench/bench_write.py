"""Write-path benchmark for memoryd: remember/propose latency, embedding speed, bytes per memory.

Run from the project root:

    .venv/bin/python bench/bench_write.py [--sizes 1000,10000] [--ops 200] [--out FILE]

Everything runs on a fresh SQLite store in a temporary directory with the real local embedder
(MiniLM int8 on onnxruntime), loaded and warmed before anything is timed. The store is filled to
each size in turn (the smaller size's timed writes stay in the store and count towards the next
fill). Results are Markdown tables on stdout (and in FILE with --out); progress goes to stderr.
This is a benchmark, not a test: it asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from importlib.metadata import version
from pathlib import Path
from typing import Any, TypeVar, cast

import numpy as np
import sqlean
from tokenizers import Tokenizer

from memoryd.embedding import WINDOW_OVERLAP, WINDOW_PIECES, LocalMiniLM, Matrix

# Private, but the only way to find the tokenizer file LocalMiniLM reads; used read-only to
# count word pieces and windows exactly as the embedder cuts them.
from memoryd.embedding import _tokenizer_file as minilm_tokenizer_file
from memoryd.model import Kind, Proposal, Source
from memoryd.proposals import MAX_ITEMS
from memoryd.service import MemoryService, WriteResult
from memoryd.storage.protocols import Store, VectorHit, VectorSearch
from memoryd.storage.sqlite import SqliteStore
from memoryd.tokens import O200kTokenizer

T = TypeVar("T")

PROPOSE_BATCH = 5
WARMUP_OPS = 10
SHORT_TEXTS = 960
SHORT_BATCH = 32
SINGLE_TEXTS = 200
CHUNK_TOKENS = 500
CHUNK_TEXTS = 48
CHUNK_BATCH = 8

# ---------------------------------------------------------------------------- instrumentation


@dataclass
class Meter:
    """Seconds spent inside one kind of call, and how many calls."""

    seconds: float = 0.0
    calls: int = 0

    def timed(self, call: Callable[[], T]) -> T:
        """Run ``call`` and add its wall time to this meter."""
        start = time.perf_counter()
        try:
            return call()
        finally:
            self.seconds += time.perf_counter() - start
            self.calls += 1


class MeteredEmbedder:
    """The real embedder, with the time spent embedding recorded."""

    def __init__(self, inner: LocalMiniLM) -> None:
        self.inner = inner
        self.meter = Meter()

    @property
    def model(self) -> str:
        """The wrapped model's id."""
        return self.inner.model

    @property
    def dimension(self) -> int:
        """The wrapped model's dimension."""
        return self.inner.dimension

    def embed(self, texts: list[str]) -> Matrix:
        """Embed through the wrapped model, metered."""
        return self.meter.timed(lambda: self.inner.embed(texts))


class MeteredVectors:
    """The store's vector search, with the time spent in KNN queries recorded."""

    def __init__(self, inner: VectorSearch) -> None:
        self.inner = inner
        self.meter = Meter()

    def nearest(self, *args: Any, **kwargs: Any) -> list[VectorHit]:
        """KNN through the wrapped backend, metered (arguments passed through unchanged)."""
        return self.meter.timed(lambda: self.inner.nearest(*args, **kwargs))


class MeteredStore:
    """A SqliteStore whose vector search is metered. Every other attribute is looked up on the
    wrapped store, so members added to the Store protocol later pass through untouched."""

    def __init__(self, inner: SqliteStore) -> None:
        self.inner = inner
        self.vectors = MeteredVectors(inner.vectors)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def as_store(self) -> Store:
        """This wrapper typed as the protocol the service expects (it delegates the rest)."""
        return cast(Store, self)


# ------------------------------------------------------------------------------- test data


def choices(text: str) -> tuple[str, ...]:
    """Vocabulary written compactly: items separated by "|"."""
    return tuple(item.strip() for item in text.split("|") if item.strip())


FIRST_NAMES = choices(
    "Maya | Tomás | Priya | Jonas | Aiko | Kwame | Lena | Mateo | Sofia | Omar | Ingrid | Ravi "
    "| Chloé | Dmitri | Amara | Felix | Noor | Hugo | Yuki | Elena | Samir | Zara | Lukas | Mei "
    "| Diego | Hannah | Idris | Freya | Malik | Greta | Arjun | Beatriz | Oskar | Leila | Theo "
    "| Nadia | Emil | Rosa | Kenji | Alma | Bruno | Ines | Viktor | Anya | Pablo | Sunita"
)
LAST_NAMES = choices(
    "Okafor | Lindqvist | Moreau | Tanaka | Novak | Haddad | Ferreira | Kowalski | Brennan | "
    "Rossi | Nguyen | Schmidt | Alvarez | Petrov | Mensah | Dubois | Larsen | Costa | Yilmaz | "
    "Fischer | Murphy | Sato | Quinn | Varga | Oliveira"
)
RELATIONS = choices(
    "my sister | my brother | my manager | my landlord | our neighbour | my cousin | an old "
    "colleague | my accountant | my running partner | my mother | my father-in-law | the kids' "
    "teacher | my physiotherapist | my best friend"
)
CITIES = choices(
    "Lisbon | Porto | Madrid | Seville | Barcelona | Lyon | Marseille | Paris | Brussels | "
    "Ghent | Amsterdam | Utrecht | Hamburg | Berlin | Leipzig | Munich | Vienna | Prague | "
    "Krakow | Warsaw | Copenhagen | Oslo | Stockholm | Helsinki | Tallinn | Riga | Dublin | "
    "Cork | Edinburgh | Glasgow | Manchester | Bristol | London | Zurich | Geneva | Milan | "
    "Bologna | Naples | Athens | Istanbul | Tbilisi | Nairobi | Lagos | Accra | Cairo | "
    "Casablanca | Mumbai | Pune | Bangalore | Kyoto | Osaka | Seoul | Taipei | Hanoi | Bangkok "
    "| Singapore | Sydney | Auckland | Toronto | Montreal | Chicago | Denver | Seattle | Austin "
    "| Boston | Mexico City | Bogotá | Lima | Santiago | Montevideo"
)
VENUES = choices(
    "a small ramen bar | the public library | the climbing gym | a rooftop café | the farmers' "
    "market | the central train station | a co-working space near the river | the old harbour | "
    "a Georgian restaurant | the botanical garden | a jazz club | the university canteen | a "
    "bakery on the main square | the hotel lobby | the community centre | a tapas place by the "
    "cathedral"
)
TOPICS = choices(
    "the kitchen renovation | the quarterly budget | a trip to Japan next spring | the new "
    "cargo bike | their wedding plans | the broken boiler | a job offer from a logistics "
    "startup | the garden fence | the school application for Lily | last year's tax return | "
    "the solar panel quote | moving the server to a new host | the band's first gig | adopting "
    "a rescue dog | the mortgage renewal | the hiking route through the Dolomites | the podcast "
    "they want to start | the insurance claim for the flooded basement"
)
ITEMS = choices(
    "a secondhand cello | a standing desk | winter tyres | a cast-iron skillet | a small drone "
    "| waterproof hiking boots | a burr coffee grinder | noise-cancelling headphones | a tent "
    "for four people | a used e-reader | a rowing machine | a set of chisels"
)
BOOKS = choices(
    "The Overstory | Piranesi | The Left Hand of Darkness | Klara and the Sun | Middlemarch | "
    "The Dispossessed | Educated | Sapiens | The Remains of the Day | A Gentleman in Moscow | "
    "Braiding Sweetgrass | The Three-Body Problem"
)
EVENTS = choices(
    "a data engineering meetup | a wine tasting | the city half marathon | a pottery workshop | "
    "a Python conference | a chamber music concert | a startup pitch night | a photography "
    "exhibition | a board game evening | a charity dinner"
)
ROUTES = choices(
    "along the river | around the lake | up the castle hill | through the old town | along the "
    "canal towpath | across the harbour bridges | through the forest park | along the beach "
    "promenade | around the stadium | up to the lighthouse"
)
WEATHER = choices(
    "pouring with rain | freezing cold | hot and humid | windy | foggy | sunny and mild | "
    "snowing lightly | stormy"
)
APPOINTMENTS = choices(
    "the dentist | my GP | the optician | the physiotherapist | the dermatologist | the "
    "vet | the orthodontist | the hearing specialist"
)
AILMENTS = choices(
    "a cracked molar | a sore shoulder | new reading glasses | a rash on my arm | the cat's "
    "limp | a persistent cough | knee pain after running | blurry vision when driving"
)
HOMES = choices(
    "a two-room flat | a studio | a terraced house | a loft | a garden flat | a houseboat | a "
    "flat above a bakery | a shared house"
)
AREAS = choices(
    "near the old town | by the university | next to the main park | in the docks area | on "
    "the hill above the station | close to the market hall | in the quiet north end"
)
GARDENS = choices(
    "on the allotment | in the balcony boxes | in the community garden | in the greenhouse | "
    "along the back fence | in raised beds at the school"
)
REPAIRS = choices(
    "replaced the brake pads | fixed the air conditioning | changed the timing belt | swapped "
    "the winter tyres | repaired a cracked windscreen | sorted out the rattling exhaust | "
    "replaced the clutch | recharged the battery"
)
PLANTS = choices(
    "tomato seedlings | basil | chilli plants | courgettes | lavender | strawberries | kale | "
    "pumpkins | sunflowers | garlic bulbs | an apple tree | blueberry bushes"
)
JOBS = choices(
    "a nurse | a structural engineer | a primary school teacher | a product designer | a "
    "freelance translator | a marine biologist | a pastry chef | an airline pilot | a tax "
    "lawyer | a bus driver"
)
COMPANIES = choices(
    "a hospital | a wind energy firm | a bookshop chain | the city council | a shipping company "
    "| a video game studio | a family bakery | a research institute"
)
HOBBIES = choices(
    "bouldering | sailing | birdwatching | salsa dancing | woodworking | chess | trail running "
    "| knitting | amateur astronomy | beekeeping"
)
FOODS = choices(
    "Thai green curry | mushroom risotto | shakshuka | pierogi | lamb tagine | sushi | dal "
    "makhani | paella | pho | moussaka"
)


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
    """Seeded generator of varied, realistic memory sentences built from templates.

    Several independent slots (people, places, dates, amounts, topics) vary in every sentence,
    so few pairs come near the 0.95 cosine at which the promotion policy calls them duplicates.
    """

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self._events: tuple[Callable[[], Draft], ...] = (
            self._meeting,
            self._purchase,
            self._run,
            self._flight,
            self._dinner,
            self._payment,
            self._book,
            self._appointment,
            self._relation_moved,
            self._lease,
            self._attended,
            self._lost,
            self._fixed,
            self._planted,
            self._booked,
            self._airport,
            self._talk,
            self._car,
        )
        self._facts: tuple[Callable[[], Draft], ...] = (
            self._fact_lives,
            self._fact_job,
            self._fact_hobby,
            self._fact_food,
        )

    def draft(self) -> Draft:
        """One memory: mostly events (which activate), some facts (which wait for the owner)."""
        if self.rng.random() < 0.15:
            return self.rng.choice(self._facts)()
        return self.event()

    def event(self) -> Draft:
        """One event memory."""
        return self.rng.choice(self._events)()

    def short_sentence(self) -> str:
        """A sentence of about ten words."""
        r = self.rng
        return r.choice(
            (
                f"{self._first()} moved to {self._city()} in {self._month()} {self._year()}.",
                f"Lunch with {self._first()} at {r.choice(VENUES)} on {self._weekday()}.",
                f"Paid {self._money()} for {r.choice(ITEMS)} last {self._weekday()} afternoon.",
                f"{self._first()} is learning {r.choice(HOBBIES)} in {self._city()} this year.",
                f"Called {r.choice(RELATIONS)} about {r.choice(TOPICS)} this morning.",
            )
        )

    def prose(self, tokenizer: O200kTokenizer, tokens: int) -> str:
        """Diary-like prose cut to exactly ``tokens`` o200k tokens."""
        sentences: list[str] = []
        while tokenizer.count(" ".join(sentences)) < tokens + 20:
            sentences.append(self.draft().content)
        ids = tokenizer.encode(" ".join(sentences))[:tokens]
        return tokenizer.decode(ids)

    # Slots.
    def _first(self) -> str:
        return self.rng.choice(FIRST_NAMES)

    def _full(self) -> str:
        return f"{self._first()} {self.rng.choice(LAST_NAMES)}"

    def _city(self) -> str:
        return self.rng.choice(CITIES)

    def _when(self) -> datetime:
        start = datetime(2019, 1, 1, tzinfo=UTC)
        return start + timedelta(minutes=self.rng.randrange(7 * 365 * 24 * 60))

    def _month(self) -> str:
        return self._when().strftime("%B")

    def _year(self) -> int:
        return self.rng.randrange(2015, 2026)

    def _weekday(self) -> str:
        return self._when().strftime("%A")

    def _money(self) -> str:
        currency = self.rng.choice(("€", "£", "$", "CHF "))
        return f"{currency}{self.rng.randrange(5, 4000)}"

    @staticmethod
    def _day(at: datetime) -> str:
        return f"{at.day} {at.strftime('%B %Y')}"

    def _event(self, content: str, at: datetime, *entities: str) -> Draft:
        return Draft(Kind.EVENT, content, tuple(dict.fromkeys(entities)), occurred_at=at)

    # Event templates.
    def _meeting(self) -> Draft:
        at, who, city, venue = self._when(), self._full(), self._city(), self.rng.choice(VENUES)
        topic = self.rng.choice(TOPICS)
        text = f"Met {who} at {venue} in {city} on {self._day(at)} to talk about {topic}."
        return self._event(text, at, who, city)

    def _purchase(self) -> Draft:
        at, item, city, seller = self._when(), self.rng.choice(ITEMS), self._city(), self._full()
        text = (
            f"Bought {item} from {seller} in {city} on {self._day(at)} for {self._money()}, "
            f"after comparing it with {self.rng.choice(ITEMS)}."
        )
        return self._event(text, at, seller, city)

    def _run(self) -> Draft:
        at, city, who = self._when(), self._city(), self._full()
        route, weather = self.rng.choice(ROUTES), self.rng.choice(WEATHER)
        km = self.rng.randrange(3, 43)
        text = (
            f"Ran {km} km {route} in {city} with {who} on {self._day(at)}; it was {weather}, "
            f"and we stopped for {self.rng.choice(FOODS)} afterwards."
        )
        return self._event(text, at, city, who)

    def _flight(self) -> Draft:
        at, origin, destination, who = self._when(), self._city(), self._city(), self._full()
        text = (
            f"Flew from {origin} to {destination} with {who} on {self._day(at)} to discuss "
            f"{self.rng.choice(TOPICS)}; the flight landed {self.rng.randrange(0, 240)} "
            "minutes late."
        )
        return self._event(text, at, origin, destination, who)

    def _dinner(self) -> Draft:
        at, who, relation, city = (
            self._when(),
            self._full(),
            self.rng.choice(RELATIONS),
            self._city(),
        )
        text = (
            f"Dinner with {who} and {relation} at {self.rng.choice(VENUES)} in {city} on "
            f"{self._day(at)}; we had {self.rng.choice(FOODS)}."
        )
        return self._event(text, at, who, city)

    def _payment(self) -> Draft:
        at, relation, topic = self._when(), self.rng.choice(RELATIONS), self.rng.choice(TOPICS)
        who, city = self._full(), self._city()
        text = (
            f"Transferred {self._money()} to {relation} on {self._day(at)} towards {topic}; "
            f"{who} in {city} covered the rest."
        )
        return self._event(text, at, who, city)

    def _book(self) -> Draft:
        at, book, who, city = self._when(), self.rng.choice(BOOKS), self._full(), self._city()
        text = (
            f"Finished reading {book} on the train to {city} on {self._day(at)}; {who} lent "
            f"me their copy after we talked about {self.rng.choice(TOPICS)}."
        )
        return self._event(text, at, book, who, city)

    def _appointment(self) -> Draft:
        at, city, who = self._when(), self._city(), self._full()
        visit, reason = self.rng.choice(APPOINTMENTS), self.rng.choice(AILMENTS)
        text = (
            f"Saw {who}, {visit}, in {city} on {self._day(at)} at {at:%H:%M} about {reason}; "
            f"the bill was {self._money()}."
        )
        return self._event(text, at, who, city)

    def _relation_moved(self) -> Draft:
        at, relation, origin, destination = (
            self._when(),
            self.rng.choice(RELATIONS),
            self._city(),
            self._city(),
        )
        text = (
            f"Helped {relation} move from {origin} to {destination} on {self._day(at)}; "
            f"the van cost {self._money()}."
        )
        return self._event(text, at, origin, destination)

    def _lease(self) -> Draft:
        at, city, landlord = self._when(), self._city(), self._full()
        home, area = self.rng.choice(HOMES), self.rng.choice(AREAS)
        text = (
            f"Signed the lease for {home} {area} in {city} on {self._day(at)}; the landlord, "
            f"{landlord}, asked for {self._money()} a month."
        )
        return self._event(text, at, city, landlord)

    def _attended(self) -> Draft:
        at, event, city, who = self._when(), self.rng.choice(EVENTS), self._city(), self._full()
        text = f"Went to {event} in {city} on {self._day(at)} with {who}, who knew the organiser."
        return self._event(text, at, city, who)

    def _lost(self) -> Draft:
        at, item, venue = self._when(), self.rng.choice(ITEMS), self.rng.choice(VENUES)
        city, finder = self._city(), self._full()
        text = (
            f"Left {item} behind at {venue} in {city} on {self._day(at)} around {at:%H:%M}; "
            f"{finder} found it and kept it safe."
        )
        return self._event(text, at, city, finder)

    def _fixed(self) -> Draft:
        at, topic, who, city = self._when(), self.rng.choice(TOPICS), self._full(), self._city()
        hours = self.rng.randrange(1, 12)
        text = (
            f"Sorted out {topic} with help from {who} at {self.rng.choice(VENUES)} in {city} "
            f"on {self._day(at)}; it took {hours} hours."
        )
        return self._event(text, at, who, city)

    def _planted(self) -> Draft:
        at, who, city = self._when(), self._full(), self._city()
        plant, place = self.rng.choice(PLANTS), self.rng.choice(GARDENS)
        text = (
            f"Planted {plant} with {who} {place} in {city} on {self._day(at)}, just before "
            f"{self.rng.choice(WEATHER)} weather."
        )
        return self._event(text, at, who, city)

    def _booked(self) -> Draft:
        at, venue, city, who = self._when(), self.rng.choice(VENUES), self._city(), self._full()
        text = (
            f"Booked a table for {self.rng.randrange(2, 13)} at {venue} in {city} for "
            f"{self._day(at)} at {at:%H:%M}, to celebrate {who}'s promotion."
        )
        return self._event(text, at, city, who)

    def _airport(self) -> Draft:
        at, who, city = self._when(), self._full(), self._city()
        text = (
            f"Picked up {who} from the airport in {city} at {at:%H:%M} on {self._day(at)}; "
            f"the drive home took {self.rng.randrange(15, 120)} minutes."
        )
        return self._event(text, at, who, city)

    def _talk(self) -> Draft:
        at, event, city, host = self._when(), self.rng.choice(EVENTS), self._city(), self._full()
        subject = self.rng.choice(TOPICS)
        text = (
            f"Gave a short talk on {subject} at {event} in {city} on {self._day(at)}, invited "
            f"by {host}; about {self.rng.randrange(10, 400)} people came."
        )
        return self._event(text, at, city, host)

    def _car(self) -> Draft:
        at, city, who, repair = self._when(), self._city(), self._full(), self.rng.choice(REPAIRS)
        text = (
            f"{who} at the garage in {city} {repair} on {self._day(at)}; it cost "
            f"{self._money()} and the car was ready by {self._weekday()}."
        )
        return self._event(text, at, who, city)

    def _fact(self, who: str, predicate: str, value: str, content: str) -> Draft:
        return Draft(
            Kind.FACT,
            content,
            (who,),
            subject=who,
            predicate=predicate,
            object=value,
        )

    def _fact_lives(self) -> Draft:
        who, city = self._full(), self._city()
        since = self._year()
        return self._fact(who, "lives in", city, f"{who} lives in {city}, since {since}.")

    def _fact_job(self) -> Draft:
        who, job, company = self._full(), self.rng.choice(JOBS), self.rng.choice(COMPANIES)
        value = f"{job} at {company}"
        return self._fact(who, "works as", value, f"{who} works as {value}.")

    def _fact_hobby(self) -> Draft:
        who, hobby = self._full(), self.rng.choice(HOBBIES)
        return self._fact(
            who, "main hobby", hobby, f"{who} spends most weekends on {hobby} these days."
        )

    def _fact_food(self) -> Draft:
        who, food = self._full(), self.rng.choice(FOODS)
        return self._fact(who, "favourite dish", food, f"{who}'s favourite dish is {food}.")


# ------------------------------------------------------------------------------ measurement


@dataclass
class WriteSample:
    """One timed write and how its time split."""

    total: float
    embed: float
    knn: float
    knn_calls: int
    outcomes: tuple[str, ...]


@dataclass
class WriteRun:
    """All timed writes of one operation at one store size."""

    operation: str
    size_before: int
    size_after: int
    wall: float
    items_per_op: int
    samples: list[WriteSample] = field(default_factory=list)


@dataclass
class FillRun:
    """Filling the store up to one size."""

    size: int
    added: int
    seconds: float
    embed: float
    knn: float
    outcomes: Counter[str]


@dataclass
class SizeRow:
    """Bytes on disk at one store size, with a per-table breakdown."""

    memories: int
    db_bytes: int
    wal_bytes: int
    parts: dict[str, int]


@dataclass
class EmbedRow:
    """Embedding throughput for one kind of input."""

    label: str
    texts: int
    batch: int
    size_note: str
    windows: float
    seconds: float
    batch_ms: list[float]


def measure_writes(
    service: MemoryService,
    embedder: MeteredEmbedder,
    store: MeteredStore,
    operation: str,
    items_per_op: int,
    ops: int,
    write: Callable[[], list[WriteResult]],
) -> WriteRun:
    """Run ``write`` WARMUP_OPS times untimed, then ``ops`` times timed, one op at a time."""
    for _ in range(WARMUP_OPS):
        write()
    before = service.store.memories.count()
    run = WriteRun(operation, before, before, 0.0, items_per_op)
    started = time.perf_counter()
    for _ in range(ops):
        embed0, knn0 = embedder.meter.seconds, store.vectors.meter.seconds
        calls0 = store.vectors.meter.calls
        start = time.perf_counter()
        results = write()
        total = time.perf_counter() - start
        run.samples.append(
            WriteSample(
                total=total,
                embed=embedder.meter.seconds - embed0,
                knn=store.vectors.meter.seconds - knn0,
                knn_calls=store.vectors.meter.calls - calls0,
                outcomes=tuple(r.outcome.value for r in results),
            )
        )
    run.wall = time.perf_counter() - started
    run.size_after = service.store.memories.count()
    return run


def fill(
    service: MemoryService,
    embedder: MeteredEmbedder,
    store: MeteredStore,
    corpus: Corpus,
    size: int,
) -> FillRun:
    """Propose batches of generated memories until the store holds exactly ``size`` rows."""
    count = service.store.memories.count()
    run = FillRun(size, 0, 0.0, 0.0, 0.0, Counter())
    embed0, knn0 = embedder.meter.seconds, store.vectors.meter.seconds
    start = time.perf_counter()
    last_report = start
    while count < size:
        batch = [corpus.draft().proposal() for _ in range(min(MAX_ITEMS, size - count))]
        results = service.propose(batch, source=Source.TURN)
        run.outcomes.update(r.outcome.value for r in results)
        new_count = service.store.memories.count()
        run.added += new_count - count
        count = new_count
        if time.perf_counter() - last_report > 10:
            last_report = time.perf_counter()
            progress(f"  filled {count:,}/{size:,} ({last_report - start:.0f} s)")
    run.seconds = time.perf_counter() - start
    run.embed = embedder.meter.seconds - embed0
    run.knn = store.vectors.meter.seconds - knn0
    return run


def measure_size(store: MeteredStore) -> SizeRow:
    """Checkpoint the WAL, then the db and -wal file sizes and bytes per table (dbstat)."""
    sqlite = store.inner
    # No public call is meant for this (SqliteStore.erase_traces() runs the same pragma, but it
    # is named for purging and may change), so the benchmark uses the store's private
    # connection. wal_checkpoint returns (busy, wal pages, pages checkpointed).
    busy, _, _ = sqlite._db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    if busy:
        progress("warning: the WAL checkpoint was blocked; the -wal size includes live pages")
    path = sqlite.path
    wal = Path(f"{path}-wal")
    # Page statistics come from a separate read-only connection, not the store's own.
    reader = sqlean.connect(f"file:{path}?mode=ro", uri=True)
    try:
        owners = dict(reader.execute("SELECT name, tbl_name FROM sqlite_master"))
        pages = reader.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall()
    finally:
        reader.close()
    parts: Counter[str] = Counter()
    for name, size in pages:
        parts[size_group(str(name), owners)] += int(size)
    return SizeRow(
        memories=sqlite.memories.count(),
        db_bytes=path.stat().st_size,
        wal_bytes=wal.stat().st_size if wal.exists() else 0,
        parts=dict(parts),
    )


def size_group(name: str, owners: dict[str, str]) -> str:
    """Which column of the size table a table or index belongs to."""
    owner = owners.get(name, name)
    if owner.startswith(("memory_bits", "memory_embeddings")):
        return "vectors"
    if owner.startswith("memory_fts"):
        return "fts"
    if owner == "memories":
        return "rows"
    if owner in ("entities", "entity_aliases", "memory_entities"):
        return "entities"
    if owner == "audit_log":
        return "audit"
    return "other"


def measure_embedding(
    minilm: LocalMiniLM, corpus: Corpus, tokenizer: O200kTokenizer
) -> list[EmbedRow]:
    """Short sentences one by one and in batches, then 500-token chunks in batches."""
    # The tokenizer file itself truncates at 128 pieces; counting pieces needs no limit.
    pieces = Tokenizer.from_file(str(minilm_tokenizer_file()))
    pieces.no_padding()
    pieces.no_truncation()
    windows = Tokenizer.from_file(str(minilm_tokenizer_file()))
    windows.no_padding()
    windows.enable_truncation(max_length=WINDOW_PIECES, stride=WINDOW_OVERLAP)

    def row(label: str, texts: list[str], batch: int, note: str) -> EmbedRow:
        counts = [1 + len(e.overflowing) for e in windows.encode_batch(texts)]
        batch_ms: list[float] = []
        start = time.perf_counter()
        for offset in range(0, len(texts), batch):
            begin = time.perf_counter()
            minilm.embed(texts[offset : offset + batch])
            batch_ms.append((time.perf_counter() - begin) * 1000)
        seconds = time.perf_counter() - start
        return EmbedRow(label, len(texts), batch, note, float(np.mean(counts)), seconds, batch_ms)

    short = [corpus.short_sentence() for _ in range(SHORT_TEXTS)]
    words = np.mean([len(t.split()) for t in short])
    short_pieces = np.mean([len(e.ids) for e in pieces.encode_batch(short)])
    note = f"{words:.1f} words, {short_pieces:.1f} pieces"
    progress("embedding: short sentences")
    rows = [
        row("short sentence", short[:SINGLE_TEXTS], 1, note),
        row("short sentence", short, SHORT_BATCH, note),
    ]
    progress("embedding: 500-token chunks")
    chunks = [corpus.prose(tokenizer, CHUNK_TOKENS) for _ in range(CHUNK_TEXTS)]
    o200k = np.mean([tokenizer.count(c) for c in chunks])
    chunk_pieces = np.mean([len(e.ids) for e in pieces.encode_batch(chunks)])
    note = f"{o200k:.0f} o200k tokens, {chunk_pieces:.0f} pieces"
    rows.append(row(f"{CHUNK_TOKENS}-token chunk", chunks, CHUNK_BATCH, note))
    return rows


# --------------------------------------------------------------------------------- reporting


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table; every column but the first right-aligned."""
    align = [":---"] + ["---:"] * (len(headers) - 1)
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (linear interpolation)."""
    return float(np.percentile(np.asarray(values), q))


def outcome_text(counter: Counter[str]) -> str:
    """'activated 990, pending 10' in a stable order."""
    order = ("activated", "pending", "reinforced", "dropped")
    return ", ".join(f"{name} {counter[name]}" for name in order if counter[name])


def write_table(runs: Sequence[WriteRun]) -> str:
    """Latency, throughput and time split of the timed writes."""
    rows = []
    for run in runs:
        totals = [s.total * 1000 for s in run.samples]
        n = len(run.samples)
        embed = sum(s.embed for s in run.samples) / n * 1000
        knn = sum(s.knn for s in run.samples) / n * 1000
        mean = sum(totals) / n
        calls = sum(s.knn_calls for s in run.samples) / n
        outcomes: Counter[str] = Counter(o for s in run.samples for o in s.outcomes)
        ops_per_s = n / run.wall
        rows.append(
            [
                run.operation,
                f"{run.size_before:,}→{run.size_after:,}",
                str(n),
                f"{percentile(totals, 50):.1f}",
                f"{percentile(totals, 95):.1f}",
                f"{mean:.1f}",
                f"{ops_per_s:.1f}",
                f"{ops_per_s * run.items_per_op:.1f}",
                f"{embed:.1f}",
                f"{knn:.1f} ({calls:.0f})",
                f"{mean - embed - knn:.1f}",
                outcome_text(outcomes),
            ]
        )
    headers = (
        "operation",
        "memories",
        "ops",
        "p50 ms",
        "p95 ms",
        "mean ms",
        "ops/s",
        "items/s",
        "embed ms",
        "KNN ms (queries)",
        "rest ms",
        "outcomes",
    )
    return table(headers, rows)


def fill_table(runs: Sequence[FillRun]) -> str:
    """How long filling took and where the time went."""
    rows = [
        [
            f"{run.size:,}",
            f"{run.added:,}",
            f"{run.seconds:.1f}",
            f"{run.added / run.seconds:.0f}" if run.seconds else "-",
            f"{run.embed:.1f}",
            f"{run.knn:.1f}",
            f"{run.seconds - run.embed - run.knn:.1f}",
            outcome_text(run.outcomes),
        ]
        for run in runs
    ]
    headers = (
        "fill to",
        "added",
        "seconds",
        "memories/s",
        "embed s",
        "KNN s",
        "rest s",
        "outcomes",
    )
    return table(headers, rows)


def size_table(rows: Sequence[SizeRow]) -> str:
    """Bytes on disk per memory, in total and by table."""

    def per(value: int, row: SizeRow) -> str:
        return f"{value / row.memories:,.0f}"

    out = [
        [
            f"{row.memories:,}",
            f"{row.db_bytes / 2**20:.2f}",
            f"{row.wal_bytes:,}",
            per(row.db_bytes + row.wal_bytes, row),
            per(row.parts.get("rows", 0), row),
            per(row.parts.get("fts", 0), row),
            per(row.parts.get("vectors", 0), row),
            per(row.parts.get("entities", 0), row),
            per(row.parts.get("audit", 0), row),
            per(row.parts.get("other", 0), row),
        ]
        for row in rows
    ]
    headers = (
        "memories",
        "db MiB",
        "wal bytes",
        "bytes/memory",
        "rows+indexes",
        "FTS5",
        "vectors",
        "entities",
        "audit",
        "other",
    )
    return table(headers, out)


def embed_table(rows: Sequence[EmbedRow]) -> str:
    """Texts per second and per-batch latency of the embedder."""
    out = [
        [
            row.label,
            row.size_note,
            f"{row.windows:.2f}",
            str(row.texts),
            str(row.batch),
            f"{percentile(row.batch_ms, 50):.1f}",
            f"{percentile(row.batch_ms, 95):.1f}",
            f"{row.texts / row.seconds:.1f}",
        ]
        for row in rows
    ]
    headers = (
        "input",
        "mean size",
        "windows/text",
        "texts",
        "batch",
        "p50 ms/batch",
        "p95 ms/batch",
        "texts/s",
    )
    return table(headers, out)


def progress(message: str) -> None:
    """A progress line on stderr, so stdout stays pure Markdown."""
    print(message, file=sys.stderr, flush=True)


# -------------------------------------------------------------------------------------- main


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--sizes",
        default="1000,10000",
        help="store sizes to measure at, comma-separated, ascending (default 1000,10000)",
    )
    parser.add_argument("--ops", type=int, default=200, help="timed writes per operation")
    parser.add_argument("--seed", type=int, default=7, help="seed of the generated text")
    parser.add_argument("--out", type=Path, help="also write the tables to this file")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run every measurement and print the tables."""
    args = parse_args(argv)
    load_before = os.getloadavg()
    run_start = time.perf_counter()
    sizes = sorted({int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()})
    corpus = Corpus(args.seed)
    tokenizer = O200kTokenizer()
    tokenizer.count("warm up the o200k ranks")

    minilm = LocalMiniLM()
    load_start = time.perf_counter()
    minilm.embed(["load the model"])
    load_seconds = time.perf_counter() - load_start
    minilm.embed([corpus.draft().content for _ in range(64)])

    embed_rows = measure_embedding(minilm, corpus, tokenizer)

    embedder = MeteredEmbedder(minilm)
    fills: list[FillRun] = []
    writes: list[WriteRun] = []
    sizes_on_disk: list[SizeRow] = []
    with tempfile.TemporaryDirectory(prefix="memoryd-bench-") as tmp:
        store = MeteredStore(SqliteStore(Path(tmp) / "memoryd.db", create=True))
        service = MemoryService(store.as_store(), embedder)
        try:
            for size in sizes:
                progress(f"filling to {size:,}")
                fills.append(fill(service, embedder, store, corpus, size))
                sizes_on_disk.append(measure_size(store))

                def remember() -> list[WriteResult]:
                    draft = corpus.event()
                    return [
                        service.remember(
                            draft.content,
                            kind=Kind.EVENT,
                            entities=draft.entities,
                            occurred_at=draft.occurred_at,
                        )
                    ]

                def propose() -> list[WriteResult]:
                    batch = [corpus.draft().proposal() for _ in range(PROPOSE_BATCH)]
                    return service.propose(batch, source=Source.TURN)

                progress(f"timing remember at {size:,}")
                writes.append(
                    measure_writes(service, embedder, store, "remember", 1, args.ops, remember)
                )
                progress(f"timing propose at {size:,}")
                writes.append(
                    measure_writes(
                        service,
                        embedder,
                        store,
                        f"propose {PROPOSE_BATCH}",
                        PROPOSE_BATCH,
                        args.ops,
                        propose,
                    )
                )
        finally:
            service.close()

    loads = (load_before, os.getloadavg())
    run_seconds = time.perf_counter() - run_start
    report = render(load_seconds, run_seconds, loads, embed_rows, fills, writes, sizes_on_disk)
    print(report)
    if args.out:
        args.out.write_text(report + "\n", encoding="utf-8")
    return 0


def render(
    load_seconds: float,
    run_seconds: float,
    loads: tuple[tuple[float, float, float], tuple[float, float, float]],
    embed_rows: Sequence[EmbedRow],
    fills: Sequence[FillRun],
    writes: Sequence[WriteRun],
    sizes_on_disk: Sequence[SizeRow],
) -> str:
    """The whole report as Markdown."""
    cores = os.cpu_count()
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    machine = (
        f"{cores} cores ({platform.machine()}), Python {platform.python_version()}, "
        f"onnxruntime {version('onnxruntime')}, sqlite-vec {version('sqlite-vec')}, "
        f"sqlean.py {version('sqlean.py')}"
    )

    def section(title: str, body: str) -> Iterator[str]:
        yield f"## {title}\n"
        yield f"{stamp} · {machine}\n"
        yield body + "\n"

    before, after = (" / ".join(f"{x:.2f}" for x in load) for load in loads)
    parts = [
        "# memoryd write benchmark\n",
        f"Run time {run_seconds:.0f} s. MiniLM cold load: {load_seconds:.2f} s. "
        f"Load average (1/5/15 min) at start: {before}, at end: {after} "
        "(other work on the machine inflates every number below).\n",
    ]
    parts += section("Writes (owner remember, turn propose)", write_table(writes))
    parts += section("Embedding throughput (LocalMiniLM, warm)", embed_table(embed_rows))
    parts += section("Store size per memory (after WAL checkpoint)", size_table(sizes_on_disk))
    parts += section("Fill (propose in batches of 100)", fill_table(fills))
    return "\n".join(parts)


if __name__ == "__main__":
    raise SystemExit(main())
