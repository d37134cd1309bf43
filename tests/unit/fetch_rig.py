"""The fetch tests' rig: a real NetworkClient, SubscriptionState and Fetcher over
pyconsumer.testing.FakeCluster, with no consumer loop around them, so each step (send, answer,
seek, pause, drain) happens exactly where a test puts it; and the two-partition cluster they
share (fixtures ``cluster`` and ``rig``: import ``cluster_fixture`` and ``rig_fixture``)."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

import pytest

from pyconsumer.config import ConsumerConfig
from pyconsumer.consumer.fetch import Fetcher, Strategy
from pyconsumer.consumer.subscription import SubscriptionState
from pyconsumer.net.client import NetworkClient
from pyconsumer.records import CompletedFetch, ConsumerRecord
from pyconsumer.structs import TopicPartition
from pyconsumer.testing import FakeCluster

T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
Drained = list[tuple[TopicPartition, list[tuple[int, bytes | None]]]]
C = TypeVar("C")


class Takes(Generic[C]):
    """A collector made of the drain's tests' take and count (and take_many), with the
    strategy they ask for; its result is the drained chunks as they are."""

    def __init__(self, take: Callable[[CompletedFetch, int], C], count: Callable[[C], int],
                 strategy: Strategy = Strategy.ONE_BY_ONE, threads: int = 1,
                 take_many: Callable[[list[CompletedFetch], list[int]], tuple[C, list[int]]]
                 | None = None) -> None:
        self.take = take
        self.count = count
        self.strategy = strategy
        self.threads = threads
        self._many = take_many

    def take_many(self, cursors: list[CompletedFetch], budgets: list[int]
                  ) -> tuple[C, list[int]]:
        assert self._many is not None
        return self._many(cursors, budgets)

    def build(self, chunks: list[tuple[TopicPartition, C]]) -> list[tuple[TopicPartition, C]]:
        return chunks


class Rig:
    def __init__(self, cluster: FakeCluster, **settings: Any) -> None:
        self.cluster = cluster
        self.config = ConsumerConfig(bootstrap_servers=cluster.bootstrap,
                                     **{"fetch_max_wait_ms": 50, **settings})
        self.client = NetworkClient(self.config)
        self.subs = SubscriptionState(self.config.offset_reset_strategy)
        self.fetcher = Fetcher(self.client, self.config, self.subs)

    def assign(self, positions: dict[TopicPartition, int]) -> None:
        self.subs.assign_from_user(list(positions))
        for tp, offset in positions.items():
            self.subs.seek(tp, offset)
        self.client.update_metadata({tp.topic for tp in positions}, timeout_ms=5000)

    def fetch(self) -> None:
        """One Fetch (every partition here has one leader), answered and queued."""
        done = self.fetcher.completions
        assert self.fetcher.send_fetches() == 1
        self.client.poll(timeout_ms=5000, until=lambda: self.fetcher.completions != done)
        assert self.fetcher.completions == done + 1 and self.fetcher.has_available()

    def drain(self, n: int) -> Drained:
        def take(cursor: CompletedFetch, k: int) -> list[ConsumerRecord]:
            return cursor.take_records(k)

        return [(tp, [(r.offset, r.value) for r in recs])
                for tp, recs in self.fetcher.drain(n, Takes(take, len))]

    def offsets(self) -> dict[TopicPartition, int]:
        out = {}
        for tp in self.subs.assigned_partitions():
            pos = self.subs.position(tp)
            assert pos is not None
            out[tp] = pos.offset
        return out

    def close(self) -> None:
        self.client.close()


@pytest.fixture(name="cluster")
def cluster_fixture() -> Iterator[FakeCluster]:
    with FakeCluster(1, topics={"t": 2}) as c:
        for p, sizes in ((0, (3, 2)), (1, (4,))):
            start = 0
            for n in sizes:
                c.produce(TopicPartition("t", p),
                          [(None, b"%d-%d" % (p, i)) for i in range(start, start + n)])
                start += n
        yield c
        assert c.errors == []


@pytest.fixture(name="rig")
def rig_fixture(cluster: FakeCluster) -> Iterator[Rig]:
    r = Rig(cluster)
    yield r
    r.close()


def recs(p: int, *offsets: int) -> list[tuple[int, bytes | None]]:
    return [(o, b"%d-%d" % (p, o)) for o in offsets]
