"""KafkaConsumer: the public entry point (Java ``KafkaConsumer`` semantics).

At this layer it connects lazily, lists topics and partitions from the cluster metadata and
closes cleanly; group membership, fetching and offsets build on the same network client.
"""
from __future__ import annotations

import logging
import threading
import time
from types import TracebackType
from typing import Any

from pyconsumer.config import ConsumerConfig
from pyconsumer.errors import BrokerResponseError, IllegalStateError, KafkaTimeoutError
from pyconsumer.net.client import NetworkClient
from pyconsumer.structs import PartitionInfo

log = logging.getLogger(__name__)

_UNKNOWN_TOPIC_OR_PARTITION = 3


class KafkaConsumer:
    """A Kafka consumer. Settings by Java name (``**{"bootstrap.servers": ...}``) or snake_case
    (``bootstrap_servers=...``); validated here, so a bad setting fails at construction with
    a :class:`~pyconsumer.errors.ConfigurationError` naming it. No connection is opened until a
    call needs the cluster."""

    def __init__(self, **settings: Any) -> None:
        self.config = ConsumerConfig(**settings)
        self._client: NetworkClient | None = None
        self._closed = False
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ plumbing

    def _network(self) -> NetworkClient:
        if self._closed:
            raise IllegalStateError("this consumer is closed")
        if self._client is None:
            self._client = NetworkClient(self.config)
        return self._client

    def _timeout(self, timeout_ms: float | None) -> float:
        if timeout_ms is None:
            return float(self.config.default_api_timeout_ms)
        if timeout_ms < 0:
            raise ValueError(f"timeout_ms must not be negative, got {timeout_ms}")
        return float(timeout_ms)

    def _topic_metadata(self, topics: list[str] | None, timeout_ms: float | None
                        ) -> dict[str, list[PartitionInfo]]:
        """Java TopicMetadataFetcher: ask until no topic has a retriable error or time is up;
        unknown topics are left out, other topic errors raised."""
        with self._lock:
            client = self._network()
            budget = self._timeout(timeout_ms)
            deadline = time.monotonic() + budget / 1000.0
            while True:
                remaining = max(0.0, (deadline - time.monotonic()) * 1000.0)
                metadata = client.update_metadata(topics, timeout_ms=remaining)
                names = list(metadata.topics) if topics is None else topics
                retry = []
                result: dict[str, list[PartitionInfo]] = {}
                for name in names:
                    error = metadata.topic_error(name)
                    if error is None:
                        parts = metadata.partitions_for(name)
                        if parts is not None:
                            result[name] = parts
                    elif (isinstance(error, BrokerResponseError)
                          and error.errno == _UNKNOWN_TOPIC_OR_PARTITION):
                        continue
                    elif error.retriable:
                        retry.append(name)
                    else:
                        raise error
                if topics is None:
                    retry += [n for n, c in metadata.topic_errors.items()
                              if c != _UNKNOWN_TOPIC_OR_PARTITION and n not in metadata.topics]
                if not retry:
                    return result
                if time.monotonic() + self.config.retry_backoff_ms / 1000.0 >= deadline:
                    raise KafkaTimeoutError(
                        f"metadata for topic(s) {', '.join(sorted(retry))} still not available "
                        f"after {budget:.0f} ms: {metadata.topic_error(retry[0])}")
                client.poll(timeout_ms=self.config.retry_backoff_ms)

    # ------------------------------------------------------------------ public API

    def topics(self, timeout_ms: float | None = None) -> dict[str, list[PartitionInfo]]:
        """Every topic the cluster lists (internal ones included, as Java's ``listTopics``)
        -> its partitions, ordered by partition number. Raises
        :class:`~pyconsumer.errors.KafkaTimeoutError` after ``timeout_ms``
        (default.api.timeout.ms)."""
        return self._topic_metadata(None, timeout_ms)

    def partitions_for(self, topic: str, timeout_ms: float | None = None) -> list[PartitionInfo]:
        """Java ``partitionsFor``: the topic's partitions, or an empty list when it does not
        exist (it may be created if ``allow.auto.create.topics`` and the broker allow it)."""
        if not isinstance(topic, str) or not topic:
            raise ValueError(f"topic must be a non-empty string, got {topic!r}")
        cached = None
        if self._client is not None and not self._client.metadata.update_requested():
            cached = self._client.metadata.partitions_for(topic)
        if cached:
            return cached
        return self._topic_metadata([topic], timeout_ms).get(topic, [])

    def partitions_for_topic(self, topic: str, timeout_ms: float | None = None) -> set[int] | None:
        """The topic's partition numbers, or None when the topic does not exist (the
        kafka-python/aiokafka convention; :meth:`partitions_for` gives Java's PartitionInfo
        list)."""
        parts = self.partitions_for(topic, timeout_ms)
        return {p.partition for p in parts} if parts else None

    def negotiated_versions(self) -> dict[int, dict[str, int]]:
        """Node id -> {API name: version in use} for every broker connection that is up
        (bootstrap connections have negative node ids)."""
        if self._client is None:
            return {}
        return {n.node_id: self._client.negotiated_versions(n.node_id)
                for n in self._client.ready_nodes()}

    def close(self, timeout_ms: float | None = None) -> None:
        """Close the consumer and its connections. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._client is not None:
                self._client.close()
                self._client = None

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> KafkaConsumer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<KafkaConsumer client_id={self.config.client_id!r} {state}>"
