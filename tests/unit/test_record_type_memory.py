"""ConsumerRecord's lifetime as the takes make it: ten million records leak nothing (traced
memory, RSS, references to the shared topic), and nothing but the caller holds a record, its
key, value or headers once handed out, so dropping them frees them while the cursor lives."""
from __future__ import annotations

import gc
import os
import sys
import tracemalloc

import pytest

from tests import recordsets as rs

from pyconsumer.records import CompletedFetch, decode_records

# 1000 records in two batches: nulls, headers, shared and distinct timestamps
DATA = b"".join(
    rs.aio_v2([(i, 1_700_000_000_000 + i // 3, None if i % 9 == 0 else b"k%d" % i,
                None if i % 13 == 0 else b"v" * (i % 120),
                [("h", b"x"), ("n", None)] if i % 10 == 0 else []) for i in range(500)],
              codec, base, leader_epoch=3)
    for codec, base in (("none", 0), ("lz4", 500)))


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _poll_like(topic: str, rounds: int) -> int:
    """take_records(500) over DATA ``rounds`` times, the caller touching every record and
    keeping the previous take alive during the next (as a poll loop does)."""
    n, held = 0, []
    for _ in range(rounds):
        f = CompletedFetch(DATA, topic, 0, 0)
        while True:
            recs = f.take_records(500)
            if not recs:
                break
            for r in recs:
                r.key, r.value, r.offset, r.timestamp, r.headers  # noqa: B018
            held = recs
            n += len(recs)
    del held
    return n


def _whole(topic: str, rounds: int) -> int:
    n = 0
    for _ in range(rounds):
        n += len(decode_records(DATA, topic, 0))
    return n


@pytest.mark.timeout(120)
@pytest.mark.parametrize("fn", [_poll_like, _whole])
def test_millions_of_records_leak_nothing(fn) -> None:  # type: ignore[no-untyped-def]
    topic = "".join(["leak-", "check"])         # an object of this test's own
    fn(topic, 30)
    gc.collect()
    rc_topic, rc_data = sys.getrefcount(topic), sys.getrefcount(DATA)
    rss0 = _rss()
    assert fn(topic, 10_000) == 10_000_000      # without tracemalloc: C-level leaks show in RSS
    gc.collect()
    assert _rss() - rss0 < 16 << 20, "RSS grew over 10M records"
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        fn(topic, 1000)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert grown < 64 << 10, f"{grown} bytes still held after 1M records"
    assert sys.getrefcount(topic) == rc_topic and sys.getrefcount(DATA) == rc_data


def test_the_cursor_holds_no_record_it_handed_out() -> None:
    f = CompletedFetch(DATA, "t", 0, 0)
    recs = f.take_records(20)
    assert [r.offset for r in recs] == list(range(20))
    r = recs[10]
    h = recs[0].headers
    key, value = r.key, r.value
    del recs
    gc.collect()
    # one reference from r (the name) and one from getrefcount's argument: nothing else
    assert sys.getrefcount(r) == 2
    assert gc.get_referrers(r) == []
    # key and value: the record's and ours (and the argument's); headers: the first record's
    # list, held by nothing but that record and us
    assert sys.getrefcount(key) == 3 and sys.getrefcount(value) == 3
    assert [x for x in gc.get_referrers(h) if x is not f] == []
    # the cursor goes on from where it was, and the records it hands out are new ones
    more = f.take_records(5)
    assert [m.offset for m in more] == list(range(20, 25))
    for m in more:                              # (a loop: a generator would hold r in a cell)
        assert m is not r
    assert r.offset == 10 and r.key == b"k10" and r.value == b"v" * 10
