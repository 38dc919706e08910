"""The victim of the synced-folder crash test (tests/contract/test_kb_sync_crash.py).

``python -m tests.sync_crash_child STORE FOLDER`` (from the repository root) opens the store
with the hash embedder of :mod:`tests.crash_child`, registers FOLDER as a synced source (once),
prints ``READY``, then runs passes that embed as they go, printing ``WROTE path`` after each
file's ingest returned and ``DONE`` after each pass, until it is killed.
"""

from __future__ import annotations

import sys

from tests.crash_child import CrashEmbedder, emit


def main(store: str, folder: str) -> None:
    """Sync ``folder`` into ``store`` pass after pass until killed."""
    from memoryd.config.settings import resolve_settings
    from memoryd.providers.tokenizer import O200kTokenizer
    from memoryd.wiring import open_service

    O200kTokenizer().count("warm up")  # loaded before READY: the kills should hit the store
    service = open_service(resolve_settings(store), embedder=CrashEmbedder())
    source = service.sync.add(folder)
    emit("READY", {"source": source.id})
    while True:
        report = service.sync.run_pass(
            source, wait=True, progress=lambda path, _result: emit("WROTE", {"path": path})
        )
        emit("DONE", report.to_json())


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
