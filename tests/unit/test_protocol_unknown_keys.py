"""Encoding refuses body keys that no version of the message has, and only those.

A typo (``partiton``) used to encode the field's default silently; a key of a field that
exists only at other versions of the same message (a body built once for several versions)
must keep encoding, ignored at the versions that lack it.
"""
from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

from pyconsumer.errors import KafkaProtocolError
from pyconsumer.protocol import (
    ApiKey,
    decode_request,
    encode_request,
    encode_response,
)
from pyconsumer.protocol.codec import encode_body
from pyconsumer.protocol.primitives import Writer
from pyconsumer.protocol.schema import MESSAGES

HEARTBEAT = {"group_id": "g", "generation_id": 3, "member_id": "m"}


def test_top_level_typo_names_message_version_key_and_close_match() -> None:
    body = {"group_id": "g", "generation": 3, "member_id": "m"}
    with pytest.raises(KafkaProtocolError) as err:
        encode_request(ApiKey.HEARTBEAT, 4, 1, "c", body)
    assert str(err.value) == (
        "Cannot encode HeartbeatRequest v4: unknown key 'generation' "
        "(did you mean 'generation_id'?) at the top level; "
        "no version of HeartbeatRequest has it")


def test_nested_typo_names_the_struct_path() -> None:
    body = {"replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "topics": [
        {"topic": "t", "partitions": [
            {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20},
            {"partiton": 1, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]}
    with pytest.raises(KafkaProtocolError) as err:
        encode_request(ApiKey.FETCH, 4, 1, "c", body)
    assert str(err.value) == (
        "Cannot encode FetchRequest v4: unknown key 'partiton' (did you mean 'partition'?) "
        "in topics[0].partitions[1]; no version of FetchRequest has it")


def test_several_unknown_keys_are_all_listed() -> None:
    body: dict[Any, Any] = {**HEARTBEAT, "zzz": 1, "member": "m2", 7: "x"}
    with pytest.raises(KafkaProtocolError, match=re.escape(
            "unknown keys 'member' (did you mean 'member_id'?), 'zzz' and 7 at the top level; "
            "no version of HeartbeatRequest has them")):
        encode_request(ApiKey.HEARTBEAT, 0, 1, "c", body)


def test_response_encoding_refuses_too() -> None:
    with pytest.raises(KafkaProtocolError, match=re.escape(
            "Cannot encode MetadataResponse v1: unknown key 'partition_index' in brokers[0]")):
        encode_response(ApiKey.METADATA, 1, 1, {"brokers": [
            {"node_id": 1, "host": "h", "port": 9092, "partition_index": 0}]})


def test_embedded_group_formats_refuse_too() -> None:
    with pytest.raises(KafkaProtocolError, match=re.escape(
            "Cannot encode ConsumerProtocolSubscription v0: unknown key 'topic' "
            "(did you mean 'topics'?) at the top level")):
        encode_body(MESSAGES["ConsumerProtocolSubscription"], 0, {"topic": ["t"]}, Writer())


def test_a_field_of_another_version_is_accepted_and_ignored() -> None:
    # topic (v0-12) and topic_id (v13+) side by side, replica_id (v0-14) at v15+ and
    # replica_state (v15+) at v4: one body for every Fetch version
    tid = uuid.UUID(int=0x1234)
    body: dict[str, Any] = {
        "replica_id": -1, "replica_state": {"replica_id": -1, "replica_epoch": -1},
        "max_wait_ms": 500, "min_bytes": 1, "topics": [
            {"topic": "t", "topic_id": tid, "partitions": [
                {"partition": 0, "fetch_offset": 5, "partition_max_bytes": 1 << 20}]}]}
    for version, drop in [(4, ("replica_state", "topic_id")), (13, ("replica_state", "topic")),
                          (17, ("replica_id", "topic"))]:
        only = {k: v for k, v in body.items() if k not in drop}
        only["topics"] = [{k: v for k, v in only["topics"][0].items() if k not in drop}]
        assert encode_request(ApiKey.FETCH, version, 1, "c", body) == \
            encode_request(ApiKey.FETCH, version, 1, "c", only)


def test_a_body_decoded_at_one_version_encodes_at_every_other() -> None:
    # a decoded body holds every field of every version (defaults for the absent ones)
    frame = encode_request(ApiKey.OFFSET_FETCH, 7, 1, "c", {
        "group_id": "g", "topics": [{"name": "t", "partition_indexes": [0, 1]}],
        "require_stable": True})
    body = decode_request(frame[4:])[4]
    assert {"group_id", "topics", "groups", "require_stable"} <= body.keys()
    for version in range(0, 10):
        encode_request(ApiKey.OFFSET_FETCH, version, 1, "c", body)

