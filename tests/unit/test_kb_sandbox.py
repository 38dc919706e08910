"""The bounded converter child (memoryd.kb.sandbox): each way a child can end is named as what
it was, pictures are read by the server on the child's request, and the deadline counts the
child's own time. Real child processes throughout (tests/sandbox_child.py)."""

from __future__ import annotations

import io
import time

import pytest

from memoryd.kb.converted import ConversionError
from memoryd.kb.sandbox import MAX_RENDER_SIDE, Bounds, run_bounded

CHILD = "tests.sandbox_child"
MIB = 1024 * 1024


def png(width: int, height: int) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (width, height), "white").save(out, format="PNG")
    return out.getvalue()


class SlowReader:
    """Reads every picture as 'buoy N', taking ``seconds`` each."""

    name = "slow"

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.calls = 0

    def read(self, image: bytes) -> str:
        self.calls += 1
        time.sleep(self.seconds)
        return f"buoy {self.calls}"


def test_a_child_the_loader_could_not_start_under_the_cap_is_refused_for_memory() -> None:
    # Exit 127 is the dynamic loader failing to map a library under RLIMIT_AS: it never said
    # "memory" itself, and was reported as a damaged file.
    with pytest.raises(ConversionError) as refused:
        run_bounded(CHILD, "exec", b"", Bounds(4 * MIB, 30.0))

    assert "needed more than 4 MiB of memory" in str(refused.value)
    assert "damaged" not in str(refused.value)


def test_a_silent_native_abort_near_the_cap_is_memory_and_far_below_it_a_crash() -> None:
    cap = 512 * MIB
    with pytest.raises(ConversionError) as near:
        run_bounded(CHILD, "abort", b"", Bounds(cap, 30.0), params={"hold": 440 * MIB})
    with pytest.raises(ConversionError) as far:
        run_bounded(CHILD, "abort", b"", Bounds(cap, 30.0), params={"hold": 1 * MIB})

    assert "needed more than 512 MiB of memory" in str(near.value)
    assert "without an answer (exit -6" in str(far.value)
    assert "memory" not in str(far.value)


def test_what_a_parser_prints_cannot_pass_for_the_answer() -> None:
    answer = run_bounded(CHILD, "noisy", b"the tide is in", Bounds(1024 * MIB, 30.0))

    assert answer == {"markdown": "the tide is in"}


def test_pictures_are_read_by_the_server_and_their_time_is_not_the_childs() -> None:
    reader = SlowReader(seconds=0.8)
    # Three reads take 2.4 s of the server's time; the child's own deadline is 2 s.
    answer = run_bounded(
        CHILD, "asks", png(120, 80), Bounds(1024 * MIB, 2.0), params={"times": 3}, reader=reader
    )

    assert answer == {"read": ["buoy 1", "buoy 2", "buoy 3"]}
    assert reader.calls == 3


def test_a_render_larger_than_the_reader_takes_is_never_decoded_by_the_server() -> None:
    reader = SlowReader(seconds=0.0)
    giant = png(MAX_RENDER_SIDE + 1, 40)

    answer = run_bounded(
        CHILD, "asks", giant, Bounds(1024 * MIB, 30.0), params={"times": 1}, reader=reader
    )

    assert answer == {"read": [""]} and reader.calls == 0
