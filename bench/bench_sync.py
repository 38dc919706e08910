"""A synced notes folder against a one-off ``kb ingest`` of the same folder, in one run.

A seeded folder of Markdown notes (default 2,000) of realistic lengths — most a paragraph or
two, a long tail of pages (log-normal, median ~150 words, a few past 2,000) — about half with
YAML front matter, with headings, #tags and [[wiki links]]; every note carries one word of its
own, so a keyword probe finds exactly it.

- **before**: ``service.kb.ingest([folder], wait=False)`` (what ``memoryd kb ingest FOLDER
  --no-wait`` runs, the quickest way to keyword search today; the vectors are then filled by the
  same worker jobs as after): when the notes became keyword-searchable; an edited note is seen
  only when the owner runs the ingest again (its time is shown), a deleted one never.
- **after**: a fresh store, the service's worker and sync threads started (what ``memoryd
  serve`` runs), ``sync.add(folder)``: when all notes were keyword-searchable and when every
  vector was stored; then an edit and a deletion each seen by keyword search (10 of each, the
  time from the save to the search finding it); then the process's CPU while idle (all its
  threads, over ``--idle`` seconds) beside the same service without the synced folder.

    python bench/bench_sync.py                    # 2,000 notes, 2 embedder threads
    python bench/bench_sync.py --notes 300 --idle 20
"""

from __future__ import annotations

import argparse
import functools
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from report import print_table
from vocabulary import CITIES, FIRST_NAMES, ITEMS, TOPICS, VENUES

WORDS = (
    "the a morning plan note meeting call idea list draft review garden budget trip book "
    "project week report kitchen bike train letter paper friend market river street school "
    "museum music coffee rain window design chapter recipe ticket photo lesson question "
    "answer reminder follow-up deadline invoice contract cabin harbour orchard workshop"
).split()


def probe_word(number: int) -> str:
    """The one word only note ``number`` holds (letters only: the tokenizers keep it whole)."""
    letters = "bcdfghjklmnpqrstvwxz"
    text, value = "", number + 1
    while value:
        value, digit = divmod(value, len(letters))
        text += letters[digit]
    return "qy" + text + "zk"


def note_text(rng: random.Random, number: int, tag: str = "") -> str:
    """One note: front matter for about half, a title, sections, tags and links."""
    length = int(min(3000, max(15, rng.lognormvariate(5.0, 0.9))))
    name, city = rng.choice(FIRST_NAMES), rng.choice(CITIES)
    title = f"{rng.choice(TOPICS).capitalize()} with {name}"
    parts = []
    if rng.random() < 0.5:
        tags = f"[{rng.choice(WORDS)}, {rng.choice(WORDS)}]"
        day = f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        parts.append(f"---\ntitle: {title}\ntags: {tags}\ndate: {day}\n---")
    parts.append(f"# {title}")
    written = 0
    while written < length:
        if written and rng.random() < 0.15:
            parts.append(f"## {rng.choice(TOPICS).capitalize()} in {rng.choice(CITIES)}")
        count = min(length - written, rng.randint(20, 90))
        sentence = " ".join(rng.choice(WORDS) for _ in range(count))
        parts.append(
            f"{name} {sentence} at {rng.choice(VENUES)} in {city} with the {rng.choice(ITEMS)} "
            f"#{rng.choice(WORDS)} [[{rng.choice(TOPICS).capitalize()}]]."
        )
        written += count + 10
    parts.append(f"Marker {probe_word(number)} {tag}".strip())
    return "\n\n".join(parts) + "\n"


def write_folder(folder: Path, notes: int, seed: int) -> list[Path]:
    """The seeded notes folder, in 20 sub-folders."""
    rng = random.Random(seed)
    paths = []
    for number in range(notes):
        path = folder / f"area-{number % 20:02d}" / f"note-{number:05d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(note_text(rng, number), encoding="utf-8")
        paths.append(path)
    return paths


def open_fresh(directory: Path, embedder: Any) -> Any:
    from memoryd.config.settings import resolve_settings
    from memoryd.wiring import open_service

    directory.mkdir(parents=True, exist_ok=True)
    return open_service(resolve_settings(str(directory / "store.db"), {}), embedder=embedder)


def found(service: Any, word: str) -> bool:
    """Whether keyword search finds ``word`` (the store's keyword leg, no query embedding)."""
    return bool(service.store.kb.keyword_chunks([word], 1))


def wait_for(check: Callable[[], bool], timeout: float, step: float = 0.01) -> float | None:
    """Seconds until ``check()`` held, or None after ``timeout``."""
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        if check():
            return time.perf_counter() - started
        time.sleep(step)
    return None


def gone(service: Any, word: str) -> bool:
    return not found(service, word)


def vectors_done(service: Any) -> bool:
    documents = service.kb.list_documents()
    return bool(documents) and all(d.pending_vectors == 0 for d in documents)


def idle_cpu(seconds: float) -> float:
    """This process's CPU (every thread) over ``seconds`` of wall time, in % of one core."""
    cpu, wall = time.process_time(), time.perf_counter()
    time.sleep(seconds)
    return 100 * (time.process_time() - cpu) / (time.perf_counter() - wall)


def before(work: Path, folder: Path, paths: list[Path], embedder: Any) -> dict[str, Any]:
    """The one-off ingest, as ``memoryd kb ingest FOLDER`` runs it."""
    service = open_fresh(work / "before", embedder)
    # As beside a running `memoryd serve`: its worker embeds while the ingest writes.
    service.start_worker()
    written: list[float] = []

    class Watch:
        def written(self, result: Any) -> None:
            written.append(time.perf_counter())

        def embedding(self, progress: Any) -> None:
            pass

    started = time.perf_counter()
    service.kb.ingest([folder], watcher=Watch(), wait=False)
    total = time.perf_counter() - started
    searchable = max(written) - started
    at_30 = sum(t - started <= 30 for t in written)
    edits = []
    rng = random.Random(7)
    for index in range(3):
        path = paths[(index * 97) % len(paths)]
        path.write_text(note_text(rng, 10_000 + index, tag="edited"), encoding="utf-8")
        again = time.perf_counter()
        service.kb.ingest([folder], wait=False)  # the owner runs the ingest again
        edits.append(time.perf_counter() - again)
        assert found(service, probe_word(10_000 + index))
    service.close()
    return {"searchable": searchable, "at_30": at_30, "total": total, "edit": edits}


def after(
    work: Path, folder: Path, paths: list[Path], embedder: Any, vectors: bool
) -> dict[str, Any]:
    """The synced folder, kept current by the service's worker and sync threads."""
    service = open_fresh(work / "after", embedder)
    service.start_worker()
    service.start_sync()
    started = time.perf_counter()
    source = service.sync.add(str(folder))
    service.jobs.sync_loop.mark(source.id)
    notes = len(paths)

    def current() -> bool:
        return bool(service.store.sync.state_counts().get(source.id, {}).get("current", 0) == notes)

    searchable_at: list[float] = []

    def count_at_30() -> None:
        time.sleep(max(0.0, 30 - (time.perf_counter() - started)))
        searchable_at.append(service.store.sync.state_counts().get(source.id, {}).get("current", 0))

    counter = threading.Thread(target=count_at_30, daemon=True)
    counter.start()
    searchable = wait_for(current, 900, 0.2)
    assert searchable is not None, "the first sync never finished"
    first_probe = probe_word(0)
    assert found(service, first_probe)
    done = wait_for(lambda: vectors_done(service), VECTORS_TIMEOUT, 1.0) if vectors else None
    total = time.perf_counter() - started
    counter.join(60)
    rng = random.Random(11)
    edits, deletes = [], []
    edited = [(index * 131 + 5) % len(paths) for index in range(10)]
    for index in range(10):
        path = paths[edited[index]]
        word = probe_word(20_000 + index)
        time.sleep(0.5)
        path.write_text(note_text(rng, 20_000 + index, tag="edited"), encoding="utf-8")
        edits.append(wait_for(functools.partial(found, service, word), 60))
    for index in range(10):
        number = (index * 131 + 50) % len(paths)
        while number in edited:
            number = (number + 1) % len(paths)
        path, word = paths[number], probe_word(number)
        assert found(service, word)
        time.sleep(0.5)
        path.unlink()
        deletes.append(wait_for(functools.partial(gone, service, word), 60))
    idle = idle_before = None
    if vectors:
        wait_for(lambda: vectors_done(service), 600, 1.0)
        time.sleep(5)
        idle = idle_cpu(IDLE_SECONDS)
        # The same service and documents without the sync thread: what `serve` cost before.
        service.stop_sync()
        time.sleep(2)
        idle_before = idle_cpu(IDLE_SECONDS)
    service.close()
    return {"searchable": searchable, "at_30": searchable_at[0] if searchable_at else None,
            "total": total if done is not None else None, "edit": edits, "delete": deletes,
            "idle": idle, "idle_before": idle_before}  # fmt: skip


def seconds(value: float | None) -> str:
    return f"over {VECTORS_TIMEOUT:.0f} s" if value is None else f"{value:.1f} s"


def spread(values: list[float | None]) -> str:
    seen = [v for v in values if v is not None]
    missed = len(values) - len(seen)
    if not seen:
        return "never"
    text = f"median {statistics.median(seen):.2f} s, max {max(seen):.2f} s"
    return text + (f", {missed} never" if missed else "")


IDLE_SECONDS = 60.0
VECTORS_TIMEOUT = 3600.0


def main() -> None:
    global IDLE_SECONDS
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--notes", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=2, help="embedder threads")
    parser.add_argument("--idle", type=float, default=60.0, help="seconds of idle measured")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument(
        "--skip-vectors",
        action="store_true",
        help="do not wait for every vector (edits and deletions are then measured while the "
        "worker still embeds) nor measure idle CPU",
    )
    args = parser.parse_args()
    IDLE_SECONDS = args.idle
    from memoryd.providers.embedder import LocalMiniLM

    embedder = LocalMiniLM(threads=args.threads)
    embedder.embed(["warm up"])
    from memoryd.kb.convert import convert
    from memoryd.providers.tokenizer import O200kTokenizer

    # Both runs start warm: the converter's imports and the tokenizer load once, before either.
    convert(b"# Warm\n\nup #tag [[link]]\n", "warm.md", None)  # type: ignore[arg-type]
    O200kTokenizer().count("warm up")
    with tempfile.TemporaryDirectory(prefix="bench-sync-") as scratch:
        work = Path(scratch)
        folder = work / "notes-before"
        paths = write_folder(folder, args.notes, args.seed)
        size = sum(p.stat().st_size for p in paths)
        print(f"{args.notes} notes, {size / 1e6:.1f} MB, cores {os.cpu_count()}, embedder "
              f"threads {args.threads} (shared machine: compare the rows, not the seconds)",
              flush=True)  # fmt: skip
        old = before(work, folder, paths, embedder)
        folder = work / "notes-after"
        paths = write_folder(folder, args.notes, args.seed)
        new = after(work, folder, paths, embedder, not args.skip_vectors)
    rows = [
        ["every note keyword-searchable", seconds(old["searchable"]), seconds(new["searchable"])],
        ["notes keyword-searchable at 30 s", f"{old['at_30']} of {args.notes}",
         f"{new['at_30']} of {args.notes}"],
        ["every vector stored", "(the same worker jobs as after)",
         "not measured" if args.skip_vectors else seconds(new["total"])],
        ["an edited note found by search", "after the owner re-runs the ingest: "
         + spread(old["edit"]), "on its own: " + spread(new["edit"])],
        ["a deleted note gone from search", "never", "on its own: " + spread(new["delete"])],
    ]  # fmt: skip
    if new["idle"] is not None:
        rows.append(["idle CPU of the process (worker running)",
                     f"{new['idle_before']:.2f} % (no sync)",
                     f"{new['idle']:.2f} % (folder synced, watched)"])  # fmt: skip
    print_table(
        ["", "before: kb ingest FOLDER --no-wait", "after: kb sync add FOLDER (serve)"], rows
    )


if __name__ == "__main__":
    main()
