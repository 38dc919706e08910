"""Pictures read on a worker thread: answers come back per page in the order asked, pictures
with no text are dropped, and a reader's failure is not lost."""

from __future__ import annotations

import threading

import pytest

from memoryd.kb.pdf.pages import Picture
from memoryd.kb.pdf.picture_reads import MAX_WAITING, PictureReads


class EchoReader:
    """Answers each image's bytes as text; records the threads it ran on."""

    name = "echo"

    def __init__(self) -> None:
        self.threads: set[str] = set()

    def read(self, image: bytes) -> str:
        self.threads.add(threading.current_thread().name)
        return image.decode()


class FailingReader:
    name = "failing"

    def read(self, image: bytes) -> str:
        raise RuntimeError("the reader broke")


def test_answers_come_back_per_page_in_the_order_asked_without_empty_ones() -> None:
    reader = EchoReader()
    with PictureReads(reader) as reads:
        reads.submit(1, 10.0, b"chart")
        reads.submit(3, 0.0, b"scan")
        reads.submit(1, 50.0, b"  ")
        reads.submit(1, 90.0, b"logo")
        for index in range(MAX_WAITING * 3):
            reads.submit(4, float(index), str(index).encode())
        found = reads.pictures()
        count = reads.count

    assert found[1] == (Picture(10.0, "chart"), Picture(90.0, "logo"))
    assert found[3] == (Picture(0.0, "scan"),)
    assert [p.text for p in found[4]] == [str(i) for i in range(MAX_WAITING * 3)]
    assert 2 not in found
    assert count == 4 + MAX_WAITING * 3
    assert reader.threads and threading.current_thread().name not in reader.threads


def test_a_reader_failure_is_raised_to_the_caller() -> None:
    with PictureReads(FailingReader()) as reads, pytest.raises(RuntimeError, match="broke"):
        for index in range(MAX_WAITING + 2):
            reads.submit(1, float(index), b"x")
        reads.pictures()


def test_nothing_asked_starts_no_thread() -> None:
    before = threading.active_count()
    with PictureReads(EchoReader()) as reads:
        assert reads.pictures() == {}
        assert threading.active_count() == before
