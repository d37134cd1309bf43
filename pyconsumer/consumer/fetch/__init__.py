"""The fetch wing: Fetch requests to partition leaders and the data they bring back.

Its interface is :class:`Fetcher`, the one the consumer facade calls: ``send_fetches``,
``prefetch_now``, ``positions_moved`` and ``close_sessions`` (the request side),
``has_available``, ``drain`` and ``clear_buffered`` (the buffer), ``completions``, ``retry_in_ms``, ``sessions`` and
``prefetch``; :mod:`.collect`, what the drain asks of the poll's result shape (its
:class:`Collector`); and :mod:`.decode`, the one scheduler of decode threads (poll_arrow's
parallel takes). Inside, one job a module: request.py builds and sends Fetch requests (sessions,
prefetch, re-fetches) and indexes each answered record set once; buffer.py holds the completed
fetches and drains them (Java's FetchBuffer/FetchCollector); session.py keeps the KIP-227 fetch
sessions; replicas.py the KIP-392 read replicas. The wing imports nothing of the group wing.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TypeVar

from pyconsumer.config import ConsumerConfig
from pyconsumer.consumer.fetch import decode
from pyconsumer.consumer.fetch.buffer import FetchBuffer
from pyconsumer.consumer.fetch.collect import Collector, Strategy
from pyconsumer.consumer.fetch.replicas import ReadReplicas
from pyconsumer.consumer.fetch.request import FetchRequests
from pyconsumer.consumer.fetch.session import FetchSessionHandler
from pyconsumer.consumer.metrics import ConsumerMetrics
from pyconsumer.consumer.subscription import SubscriptionState
from pyconsumer.net.client import NetworkClient
from pyconsumer.structs import TopicPartition

T = TypeVar("T")


class Fetcher:
    """The fetch wing's facade: its request side and its buffer, sharing the read replicas."""

    def __init__(self, client: NetworkClient, config: ConsumerConfig,
                 subscriptions: SubscriptionState, metrics: ConsumerMetrics | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.client = client
        self.config = config
        self.subscriptions = subscriptions
        self.metrics = ConsumerMetrics(config) if metrics is None else metrics
        replicas = ReadReplicas(client, config, clock)
        self.buffer = FetchBuffer(client, config, subscriptions, self.metrics, replicas)
        self.requests = FetchRequests(client, config, subscriptions, self.metrics, self.buffer,
                                      replicas, clock)

    # ------------------------------------------------------------------ requests

    @property
    def prefetch(self) -> bool:
        """Fetch again behind buffered data (request.py's docstring); off, Java's behaviour."""
        return self.requests.prefetch

    @prefetch.setter
    def prefetch(self, on: bool) -> None:
        self.requests.prefetch = on

    @property
    def completions(self) -> int:
        """Bumped whenever a Fetch completes, answered or failed (a waiting poll re-sends)."""
        return self.requests.completions

    @property
    def retry_in_ms(self) -> float:
        """ms until a leader skipped for its reconnect backoff may be fetched again."""
        return self.requests.retry_in_ms

    @property
    def sessions(self) -> dict[int, FetchSessionHandler]:
        """The fetch session with each node."""
        return self.requests.sessions

    @property
    def _nodes_in_flight(self) -> set[int]:
        # the nodes with a Fetch in flight (tests wait for none)
        return self.requests._nodes_in_flight

    def send_fetches(self) -> int:
        """Queue one Fetch per node that has fetchable partitions and no Fetch in flight."""
        return self.requests.send_fetches()

    def prefetch_now(self) -> int:
        """send_fetches once per completed Fetch, before its data is decoded."""
        return self.requests.prefetch_now()

    def positions_moved(self, partitions: Iterable[TopicPartition]) -> None:
        """Positions set other than by a drain or a SubscriptionState move (a poll's
        rollback): their next fetch looks at them again."""
        self.requests.positions_moved(partitions)

    def close_sessions(self, timeout_ms: float) -> None:
        """Close the open fetch sessions, waiting at most ``timeout_ms`` (best effort)."""
        self.requests.close_sessions(timeout_ms)

    # ------------------------------------------------------------------ the buffer

    def has_available(self) -> bool:
        """Buffered data (records or an error) waits to be drained."""
        return self.buffer.has_available()

    def drain(self, max_records: int, collector: Collector[T, object]
              ) -> list[tuple[TopicPartition, T]]:
        """Up to ``max_records`` records from the buffered responses, as ``collector`` takes
        them (FetchBuffer.drain)."""
        return self.buffer.drain(max_records, collector)

    def clear_buffered(self, keep: Callable[[TopicPartition], bool] | None = None) -> None:
        """Drop buffered data (all, or of the partitions ``keep`` rejects)."""
        self.buffer.clear_buffered(keep)


__all__ = ["Collector", "Fetcher", "Strategy", "decode"]
