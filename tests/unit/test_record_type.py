"""ConsumerRecord as the takes make it (records_fill_v2: off the free list, fields written in
place) against the record as the per-record path makes it (the path with deserializers), as
its Python constructor makes it, as kafka-python reads the bytes, and as the type before the
in-place construction pickled it: fields, equality, repr, pickling and copying, for
hypothesis-generated record sets; and records_with (typed poll()'s rebuild) against the
records rebuilt one by one as before, records_columns against the columns built from
Python lists."""
from __future__ import annotations

import copy
import gc
import pickle
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests import recordsets as rs

import pyarrow as pa

from pyconsumer.records import (
    CompletedFetch,
    ConsumerRecord,
    decode_records,
    records_columns,
    records_with,
)

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))

_bytes = st.none() | st.binary(max_size=40)
_header = st.tuples(st.text(max_size=8), _bytes)
_record = st.tuples(_bytes, _bytes, st.lists(_header, max_size=3))


#: the leader epoch of the batch each offset was written in, by record set
_EPOCHS: dict[bytes, dict[int, int]] = {}


@st.composite
def record_sets(draw: st.DrawFn) -> tuple[bytes, int, int]:
    """(record set of 1-4 v2 batches, each in some codec and leader epoch, the fetch offset
    (maybe mid-batch), the take size); the epochs go to _EPOCHS."""
    parts, base = [], draw(st.integers(0, 1 << 40))
    first = base
    epochs = {}
    for _ in range(draw(st.integers(1, 4))):
        recs = draw(st.lists(_record, min_size=1, max_size=30))
        ts0 = draw(st.integers(0, 1 << 42))
        same_ts = draw(st.booleans())     # records of one millisecond share their int
        rows = [(i, ts0 if same_ts else ts0 + i * draw(st.integers(0, 3)), k, v, h)
                for i, (k, v, h) in enumerate(recs)]
        epoch = draw(st.integers(-1, 50))
        parts.append(rs.aio_v2(rows, draw(st.sampled_from(["none", "gzip", "lz4", "zstd"])),
                               base, leader_epoch=epoch))
        epochs.update((base + i, epoch) for i in range(len(recs)))
        base += len(recs)
    fetch = draw(st.integers(first, base))
    data = b"".join(parts)
    _EPOCHS[data] = epochs
    return data, fetch, draw(st.integers(1, 40))


def _fields(r: ConsumerRecord) -> tuple[Any, ...]:
    return (r.topic, r.partition, r.offset, r.timestamp, r.timestamp_type, r.key, r.value,
            r.headers, r.leader_epoch, r.serialized_key_size, r.serialized_value_size)


def _old_repr(r: ConsumerRecord) -> str:
    """The repr the type has always had."""
    return (f"ConsumerRecord(topic={r.topic!r}, partition={r.partition}, "
            f"offset={r.offset}, timestamp={r.timestamp}, "
            f"timestamp_type={r.timestamp_type}, key={r.key!r}, value={r.value!r}, "
            f"headers={r.headers!r}, leader_epoch={r.leader_epoch}, "
            f"serialized_key_size={r.serialized_key_size}, "
            f"serialized_value_size={r.serialized_value_size})")


def _take_all(data: bytes, fetch: int, n: int, **kw: Any) -> list[ConsumerRecord]:
    f, out = CompletedFetch(data, "topic-a", 9, fetch, **kw), []
    while True:
        got = f.take_records(n)
        if not got:
            assert f.is_drained
            return out
        out += got


def _same(a: object) -> object:
    return a


@SETTINGS
@given(record_sets())
def test_fast_records_equal_the_per_record_path_and_the_constructor(case: tuple[bytes, int, int]
                                                                     ) -> None:
    data, fetch, n = case
    fast = _take_all(data, fetch, n)
    slow = _take_all(data, fetch, n, key_deserializer=_same, value_deserializer=_same)
    whole = decode_records(data, "topic-a", 9, fetch_offset=fetch)
    ref = [r for r in rs.reference(data) if r["offset"] >= fetch]
    assert [r.offset for r in fast] == [r["offset"] for r in ref]
    assert len(slow) == len(whole) == len(fast)
    epochs = _EPOCHS.pop(data)
    for a, b, c, want in zip(fast, slow, whole, ref):
        assert (a.topic, a.partition, a.key, a.value, a.timestamp, a.timestamp_type,
                a.headers) == ("topic-a", 9, want["key"], want["value"], want["timestamp"],
                               want["timestamp_type"], want["headers"])
        assert a.leader_epoch == (None if epochs[a.offset] < 0 else epochs[a.offset])
        assert a.serialized_key_size == (-1 if a.key is None else len(a.key))
        assert a.serialized_value_size == (-1 if a.value is None else len(a.value))
        assert _fields(a) == _fields(b) == _fields(c)
        assert a == b == c and not a != b
        built = ConsumerRecord(*_fields(a))
        assert built == a and _fields(built) == _fields(a)
        assert repr(a) == repr(b) == repr(built) == _old_repr(a)
        assert not gc.is_tracked(a) and gc.is_tracked(b)
        for proto in range(2, pickle.HIGHEST_PROTOCOL + 1):
            back = pickle.loads(pickle.dumps(a, proto))
            assert type(back) is ConsumerRecord and back == a and _fields(back) == _fields(a)
        assert copy.copy(a) == a and copy.deepcopy(a) == a
        assert a.headers is a.headers or not a.headers   # a list made once, not per access


def test_unequal_in_each_field() -> None:
    base = ("t", 1, 2, 3, 0, b"k", b"v", [("h", b"x")], 4, 1, 1)
    r = ConsumerRecord(*base)
    for i, other in enumerate(("u", 2, 3, 4, 1, b"K", b"V", [("h", None)], 5, 2, 2)):
        args = list(base)
        args[i] = other
        assert ConsumerRecord(*args) != r, i
    assert r != "not a record" and (r == object()) is False
    assert ConsumerRecord(*base) == r


# what the type pickled before records were made in place (protocols 2 and 5)
_OLD_PICKLES = [
    (b'\x80\x02cpyconsumer._records\nConsumerRecord\nq\x00(X\x06\x00\x00\x00ordersq\x01K\x07'
     b'\x8a\x05\x14\x1a\x99\xbe\x1c\x8a\x06{h\xe5\xcf\x8b\x01K\x01c_codecs\nencode\nq\x02X\x02'
     b'\x00\x00\x00k\x00q\x03X\x06\x00\x00\x00latin1q\x04\x86q\x05Rq\x06h\x02X\x05\x00\x00\x00'
     b'valueq\x07h\x04\x86q\x08Rq\t]q\n(X\x01\x00\x00\x00hq\x0bh\x02X\x01\x00\x00\x00xq\x0ch'
     b'\x04\x86q\rRq\x0e\x86q\x0fX\x01\x00\x00\x00nq\x10N\x86q\x11eK\x05K\x02K\x05tq\x12Rq'
     b'\x13.', 0),
    (b'\x80\x05\x95s\x00\x00\x00\x00\x00\x00\x00\x8c\x13pyconsumer._records\x94\x8c\x0e'
     b'ConsumerRecord\x94\x93\x94(\x8c\x06orders\x94K\x07\x8a\x05\x14\x1a\x99\xbe\x1c\x8a\x06'
     b'{h\xe5\xcf\x8b\x01K\x01C\x02k\x00\x94C\x05value\x94]\x94(\x8c\x01h\x94C\x01x\x94\x86'
     b'\x94\x8c\x01n\x94N\x86\x94eK\x05K\x02K\x05t\x94R\x94.', 0),
    (b'\x80\x02cpyconsumer._records\nConsumerRecord\nq\x00(X\x01\x00\x00\x00tq\x01K\x00K\x00J'
     b'\xff\xff\xff\xffJ\xff\xff\xff\xffNNNNJ\xff\xff\xff\xffJ\xff\xff\xff\xfftq\x02Rq\x03.', 1),
    (b'\x80\x05\x95O\x00\x00\x00\x00\x00\x00\x00\x8c\x13pyconsumer._records\x94\x8c\x0e'
     b'ConsumerRecord\x94\x93\x94(\x8c\x01t\x94K\x00K\x00J\xff\xff\xff\xffJ\xff\xff\xff\xffNNNNJ'
     b'\xff\xff\xff\xffJ\xff\xff\xff\xfft\x94R\x94.', 1),
]
_PICKLED = [
    ConsumerRecord("orders", 7, 123456789012, 1700000000123, 1, b"k\x00", b"value",
                   [("h", b"x"), ("n", None)], 5, 2, 5),
    ConsumerRecord("t", 0, 0, -1, -1, None, None),
]


def test_loads_what_the_type_pickled_before() -> None:
    for raw, which in _OLD_PICKLES:
        got = pickle.loads(raw)
        want = _PICKLED[which]
        assert type(got) is ConsumerRecord and got == want and _fields(got) == _fields(want)
        assert repr(got) == repr(want)
        assert pickle.dumps(want, raw[1]) == raw      # and pickles the same bytes now


def _old_with(r: ConsumerRecord, key: object, value: object) -> ConsumerRecord:
    """How typed poll() rebuilt a record before records_with."""
    return ConsumerRecord(r.topic, r.partition, r.offset, r.timestamp, r.timestamp_type, key,
                          value, r.headers, r.leader_epoch, r.serialized_key_size,
                          r.serialized_value_size)


@SETTINGS
@given(record_sets(), st.data())
def test_records_with_equals_the_records_rebuilt_one_by_one(case: tuple[bytes, int, int],
                                                             data: st.DataObject) -> None:
    raw, fetch, _ = case
    _EPOCHS.pop(raw, None)
    recs = decode_records(raw, "t", 1, fetch_offset=fetch)
    # the rows a plan keeps: in order (DROPMALFORMED leaves some out), or shuffled
    picks = data.draw(st.lists(st.sampled_from(recs), unique_by=id) if recs else st.just([]))
    if data.draw(st.booleans()):
        picks.sort(key=lambda r: r.offset)
    keys = [{"k": i} for i in range(len(picks))] if data.draw(st.booleans()) else None
    values = [[i] for i in range(len(picks))] if data.draw(st.booleans()) else None
    got = records_with(recs, [r.offset for r in picks], keys, values)
    want = [_old_with(r, r.key if keys is None else keys[i], r.value if values is None else
                      values[i]) for i, r in enumerate(picks)]
    assert got == want and [repr(g) for g in got] == [repr(w) for w in want]
    for g, r in zip(got, picks):
        assert _fields(g) == _fields(r)[:5] + _fields(g)[5:7] + _fields(r)[7:]
        assert gc.is_tracked(g) and g is not r
        assert g.headers == r.headers and (not r.headers or g.headers is not r.headers)
        if keys is None:
            assert g.key is r.key
        if values is None:
            assert g.value is r.value


def test_records_with_refuses_what_it_cannot_match() -> None:
    recs = decode_records(rs.aio_v2([(i, i, b"k", b"v", []) for i in range(3)], "none", 10),
                          "t", 0)
    with pytest.raises(KeyError):
        records_with(recs, [11, 99])
    with pytest.raises(ValueError, match="2 offsets, but 1 keys"):
        records_with(recs, [10, 11], [b"a"])
    with pytest.raises(TypeError):
        records_with([recs[0], "not a record"], [10, 11])
    assert records_with(recs, []) == []


@SETTINGS
@given(record_sets(), st.booleans(), st.booleans())
def test_records_columns_equal_the_columns_from_lists(case: tuple[bytes, int, int], keys: bool,
                                                      values: bool) -> None:
    raw, fetch, _ = case
    _EPOCHS.pop(raw, None)
    recs = decode_records(raw, "t", 1, fetch_offset=fetch)
    offsets, k, v = records_columns(recs, keys, values)
    assert offsets.type == pa.int64() and offsets.equals(
        pa.array([r.offset for r in recs], pa.int64()))
    for got, asked, name in ((k, keys, "key"), (v, values, "value")):
        if not asked:
            assert got is None
            continue
        assert got is not None
        got.validate(full=True)
        assert got.type == pa.binary()
        assert got.equals(pa.array([getattr(r, name) for r in recs], pa.binary()))


def test_records_columns_refuse_what_is_not_bytes() -> None:
    recs = [ConsumerRecord("t", 0, 5, 0, 0, b"k", {"a": 1})]
    with pytest.raises(TypeError, match="value of the record at offset 5 is a dict"):
        records_columns(recs)
    offsets, keys, values = records_columns(recs, True, False)
    assert offsets.to_pylist() == [5] and keys is not None and keys.to_pylist() == [b"k"]
    assert values is None
    with pytest.raises(TypeError):
        records_columns(["not a record"])
