"""The codec's runs (consecutive fixed-width fields read with one ``unpack_from`` and ints
written with one ``pack``, fixed-width arrays read in one call, the no-tagged-fields
shortcut) give exactly what the field-by-field reference gives: the same bytes, the same
bodies, and on cut, garbled or badly typed input the same error word for word (message,
byte position and field path).

Every declared message, every version, request and response (issue 26: Metadata and
ListOffsets with thousands of partitions are decoded by the runs).
"""
from __future__ import annotations

import enum
import random
from collections.abc import Iterator
from typing import Any

import pytest

from pyconsumer.protocol import SUPPORTED_VERSIONS, ApiKey, request_message, response_message
from pyconsumer.protocol.codec import EncodeError, StructCodec, compiled, reference
from pyconsumer.protocol.primitives import DecodeError, Reader, Writer
from pyconsumer.protocol.schema import Field, Message, in_range
from tests.unit.test_protocol_roundtrip import _struct

CASES = [
    (key, version, kind)
    for key, (lo, hi) in SUPPORTED_VERSIONS.items()
    for version in range(lo, hi + 1)
    for kind in ("request", "response")
]
IDS = [f"{k.name}-v{v}-{kind}" for k, v, kind in CASES]


def _message(key: ApiKey, kind: str) -> Message:
    return request_message(key) if kind == "request" else response_message(key)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, memoryview):
        return bytes(value)
    return value


def _decode(codec: StructCodec, data: bytes) -> tuple[Any, ...]:
    r = Reader(data)
    try:
        body = codec.read(r)
    except DecodeError as e:
        return ("error", e.message, e.pos, list(e.path))
    # key order too: callers may rely on the body's order
    return ("ok", _plain(body), [*body], r.pos)


def _encode(codec: StructCodec, body: Any) -> tuple[Any, ...]:
    w = Writer()
    try:
        codec.write(w, body)
    except EncodeError as e:
        return ("error", type(e).__name__, e.message, list(e.path))
    except (ValueError, OverflowError) as e:
        return ("raised", type(e).__name__, str(e))
    return ("ok", bytes(w.out))


@pytest.mark.parametrize(("key", "version", "kind"), CASES, ids=IDS)
def test_runs_decode_as_the_reference(key: ApiKey, version: int, kind: str) -> None:
    msg = _message(key, kind)
    fast, ref = compiled(msg, version), reference(msg, version)
    flexible = in_range(version, msg.flexible)
    for seed in range(3):
        rng = random.Random(f"{key}-{version}-{kind}-{seed}")
        body = _struct(msg.fields, version, flexible, rng, nulls=seed == 2)
        encoded = _encode(ref, body)
        assert encoded[0] == "ok", encoded
        assert _encode(fast, body) == encoded
        data = encoded[1]
        assert _decode(fast, data) == _decode(ref, data)
        assert _decode(fast, data)[0] == "ok"
        # every cut of the frame: the same body or the same error, field and byte
        for cut in range(len(data)):
            assert _decode(fast, data[:cut]) == _decode(ref, data[:cut]), cut
        # garbled bytes (lengths, counts, tags and values alike)
        for _ in range(40):
            garbled = bytearray(data)
            for _ in range(rng.randint(1, 3)):
                if garbled:
                    garbled[rng.randrange(len(garbled))] = rng.choice(
                        [0, 1, 0x7F, 0x80, 0xFF, rng.randrange(256)])
            assert _decode(fast, bytes(garbled)) == _decode(ref, bytes(garbled))


class _Index:
    """An int-like object that is not an int (as numpy's integers): refused as before."""

    def __index__(self) -> int:
        return 3


class _Small(enum.IntEnum):
    ONE = 1


#: values put in each fixed-width field in turn
_ODD_VALUES: list[Any] = [None, True, False, 1.5, 2.0, -1, 1 << 7, 1 << 15, 1 << 16, 1 << 31,
                          -(1 << 31) - 1, 1 << 63, -(1 << 63), "7", _Index(), _Small.ONE]


def _fixed_paths(fields: list[Field], version: int, body: dict[str, Any]
                 ) -> Iterator[tuple[dict[str, Any], str]]:
    """(struct, key) of each fixed-width field present in ``body`` (first array elements)."""
    for f in fields:
        if not in_range(version, f.versions) or f.key not in body:
            continue
        value = body[f.key]
        if f.is_struct:
            inner = value[0] if f.is_array and value else value
            if isinstance(inner, dict):
                yield from _fixed_paths(f.fields, version, inner)
        elif not f.is_array and f.type in ("int8", "int16", "int32", "int64", "uint16",
                                           "float64", "bool"):
            yield body, f.key


@pytest.mark.parametrize(("key", "version", "kind"), CASES, ids=IDS)
def test_runs_encode_odd_values_as_the_reference(key: ApiKey, version: int, kind: str) -> None:
    msg = _message(key, kind)
    fast, ref = compiled(msg, version), reference(msg, version)
    rng = random.Random(f"odd-{key}-{version}-{kind}")
    body = _struct(msg.fields, version, in_range(version, msg.flexible), rng, nulls=False)
    for struct_, field in list(_fixed_paths(msg.fields, version, body)):
        kept = struct_[field]
        for odd in _ODD_VALUES:
            struct_[field] = odd
            assert _encode(fast, body) == _encode(ref, body), (field, odd)
        del struct_[field]                        # missing: its default
        assert _encode(fast, body) == _encode(ref, body), (field, "missing")
        struct_[field] = kept


def test_metadata_partitions_decode_in_runs_exactly() -> None:
    """A Metadata v12 partition: the four ints read as one run, the three int32 arrays each
    in one call; values and a cut inside the run named as before."""
    codec = compiled(response_message(ApiKey.METADATA), 12)
    body = {"throttle_time_ms": 0, "brokers": [], "cluster_id": None, "controller_id": 1,
            "topics": [{"error_code": 0, "name": "t", "is_internal": False, "partitions": [
                {"error_code": 0, "partition_index": p, "leader_id": 1, "leader_epoch": 7,
                 "replica_nodes": [1, 2, 3], "isr_nodes": [1, 3], "offline_replicas": [2]}
                for p in range(3)]}],
            "error_code": 0}
    w = Writer()
    codec.write(w, body)
    data = bytes(w.out)
    decoded = codec.read(Reader(data))
    assert decoded["topics"][0]["partitions"][2] == {
        "error_code": 0, "partition_index": 2, "leader_id": 1, "leader_epoch": 7,
        "replica_nodes": [1, 2, 3], "isr_nodes": [1, 3], "offline_replicas": [2]}
    # cut two bytes into the first partition's run: partition_index is the field short
    start = data.index(bytes([4])) + 1            # the partitions array's compact length (3)
    with pytest.raises(DecodeError) as err:
        codec.read(Reader(data[:start + 4]))
    assert (err.value.message, err.value.pos) == ("int32 needs 4 bytes, 2 left", start + 2)
    assert err.value.path == ["partition_index", "[0]", "partitions", "[0]", "topics"]


@pytest.mark.parametrize("version", range(SUPPORTED_VERSIONS[ApiKey.FETCH][0],
                                          SUPPORTED_VERSIONS[ApiKey.FETCH][1] + 1))
def test_fetch_partition_entries_packed_at_once_are_the_codec_bytes(version: int) -> None:
    """The Fetch request's partition entry (every version all ints) packed in one go by
    encode_struct is byte for byte what the codec writes field by field (its reference, runs
    off), a tagged field given a value goes the written way, and a value that does not fit gets
    the codec's own error."""
    import uuid

    from pyconsumer.errors import KafkaProtocolError
    from pyconsumer.protocol import encode_struct, request_struct

    codec = request_struct(ApiKey.FETCH, version, ("topics", "partitions"))
    fields = request_message(ApiKey.FETCH).fields
    for key in ("topics", "partitions"):
        fields = next(f for f in fields if f.key == key).fields
    reference = StructCodec(fields, version, codec.flexible, runs=False)
    assert codec.fixed_packer() is not None and reference.fixed_packer() is None
    rng = random.Random(version)
    edges = [0, 1, -1, (1 << 31) - 1, -(1 << 31), (1 << 63) - 1, -(1 << 63)]
    for _ in range(300):
        entry = {"partition": rng.choice(edges[:5] + [rng.randrange(1 << 31)]),
                 "fetch_offset": rng.choice(edges + [rng.randrange(1 << 62)]),
                 "current_leader_epoch": rng.choice(edges[:5]),
                 "log_start_offset": -1, "partition_max_bytes": rng.choice(edges[:5] + [1 << 20])}
        if rng.random() < 0.3:
            entry["last_fetched_epoch"] = rng.choice(edges[:5])
        if rng.random() < 0.2:
            entry["replica_directory_id"] = uuid.UUID(int=rng.randrange(1 << 128))
        assert bytes(encode_struct(codec, entry)) == bytes(encode_struct(reference, entry))
    too_big = {"partition": 1 << 31, "fetch_offset": 0, "current_leader_epoch": -1,
               "log_start_offset": -1, "partition_max_bytes": 1}
    with pytest.raises(KafkaProtocolError) as packed:
        encode_struct(codec, too_big)
    with pytest.raises(KafkaProtocolError) as written:
        encode_struct(reference, too_big)
    assert str(packed.value) == str(written.value) and "partition" in str(packed.value)


@pytest.mark.parametrize("version", range(SUPPORTED_VERSIONS[ApiKey.FETCH][0],
                                          SUPPORTED_VERSIONS[ApiKey.FETCH][1] + 1))
def test_a_struct_packer_gives_encode_structs_bytes_or_leaves_it_the_value(version: int) -> None:
    """struct_packer's function of the Fetch entry's field values gives exactly the Encoded
    encode_struct gives for the same dict; where encode_struct would not pack in one go (a
    value not an int, a bool, one that does not fit, a version without one of the fields) it
    gives None, and the caller's encode_struct then gives the bytes or the error."""
    from pyconsumer.errors import KafkaProtocolError
    from pyconsumer.protocol import Encoded, encode_struct, request_struct, struct_packer

    names = ("partition", "fetch_offset", "current_leader_epoch", "log_start_offset",
             "partition_max_bytes")
    codec = request_struct(ApiKey.FETCH, version, ("topics", "partitions"))
    pack = struct_packer(codec, names)
    assert pack is not None or version < 9               # current_leader_epoch from v9
    if pack is None:
        return
    rng = random.Random(version)
    edges = [0, 1, -1, (1 << 31) - 1, -(1 << 31), (1 << 63) - 1, -(1 << 63), 1 << 31, 1 << 63]
    odd: list[object] = [True, False, 1.0, "1", None]
    packed = 0
    for _ in range(400):
        values = [rng.choice(edges[:5] + [rng.randrange(1 << 31)]) for _ in names]
        if rng.random() < 0.2:
            values[rng.randrange(len(values))] = rng.choice(edges + [rng.randrange(1 << 40)])
        if rng.random() < 0.15:
            values[rng.randrange(len(values))] = rng.choice(odd)
        got = pack(*values)
        try:
            want: Encoded | None = encode_struct(codec, dict(zip(names, values)))
        except KafkaProtocolError:
            want = None
        if got is None:
            continue              # the caller's encode_struct gives it (bytes or error)
        packed += 1
        assert type(got) is Encoded and want is not None and bytes(got) == bytes(want)
    assert packed > 100
    assert pack(1, 2, 3) is None                           # not every value given
    assert struct_packer(codec, names + ("no_such_field",)) is None
