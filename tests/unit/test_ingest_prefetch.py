"""The table ingest's reader thread: items in order, errors where they happened, sources closed."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from pyconsumer.ingest.prefetch import Prefetched


class Source:
    def __init__(self, n: int, fail_at: int | None = None) -> None:
        self.n, self.fail_at = n, fail_at
        self.made_on: str | None = None
        self.closed_on: str | None = None
        self.produced = 0

    def __call__(self) -> Iterator[int]:
        self.made_on = threading.current_thread().name
        try:
            for i in range(self.n):
                if i == self.fail_at:
                    raise ValueError(f"bad record at offset {i}")
                self.produced += 1
                yield i
        finally:
            self.closed_on = threading.current_thread().name


def test_every_item_in_order_read_on_the_reader_thread() -> None:
    src = Source(1000)
    assert list(Prefetched(src, depth=2, name="reader")) == list(range(1000))
    assert src.made_on == "reader" and src.closed_on == "reader"


def test_an_error_of_the_source_is_raised_after_the_items_before_it() -> None:
    src = Source(10, fail_at=6)
    got: list[int] = []
    with pytest.raises(ValueError, match="bad record at offset 6"):
        for i in Prefetched(src):
            got.append(i)
    assert got == [0, 1, 2, 3, 4, 5]
    assert src.closed_on is not None


def test_leaving_early_stops_the_reader_and_closes_the_source() -> None:
    src = Source(1_000_000)
    it = iter(Prefetched(src, depth=2))
    assert [next(it), next(it), next(it)] == [0, 1, 2]
    it.close()                       # what a failing sink does to the generator it was given
    assert src.closed_on is not None
    assert src.produced <= 3 + 2 + 1   # at most depth items ahead, plus the one in hand


def test_an_error_of_the_consumer_stops_the_reader() -> None:
    src = Source(1_000_000)

    def write(items: Prefetched[int]) -> None:
        for i in items:
            if i == 4:
                raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write(Prefetched(src))
    deadline = time.monotonic() + 5
    while src.closed_on is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert src.closed_on is not None and src.produced < 20


def test_depth_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="prefetch depth must be at least 1, not 0"):
        Prefetched(Source(1), depth=0)
