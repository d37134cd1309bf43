"""Every declared message, every version, request and response: encode -> decode is identity.

Values are generated from the declarations with non-default content for every field that
exists at the version (nulls where the version allows them, on alternate runs), so a field
encoded at the wrong place or width shows up as a mismatch. Truncations of each encoding must
raise KafkaProtocolError, never another exception.
"""
from __future__ import annotations

import random
import uuid
from typing import Any

import pytest

from pyconsumer.errors import KafkaProtocolError, UnsupportedVersionError
from pyconsumer.protocol import (
    SUPPORTED_VERSIONS,
    ApiKey,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    request_message,
    response_message,
)
from pyconsumer.protocol.schema import Field, Message, in_range

CASES = [
    (key, version, kind)
    for key, (lo, hi) in SUPPORTED_VERSIONS.items()
    for version in range(lo, hi + 1)
    for kind in ("request", "response")
]


def _value(f: Field, version: int, flexible: bool, rng: random.Random, nulls: bool) -> Any:
    if nulls and in_range(version, f.nullable):
        return None
    if f.is_array:
        return [_element(f, version, flexible, rng, nulls) for _ in range(rng.randint(1, 3))]
    return _element(f, version, flexible, rng, nulls)


def _element(f: Field, version: int, flexible: bool, rng: random.Random, nulls: bool) -> Any:
    t = f.element
    if f.is_struct:
        return _struct(f.fields, version, flexible, rng, nulls)
    if t == "int8":
        return rng.randint(-128, 127)
    if t == "int16":
        return rng.randint(-(1 << 15), (1 << 15) - 1)
    if t == "uint16":
        return rng.randint(0, 0xFFFF)
    if t == "int32":
        return rng.randint(-(1 << 31), (1 << 31) - 1)
    if t == "int64":
        return rng.randint(-(1 << 63), (1 << 63) - 1)
    if t == "float64":
        return rng.random()
    if t == "bool":
        return True
    if t == "uuid":
        return uuid.UUID(int=rng.getrandbits(128))
    if t == "string":
        return rng.choice(["", "t", "orders-ü", "x" * 40])
    if t in ("bytes", "records"):
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 20)))
    raise AssertionError(t)


def _struct(fields: list[Field], version: int, flexible: bool, rng: random.Random,
            nulls: bool) -> dict[str, Any]:
    return {
        f.key: _value(f, version, flexible, rng, nulls)
        for f in fields
        if in_range(version, f.versions)
    }


def _only_present(value: Any, expected: Any) -> Any:
    """The decoded value restricted to the keys we set (absent fields come back as defaults)."""
    if isinstance(expected, dict):
        return {k: _only_present(value[k], v) for k, v in expected.items()}
    if isinstance(expected, list):
        return [_only_present(a, b) for a, b in zip(value, expected)]
    if isinstance(value, memoryview):
        return bytes(value)
    return value


def _message(key: ApiKey, kind: str) -> Message:
    return request_message(key) if kind == "request" else response_message(key)


@pytest.mark.parametrize("nulls", [False, True], ids=["values", "nulls"])
@pytest.mark.parametrize(("key", "version", "kind"), CASES,
                         ids=[f"{k.name}-v{v}-{kind}" for k, v, kind in CASES])
def test_round_trip(key: ApiKey, version: int, kind: str, nulls: bool) -> None:
    msg = _message(key, kind)
    flexible = in_range(version, msg.flexible)
    rng = random.Random(f"{key}-{version}-{kind}-{nulls}")
    body = _struct(msg.fields, version, flexible, rng, nulls)
    if kind == "request":
        frame = encode_request(key, version, 12345, "client-ü", body)
        assert int.from_bytes(frame[:4], "big") == len(frame) - 4
        api, ver, corr, client_id, decoded = decode_request(frame[4:])
        assert (api, ver, corr, client_id) == (key, version, 12345, "client-ü")
    else:
        frame = encode_response(key, version, 54321, body)
        assert int.from_bytes(frame[:4], "big") == len(frame) - 4
        corr, decoded = decode_response(key, version, frame[4:])
        assert corr == 54321
    assert _only_present(decoded, body) == body
    # every declared field is present in the decoded dict, whatever the version
    assert {f.key for f in msg.fields} <= decoded.keys()

    # every strict prefix of the body is refused cleanly (a truncated frame)
    payload = frame[4:]
    for cut in sorted({len(payload) - 1, len(payload) // 2, 6, 3, 0}):
        if cut >= len(payload):
            continue
        with pytest.raises(KafkaProtocolError):
            if kind == "request":
                decode_request(payload[:cut])
            else:
                decode_response(key, version, payload[:cut])


def test_unsupported_version_is_refused() -> None:
    lo, hi = SUPPORTED_VERSIONS[ApiKey.FETCH]
    with pytest.raises(UnsupportedVersionError, match=f"FETCH v{hi + 1}"):
        encode_request(ApiKey.FETCH, hi + 1, 1, "c", {})
    with pytest.raises(UnsupportedVersionError, match="API key 0 is not implemented"):
        encode_request(0, 0, 1, "c", {})


def test_non_nullable_null_is_refused_with_the_field_path() -> None:
    body = {"topics": [{"name": None, "partitions": []}]}
    with pytest.raises(KafkaProtocolError, match=r"OffsetCommitRequest v2: .* at field topics\[0\]\.name"):
        encode_request(ApiKey.OFFSET_COMMIT, 2, 1, "c", body)


def test_int_out_of_range_is_refused() -> None:
    with pytest.raises(KafkaProtocolError, match="out of range for int32 at field generation_id"):
        encode_request(ApiKey.HEARTBEAT, 0, 1, "c",
                       {"group_id": "g", "generation_id": 1 << 40, "member_id": "m"})
