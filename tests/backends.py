"""One integration suite over every broker: backend adapters and what each can express.

A scenario asks for the ``backend`` fixture and, with ``@pytest.mark.requires("cap", ...)``,
names the capabilities it needs; ``tests/conftest.py`` runs it on every backend that has them
(Apache Kafka has them all). The adapters hide how each broker makes topics and takes data;
a broker's bugs are listed here as missing capabilities, never worked around in production code.

Capabilities
- ``codecs``: record batches in every codec; ``headers``: record headers.
- ``list_offsets``: ListOffsets earliest/latest exact (Tansu's latest is wrong).
- ``timestamps``: ListOffsets by timestamp exact (Tansu answers 0, the mock -1).
- ``transactions``: read_committed with ``aborted_transactions`` filled (only Kafka does).
- ``commit``: OffsetCommit / OffsetFetch round trip; ``commit_metadata``: the metadata string
  kept with it (Tansu drops it).
- ``groups_classic``: JoinGroup/SyncGroup groups; ``groups_consumer``: KIP-848 heartbeats.
- ``fetch_sessions``: a real (non-zero) fetch session id.
- ``fetch_limits``: responses honour ``max.partition.fetch.bytes`` (Tansu sends 5 MB).

Answers a test broker gives where Apache Kafka would not, and that the consumer raises from
poll() as Java's does before it carries on, are named here too (:func:`broker_quirk`): a
scenario's polling loop may go on after one of them, and after nothing else.
"""
from __future__ import annotations

import itertools
import os
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from pyconsumer.errors import ErrorCode, KafkaError
from pyconsumer.structs import TopicPartition
from pyconsumer.testing import KafkaCluster, MissingToolError, NotOurCluster, TestRecord, produce

ALL_CAPABILITIES = frozenset({
    "codecs", "headers", "list_offsets", "timestamps", "transactions", "commit", "commit_metadata",
    "groups_classic",
    "groups_consumer", "fetch_sessions", "fetch_limits",
})

_names = itertools.count()


def topic_name(prefix: str = "s") -> str:
    return f"{prefix}-{os.getpid()}-{next(_names)}-{uuid.uuid4().hex[:6]}"


Writer = Callable[["Backend", str, Sequence[TestRecord], str], list[tuple[int, int]]]


def _produce(backend: Backend, topic: str, records: Sequence[TestRecord], compression: str
             ) -> list[tuple[int, int]]:
    return produce(backend.bootstrap_servers, topic, records, compression=compression)


def _append_to_fake(backend: Backend, topic: str, records: Sequence[TestRecord], compression: str
                    ) -> list[tuple[int, int]]:
    """The fake speaks no Produce: one batch per record keeps input order exact per partition."""
    out: list[tuple[int, int]] = []
    for r in records:
        assert r.partition is not None, "the fake needs each record's partition"
        row: tuple[Any, ...] = (r.key, r.value, list(r.headers or []))
        if r.timestamp_ms is not None:
            row += (r.timestamp_ms,)
        [offset] = backend.handle.produce(TopicPartition(topic, r.partition), [row], codec=compression)
        out.append((r.partition, offset))
    return out


@dataclass
class Backend:
    """A broker a scenario runs on: its name, address, capabilities, and how to make a topic
    and put records into it (confluent-kafka where the broker speaks Produce)."""

    name: str
    bootstrap_servers: str
    capabilities: frozenset[str]
    handle: Any = field(repr=False)
    #: how records get in: confluent-kafka's Produce, or the fake's own append
    writer: Writer = field(repr=False)
    #: settings a consumer on this backend needs (a group forming fast enough, ...)
    consumer_settings: dict[str, Any] = field(default_factory=dict)

    def can(self, *capabilities: str) -> bool:
        return set(capabilities) <= self.capabilities

    def create_topic(self, partitions: int = 1) -> str:
        name = topic_name()
        self.handle.create_topic(name, partitions)     # every backend's own admin call
        return name

    def produce(self, topic: str, records: Sequence[TestRecord], *, compression: str = "none"
                ) -> list[tuple[int, int]]:
        """Write ``records`` (each with its partition); (partition, offset) per record, in order."""
        return self.writer(self, topic, records, compression)


KAFKA = "kafka"
TANSU = "tansu"
MOCK = "mock"
FAKE = "fake"
BACKENDS = (KAFKA, TANSU, MOCK, FAKE)

CAPABILITIES: dict[str, frozenset[str]] = {
    KAFKA: ALL_CAPABILITIES,
    TANSU: frozenset({"codecs", "headers", "commit", "groups_classic"}),
    MOCK: frozenset({"codecs", "headers", "list_offsets", "commit", "commit_metadata", "groups_classic",
                     "groups_consumer", "fetch_limits"}),
    FAKE: frozenset({"codecs", "headers", "list_offsets", "commit", "commit_metadata", "groups_classic",
                     "groups_consumer", "fetch_sessions", "fetch_limits"}),
}

def broker_quirk(error: BaseException) -> bool:
    """An error poll() raised that only a test broker's quirk causes. librdkafka's mock
    completes a classic group's sync on the leader's SyncGroup and answers a follower's that
    arrives after it with INVALID_REQUEST (Kafka answers it with the assignment): Java raises
    that from poll(), and the member rejoins at the next one."""
    return (isinstance(error, KafkaError) and getattr(error, "errno", None) == ErrorCode.INVALID_REQUEST
            and "SyncGroup" in str(error))


# short group timers: a classic group forms in seconds on every backend (Tansu waits about
# half the session timeout)
_GROUP_SETTINGS: dict[str, Any] = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 300}


def backends_for(required: Iterable[str]) -> list[str]:
    need = set(required)
    unknown = need - ALL_CAPABILITIES
    if unknown:
        raise ValueError(f"unknown capabilities {sorted(unknown)}; known: {sorted(ALL_CAPABILITIES)}")
    return [b for b in BACKENDS if need <= CAPABILITIES[b]]


def make_backend(name: str, handle: Any) -> Backend:
    writer = _append_to_fake if name == FAKE else _produce
    return Backend(name, handle.bootstrap, CAPABILITIES[name], handle, writer, dict(_GROUP_SETTINGS))


def external_kafka() -> str:
    """The bootstrap servers of PYCONSUMER_TEST_KAFKA (the user's own cluster for the ``kafka``
    tier), or '' when the tests start their own."""
    return os.environ.get("PYCONSUMER_TEST_KAFKA", "").strip()


def _what_is_special(cluster: KafkaCluster) -> str:
    parts = [f"{cluster.nodes} nodes"] if cluster.nodes > 1 else []
    if cluster.broker_config or cluster.node_config:
        names = sorted({*cluster.broker_config, *(k for c in cluster.node_config.values() for k in c)})
        parts.append("broker settings " + ", ".join(names))
    if cluster.kerberos is not None:
        parts.append("a Kerberos listener")
    if cluster.users:
        parts.append("the test's SASL users")
    return " and ".join(parts) or "a cluster of its own"


def start_or_skip(cluster: KafkaCluster) -> KafkaCluster:
    """Start ``cluster``; without Java, Maven or openssl skip saying what to install, except
    under ``CI=true`` where the Apache Kafka tier must run: fail. With PYCONSUMER_TEST_KAFKA
    set, skip (NotOurCluster): the tier runs against that cluster and starts none of its own."""
    external = external_kafka()
    if external:     # tests/conftest.py turns this into a skip at the test's own line
        raise NotOurCluster(f"needs a Kafka of its own with {_what_is_special(cluster)}, "
                            f"not the external one at {external}")
    try:
        return cluster.start()
    except MissingToolError as exc:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI must run the Apache Kafka tier: {exc}", pytrace=False)
        pytest.skip(str(exc))
