"""The Kafka wire protocol: request/response headers and every message pyconsumer speaks.

Messages are declared once as data (:mod:`.declarations`) and encoded/decoded by one engine
(:mod:`.codec`). Bodies are dicts whose keys are the snake_case of Kafka's field names
(``ErrorCode`` -> ``error_code``); a decoded body holds every field declared for the message,
with defaults for fields the version lacks, so callers need not branch on versions. A Fetch
response's ``records`` are a zero-copy ``memoryview`` slice of the response frame.
A Fetch response is decoded by the compiled :func:`pyconsumer.records.decode_fetch_response`
(the same body in one pass, with each record set's index; the codec is its reference).
Malformed input raises :class:`pyconsumer.errors.KafkaProtocolError` naming message, version
and field; so does a body key that no version of the message has. :mod:`.bodies` holds a
TypedDict for every body and struct, generated from the declarations by
:mod:`.generate_stubs`.
"""
from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from pyconsumer.errors import KafkaProtocolError, UnsupportedVersionError
from pyconsumer.protocol.codec import (
    Encoded,
    StructCodec,
    decode_body,
    default_body,
    encode_body,
    encode_struct,
    encoded_array,
    struct_codec,
    struct_packer,
)
from pyconsumer.protocol.primitives import Buffer, DecodeError, Reader, Writer
from pyconsumer.protocol.schema import MESSAGES, Message, in_range
from pyconsumer.records import FETCH_RESPONSE_VERSIONS, decode_fetch_response

__all__ = [
    "ApiKey",
    "Encoded",
    "SUPPORTED_VERSIONS",
    "StructCodec",
    "api_versions_error_code",
    "decode_request",
    "decode_response",
    "default_body",
    "encode_request",
    "encode_response",
    "encode_struct",
    "encoded_array",
    "struct_packer",
    "is_flexible",
    "request_header_version",
    "request_message",
    "request_struct",
    "response_header_version",
    "response_message",
]


class ApiKey(enum.IntEnum):
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    OFFSET_FOR_LEADER_EPOCH = 23
    SASL_AUTHENTICATE = 36
    CONSUMER_GROUP_HEARTBEAT = 68
    GET_TELEMETRY_SUBSCRIPTIONS = 71
    PUSH_TELEMETRY = 72


_REQUESTS: dict[int, Message] = {}
_RESPONSES: dict[int, Message] = {}
for _m in MESSAGES.values():
    (_REQUESTS if _m.is_request else _RESPONSES)[_m.api_key] = _m

SUPPORTED_VERSIONS: dict[ApiKey, tuple[int, int]] = {
    k: _REQUESTS[k].versions for k in ApiKey
}


def _api(api_key: int) -> ApiKey:
    try:
        return ApiKey(api_key)
    except ValueError:
        raise UnsupportedVersionError(f"API key {api_key} is not implemented") from None


def request_message(api_key: int) -> Message:
    return _REQUESTS[_api(api_key)]


def response_message(api_key: int) -> Message:
    return _RESPONSES[_api(api_key)]


def _check_version(api_key: int, version: int) -> Message:
    msg = request_message(api_key)
    if not in_range(version, msg.versions):
        lo, hi = msg.versions
        raise UnsupportedVersionError(
            f"{ApiKey(api_key).name} v{version} is not supported (pyconsumer speaks v{lo}-v{hi})"
        )
    return msg


def request_struct(api_key: int, version: int, path: tuple[str, ...]) -> StructCodec:
    """The codec of the struct at ``path`` inside a request at ``version``: what it encodes
    (:func:`encode_struct`) may stand in the body as an :class:`Encoded`, written as is."""
    return struct_codec(_check_version(api_key, version), version, path)


def is_flexible(api_key: int, version: int) -> bool:
    return in_range(version, request_message(api_key).flexible)


def request_header_version(api_key: int, version: int) -> int:
    return 2 if is_flexible(api_key, version) else 1


def response_header_version(api_key: int, version: int) -> int:
    # ApiVersions answers with header v0 at every version: a client that sent a version the
    # broker does not know must still be able to read the error code.
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if is_flexible(api_key, version) else 0


def _frame(w: Writer) -> bytes:
    n = len(w.out)
    return n.to_bytes(4, "big") + bytes(w.out)


def encode_request(
    api_key: int, version: int, correlation_id: int, client_id: str | None,
    body: Mapping[str, Any],
) -> bytes:
    """A whole request frame, 4-byte length prefix included."""
    msg = _check_version(api_key, version)
    w = Writer()
    w.int16(api_key)
    w.int16(version)
    w.int32(correlation_id)
    cid = None if client_id is None else client_id.encode("utf-8")
    if cid is None:
        w.int16(-1)
    else:
        w.int16(len(cid))
        w.raw(cid)
    if request_header_version(api_key, version) >= 2:
        w.unsigned_varint(0)                     # no header tagged fields
    encode_body(msg, version, body, w)
    return _frame(w)


def _skip_header_tags(r: Reader, what: str) -> None:
    try:
        count = r.unsigned_varint()
        for _ in range(count):
            r.unsigned_varint()
            r.raw(r.unsigned_varint(), "tagged field")
    except DecodeError as e:
        raise KafkaProtocolError(f"Malformed {what} header: {e.message}") from None


def decode_response(api_key: int, version: int, payload: Buffer) -> tuple[int, dict[str, Any]]:
    """(correlation id, body) of a response frame without its length prefix."""
    msg = response_message(api_key)
    r = Reader(payload)
    try:
        correlation_id = r.int32()
    except DecodeError:
        raise KafkaProtocolError(
            f"Malformed {msg.name} v{version}: {r.remaining} bytes, no correlation id"
        ) from None
    if response_header_version(api_key, version) >= 1:
        _skip_header_tags(r, msg.name)
    if api_key == ApiKey.FETCH and version <= FETCH_RESPONSE_VERSIONS[1]:
        # the compiled one-pass decoder (issue 26): the codec's body, value for value (the
        # codec stays its reference), with each record set's index (body.indexes)
        return correlation_id, decode_fetch_response(version, r.buf, r.pos, True)
    return correlation_id, decode_body(msg, version, r)


def api_versions_error_code(payload: Buffer) -> int:
    """The error code of an ApiVersions response, read before (and without) the rest.

    On UNSUPPORTED_VERSION a broker may answer in a format other than the version asked
    (or even a malformed flexible body), so only these two bytes
    are trusted.
    """
    r = Reader(payload)
    try:
        r.int32()
        return r.int16()
    except DecodeError:
        raise KafkaProtocolError(
            f"Malformed ApiVersionsResponse: {len(r.buf)} bytes, no error code"
        ) from None


def encode_response(
    api_key: int, version: int, correlation_id: int, body: Mapping[str, Any]
) -> bytes:
    """A whole response frame (used by tests and fake peers)."""
    _check_version(api_key, version)
    msg = response_message(api_key)
    w = Writer()
    w.int32(correlation_id)
    if response_header_version(api_key, version) >= 1:
        w.unsigned_varint(0)
    encode_body(msg, version, body, w)
    return _frame(w)


def decode_request(payload: Buffer) -> tuple[ApiKey, int, int, str | None, dict[str, Any]]:
    """(api key, version, correlation id, client id, body) of a request frame."""
    r = Reader(payload)
    try:
        api_key = r.int16()
        version = r.int16()
        correlation_id = r.int32()
        n = r.int16()
        client_id = None if n == -1 else r.text(n)
    except DecodeError as e:
        raise KafkaProtocolError(f"Malformed request header: {e.message}") from None
    msg = _check_version(api_key, version)
    if request_header_version(api_key, version) >= 2:
        _skip_header_tags(r, msg.name)
    return ApiKey(api_key), version, correlation_id, client_id, decode_body(msg, version, r)
