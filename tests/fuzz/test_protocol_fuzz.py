"""Random and mutated response frames: the decoder either decodes or raises KafkaProtocolError."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pyconsumer.errors import KafkaProtocolError
from pyconsumer.protocol import (
    SUPPORTED_VERSIONS,
    ApiKey,
    decode_response,
    encode_response,
    response_message,
)

VERSIONS = [(k, v) for k, (lo, hi) in SUPPORTED_VERSIONS.items() for v in range(lo, hi + 1)]


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(VERSIONS), st.binary(max_size=200))
def test_random_bytes(kv: tuple[ApiKey, int], data: bytes) -> None:
    key, version = kv
    try:
        decode_response(key, version, data)
    except KafkaProtocolError:
        pass


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(VERSIONS), st.data())
def test_mutated_valid_frames(kv: tuple[ApiKey, int], data: st.DataObject) -> None:
    key, version = kv
    some = {"topics": [], "brokers": [], "responses": [], "groups": [], "api_keys": [
        {"api_key": 1, "min_version": 0, "max_version": 12}]}
    # only the keys this response has: encoding refuses names a message never has
    known = {f.key for f in response_message(key).fields}
    body = {k: v for k, v in some.items() if k in known}
    frame = bytearray(encode_response(key, version, 7, body)[4:])
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(frame) - 1))
        frame[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(frame)))
    try:
        decode_response(key, version, bytes(frame[:cut]))
    except KafkaProtocolError:
        pass


def test_huge_lengths_are_refused_without_allocating() -> None:
    # Metadata v1: brokers array claiming 2**31-1 elements, then a string claiming 32767 bytes
    import pytest
    with pytest.raises(KafkaProtocolError, match="array of 2147483647 elements in 0 bytes"):
        decode_response(ApiKey.METADATA, 1, b"\x00\x00\x00\x01\x7f\xff\xff\xff")
    with pytest.raises(KafkaProtocolError, match="string needs 32767 bytes, 0 left at field brokers\\[0\\].host"):
        decode_response(ApiKey.METADATA, 1, b"\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x01\x7f\xff")
