"""Converting an untrusted file in a child process with a memory ceiling and a deadline.

Parsers that build a whole tree of a document (markitdown over an Office file's XML, lxml over
an HTML page) can need many times the file's size: a 2 MB DOCX whose XML unpacks to 200 MB
grew the server past 5 GB. No check of what the file declares bounds that, so the parse runs
in a fresh ``python -m memoryd.kb.convert`` whose address space is capped (``RLIMIT_AS``) and
which is killed at its deadline; the server only ever receives the Markdown. A refusal names
the bound that was hit; nothing is stored and the server keeps answering.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .converted import ConversionError

# The first line the child writes, so the parent can tell its answer from noise on stdout.
_MARK = "memoryd-sandbox:"


@dataclass(frozen=True)
class Bounds:
    """What one conversion may use: bytes of address space and seconds of wall time."""

    memory_bytes: int
    seconds: float


def run_bounded(module: str, task: str, data: bytes, bounds: Bounds) -> dict[str, Any]:
    """Run ``task`` of ``module`` (whose ``__main__`` calls :func:`serve_task`) over ``data``
    in a child held to ``bounds``; its JSON answer. Raises :class:`ConversionError` naming the
    bound hit, or the converter's own refusal."""
    command = [sys.executable, "-m", module, task, str(bounds.memory_bytes)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    ) as child:
        try:
            out, err = child.communicate(data, timeout=bounds.seconds)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            raise ConversionError(
                f"converting the file took longer than {bounds.seconds:g} s and was stopped "
                "(a document built to exhaust the converter, or far larger than any real one)"
            ) from None
    answer = _answer(out)
    if answer is None:
        if b"MemoryError" in err or child.returncode in (-9, 137):
            raise _too_big(bounds)
        raise ConversionError(
            "the converter stopped on this file without an answer (exit "
            f"{child.returncode}); it may be damaged: re-save it and try again"
        )
    if "error" in answer:
        if answer["error"] == "memory":
            raise _too_big(bounds)
        raise ConversionError(str(answer["error"]))
    return answer


def _too_big(bounds: Bounds) -> ConversionError:
    return ConversionError(
        f"converting the file needed more than {bounds.memory_bytes / 2**20:.0f} MiB of memory "
        "and was stopped (it unpacks to far more than any real document; a zip or XML bomb?)"
    )


def _answer(out: bytes) -> dict[str, Any] | None:
    text = out.decode("utf-8", errors="replace")
    start = text.rfind(_MARK)
    if start < 0:
        return None
    try:
        answer = json.loads(text[start + len(_MARK) :])
    except json.JSONDecodeError:
        return None
    return answer if isinstance(answer, dict) else None


def serve_task(tasks: Mapping[str, Callable[[bytes], dict[str, Any]]]) -> None:
    """The child's side (``python -m MODULE TASK MEMORY``): cap the address space first, then
    read the bytes from stdin, run the task and write its answer."""
    task, memory_bytes = sys.argv[1], int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    data = sys.stdin.buffer.read()
    try:
        answer: dict[str, Any] = tasks[task](data)
    except MemoryError:
        answer = {"error": "memory"}
    except ConversionError as error:
        answer = {"error": str(error)}
    except Exception as error:
        answer = {
            "error": f"cannot read the file ({type(error).__name__}); it may be damaged: "
            "re-save it and try again"
        }
    sys.stdout.write(_MARK + json.dumps(answer))
    sys.stdout.flush()
