"""Small value types of the public API (the Java client's TopicPartition, PartitionInfo...)."""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar, cast

_T = TypeVar("_T", bound=tuple[Any, ...])


def tuple_maker(cls: type[_T]) -> Callable[[tuple[Any, ...]], _T]:
    """``cls``'s instances made from a tuple of all its fields in order, in C. A NamedTuple's
    own constructor is Python code (~0.4 us a call), which the per-partition paths would pay
    thousands of times a read; the tuple given must hold every field (no defaults, no check).
    """
    return cast(Callable[[tuple[Any, ...]], _T], functools.partial(tuple.__new__, cls))


class TopicPartition(NamedTuple):
    """A topic and a partition number."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class OffsetAndMetadata(NamedTuple):
    """A committed (or to-be-committed) offset: the next record to read, its metadata string
    and, when known, the leader epoch of the last record read."""

    offset: int
    metadata: str = ""
    leader_epoch: int | None = None


class PartitionInfo(NamedTuple):
    """What the cluster metadata says of one partition (Java ``PartitionInfo``).

    ``leader`` is the leader's node id or -1 when there is none; ``leader_epoch`` is None
    when the broker does not send it (Metadata < v7)."""

    topic: str
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()
    leader_epoch: int | None = None


class BrokerInfo(NamedTuple):
    """A broker of the cluster (Java ``Node``); bootstrap entries have negative ids."""

    node_id: int
    host: str
    port: int
    rack: str | None = None

    def __str__(self) -> str:
        return f"node {self.node_id} ({self.host}:{self.port})"


class ConsumerGroupMetadata(NamedTuple):
    """This consumer's place in its group (Java ``ConsumerGroupMetadata``), as
    :meth:`~pyconsumer.KafkaConsumer.group_metadata` returns it: ``generation_id`` -1 and
    ``member_id`` "" while the consumer has no generation (not joined yet, rejoining, or
    using ``assign()``)."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


__all__ = ["TopicPartition", "OffsetAndMetadata", "PartitionInfo", "BrokerInfo",
           "ConsumerGroupMetadata"]
