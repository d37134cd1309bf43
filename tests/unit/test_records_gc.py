"""ConsumerRecord and the cyclic GC: records decoded without deserializers are untracked (no
cycle can pass through them), records carrying deserialized objects are tracked so a cycle the
application builds through them is still freed."""
from __future__ import annotations

import gc
import struct
import weakref

from aiokafka.record.default_records import DefaultRecordBatchBuilder

from pyconsumer.records import CompletedFetch, ConsumerRecord, decode_records


def _record_set(n: int = 20) -> bytes:
    b = DefaultRecordBatchBuilder(2, 0, 0, -1, -1, -1, 1 << 30)
    for i in range(n):
        b.append(i, 1_700_000_000_000 + i, b"k%d" % i, b"v%d" % i, [("h", b"x")] if i % 2 else [])
    buf = b.build()
    struct.pack_into(">q", buf, 0, 0)
    return bytes(buf)


class Box:
    def __init__(self, raw: bytes | None) -> None:
        self.raw = raw
        self.record: object = None


def test_records_without_deserializers_are_untracked() -> None:
    recs = decode_records(_record_set(), "t", 0)
    assert len(recs) == 20
    assert not any(gc.is_tracked(r) for r in recs)
    f = CompletedFetch(_record_set(), "t", 0, 0)
    assert not any(gc.is_tracked(r) for r in f.take_records(7))


def test_records_with_deserializers_are_tracked_and_cycles_are_freed() -> None:
    recs = decode_records(_record_set(), "t", 0, value_deserializer=Box)
    assert all(gc.is_tracked(r) for r in recs)
    refs = []
    for r in recs:
        r.value.record = r          # cycle: record -> Box -> record
        refs.append(weakref.ref(r.value))
    del recs, r
    gc.collect()
    assert all(ref() is None for ref in refs)


def test_key_deserializer_alone_tracks() -> None:
    recs = CompletedFetch(_record_set(), "t", 0, 0, key_deserializer=Box).take_records(5)
    assert len(recs) == 5 and all(gc.is_tracked(r) for r in recs)


def test_user_constructed_record_is_tracked() -> None:
    box = Box(b"x")
    r = ConsumerRecord("t", 0, 1, 2, 0, None, box)
    assert gc.is_tracked(r)
    box.record = r
    ref = weakref.ref(box)
    del box, r
    gc.collect()
    assert ref() is None
