"""Disk caches that make whole-library knowledge-base benchmarks cheap to rerun.

Reading a PDF (pdfium, glyph by glyph) is most of a filing's conversion time and embedding its
chunks most of the rest. Both are cached outside the repository (``$MEMORYD_BENCH_CACHE``, else
``/tmp/memoryd-bench-cache``):

- the read pages of each PDF, keyed by the file's SHA-256 and the source of the reading code
  (``kb/pdf/reader.py``, ``kb/pdf/pages.py``, ``kb/hygiene.py``, ``kb/pdf/picture_reads.py``);
  layout, tables, titles and chunking still run every time, so changing them needs no re-read;
- each embedded text's vector, keyed by the text's SHA-256 and the embedder's model name.

Only the benchmarks use them; memoryd itself never reads this cache.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sqlite3
import threading
from pathlib import Path
from typing import Any

import numpy as np

import memoryd.kb.convert as convert_module
import memoryd.kb.pdf.reader as pdf_module
from memoryd.kb.converted import Limits
from memoryd.kb.images import ImageReader
from memoryd.providers.embedder import Embedder, Matrix

CACHE = Path(os.environ.get("MEMORYD_BENCH_CACHE", "/tmp/memoryd-bench-cache"))
# The reading code, relative to the kb package (kb/pdf/ since the relayout; kb/ before it).
_READING_CODE = ("pdf/reader.py", "pdf/pages.py", "hygiene.py", "pdf/picture_reads.py")
_READING_CODE_FLAT = ("pdf.py", "pages.py", "hygiene.py", "picture_reads.py")


def _code_version() -> str:
    here = Path(pdf_module.__file__).parent
    kb = here.parent if here.name == "pdf" else here
    names = _READING_CODE if (kb / "pdf").is_dir() else _READING_CODE_FLAT
    digest = hashlib.sha256()
    for name in names:
        digest.update((kb / name).read_bytes())
    return digest.hexdigest()[:16]


def cache_pdf_reads() -> None:
    """Make ``memoryd.kb.pdf.reader.read_pdf`` keep its result on disk per file and code version."""
    if getattr(pdf_module.read_pdf, "cached", False):
        return
    original = pdf_module.read_pdf
    version = _code_version()
    folder = CACHE / "pdf-reads"
    folder.mkdir(parents=True, exist_ok=True)

    def read_pdf(
        data: bytes, reader: ImageReader, limits: Limits, *more: Any, **named: Any
    ) -> pdf_module.PdfText:
        path = folder / f"{hashlib.sha256(data).hexdigest()[:32]}-{version}.pickle"
        if path.exists():
            with path.open("rb") as handle:
                cached: pdf_module.PdfText = pickle.load(handle)
            return cached
        read = original(data, reader, limits, *more, **named)
        partial = path.with_suffix(".partial")
        with partial.open("wb") as handle:
            pickle.dump(read, handle)
        partial.replace(path)
        return read

    read_pdf.cached = True  # type: ignore[attr-defined]
    pdf_module.read_pdf = read_pdf
    # memoryd converts a PDF in a bounded child, which would not see this cache: the
    # benchmark's own filings are trusted, so they are converted here, through it.
    convert_module.pdf_converted = pdf_module.pdf_to_markdown


class CachedEmbedder:
    """An embedder that looks each text's vector up on disk before computing it."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        CACHE.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(CACHE / "vectors.db", timeout=120, check_same_thread=False)
        # Several benchmark processes may share the cache: readers never wait for a writer.
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS v (k TEXT PRIMARY KEY, vec BLOB)")
        self._lock = threading.Lock()

    @property
    def model(self) -> str:
        """The inner embedder's model."""
        return self.inner.model

    @property
    def dimension(self) -> int:
        """The inner embedder's dimension."""
        return self.inner.dimension

    def embed(self, texts: list[str]) -> Matrix:
        """Vectors for ``texts``: cached ones read, the rest computed and stored."""
        keys = [hashlib.sha256(f"{self.model}\0{t}".encode()).hexdigest() for t in texts]
        found: dict[str, bytes] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                part = keys[start : start + 500]
                marks = ",".join("?" * len(part))
                found.update(
                    self._db.execute(f"SELECT k, vec FROM v WHERE k IN ({marks})", part).fetchall()
                )
        missing = [i for i, k in enumerate(keys) if k not in found]
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if missing:
            computed = self.inner.embed([texts[i] for i in missing])
            with self._lock:
                self._db.executemany(
                    "INSERT OR REPLACE INTO v VALUES (?, ?)",
                    [
                        (keys[i], np.asarray(computed[j], dtype=np.float32).tobytes())
                        for j, i in enumerate(missing)
                    ],
                )
                self._db.commit()
            for j, i in enumerate(missing):
                out[i] = computed[j]
        for i, key in enumerate(keys):
            if key in found:
                out[i] = np.frombuffer(found[key], dtype=np.float32)
        return out
