"""The consumer's embedded group protocol: what a member sends in JoinGroup (its subscription)
and receives in SyncGroup (its assignment).

Both are Kafka's ConsumerProtocolSubscription / ConsumerProtocolAssignment (declared with the
other messages and encoded by the same codec), prefixed by an int16 version. A reader takes
any version from 0 up, and reads newer versions as the highest it knows (fields are only ever
appended, so a v4 body read as v3 ignores the tail), as Java's ConsumerProtocol does.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pyconsumer.errors import KafkaProtocolError
from pyconsumer.protocol.codec import decode_body, encode_body
from pyconsumer.protocol.schema import MESSAGES
from pyconsumer.protocol.primitives import DecodeError, Reader, Writer
from pyconsumer.structs import TopicPartition

_SUBSCRIPTION = MESSAGES["ConsumerProtocolSubscription"]
_ASSIGNMENT = MESSAGES["ConsumerProtocolAssignment"]
SUBSCRIPTION_VERSION = _SUBSCRIPTION.versions[1]
ASSIGNMENT_VERSION = _ASSIGNMENT.versions[1]


@dataclass
class Subscription:
    """A member's JoinGroup metadata (Java ``ConsumerPartitionAssignor.Subscription``)."""

    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: list[TopicPartition] = field(default_factory=list)
    generation_id: int = -1
    rack_id: str | None = None
    group_instance_id: str | None = None   # from the JoinGroup member list, not the bytes


@dataclass
class Assignment:
    """A member's SyncGroup assignment."""

    partitions: list[TopicPartition]
    user_data: bytes | None = None


def _by_topic(partitions: Iterable[TopicPartition]) -> list[dict[str, object]]:
    grouped: dict[str, list[int]] = {}
    for tp in partitions:
        grouped.setdefault(tp.topic, []).append(tp.partition)
    return [{"topic": t, "partitions": ps} for t, ps in grouped.items()]


def _version_and_reader(data: bytes, what: str) -> tuple[int, Reader]:
    r = Reader(data)
    try:
        version = r.int16()
    except DecodeError:
        raise KafkaProtocolError(f"{what}: {len(data)} bytes, no version") from None
    if version < 0:
        raise KafkaProtocolError(f"{what}: negative version {version}")
    return version, r


def encode_subscription(sub: Subscription, version: int = SUBSCRIPTION_VERSION) -> bytes:
    w = Writer()
    w.int16(version)
    encode_body(_SUBSCRIPTION, version, {
        "topics": list(sub.topics), "user_data": sub.user_data,
        "owned_partitions": _by_topic(sub.owned_partitions),
        "generation_id": sub.generation_id, "rack_id": sub.rack_id}, w)
    return bytes(w.out)


def decode_subscription(data: bytes) -> Subscription:
    version, r = _version_and_reader(data, "ConsumerProtocolSubscription")
    body = decode_body(_SUBSCRIPTION, min(version, SUBSCRIPTION_VERSION), r)
    owned = [TopicPartition(t["topic"], p) for t in body.get("owned_partitions", [])
             for p in t["partitions"]]
    return Subscription(list(body["topics"]), body.get("user_data"), owned,
                        body.get("generation_id", -1), body.get("rack_id"))


def encode_assignment(assignment: Assignment, version: int = ASSIGNMENT_VERSION) -> bytes:
    w = Writer()
    w.int16(version)
    encode_body(_ASSIGNMENT, version, {
        "assigned_partitions": _by_topic(assignment.partitions),
        "user_data": assignment.user_data}, w)
    return bytes(w.out)


def decode_assignment(data: bytes) -> Assignment:
    if not data:                     # a member the leader gave nothing may get empty bytes
        return Assignment([])
    version, r = _version_and_reader(data, "ConsumerProtocolAssignment")
    body = decode_body(_ASSIGNMENT, min(version, ASSIGNMENT_VERSION), r)
    return Assignment([TopicPartition(t["topic"], p) for t in body["assigned_partitions"]
                       for p in t["partitions"]], body.get("user_data"))


__all__ = ["Assignment", "Subscription", "decode_assignment", "decode_subscription",
           "encode_assignment", "encode_subscription"]
