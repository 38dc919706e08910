"""Pictures read while the next pages are extracted: the image reader (OCR, seconds a
picture) runs on one worker thread, so a filing's charts cost little more than its text.

At most a few rendered pictures wait at a time (a scanned book would otherwise queue every
page's render in memory); the reads come back in the order they were asked for.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType

from memoryd.kb.images import ImageReader
from memoryd.kb.pdf.pages import Picture

# Renders waiting for the reader at most: enough to keep it busy, few enough to stay small.
MAX_WAITING = 2


class PictureReads:
    """Reads each submitted image on a worker thread; :meth:`pictures` waits for them all."""

    def __init__(self, reader: ImageReader) -> None:
        self._reader = reader
        self._pool: ThreadPoolExecutor | None = None
        self._asked: list[tuple[int, float, Future[str]]] = []
        self._waiting: deque[Future[str]] = deque()

    def __enter__(self) -> PictureReads:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    @property
    def count(self) -> int:
        """How many images were asked for."""
        return len(self._asked)

    def submit(self, page: int, top: float, image: bytes) -> None:
        """Read ``image`` (PNG bytes) for ``page``, its text to be placed at ``top``; waits
        while too many renders are already queued. A reader's error surfaces here or in
        :meth:`pictures`."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memoryd-read")
        future = self._pool.submit(self._reader.read, image)
        self._asked.append((page, top, future))
        self._waiting.append(future)
        while len(self._waiting) > MAX_WAITING:
            self._waiting.popleft().result()

    def pictures(self) -> dict[int, tuple[Picture, ...]]:
        """Each page's pictures with text, in the order they were asked for."""
        found: dict[int, list[Picture]] = {}
        for page, top, future in self._asked:
            text = future.result()
            if text.strip():
                found.setdefault(page, []).append(Picture(top, text))
        return {page: tuple(pictures) for page, pictures in found.items()}
