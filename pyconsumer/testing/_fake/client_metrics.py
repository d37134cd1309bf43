"""What a KIP-714 broker keeps (the API handlers are in telemetry.py): the client-metrics
subscription every client gets, the client instance ids handed out and the pushes received,
as they came (compressed as sent: tests decompress and decode them)."""
from __future__ import annotations

import dataclasses
import uuid

#: the compression types Kafka's broker accepts, in its order of preference
KAFKA_COMPRESSION_TYPES = (4, 3, 1, 2)       # zstd, lz4, gzip, snappy


@dataclasses.dataclass
class TelemetrySubscriptionConfig:
    """What the cluster's client-metrics subscription asks of every client (change the fields
    of ``cluster.telemetry.config`` to change it: the subscription id changes with it)."""

    metrics: tuple[str, ...] = ("org.apache.kafka.",)
    interval_ms: int = 100
    compression_types: tuple[int, ...] = KAFKA_COMPRESSION_TYPES
    delta_temporality: bool = True
    max_bytes: int = 1024 * 1024


@dataclasses.dataclass(frozen=True)
class Push:
    broker: int
    client_id: str | None
    client_instance_id: uuid.UUID
    subscription_id: int
    terminating: bool
    compression_type: int
    metrics: bytes
    at: float


class Telemetry:
    def __init__(self, config: TelemetrySubscriptionConfig) -> None:
        self.config = config
        self.pushes: list[Push] = []
        #: client instance ids handed out, in order
        self.instances: list[uuid.UUID] = []
        self.terminated: set[uuid.UUID] = set()

    def subscription_id(self, instance: uuid.UUID) -> int:
        c = self.config
        return hash((c.metrics, c.interval_ms, c.compression_types, c.delta_temporality,
                     instance)) & 0x7FFFFFFF
