"""`memoryd consolidate` killed with SIGKILL at random points leaves a sound store: every
memory is either before or after its stage's change, and a later run finishes the job exactly
as a run that was never interrupted would have."""

from __future__ import annotations

import random
import shutil
import signal
import subprocess
import time
from collections import Counter
from contextlib import closing
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import memoryd
from memoryd.consolidation.policy import Stage
from memoryd.ids import IdGenerator
from memoryd.memory.model import Memory, Source, Status
from memoryd.memory.promotion_policy import Outcome
from memoryd.providers.embedder import LocalMiniLM
from memoryd.service import MemoryService
from tests.builders import item
from tests.distinct_texts import distinct, event_candidates, guess_candidates, inference_candidates
from tests.e2e.conftest import Cli
from tests.e2e.server import MEMORYD

LATER = datetime(2026, 6, 1, 3, 0, tzinfo=UTC)
PER_STAGE = 80
TWINS = 30
KILLS = 10


def ago(days: int) -> datetime:
    return LATER - timedelta(days=days)


def seed(service: MemoryService, embedder: LocalMiniLM) -> dict[str, list[Memory]]:
    """A few hundred memories due for each stage at LATER, written through the service."""
    texts = distinct(event_candidates(), 2 * PER_STAGE + 2 * TWINS, embedder, 0.92)
    events, facts, sure = texts[:PER_STAGE], texts[PER_STAGE : -2 * TWINS], texts[-TWINS:]
    guesses = distinct(guess_candidates(), PER_STAGE, embedder, 0.92)
    hunches = distinct(inference_candidates(), PER_STAGE, embedder, 0.92)

    def written(batch: list[dict[str, object]], at: datetime, status: Status) -> list[Memory]:
        results = [  # a batch holds at most 100 items
            result
            for start in range(0, len(batch), 100)
            for result in service.propose(
                {"memories": batch[start : start + 100]}, source=Source.TURN, now=at
            )
        ]
        assert [r.outcome for r in results] == [
            Outcome.ACTIVATED if status is Status.ACTIVE else Outcome.PENDING
        ] * len(batch)
        return [r.memory for r in results if r.memory is not None]

    seeded = {
        "events": written([item(t) for t in events], ago(200), Status.ACTIVE),
        "facts": written(
            [
                item(
                    t,
                    kind="fact",
                    confidence=0.9,
                    subject=f"household item {i}",
                    predicate="recorded as",
                    object=f"entry {i}",
                )
                for i, t in enumerate(facts)
            ],
            ago(380),
            Status.PENDING,
        ),
        "hunches": written(
            [
                item(t, kind="inference", confidence=0.8 if i % 2 else 0.5)
                for i, t in enumerate(hunches)
            ],
            ago(100),
            Status.PENDING,
        ),
        "guesses": written(
            [item(t, kind="fact", confidence=0.3) for t in guesses], ago(70), Status.PENDING
        ),
        "sure": written(
            [item(t, kind="fact", confidence=0.9) for t in sure], ago(10), Status.PENDING
        ),
    }
    for memory in seeded["facts"]:
        service.confirm(memory.id, now=ago(380))
    for memory in seeded["hunches"]:
        service.confirm(memory.id, now=ago(100))
    # Two pending copies of one text: propose refuses them, an import or an older version may
    # not, so the copies go in through the store.
    ids = IdGenerator()
    twins = [replace(m, id=ids.new_id(ago(9)), created_at=ago(9)) for m in seeded["sure"]]
    vectors = embedder.embed([m.content for m in twins])
    with service.store.transaction():
        for twin, vector in zip(twins, vectors, strict=True):
            service.store.memories.insert(twin, vector)
    seeded["twins"] = twins
    return {name: [service.get(m.id) for m in rows] for name, rows in seeded.items()}


def stage_rules(service: MemoryService, memory_id: str) -> list[str]:
    """The consolidation stages the audit trail records for one row."""
    stages = {s.value for s in Stage}
    return [e.rule for e in service.store.audit.for_memories([memory_id]) if e.rule in stages]


def check_before_or_after(service: MemoryService, seeded: dict[str, list[Memory]]) -> int:
    """Every seeded memory is wholly before or wholly after its stage; returns how many
    changed."""
    assert service.store.integrity_errors() == []
    rows = {m.id: m for m in service.list_memories()}
    changed = 0
    for event in seeded["events"]:
        now = rows[event.id]
        rules = stage_rules(service, event.id)
        assert (now.status, rules) in [(Status.ACTIVE, []), (Status.ARCHIVED, ["archive-episodic"])]
        changed += now.status is Status.ARCHIVED
    for name, factor, stage in (
        ("facts", 0.8, "decay-semantic"),
        ("hunches", 0.5, "decay-inferences"),
    ):
        for old in seeded[name]:
            now = rows[old.id]
            assert (now.content, now.confidence) == (old.content, old.confidence)
            if now.status is Status.ACTIVE:
                assert now.superseded_by is None and stage_rules(service, old.id) == []
            elif now.superseded_by is None:  # an inference that fell under 0.3
                assert name == "hunches" and old.confidence * factor < 0.3
                assert (now.status, stage_rules(service, old.id)) == (Status.ARCHIVED, [stage])
                changed += 1
            else:
                new = rows[now.superseded_by]
                assert now.status is Status.ARCHIVED and stage_rules(service, old.id) == [stage]
                assert (new.status, new.content, new.supersedes) == (
                    Status.ACTIVE,
                    old.content,
                    old.id,
                )
                assert new.confidence == pytest.approx(old.confidence * factor, abs=1e-6)
                assert stage_rules(service, new.id) == [stage]
                changed += 1
            if old.slot is not None:
                assert len(service.store.memories.in_slot(old.slot, Status.ACTIVE)) == 1
    for guess in seeded["guesses"]:
        status = rows[guess.id].status
        assert status in {Status.PENDING, Status.ARCHIVED}
        assert stage_rules(service, guess.id) == (
            [] if status is Status.PENDING else ["demote-pending"]
        )
        changed += status is Status.ARCHIVED
    for original, twin in zip(seeded["sure"], seeded["twins"], strict=True):
        assert rows[original.id].status is Status.PENDING
        assert rows[twin.id].status in {Status.PENDING, Status.REJECTED}
        changed += rows[twin.id].status is Status.REJECTED
    # No row appeared without its audit, and every successor is linked both ways.
    for row in rows.values():
        if row.status is Status.ACTIVE:
            assert service.store.audit.for_memories([row.id]), row
        if row.supersedes is not None:
            assert rows[row.supersedes].superseded_by == row.id
    return changed


def canonical(
    service: MemoryService,
) -> tuple[list[tuple[object, ...]], Counter[tuple[str | None, str, Status]]]:
    """The state with the random ids of successors replaced by their predecessor's id."""
    rows = [
        (
            f"after {m.supersedes}" if m.supersedes else m.id,
            m.kind,
            m.status,
            m.content,
            round(m.confidence, 6),
            m.created_at,
            m.superseded_by is not None,
        )
        for m in service.list_memories()
    ]
    audit = Counter(
        (e.rule, e.action, e.to_status)
        for e in service.store.audit.for_memories([m.id for m in service.list_memories()])
    )
    return sorted(rows, key=repr), audit


def test_sigkill_mid_consolidation_leaves_every_memory_before_or_after_its_stage(
    cli: Cli, db_path: Path, tmp_path: Path, embedder: LocalMiniLM
) -> None:
    with closing(memoryd.open(db_path, embedder=embedder)) as service:
        seeded = seed(service, embedder)
        assert check_before_or_after(service, seeded) == 0
    reference_path = tmp_path / "reference" / "memoryd.db"
    reference_path.parent.mkdir()
    for sibling in db_path.parent.glob(db_path.name + "*"):
        shutil.copy(sibling, reference_path.parent / sibling.name)

    command = [str(MEMORYD), "consolidate", "--now", LATER.isoformat(), "--json"]
    started = time.monotonic()
    cli.ok("consolidate", "--now", LATER.isoformat(), env={"MEMORYD_DB": str(reference_path)})
    duration = time.monotonic() - started
    with closing(memoryd.open(reference_path, embedder=embedder)) as reference:
        total = check_before_or_after(reference, seeded)
        assert total == 4 * PER_STAGE + TWINS
        expected = canonical(reference)

    # Each kill interrupts a fresh copy of the seeded store at its own random point. A run can
    # be quicker than the timed one (a warm disk cache, an idle machine); when one finishes
    # before its kill, later kills come sooner, so the kills land however fast the machine is.
    rng = random.Random(20251129)
    killed, partial, scale = 0, 0, 1.0
    victims = []
    for attempt in range(3 * KILLS):
        if killed == KILLS:
            break
        victim = tmp_path / f"victim-{attempt}" / "memoryd.db"
        victim.parent.mkdir()
        for sibling in db_path.parent.glob(db_path.name + "*"):
            shutil.copy(sibling, victim.parent / sibling.name)
        process = subprocess.Popen(
            command,
            env={**cli.env, "MEMORYD_DB": str(victim)},
            cwd=cli.cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(0.35, 1.0) * duration * scale)
        process.send_signal(signal.SIGKILL)
        if process.wait(timeout=60) == -signal.SIGKILL:
            killed += 1
        else:
            scale *= 0.7
        with closing(memoryd.open(victim, embedder=embedder)) as service:
            changed = check_before_or_after(service, seeded)
        partial += 0 < changed < total
        victims.append(victim)
    print(
        f"run {duration:.2f}s, {killed} of {len(victims)} killed mid-run,"
        f" {partial} left a partial state, delays scaled by {scale:.2f}"
    )
    assert killed >= KILLS // 2, "the runs finished before the kills; the test proved nothing"
    assert partial >= 1, "no kill landed between the first and the last change"

    # The owner runs it again (at once, as after a reboot): it finishes the job exactly as a
    # run that was never interrupted.
    first, *others = victims
    result = cli.run("consolidate", "--now", LATER.isoformat(), env={"MEMORYD_DB": str(first)})
    assert result.returncode == 0, f"rerun after a crash failed: {result.stderr.strip()}"
    for victim in victims:
        with closing(memoryd.open(victim, embedder=embedder)) as service:
            if victim in others:  # the same service call, without a process start each time
                service.consolidate(now=LATER)
            assert check_before_or_after(service, seeded) == total
            assert canonical(service) == expected
