"""Byte vectors worked out by hand from the Kafka protocol spec (kafka.apache.org/protocol and
the message JSON specs), not produced by our encoder: each byte group is annotated.
Encoding must produce exactly these bytes and decoding them must give the annotated values.
"""
from __future__ import annotations

import uuid

import pytest

from pyconsumer.errors import KafkaProtocolError
from pyconsumer.protocol import (
    ApiKey,
    api_versions_error_code,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    request_header_version,
    response_header_version,
)
from pyconsumer.protocol.primitives import (
    Reader,
    encode_unsigned_varint,
    encode_varint,
    encode_varlong,
)


def h(text: str) -> bytes:
    """Hex with spaces, newlines and '|' separators; '"..."' for ASCII; '#' comments."""
    out = bytearray()
    for line in text.splitlines():
        line = line.split("#", 1)[0]
        parts = line.split('"')
        for i, part in enumerate(parts):
            if i % 2:
                out += part.encode()
            else:
                out += bytes.fromhex(part.replace("|", " "))
    return bytes(out)


def framed(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


# ----------------------------------------------------------------------------- primitives

@pytest.mark.parametrize(("value", "hex_"), [
    (0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (300, "ac02"), (16383, "ff7f"),
    (16384, "808001"), (2**31 - 1, "ffffffff07"), (2**32 - 1, "ffffffff0f"),
])
def test_unsigned_varint(value: int, hex_: str) -> None:
    assert encode_unsigned_varint(value).hex() == hex_
    r = Reader(bytes.fromhex(hex_))
    assert r.unsigned_varint() == value and r.remaining == 0


@pytest.mark.parametrize(("value", "hex_"), [
    (0, "00"), (-1, "01"), (1, "02"), (-64, "7f"), (64, "8001"),
    (2**31 - 1, "feffffff0f"), (-(2**31), "ffffffff0f"),
])
def test_zigzag_varint(value: int, hex_: str) -> None:
    assert encode_varint(value).hex() == hex_
    assert Reader(bytes.fromhex(hex_)).varint() == value


@pytest.mark.parametrize(("value", "hex_"), [
    (0, "00"), (-1, "01"), (2**63 - 1, "feffffffffffffffff01"), (-(2**63), "ffffffffffffffffff01"),
])
def test_zigzag_varlong(value: int, hex_: str) -> None:
    assert encode_varlong(value).hex() == hex_
    assert Reader(bytes.fromhex(hex_)).varlong() == value


def test_overlong_varint_is_corrupt_not_endless() -> None:
    from pyconsumer.protocol.primitives import DecodeError
    with pytest.raises(DecodeError, match="longer than 5 bytes"):
        Reader(b"\xff" * 6).unsigned_varint()
    with pytest.raises(DecodeError, match="runs past the end"):
        Reader(b"\x80\x80").unsigned_varint()


def test_header_versions() -> None:
    assert request_header_version(ApiKey.FETCH, 11) == 1
    assert request_header_version(ApiKey.FETCH, 12) == 2
    assert response_header_version(ApiKey.FETCH, 12) == 1
    assert response_header_version(ApiKey.METADATA, 8) == 0
    # ApiVersions responses always use header v0, even at flexible versions
    assert request_header_version(ApiKey.API_VERSIONS, 3) == 2
    assert response_header_version(ApiKey.API_VERSIONS, 3) == 0
    # SaslHandshake has no flexible version
    assert request_header_version(ApiKey.SASL_HANDSHAKE, 1) == 1


# ----------------------------------------------------------------------------- ApiVersions

API_VERSIONS_V3_REQUEST = h('''
    0012 0003 00000007        # api key 18, version 3, correlation id 7
    0003 "cli"                # client id: a (non-compact) nullable string even in header v2
    00                        # header tagged fields: none
    0b "pyconsumer"           # client_software_name: compact string, length + 1
    04 "0.1"                  # client_software_version
    00                        # tagged fields
''')


def test_api_versions_v3_request() -> None:
    body = {"client_software_name": "pyconsumer", "client_software_version": "0.1"}
    assert encode_request(ApiKey.API_VERSIONS, 3, 7, "cli", body) == framed(API_VERSIONS_V3_REQUEST)
    assert decode_request(API_VERSIONS_V3_REQUEST) == (ApiKey.API_VERSIONS, 3, 7, "cli", body)


def test_api_versions_v0_response() -> None:
    payload = h('''
        00000001              # correlation id
        0000                  # error code
        00000002              # api_keys: int32 count
        0001 0000 0011        # Fetch 0-17
        0003 0000 000c        # Metadata 0-12
    ''')
    corr, body = decode_response(ApiKey.API_VERSIONS, 0, payload)
    assert corr == 1
    assert body["error_code"] == 0
    assert body["api_keys"] == [
        {"api_key": 1, "min_version": 0, "max_version": 17},
        {"api_key": 3, "min_version": 0, "max_version": 12},
    ]
    assert body["throttle_time_ms"] == 0        # absent at v0: default
    assert encode_response(ApiKey.API_VERSIONS, 0, 1, body) == framed(payload)


def test_api_versions_v3_response_with_tagged_field() -> None:
    payload = h('''
        00000002              # correlation id; header v0: no header tagged fields
        0000                  # error code
        02                    # api_keys: compact array of 1
        0012 0000 0004 00     # ApiVersions 0-4, entry tagged fields
        00000000              # throttle_time_ms
        01                    # one tagged field
        01 08 0000000000000005  # tag 1 (finalized_features_epoch), 8 bytes, value 5
    ''')
    corr, body = decode_response(ApiKey.API_VERSIONS, 3, payload)
    assert corr == 2
    assert body["api_keys"] == [{"api_key": 18, "min_version": 0, "max_version": 4}]
    assert body["finalized_features_epoch"] == 5
    assert body["supported_features"] == [] and body["zk_migration_ready"] is False
    assert encode_response(ApiKey.API_VERSIONS, 3, 2, body) == framed(payload)


def test_unknown_tagged_fields_are_skipped() -> None:
    payload = h('''
        00000002 0000 01 00000000
        02                    # two tagged fields
        05 02 abcd            # tag 5: unknown to us, skipped
        07 00                 # tag 7: empty, unknown
    ''')
    _, body = decode_response(ApiKey.API_VERSIONS, 3, payload)
    assert body["api_keys"] == [] and body["finalized_features_epoch"] == -1


# librdkafka's mock cluster answers ApiVersions v3/v4 with this hand-made body
# (../shared/reference/test-brokers.md section 1): error 35 with a raw count byte.
MOCK_UNSUPPORTED = h('''
    00000001                  # correlation id
    0023                      # error code 35 UNSUPPORTED_VERSION
    01                        # count written as a raw byte (not compact count + 1)
    0012 0000 0002            # ApiVersions 0-2
    00000000                  # throttle time; no tagged fields anywhere
''')


def test_mock_cluster_malformed_api_versions_error() -> None:
    assert api_versions_error_code(MOCK_UNSUPPORTED) == 35
    # read in the v0 format the int32 count is absurd: refused, not allocated
    with pytest.raises(KafkaProtocolError, match="ApiVersionsResponse v0: array of 16781824 elements"):
        decode_response(ApiKey.API_VERSIONS, 0, MOCK_UNSUPPORTED)
    with pytest.raises(KafkaProtocolError, match="no error code"):
        api_versions_error_code(b"\x00\x00\x00\x01\x00")


# ----------------------------------------------------------------------------- Metadata

def test_metadata_v12_request() -> None:
    payload = h('''
        0003 000c 00000001 0001 "c" 00   # header v2
        02                               # topics: compact array of 1
        00000000000000000000000000000000 # topic_id: zero UUID
        02 "t"                           # name: compact nullable string
        00                               # topic tagged fields
        01                               # allow_auto_topic_creation
        00                               # include_topic_authorized_operations
        00                               # tagged fields
    ''')
    body = {"topics": [{"name": "t"}], "allow_auto_topic_creation": True}
    assert encode_request(ApiKey.METADATA, 12, 1, "c", body) == framed(payload)
    _, _, _, _, decoded = decode_request(payload)
    assert decoded["topics"] == [{"topic_id": uuid.UUID(int=0), "name": "t"}]


def test_metadata_v1_all_topics_is_a_null_array() -> None:
    payload = h('0003 0001 00000004 ffff | ffffffff')   # null client id, topics = null (all)
    assert encode_request(ApiKey.METADATA, 1, 4, None, {"topics": None}) == framed(payload)


METADATA_V1_RESPONSE = h('''
    00000005                  # correlation id
    00000001                  # brokers: 1
    00000001 0009 "127.0.0.1" 00002384 ffff   # node 1, host, port 9092, rack null (v1+)
    00000001                  # controller_id (v1+); cluster_id is v2+
    00000001                  # topics: 1
    0000 0001 "t" 00          # error, name, is_internal (v1+)
    00000001                  # partitions: 1
    0000 00000000 00000001    # error, partition 0, leader 1
    00000001 00000001         # replica_nodes [1]
    00000001 00000001         # isr_nodes [1]
''')


def test_metadata_v1_response() -> None:
    corr, body = decode_response(ApiKey.METADATA, 1, METADATA_V1_RESPONSE)
    assert corr == 5
    assert body["brokers"] == [{"node_id": 1, "host": "127.0.0.1", "port": 9092, "rack": None}]
    assert body["controller_id"] == 1 and body["cluster_id"] is None
    (topic,) = body["topics"]
    assert (topic["name"], topic["is_internal"], topic["topic_id"]) == ("t", False, uuid.UUID(int=0))
    assert topic["partitions"] == [{
        "error_code": 0, "partition_index": 0, "leader_id": 1, "leader_epoch": -1,
        "replica_nodes": [1], "isr_nodes": [1], "offline_replicas": [],
    }]
    assert encode_response(ApiKey.METADATA, 1, 5, body) == framed(METADATA_V1_RESPONSE)


# ----------------------------------------------------------------------------- Fetch

def test_fetch_v4_request() -> None:
    payload = h('''
        0001 0004 00000002 0001 "c"    # header v1
        ffffffff                       # replica_id -1
        000001f4 00000001              # max_wait_ms 500, min_bytes 1
        00100000                       # max_bytes 1 MiB (v3+)
        01                             # isolation_level read_committed (v4+)
        00000001 0001 "t"              # topics: 1, name
        00000001                       # partitions: 1
        00000000 0000000000000005 00010000   # partition 0, fetch_offset 5, partition_max_bytes 64 KiB
    ''')
    body = {"max_wait_ms": 500, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 1,
            "topics": [{"topic": "t", "partitions": [
                {"partition": 0, "fetch_offset": 5, "partition_max_bytes": 65536}]}]}
    assert encode_request(ApiKey.FETCH, 4, 2, "c", body) == framed(payload)


FETCH_V12_RESPONSE = h('''
    00000009 00               # correlation id, header tagged fields
    00000000 0000 00000000    # throttle_time_ms, error_code, session_id
    02                        # responses: 1
    02 "t"                    # topic (compact, v0-12)
    02                        # partitions: 1
    00000000 0000             # partition 0, no error
    000000000000000a          # high_watermark 10
    000000000000000a          # last_stable_offset 10
    0000000000000000          # log_start_offset 0
    00                        # aborted_transactions: null
    ffffffff                  # preferred_read_replica -1
    04 "abc"                  # records: compact bytes of 3
    01                        # partition tagged fields: 1
    01 09 00000002 00000007 00  # tag 1 current_leader (9 bytes): leader 2, epoch 7, its own tags
    00                        # topic tagged fields
    00                        # tagged fields
''')


def test_fetch_v12_response_records_are_a_zero_copy_slice() -> None:
    frame = bytes(FETCH_V12_RESPONSE)
    corr, body = decode_response(ApiKey.FETCH, 12, frame)
    assert corr == 9
    (topic,) = body["responses"]
    assert topic["topic"] == "t"
    (p,) = topic["partitions"]
    assert (p["partition_index"], p["high_watermark"], p["last_stable_offset"]) == (0, 10, 10)
    assert p["aborted_transactions"] is None
    assert p["current_leader"] == {"leader_id": 2, "leader_epoch": 7}
    assert p["diverging_epoch"] == {"epoch": -1, "end_offset": -1}
    records = p["records"]
    assert isinstance(records, memoryview) and bytes(records) == b"abc"
    assert records.obj is frame                 # a view into the response, not a copy
    assert encode_response(ApiKey.FETCH, 12, 9, body) == framed(frame)


def test_fetch_v13_response_uses_topic_ids() -> None:
    tid = uuid.UUID("0123456789abcdef0123456789abcdef")
    payload = h('''
        00000003 00 00000000 0000 00000000
        02 0123456789abcdef0123456789abcdef   # responses: 1, topic_id (v13+), no name
        02 00000001 0001                       # partition 1, error 1 OFFSET_OUT_OF_RANGE
        ffffffffffffffff ffffffffffffffff ffffffffffffffff
        02 0000000000000007 0000000000000064 00   # aborted: producer 7 from offset 100
        ffffffff 00                            # preferred replica, records null
        00 00 00
    ''')
    _, body = decode_response(ApiKey.FETCH, 13, payload)
    (topic,) = body["responses"]
    assert topic["topic_id"] == tid and topic["topic"] == ""
    (p,) = topic["partitions"]
    assert p["error_code"] == 1 and p["records"] is None
    assert p["aborted_transactions"] == [{"producer_id": 7, "first_offset": 100}]


# ----------------------------------------------------------------------------- groups

def test_find_coordinator_v4() -> None:
    request = h('''
        000a 0004 00000001 0001 "c" 00
        00                        # key_type 0 (group)
        02 02 "g"                 # coordinator_keys: ["g"]
        00
    ''')
    assert encode_request(ApiKey.FIND_COORDINATOR, 4, 1, "c",
                          {"coordinator_keys": ["g"]}) == framed(request)
    response = h('''
        00000001 00 00000000      # header, throttle
        02                        # coordinators: 1
        02 "g" 00000001 0a "127.0.0.1" 00002384   # key, node 1, host, port
        0000 00 00                # error 0, error_message null, tagged fields
        00
    ''')
    _, body = decode_response(ApiKey.FIND_COORDINATOR, 4, response)
    assert body["coordinators"] == [{"key": "g", "node_id": 1, "host": "127.0.0.1", "port": 9092,
                                     "error_code": 0, "error_message": None}]
    assert body["node_id"] == 0 and body["host"] == ""          # v0-3 fields: defaults


def test_join_group_v5_request() -> None:
    payload = h('''
        000b 0005 00000003 0001 "c"
        0001 "g" 00007530 0000ea60   # group, session 30000, rebalance 60000
        0000                          # member_id ""
        ffff                          # group_instance_id null (v5+)
        0008 "consumer"               # protocol_type
        00000001 0005 "range" 00000002 0102   # protocols: range, metadata 01 02
    ''')
    body = {"group_id": "g", "session_timeout_ms": 30000, "rebalance_timeout_ms": 60000,
            "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"\x01\x02"}]}
    assert encode_request(ApiKey.JOIN_GROUP, 5, 3, "c", body) == framed(payload)
    assert decode_request(payload)[4] == body | {"reason": None}   # reason is v8+


def test_offset_commit_v8_request() -> None:
    payload = h('''
        0008 0008 00000004 0001 "c" 00
        02 "g" 00000001 02 "m" 00    # group, generation 1, member "m", instance null
        02 02 "t"                    # topics: 1, name
        02 00000000 000000000000002a ffffffff 00 00   # partition 0, offset 42, epoch -1, metadata null
        00 00
    ''')
    body = {"group_id": "g", "generation_id_or_member_epoch": 1, "member_id": "m",
            "topics": [{"name": "t", "partitions": [
                {"partition_index": 0, "committed_offset": 42, "committed_metadata": None}]}]}
    assert encode_request(ApiKey.OFFSET_COMMIT, 8, 4, "c", body) == framed(payload)


def test_offset_fetch_v8_request_all_partitions() -> None:
    payload = h('''
        0009 0008 00000005 0001 "c" 00
        02 02 "g" 00 00          # groups: 1, group "g", topics null (= all), tags
        01 00                    # require_stable, tags
    ''')
    body = {"groups": [{"group_id": "g", "topics": None}], "require_stable": True}
    assert encode_request(ApiKey.OFFSET_FETCH, 8, 5, "c", body) == framed(payload)


def test_list_offsets_v7_request() -> None:
    payload = h('''
        0002 0007 00000006 0001 "c" 00
        ffffffff 00              # replica -1, read_uncommitted
        02 02 "t"                # topics: 1
        02 00000000 ffffffff fffffffffffffffe 00   # partition 0, epoch -1, timestamp -2 (earliest)
        00 00
    ''')
    body = {"replica_id": -1, "topics": [{"name": "t", "partitions": [
        {"partition_index": 0, "timestamp": -2}]}]}
    assert encode_request(ApiKey.LIST_OFFSETS, 7, 6, "c", body) == framed(payload)


def test_heartbeat_v4_response() -> None:
    payload = h('00000001 00 | 00000000 001b 00')   # throttle 0, REBALANCE_IN_PROGRESS (27)
    assert decode_response(ApiKey.HEARTBEAT, 4, payload) == (
        1, {"throttle_time_ms": 0, "error_code": 27})


def test_sasl_handshake_v1_is_never_flexible() -> None:
    payload = h('0011 0001 00000001 0001 "c" | 0005 "PLAIN"')
    assert encode_request(ApiKey.SASL_HANDSHAKE, 1, 1, "c", {"mechanism": "PLAIN"}) == framed(payload)


# ----------------------------------------------------------------------------- cross-check

def test_metadata_v1_request_matches_kafka_python() -> None:
    """An independent encoder (kafka-python's protocol classes) gives the same bytes."""
    kp = pytest.importorskip("kafka.protocol.metadata")
    ours = encode_request(ApiKey.METADATA, 1, 11, "kp", {"topics": [{"name": "orders"}]})
    req = kp.MetadataRequest[1](topics=["orders"])
    theirs_body = req.encode() if hasattr(req, "encode") else bytes(req)
    assert ours.endswith(theirs_body)


# ----------------------------------------------------------------------------- KIP-848

_TOPIC_ID = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")


def test_consumer_group_heartbeat_response_v1_with_an_assignment() -> None:
    payload = h("""
        00000007                  # correlation id
        00                        # response header: no tagged fields
        00000000                  # ThrottleTimeMs
        0000                      # ErrorCode
        00                        # ErrorMessage: compact nullable string, null
        04 "m-1"                  # MemberId: length 3 + 1
        00000005                  # MemberEpoch 5
        00000bb8                  # HeartbeatIntervalMs 3000
        01                        # Assignment: int8 1 = present
          02                      #   TopicPartitions: 1 element + 1
            00112233445566778899aabbccddeeff   # TopicId
            03 00000000 00000002  #   Partitions [0, 2]
            00                    #   TopicPartitions tagged fields
          00                      #   Assignment tagged fields
        00                        # body tagged fields
    """)
    body = {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": "m-1",
            "member_epoch": 5, "heartbeat_interval_ms": 3000,
            "assignment": {"topic_partitions": [{"topic_id": _TOPIC_ID, "partitions": [0, 2]}]}}
    assert encode_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, 7, body) == framed(payload)
    assert decode_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, payload) == (7, body)


def test_consumer_group_heartbeat_response_v1_without_an_assignment() -> None:
    payload = h("""
        00000007 00 00000000 0019  # correlation id, header tags, throttle, FENCED_MEMBER_EPOCH
        04 "bad"                   # ErrorMessage
        00                         # MemberId null
        ffffffff                   # MemberEpoch -1
        00000000                   # HeartbeatIntervalMs
        ff                         # Assignment: int8 -1 = null
        00
    """)
    _, body = decode_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, payload)
    assert body["assignment"] is None and body["error_code"] == 25
    assert body["error_message"] == "bad" and body["member_id"] is None


def test_consumer_group_heartbeat_response_bad_assignment_marker_is_named() -> None:
    payload = h("00000007 00 00000000 0000 00 00 00000001 00000000 07 00")
    with pytest.raises(KafkaProtocolError, match="nullable struct marker 7 .* at field assignment"):
        decode_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, payload)


def test_consumer_group_heartbeat_request_v1_join() -> None:
    payload = h("""
        0044 0001 00000009        # api key 68, version 1, correlation id 9
        0003 "cid" 00             # client id (int16 string), header tagged fields
        02 "g"                    # GroupId
        02 "m"                    # MemberId
        00000000                  # MemberEpoch 0: join
        00                        # InstanceId null
        00                        # RackId null
        0000ea60                  # RebalanceTimeoutMs 60000
        02 02 "t"                 # SubscribedTopicNames ["t"]
        01                        # SubscribedTopicRegex "" (length 0 + 1)
        08 "uniform"              # ServerAssignor
        01                        # TopicPartitions: empty
        00                        # tagged fields
    """)
    body = {"group_id": "g", "member_id": "m", "member_epoch": 0, "rebalance_timeout_ms": 60000,
            "subscribed_topic_names": ["t"], "subscribed_topic_regex": "",
            "server_assignor": "uniform", "topic_partitions": []}
    assert encode_request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, 9, "cid", body) == framed(payload)
    api, version, corr, cid, decoded = decode_request(payload)
    assert (api, version, corr, cid) == (ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, 9, "cid")
    assert decoded == {**body, "instance_id": None, "rack_id": None}
