"""Poll listeners (KafkaConsumer.add_poll_listener): one PollEvent per poll() / poll_arrow(),
on the in-process fake cluster (pyconsumer.testing.FakeCluster).

* ``consumed`` is exactly the records each poll handed out per partition (poll() and
  poll_arrow(), one partition at a time and several taken together), and its sum is
  ``records-consumed-total``.
* ``duration_s`` is the poll's time on the metrics' clock; ``error`` what the poll raised.
* A listener that raises is logged and the poll goes on; a removed listener hears nothing;
  adding a non-listener or removing a stranger is a clear error.
"""
from __future__ import annotations

import logging
from collections.abc import Callable

import pyarrow as pa
import pytest

from pyconsumer import KafkaConsumer
from pyconsumer.config import ConsumerConfig
from pyconsumer.consumer.fetch import decode
from pyconsumer.consumer.metrics import ConsumerMetrics
from pyconsumer.errors import IllegalStateError
from pyconsumer.metrics import PollEvent, find
from pyconsumer.structs import TopicPartition
from pyconsumer.testing import FAST_CONSUMER as FAST, FakeCluster

from tests.unit.test_metrics_units import Clock, append

TP = TopicPartition


class Events:
    """A poll listener keeping every event."""

    def __init__(self) -> None:
        self.events: list[PollEvent] = []

    def on_poll(self, event: PollEvent) -> None:
        self.events.append(event)


def counted(events: list[PollEvent]) -> dict[TopicPartition, int]:
    out: dict[TopicPartition, int] = {}
    for e in events:
        for tp, n in e.consumed.items():
            out[tp] = out.get(tp, 0) + n
    return out


def test_each_poll_tells_the_records_it_handed_out_per_partition(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1, topics={"orders": 3})
    tps = [TP("orders", p) for p in range(3)]
    for p, n in enumerate((7, 11, 5)):
        append(cluster, tps[p], 0, n)
    listener = Events()
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, **FAST) as c:
        c.assign(tps)
        c.add_poll_listener(listener)
        got: dict[TopicPartition, int] = {}
        polls = 0
        while sum(got.values()) < 23:
            polls += 1
            assert polls < 200, got
            for tp, records in c.poll(50, max_records=4).items():
                got[tp] = got.get(tp, 0) + len(records)
        assert len(listener.events) == polls
        assert counted(listener.events) == {tps[0]: 7, tps[1]: 11, tps[2]: 5}
        assert all(sum(e.consumed.values()) <= 4 for e in listener.events)
        assert all(e.error is None and e.duration_s >= 0 for e in listener.events)
        assert find(c.metrics(), "records-consumed-total", "consumer-fetch-manager-metrics") == 23.0


def test_poll_by_poll_the_counts_match_the_result(make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1, topics={"a": 2, "b": 1})
    tps = [TP("a", 0), TP("a", 1), TP("b", 0)]
    for tp, n in zip(tps, (9, 4, 6)):
        append(cluster, tp, 0, n)
    listener = Events()
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, **FAST) as c:
        c.assign(tps)
        c.add_poll_listener(listener)
        total = 0
        for _ in range(200):
            result = c.poll(50, max_records=5)
            assert dict(listener.events[-1].consumed) == {tp: len(r) for tp, r in result.items()}
            total += sum(len(r) for r in result.values())
            if total == 19:
                break
        assert total == 19
        assert counted(listener.events) == {tps[0]: 9, tps[1]: 4, tps[2]: 6}


def test_poll_arrow_tells_the_rows_per_partition_taken_together(
        make_cluster: Callable[..., FakeCluster], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(decode, "min_bytes", 0)       # partitions decoded side by side
    cluster = make_cluster(1, topics={"t.x": 4})
    tps = [TP("t.x", p) for p in range(4)]
    sizes = (13, 1, 30, 8)
    for tp, n in zip(tps, sizes):
        append(cluster, tp, 0, n)
    listener = Events()
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, decode_threads=2, **FAST) as c:
        c.assign(tps)
        c.add_poll_listener(listener)
        batches: list[pa.RecordBatch] = []
        for _ in range(200):
            batch = c.poll_arrow(50)
            rows: dict[TopicPartition, int] = {}
            for p in batch.column("partition").to_pylist():
                rows[TP("t.x", p)] = rows.get(TP("t.x", p), 0) + 1
            assert dict(listener.events[-1].consumed) == rows
            batches.append(batch)
            if sum(b.num_rows for b in batches) == sum(sizes):
                break
        assert counted(listener.events) == dict(zip(tps, sizes))
        assert find(c.metrics(), "records-consumed-total", "consumer-fetch-manager-metrics") == \
            float(sum(sizes))


def test_the_event_has_the_polls_duration_and_error() -> None:
    clock = Clock()
    m = ConsumerMetrics(ConsumerConfig(bootstrap_servers="127.0.0.1:9", client_id="c"),
                        clock=clock)
    listener = Events()
    m.add_listener(listener)
    with m.poll_timer:
        clock.ms += 250.0
    assert listener.events == [PollEvent(0.25, {}, None)]
    boom = IllegalStateError("no")
    with pytest.raises(IllegalStateError), m.poll_timer:
        clock.ms += 4.0
        raise boom
    assert listener.events[1] == PollEvent(0.004, {}, boom)


def test_a_poll_that_raises_tells_its_error(make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1)
    listener = Events()
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, **FAST) as c:
        c.add_poll_listener(listener)
        with pytest.raises(IllegalStateError) as raised:
            c.poll(10)
        assert str(raised.value) == \
            "Consumer is not subscribed to any topics or assigned any partitions"
        [event] = listener.events
        assert event.error is raised.value and dict(event.consumed) == {}


def test_a_failing_listener_is_logged_and_the_others_still_hear(
        make_cluster: Callable[..., FakeCluster], caplog: pytest.LogCaptureFixture) -> None:
    cluster = make_cluster(1, topics={"t": 1})
    append(cluster, TP("t", 0), 0, 3)

    class Broken:
        def on_poll(self, event: PollEvent) -> None:
            raise RuntimeError("listener bug")

    after = Events()
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, **FAST) as c:
        c.assign([TP("t", 0)])
        c.add_poll_listener(Broken())
        c.add_poll_listener(after)
        with caplog.at_level(logging.WARNING, logger="pyconsumer.consumer.metrics"):
            got = 0
            for _ in range(100):
                got += sum(len(r) for r in c.poll(50).values())
                if got == 3:
                    break
        assert got == 3
        assert counted(after.events) == {TP("t", 0): 3}
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert warnings and all(
            r.getMessage() == "poll listener tests.unit.test_poll_listeners."
            "test_a_failing_listener_is_logged_and_the_others_still_hear.<locals>.Broken: "
            "on_poll raised" for r in warnings)
        assert all(r.exc_info and r.exc_info[0] is RuntimeError for r in warnings)


def test_a_removed_listener_hears_nothing_and_bad_listeners_are_refused(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1, topics={"t": 1})
    append(cluster, TP("t", 0), 0, 2)
    listener = Events()
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, **FAST) as c:
        c.assign([TP("t", 0)])
        c.poll(10)                                  # before: nothing told
        c.add_poll_listener(listener)
        c.poll(10)
        told = len(listener.events)
        assert told == 1
        c.remove_poll_listener(listener)
        c.poll(10)
        assert len(listener.events) == told
        with pytest.raises(ValueError) as e:
            c.remove_poll_listener(listener)
        assert str(e.value) == "Events object is not a poll listener of this consumer"
        with pytest.raises(TypeError) as t:
            c.add_poll_listener(object())  # type: ignore[arg-type]
        assert str(t.value) == "a poll listener needs an on_poll(event) method; object has none"


def test_group_id_is_the_setting(make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1)
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id="g1", **FAST) as c:
        assert c.group_id == "g1"
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, **FAST) as c:
        assert c.group_id is None
