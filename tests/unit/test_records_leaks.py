"""A million decoded records leak nothing: input refcounts unchanged, traced memory bounded."""
from __future__ import annotations

import gc
import os
import sys
import tracemalloc

import pytest

from tests import recordsets as rs

from pyconsumer.records import CompletedFetch, decode_arrow, decode_records  # noqa: E402

DATA = rs.aio_v2([(i, i, b"k%d" % i, b"v" * 100, [("h", b"x")] if i % 10 == 0 else []) for i in range(1000)],
                 "lz4", 0)


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _records() -> None:
    decode_records(DATA, "t", 0)


def _arrow() -> None:
    decode_arrow(DATA, "t", 0, include_headers=True)


def _fetch() -> None:
    f = CompletedFetch(DATA, "t", 0, 0)
    f.take_records(500)
    f.take_arrow(500)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("fn", [_records, _arrow, _fetch])
def test_no_leak(fn) -> None:  # type: ignore[no-untyped-def]
    topic = "t"
    for _ in range(50):
        fn()
    gc.collect()
    rc_data, rc_topic = sys.getrefcount(DATA), sys.getrefcount(topic)
    rss0 = _rss()
    for _ in range(1000):  # first without tracemalloc: C-level (malloc) leaks show in RSS
        fn()
    gc.collect()
    assert _rss() - rss0 < 16 << 20, "RSS grew over 1M records"
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    for _ in range(1000):
        fn()
    gc.collect()
    grown = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    assert sys.getrefcount(DATA) == rc_data and sys.getrefcount(topic) == rc_topic
    assert grown < 256 << 10, f"{grown} bytes still held after 1M records"
