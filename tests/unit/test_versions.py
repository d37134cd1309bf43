"""net/versions on its own: reading an ApiVersions answer (KIP-511's lower-version retry
included) and choosing the version of each request from what the broker advertised."""
from __future__ import annotations

from typing import Any

import pytest

from pyconsumer.errors import (
    ClusterAuthorizationFailedError,
    KafkaProtocolError,
    UnsupportedVersionError,
)
from pyconsumer.net.versions import FIRST_API_VERSIONS, BrokerVersions, read_api_versions
from pyconsumer.protocol import SUPPORTED_VERSIONS, ApiKey, encode_response

WHO = "node 1 (b1:9092)"


def frame(version: int, error_code: int, keys: list[tuple[ApiKey, int, int]]) -> bytearray:
    """An ApiVersions answer as the connection hands it over (no length prefix)."""
    body: dict[str, Any] = {"error_code": error_code, "throttle_time_ms": 0, "api_keys": [
        {"api_key": int(k), "min_version": lo, "max_version": hi} for k, lo, hi in keys]}
    return bytearray(encode_response(ApiKey.API_VERSIONS, version, 7, body)[4:])


def test_an_answer_without_error_is_its_body() -> None:
    answer = read_api_versions(3, frame(3, 0, [(ApiKey.FETCH, 4, 17)]), WHO)
    assert not isinstance(answer, int)
    assert [(k["api_key"], k["min_version"], k["max_version"]) for k in answer["api_keys"]] == \
        [(ApiKey.FETCH, 4, 17)]


def test_unsupported_version_retries_with_what_the_broker_lists() -> None:
    # KIP-511: the refusal comes as a v0 body naming the broker's ApiVersions range
    refusal = frame(0, 35, [(ApiKey.API_VERSIONS, 0, 2)])
    assert read_api_versions(FIRST_API_VERSIONS, refusal, WHO) == 2
    # a body that does not parse: fall back to v0
    assert read_api_versions(3, bytearray(b"\x00\x00\x00\x07\x00\x23\xff"), WHO) == 0
    with pytest.raises(KafkaProtocolError, match=r"^node 1 \(b1:9092\) refused ApiVersions v0 "
                       r"as unsupported and there is no lower version to try$"):
        read_api_versions(0, frame(0, 35, []), WHO)


def test_other_errors_are_raised() -> None:
    with pytest.raises(ClusterAuthorizationFailedError, match="ApiVersions v3 from node 1"):
        read_api_versions(3, frame(3, 31, []), WHO)
    with pytest.raises(KafkaProtocolError, match=r"^node 1 \(b1:9092\): "):
        read_api_versions(3, bytearray(b"\x00"), WHO)


def test_versions_chosen_from_what_the_broker_advertises() -> None:
    versions = BrokerVersions()
    with pytest.raises(UnsupportedVersionError, match="does not support FETCH"):
        versions.version_for(ApiKey.FETCH, WHO)
    fetch_hi = SUPPORTED_VERSIONS[ApiKey.FETCH][1]
    answer = read_api_versions(3, frame(3, 0, [(ApiKey.FETCH, 4, fetch_hi + 5),
                                               (ApiKey.METADATA, 0, 1)]), WHO)
    assert not isinstance(answer, int)
    versions.accept(3, answer)
    assert versions.version_for(ApiKey.FETCH, WHO) == fetch_hi
    assert versions.version_for(ApiKey.FETCH, WHO, max_version=9) == 9
    with pytest.raises(UnsupportedVersionError, match=r"supports METADATA v0-1, pyconsumer "
                       r"needs v\d+-\d+: no common version"):
        versions.version_for(ApiKey.METADATA, WHO, min_version=4)
    versions.check(ApiKey.FETCH, 5, WHO)
    versions.check(ApiKey.JOIN_GROUP, 99, WHO)          # not listed: the broker's to refuse
    with pytest.raises(UnsupportedVersionError, match=r"supports FETCH v4-\d+, not v3$"):
        versions.check(ApiKey.FETCH, 3, WHO)
    negotiated = versions.negotiated(WHO)
    assert negotiated["FETCH"] == fetch_hi and negotiated["API_VERSIONS"] == 3
    versions.clear()
    assert versions.ranges == {} and versions.answered is None
