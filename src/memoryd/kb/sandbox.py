"""Converting an untrusted file in a child process with a memory ceiling and a deadline.

Parsers that build a whole tree of a document (markitdown over an Office file's XML, lxml over
an HTML page, pdfium over a PDF's objects) can need many times the file's size: a 2 MB DOCX
whose XML unpacks to 200 MB grew the server past 5 GB, and a PDF's streams and page tree can
claim anything. No check of what the file declares bounds that, so the parse runs in a fresh
``python -m memoryd.kb.convert`` whose address space is capped (``RLIMIT_AS``) and which is
killed at its deadline; the server only ever receives the Markdown. A refusal names the bound
that was hit; nothing is stored and the server keeps answering.

The pictures a PDF holds are read in the server, not in the child: the child renders them
(each at most :data:`MAX_RENDER_SIDE` pixels a side) and asks; the server's image reader (its
OCR engine loaded once, or the caption route) answers within the document's picture budget.
Time spent reading pictures is the budget's, not the child's: the deadline counts the child's
own work.

The conversation runs over the child's stdin and stdout in frames (a kind byte, a length, the
bytes), so a parser that prints cannot be mistaken for the answer: the child moves its stdout
out of the way before it parses anything.
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import IO, Any, BinaryIO

from memoryd.kb.converted import ConversionError
from memoryd.kb.images import ImageReader, TimedReader

# Rendered pictures the child sends are refused past this many pixels a side (the image reader
# scales anything larger down to 2,400 anyway): the server never decodes a giant bitmap.
MAX_RENDER_SIDE = 2400
_PICTURE, _PAGES, _ANSWER = b"I", b"P", b"A"
_HEADER = struct.Struct(">cQ")
_REPLY = struct.Struct(">Q")
# Signs in the child's stderr that it died for want of memory before it could say so. The
# dynamic loader (glibc's ld.so) ends a process with exit 127 when it cannot map a library
# ("failed to map segment") or, after start, cannot allocate a library's thread-local data
# ("cannot allocate memory for thread-local data: ABORT"): under the cap, a thread touching a
# native library's thread-locals for the first time can end the child that way before Python
# sees a MemoryError. OpenBLAS and C++ code say so in their own words.
_OUT_OF_MEMORY_SIGNS = (
    b"MemoryError",
    b"failed to map segment",
    b"Cannot allocate memory",
    b"cannot allocate memory",
    b"bad_alloc",
    b"Memory allocation still failed",
    b"out of memory",
)
# How often the server looks at the child's peak memory while it waits (seconds).
PEAK_EVERY = 0.05
# Seconds a child that ended its output without an answer is given to exit by itself.
EXIT_GRACE = 5.0
# A child that crashed having held this share of its cap ran out of memory (see _died).
NEAR_CAP = 0.75
# The dynamic loader's exit status when it gives up (see _OUT_OF_MEMORY_SIGNS).
LOADER_FAILED = 127


@dataclass(frozen=True)
class Bounds:
    """What one conversion may use: bytes of address space and seconds of the child's own
    time, plus ``seconds_per_page`` for each page of a PDF read so far (at most
    ``max_pages``), so a real book is not refused for its length."""

    memory_bytes: int
    seconds: float
    seconds_per_page: float = 0.0
    max_pages: int = 0


def run_bounded(
    module: str,
    task: str,
    data: bytes,
    bounds: Bounds,
    *,
    params: Mapping[str, Any] | None = None,
    reader: ImageReader | None = None,
) -> dict[str, Any]:
    """Run ``task`` of ``module`` (whose ``__main__`` calls :func:`serve_task`) over ``data``
    in a child held to ``bounds``; its JSON answer. Pictures the child asks about are read
    with ``reader`` here. Raises :class:`ConversionError` naming the bound hit, or the
    converter's own refusal."""
    command = [sys.executable, "-m", module, task, str(bounds.memory_bytes)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    with (
        tempfile.TemporaryFile() as errors,
        subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, env=env
        ) as child,
    ):
        assert child.stdin is not None and child.stdout is not None
        talk = _Conversation(child, bounds, reader)
        answer: dict[str, Any] | None = None
        try:
            answer = talk.run(json.dumps(dict(params or {})).encode(), data)
        finally:
            # A child that has answered, or has been stopped, is not waited for.
            _reap(child, 0.0 if answer is not None or talk.stopped else EXIT_GRACE)
        errors.seek(0)
        err = errors.read()
    if answer is None:
        raise _died(child.returncode, err, talk.peak, bounds)
    if "error" in answer:
        if answer["error"] == "memory":
            raise _too_big(bounds)
        raise ConversionError(str(answer["error"]))
    return answer


class _Conversation:
    """The server's side of one child's frames: send the file, answer picture questions,
    stop the child when its own time runs out."""

    def __init__(
        self, child: subprocess.Popen[bytes], bounds: Bounds, reader: ImageReader | None
    ) -> None:
        self.child = child
        self.bounds = bounds
        # The seconds the server spends reading pictures are not the child's.
        self.reader = None if reader is None else TimedReader(reader)
        self.allowed = bounds.seconds
        self.started = time.monotonic()
        self.buffer = bytearray()
        self.stopped = False  # the deadline passed
        self.peak = 0  # the child's peak address space as last seen, in bytes

    @property
    def reading(self) -> float:
        """Seconds the server spent reading pictures (the child's clock leaves them out)."""
        return 0.0 if self.reader is None else self.reader.spent

    def run(self, params: bytes, data: bytes) -> dict[str, Any] | None:
        """The child's answer, or None when it ended without one."""
        stdin = self.child.stdin
        assert stdin is not None
        # The file goes in on a thread: a child that never reads it must not hang the server.
        feeder = threading.Thread(target=_feed, args=(stdin, params, data), daemon=True)
        feeder.start()
        while True:
            frame = self._frame()
            if frame is None:
                return None
            kind, payload = frame
            if kind == _ANSWER:
                return _answer(payload)
            if kind == _PAGES and self.bounds.seconds_per_page:
                pages = min(int.from_bytes(payload[:4], "big"), self.bounds.max_pages)
                self.allowed = self.bounds.seconds + pages * self.bounds.seconds_per_page
            elif kind == _PICTURE:
                feeder.join()
                text = self._read_picture(payload)
                reply = text.encode("utf-8")
                try:
                    stdin.write(_REPLY.pack(len(reply)) + reply)
                    stdin.flush()
                except (BrokenPipeError, OSError):
                    return None

    def _read_picture(self, image: bytes) -> str:
        if self.reader is None or not _fits(image):
            return ""
        return self.reader.read(image)

    def _frame(self) -> tuple[bytes, bytes] | None:
        head = self._exactly(_HEADER.size)
        if head is None:
            return None
        kind, size = _HEADER.unpack(head)
        payload = self._exactly(size)
        return None if payload is None else (kind, payload)

    def _exactly(self, size: int) -> bytes | None:
        stdout = self.child.stdout
        assert stdout is not None
        descriptor = stdout.fileno()
        while len(self.buffer) < size:
            left = self.allowed - (time.monotonic() - self.started - self.reading)
            self.peak = max(self.peak, _address_space_peak(self.child.pid))
            if left <= 0:
                self.stopped = True
                raise ConversionError(
                    f"converting the file took longer than {self.allowed:g} s and was stopped "
                    "(a document built to exhaust the converter, or far larger than any real one)"
                )
            if not select.select([descriptor], [], [], min(left, PEAK_EVERY))[0]:
                continue
            block = os.read(descriptor, max(size - len(self.buffer), 1 << 16))
            if not block:
                return None
            self.buffer += block
        taken = bytes(self.buffer[:size])
        del self.buffer[:size]
        return taken


def _feed(stdin: IO[bytes], params: bytes, data: bytes) -> None:
    try:
        stdin.write(_REPLY.pack(len(params)) + params + _REPLY.pack(len(data)))
        stdin.write(data)
        stdin.flush()
    except (BrokenPipeError, OSError):
        pass  # the child is gone: its exit says why


def _fits(png: bytes) -> bool:
    """Whether a PNG's header claims at most MAX_RENDER_SIDE pixels a side (the child renders
    within that; anything else is not decoded here)."""
    if len(png) < 24 or not png.startswith(b"\x89PNG\r\n\x1a\n"):
        return False
    width, height = struct.unpack(">II", png[16:24])
    return bool(0 < width <= MAX_RENDER_SIDE and 0 < height <= MAX_RENDER_SIDE)


def _reap(child: subprocess.Popen[bytes], grace: float) -> None:
    """Wait for the child, up to ``grace`` seconds, then kill it. (A child that closed its
    stdout is given the grace to exit by itself: its own exit status says why it stopped, a
    kill would hide it.)"""
    try:
        child.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def _address_space_peak(pid: int) -> int:
    """The process's peak address space (VmPeak: what RLIMIT_AS caps), in bytes; 0 once it
    has ended. Not the rusage peak: that counts the server's own memory, which the child
    carried until its exec."""
    try:
        with open(f"/proc/{pid}/status", "rb") as status:
            for line in status:
                if line.startswith(b"VmPeak:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _died(code: int, err: bytes, peak: int, bounds: Bounds) -> ConversionError:
    """Why a child ended without an answer, in the owner's words. A native allocator that
    cannot get memory under the cap aborts without a word (pdfium's does: SIGABRT): a crash
    after the child's address space was seen near the cap (``peak``) is the cap."""
    crashed = code == LOADER_FAILED or (code < 0 and code != -signal.SIGKILL)
    near_cap = peak >= NEAR_CAP * bounds.memory_bytes
    if (
        code == -signal.SIGKILL  # the kernel's out-of-memory killer
        or any(sign in err for sign in _OUT_OF_MEMORY_SIGNS)
        or (crashed and near_cap)
    ):
        return _too_big(bounds)
    last = err.decode("utf-8", errors="replace").strip().splitlines()[-1:] or [""]
    said = f": {last[0][:160]}" if last[0] else ""
    return ConversionError(
        f"the converter stopped on this file without an answer (exit {code}{said}); it may be "
        "damaged: re-save it and try again"
    )


def _too_big(bounds: Bounds) -> ConversionError:
    return ConversionError(
        f"converting the file needed more than {bounds.memory_bytes / 2**20:.0f} MiB of memory "
        "and was stopped (it unpacks to far more than any real document: a zip, XML or PDF bomb?)"
    )


def _answer(payload: bytes) -> dict[str, Any] | None:
    try:
        answer = json.loads(payload.decode("utf-8", errors="replace"))
    except json.JSONDecodeError:
        return None
    return answer if isinstance(answer, dict) else None


# ------------------------------------------------------------------------ the child's side


class ChildServer:
    """The child's line to the server: frames out, picture replies in. Pictures are asked
    from a reader thread while the main thread reads on, so writes take a lock."""

    def __init__(self, inbox: BinaryIO, outbox: BinaryIO) -> None:
        self.inbox = inbox
        self.outbox = outbox
        self.lock = threading.Lock()
        self.name = "server"  # an ImageReader's name

    def send(self, kind: bytes, payload: bytes) -> None:
        with self.lock:
            self.outbox.write(_HEADER.pack(kind, len(payload)) + payload)
            self.outbox.flush()

    def read(self, image: bytes) -> str:
        """The server's reading of a rendered picture (the child's ``ImageReader``)."""
        with self.lock:
            self.outbox.write(_HEADER.pack(_PICTURE, len(image)) + image)
            self.outbox.flush()
            size = _REPLY.unpack(_read_exactly(self.inbox, _REPLY.size))[0]
            return _read_exactly(self.inbox, size).decode("utf-8", errors="replace")

    def pages(self, count: int) -> None:
        """Tell the server how many pages have been read: the deadline grows with the pages
        really read, never with the count a file claims."""
        self.send(_PAGES, count.to_bytes(4, "big"))


def _read_exactly(stream: BinaryIO, size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise EOFError("the server closed the conversation")
    return data


Task = Callable[[bytes, Mapping[str, Any], ChildServer], dict[str, Any]]


def serve_task(tasks: Mapping[str, Task], warm: Callable[[str], None] | None = None) -> None:
    """The child's side (``python -m MODULE TASK MEMORY``): take stdout for the answer (and
    send anything a library prints to stderr), read the file, load what the task imports
    (``warm``), only then cap the address space, run the task and send its answer."""
    task, memory_bytes = sys.argv[1], int(sys.argv[2])
    outbox = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    inbox = sys.stdin.buffer
    params = json.loads(_read_exactly(inbox, _REPLY.unpack(_read_exactly(inbox, 8))[0]))
    data = _read_exactly(inbox, _REPLY.unpack(_read_exactly(inbox, 8))[0])
    server = ChildServer(inbox, outbox)
    if warm is not None:
        # Libraries loaded under the cap can fail in ways that do not say "memory" (an
        # ImportError, OpenBLAS exiting, the loader's exit 127): the cap is for the file.
        warm(task)
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    try:
        answer: dict[str, Any] = tasks[task](data, params, server)
    except MemoryError:
        answer = {"error": "memory"}
    except ConversionError as error:
        answer = {"error": str(error)}
    except Exception as error:
        answer = {
            "error": f"cannot read the file ({type(error).__name__}); it may be damaged: "
            "re-save it and try again"
        }
    server.send(_ANSWER, json.dumps(answer).encode("utf-8"))
