"""The compiled Fetch response decoder (pyext/fetch.pyx) against the generic codec, its
reference: the same body at every version, field for field, on responses with every field
set (aborted transactions, preferred replica, the partition's tagged structs, node endpoints,
errors, null / empty / whole / cut record sets, unknown tagged fields), and the same error,
word for word, on damaged and truncated bodies; each partition's index is the one the record
set alone gives."""
from __future__ import annotations

import re
import struct
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyconsumer.errors import KafkaProtocolError
from pyconsumer.protocol import (
    SUPPORTED_VERSIONS,
    ApiKey,
    decode_response,
    encode_response,
    response_message,
)
from pyconsumer.protocol.codec import decode_body
from pyconsumer.protocol.primitives import DecodeError, Reader, Writer
from pyconsumer.records import (
    FETCH_RESPONSE_VERSIONS,
    FetchResponseBody,
    RecordSetIndex,
    decode_fetch_response,
)
from pyconsumer.testing._encode import aio_v2

from tests import recordsets as rs

VERSIONS = range(FETCH_RESPONSE_VERSIONS[0], FETCH_RESPONSE_VERSIONS[1] + 1)
MESSAGE = response_message(ApiKey.FETCH)

_ONE = aio_v2(rs.sample_records(5), "none", 100)
_TWO = _ONE + aio_v2(rs.sample_records(3, 5), "gzip", 105)
RECORD_SETS: list[bytes | None] = [
    None, b"", _ONE, _TWO,
    _TWO[:len(_ONE) + 30],                        # a trailing batch cut at the response's end
    rs.kp_legacy(rs.sample_records(4), 1, "none", 7),
    rs.kp_legacy(rs.sample_records(2), 0, "none", 0),
    b"\x00" * 11,                                 # not even a batch header
]


def generic(version: int, frame: bytes) -> tuple[int, dict[str, Any]]:
    """decode_response as the generic codec alone does it (the header read the same way)."""
    r = Reader(frame)
    try:
        corr = r.int32()
        if version >= 12:
            for _ in range(r.unsigned_varint()):
                r.unsigned_varint()
                r.raw(r.unsigned_varint())
    except DecodeError as e:       # the header: the same Python code on both sides
        raise KafkaProtocolError(f"header: {e.message}") from None
    return corr, decode_body(MESSAGE, version, r)


def outcome(fn: Any, version: int, frame: bytes) -> tuple[str, Any]:
    try:
        return "body", fn(version, frame)
    except KafkaProtocolError as e:
        return "error", re.sub(r" \(byte \d+\)$", "", str(e))


def compiled(version: int, frame: bytes) -> tuple[int, dict[str, Any]]:
    if len(frame) < 4 or (version >= 12 and len(frame) < 5):
        return generic(version, frame)            # (a header error, worded by the codec)
    try:
        return decode_response(ApiKey.FETCH, version, frame)
    except KafkaProtocolError as e:
        if str(e).startswith("Malformed FetchResponse header"):
            return generic(version, frame)
        raise


# ------------------------------------------------------------------------------ bodies

int16 = st.integers(-(1 << 15), (1 << 15) - 1)
int32 = st.integers(-(1 << 31), (1 << 31) - 1)
int64 = st.integers(-(1 << 63), (1 << 63) - 1)
names = st.text(st.characters(codec="utf-8"), max_size=12)      # (no lone surrogates)


@st.composite
def partitions(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "partition_index": draw(int32), "error_code": draw(st.sampled_from([0, 0, 1, 6, 74])),
        "high_watermark": draw(int64), "last_stable_offset": draw(int64),
        "log_start_offset": draw(int64),
        "aborted_transactions": draw(st.none() | st.lists(
            st.fixed_dictionaries({"producer_id": int64, "first_offset": int64}), max_size=3)),
        "preferred_read_replica": draw(st.sampled_from([-1, 0, 3])),
        "records": draw(st.sampled_from(RECORD_SETS)),
        "diverging_epoch": {"epoch": draw(int32), "end_offset": draw(int64)},
        "current_leader": {"leader_id": draw(int32), "leader_epoch": draw(int32)},
        "snapshot_id": {"end_offset": draw(int64), "epoch": draw(int32)},
    }


@st.composite
def bodies(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "throttle_time_ms": draw(int32), "error_code": draw(st.sampled_from([0, 0, 70, 71])),
        "session_id": draw(int32),
        "responses": draw(st.lists(st.fixed_dictionaries({
            "topic": names, "topic_id": st.builds(uuid.UUID, int=st.integers(0, (1 << 128) - 1)),
            "partitions": st.lists(partitions(), max_size=4)}), max_size=3)),
        "node_endpoints": draw(st.lists(st.fixed_dictionaries({
            "node_id": int32, "host": names, "port": int32, "rack": st.none() | names}),
            max_size=2)),
    }


def typed(value: Any) -> Any:
    """value with the type of every part spelled out (== alone takes 1 for True, 0 for 0.0)."""
    if isinstance(value, dict):
        return sorted((k, typed(v)) for k, v in value.items())
    if isinstance(value, list):
        return ["list", *map(typed, value)]
    if isinstance(value, memoryview):
        return ("memoryview", bytes(value))
    return (type(value).__name__, value)


def assert_indexes(body: dict[str, Any]) -> None:
    """One index per partition, keyed by (topic position, partition number), as the record
    set alone indexes it; a key the response repeats has None (no index is the wrong one)."""
    assert isinstance(body, FetchResponseBody)
    keys = [(k, p["partition_index"]) for k, t in enumerate(body["responses"])
            for p in t["partitions"]]
    records = {key: p["records"] for key, p in zip(
        keys, (p for t in body["responses"] for p in t["partitions"]))}
    repeated = {key for key in keys if keys.count(key) > 1}
    assert body.indexes is not None and set(body.indexes) == set(keys)
    assert {key for key, index in body.indexes.items() if index is None} == repeated
    for key, index in body.indexes.items():
        if index is None:
            continue
        data = records[key]
        alone = RecordSetIndex(data, 0)
        assert (index.batches, index.size, index.whole_bytes, index.end, index.bound) == (
            alone.batches, alone.size, alone.whole_bytes, alone.end, alone.bound)
        for offset in (101, 104, 105, 110):       # judged again, as if built at that offset
            index.set_fetch_offset(offset)
            at = RecordSetIndex(data, offset)
            assert (index.fetch_offset, index.end, index.bound) == (offset, at.end, at.bound)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(VERSIONS), bodies())
def test_the_same_body_as_the_codec(version: int, body: dict[str, Any]) -> None:
    frame = encode_response(ApiKey.FETCH, version, 5, body)[4:]
    corr, reference = generic(version, frame)
    corr2, decoded = decode_response(ApiKey.FETCH, version, frame)
    assert type(decoded) is FetchResponseBody
    assert (corr2, decoded) == (corr, reference)
    assert typed(decoded) == typed(reference)
    assert_indexes(decoded)


def test_every_field_at_every_version() -> None:
    """One body with every field away from its default, at each version: what the version
    carries comes back, the rest holds the codec's defaults."""
    p = {"partition_index": 3, "error_code": 1, "high_watermark": 900,
         "last_stable_offset": 850, "log_start_offset": 10,
         "aborted_transactions": [{"producer_id": 77, "first_offset": 120}],
         "preferred_read_replica": 2, "records": _TWO,
         "diverging_epoch": {"epoch": 4, "end_offset": 800},
         "current_leader": {"leader_id": 1, "leader_epoch": 9},
         "snapshot_id": {"end_offset": 50, "epoch": 2}}
    body = {"throttle_time_ms": 12, "error_code": 0, "session_id": 99,
            "responses": [{"topic": "t\u00e9", "topic_id": uuid.UUID(int=7), "partitions": [
                p, dict(p, partition_index=4, records=None, aborted_transactions=None),
                dict(p, partition_index=5, records=b"")]}],
            "node_endpoints": [{"node_id": 1, "host": "h", "port": 9092, "rack": None},
                               {"node_id": 2, "host": "g", "port": 9093, "rack": "r1"}]}
    for version in VERSIONS:
        frame = encode_response(ApiKey.FETCH, version, 1, body)[4:]
        _, decoded = decode_response(ApiKey.FETCH, version, frame)
        assert decoded == generic(version, frame)[1]
        first = decoded["responses"][0]["partitions"][0]
        assert first["aborted_transactions"] == ([] if version < 4 else [
            {"producer_id": 77, "first_offset": 120}])
        assert first["preferred_read_replica"] == (2 if version >= 11 else -1)
        assert first["current_leader"] == ({"leader_id": 1, "leader_epoch": 9} if version >= 12
                                           else {"leader_id": -1, "leader_epoch": -1})
        assert bytes(first["records"]) == _TWO
        assert [p["records"] for p in decoded["responses"][0]["partitions"][1:]] == [None, b""]
        assert decoded["node_endpoints"] == (body["node_endpoints"] if version >= 16 else [])
        assert decoded["responses"][0]["topic"] == ("t\u00e9" if version <= 12 else "")
        assert decoded["responses"][0]["topic_id"] == (uuid.UUID(int=7) if version >= 13
                                                       else uuid.UUID(int=0))
        assert_indexes(decoded)
        assert isinstance(decoded, FetchResponseBody) and decoded.indexes is not None
        assert {key: len(i) for key, i in decoded.indexes.items()} == {
            (0, p["partition_index"]): n for p, n in zip(
                decoded["responses"][0]["partitions"], (2, 0, 0))}


def test_records_are_slices_of_the_frame() -> None:
    frame = bytearray(encode_response(ApiKey.FETCH, 16, 1, {"responses": [
        {"topic_id": uuid.UUID(int=1), "partitions": [{"records": _ONE}]}]})[4:])
    _, body = decode_response(ApiKey.FETCH, 16, frame)
    records = body["responses"][0]["partitions"][0]["records"]
    assert isinstance(records, memoryview) and records.obj is frame
    assert bytes(records) == _ONE


def test_versions_are_the_declared_ones() -> None:
    # a Fetch version added to the declarations must be taught to the compiled decoder too
    # (decode_response would quietly hand it to the slow codec)
    assert FETCH_RESPONSE_VERSIONS == SUPPORTED_VERSIONS[ApiKey.FETCH]
    with pytest.raises(ValueError, match="Fetch v18 is not a version the decoder knows"):
        decode_fetch_response(18, b"")
    with pytest.raises(ValueError, match="start 5 is outside the 4 bytes"):
        decode_fetch_response(4, b"\x00" * 4, 5)


# ------------------------------------------------------------------- unknown tagged fields

def _cstr(w: Writer, s: str | None) -> None:
    if s is None:
        w.unsigned_varint(0)
        return
    data = s.encode()
    w.unsigned_varint(len(data) + 1)
    w.raw(data)


def _tags(w: Writer, known: dict[int, bytes], extra: dict[int, bytes]) -> None:
    fields = sorted({**extra, **known}.items())
    w.unsigned_varint(len(fields))
    for tag, data in fields:
        w.unsigned_varint(tag)
        w.unsigned_varint(len(data))
        w.raw(data)


def flexible_frame(version: int, body: dict[str, Any], extra: st.DataObject) -> bytes:
    """A flexible Fetch response (v12+) written by hand, with unknown tagged fields (and
    bytes trailing inside known ones) drawn into every struct."""
    def unknown(first: int) -> dict[int, bytes]:
        tags = extra.draw(st.lists(st.integers(first, first + 40), max_size=2, unique=True))
        return {t: extra.draw(st.binary(max_size=6)) for t in tags}

    def pad() -> bytes:
        return extra.draw(st.sampled_from([b"", b"\x00", b"\x00\x07\x7f"]))

    def struct_tags(w: Writer) -> None:
        _tags(w, {}, unknown(0))

    w = Writer()
    w.int32(9)
    w.unsigned_varint(0)                          # the header's tagged fields
    w.int32(body["throttle_time_ms"])
    w.int16(body["error_code"])
    w.int32(body["session_id"])
    w.unsigned_varint(len(body["responses"]) + 1)
    for t in body["responses"]:
        if version >= 13:
            w.uuid(t["topic_id"])
        else:
            _cstr(w, t["topic"])
        w.unsigned_varint(len(t["partitions"]) + 1)
        for p in t["partitions"]:
            w.int32(p["partition_index"])
            w.int16(p["error_code"])
            w.int64(p["high_watermark"])
            w.int64(p["last_stable_offset"])
            w.int64(p["log_start_offset"])
            if p["aborted_transactions"] is None:
                w.unsigned_varint(0)
            else:
                w.unsigned_varint(len(p["aborted_transactions"]) + 1)
                for a in p["aborted_transactions"]:
                    w.int64(a["producer_id"])
                    w.int64(a["first_offset"])
                    struct_tags(w)
            w.int32(p["preferred_read_replica"])
            if p["records"] is None:
                w.unsigned_varint(0)
            else:
                w.unsigned_varint(len(p["records"]) + 1)
                w.raw(p["records"])
            known = {}
            d, c, s = p["diverging_epoch"], p["current_leader"], p["snapshot_id"]
            for tag, packed in ((0, struct.pack(">iq", d["epoch"], d["end_offset"])),
                                (1, struct.pack(">ii", c["leader_id"], c["leader_epoch"])),
                                (2, struct.pack(">qi", s["end_offset"], s["epoch"]))):
                if extra.draw(st.booleans()):
                    sub = Writer()
                    sub.raw(packed)
                    struct_tags(sub)
                    known[tag] = bytes(sub.out) + pad()
            _tags(w, known, unknown(3))
        struct_tags(w)                            # the topic's
    ends = Writer()
    ends.unsigned_varint(len(body["node_endpoints"]) + 1)
    for e in body["node_endpoints"]:
        ends.int32(e["node_id"])
        _cstr(ends, e["host"])
        ends.int32(e["port"])
        _cstr(ends, e["rack"])
        struct_tags(ends)
    # tag 0 is node_endpoints from v16 (unknown, and skipped, before)
    _tags(w, {0: bytes(ends.out) + pad()} if extra.draw(st.booleans()) else {}, unknown(1))
    return bytes(w.out)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(12, FETCH_RESPONSE_VERSIONS[1]), bodies(), st.data())
def test_unknown_tagged_fields_are_skipped_alike(version: int, body: dict[str, Any],
                                                 data: st.DataObject) -> None:
    frame = flexible_frame(version, body, data)
    reference = generic(version, frame)
    decoded = decode_response(ApiKey.FETCH, version, frame)
    assert decoded == reference
    assert_indexes(decoded[1])


# ------------------------------------------------------------------------ damaged bodies
# (many more examples in tests/fuzz/test_fetch_response_fuzz.py)

def damage(version: int, body: dict[str, Any], data: st.DataObject) -> bytes:
    """A frame of body, garbled in a few bytes and cut anywhere."""
    if version >= 12 and data.draw(st.booleans()):
        frame = bytearray(flexible_frame(version, body, data))
    else:
        frame = bytearray(encode_response(ApiKey.FETCH, version, 5, body)[4:])
    for _ in range(data.draw(st.integers(0, 4))):
        at = data.draw(st.integers(0, len(frame) - 1))
        frame[at] = data.draw(st.sampled_from([0, 1, 0x7F, 0x80, 0xFF, frame[at] ^ 1]))
    cut = data.draw(st.integers(0, len(frame)) | st.just(len(frame)))
    return bytes(frame[:cut])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(VERSIONS), bodies(), st.data())
def test_damaged_and_cut_bodies_fail_alike(version: int, body: dict[str, Any],
                                           data: st.DataObject) -> None:
    """Garbled bytes and a cut anywhere: the same body, or the same KafkaProtocolError
    (message, version, what, field path), never a crash."""
    damaged = damage(version, body, data)
    assert outcome(compiled, version, damaged) == outcome(generic, version, damaged)


def test_errors_name_the_field_and_the_byte_of_the_frame() -> None:
    body = {"responses": [{"topic": "t", "topic_id": uuid.UUID(int=3), "partitions": [
        {"partition_index": 0}, {"partition_index": 1, "records": _ONE,
                                 "current_leader": {"leader_id": 2, "leader_epoch": 5}}]}]}
    v4 = encode_response(ApiKey.FETCH, 4, 1, body)[4:]
    end = len(v4) - 10                             # inside the second record set
    with pytest.raises(KafkaProtocolError) as e:
        decode_response(ApiKey.FETCH, 4, v4[:end])
    at = end - (len(_ONE) - 10)                    # where the record set starts
    assert str(e.value) == (
        f"Malformed FetchResponse v4: bytes needs {len(_ONE)} bytes, {len(_ONE) - 10} left at "
        f"field responses[0].partitions[1].records (byte {at})")

    v16 = encode_response(ApiKey.FETCH, 16, 1, body)[4:]
    # the second partition's tagged fields: 1 field, tag 1, 9 bytes (4 + 4 + no tags)
    tags = v16.rindex(b"\x01\x01\x09\x00\x00\x00\x02\x00\x00\x00\x05\x00")
    # the same field saying 6 bytes: leader_id, then half of leader_epoch
    cut = v16[:tags] + b"\x01\x01\x06" + b"\x00\x00\x00\x02\x00\x00" + b"\x00\x00"
    with pytest.raises(KafkaProtocolError) as e:
        decode_response(ApiKey.FETCH, 16, cut)
    assert str(e.value) == (
        "Malformed FetchResponse v16: int32 needs 4 bytes, 2 left at field "
        "responses[0].partitions[1]._tagged_fields.current_leader.leader_epoch "
        f"(byte {tags + 7})")
    with pytest.raises(KafkaProtocolError, match=re.escape(
            "Malformed FetchResponse v16: tagged field 1 needs 9 bytes, 2 left at field "
            f"responses[0].partitions[1]._tagged_fields (byte {tags + 3})")):
        decode_response(ApiKey.FETCH, 16, v16[:tags + 5])
