"""KafkaConsumer.metrics(): Java's metric names, windows and meanings.

* The windowed stats follow Java's SampledStat/Rate arithmetic, checked on a fake clock with
  values worked out by hand from Java's formulas (avg/max NaN with nothing in the window, a
  sample forgotten after samples * window, a rate over at least samples - 1 windows).
* Against the in-process fake cluster (pyconsumer.testing.FakeCluster), with record batches the test
  builds itself (aiokafka's encoder): records-consumed-total is the number of records poll()
  returned; bytes-consumed-total is the sum of the lengths of those batches, counted once a
  partition's fetched data is used up (a batch cut off by the size limit and fetched again is
  not counted twice); fetch-size-avg * fetch-total is every byte fetched; records-lag /
  records-lead from the high watermark, log start and position; commit-total,
  rebalance-total, failed-rebalance-total against the fake's request log;
  connection-count against the connections the fake brokers hold open.
* No per-record work: the sensor calls of one drain do not grow with the records in it.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import pytest

from pyconsumer import KafkaConsumer
from pyconsumer.config import ConsumerConfig
from pyconsumer.consumer.fetch import Fetcher
from pyconsumer.consumer.metrics import (
    CONSUMER_GROUP,
    COORDINATOR_GROUP,
    FETCH_GROUP,
    METRICS,
    ConsumerMetrics,
)
from pyconsumer.metrics import MetricName, find
from pyconsumer.consumer.subscription import FetchPosition, SubscriptionState
from pyconsumer.protocol import ApiKey
from pyconsumer.structs import OffsetAndMetadata, TopicPartition
from pyconsumer.testing import FAST_CONSUMER as FAST, FakeCluster

from tests.recordsets import aio_v2

TP = TopicPartition


def batch(start: int, n: int, size: int = 20) -> bytes:
    """One record batch of ``n`` records (values of ``size`` bytes), keys k<offset>."""
    return aio_v2([(i, 1_700_000_000_000 + start + i, b"k%d" % (start + i),
                    b"%0*d" % (size, start + i), []) for i in range(n)])


def append(cluster: FakeCluster, tp: TopicPartition, start: int, n: int, size: int = 20) -> int:
    """Append a batch of records ``start..start+n-1`` to ``tp``; its length in bytes."""
    data = batch(start, n, size)
    assert cluster.append_batch(tp, data) == start
    return len(data)


def consume(consumer: KafkaConsumer, n: int, max_records: int | None = None,
            timeout: float = 5.0) -> dict[TopicPartition, list[tuple[int, bytes, bytes]]]:
    """Poll until exactly ``n`` records arrived; (offset, key, value) per partition."""
    got: dict[TopicPartition, list[tuple[int, bytes, bytes]]] = {}
    deadline = time.monotonic() + timeout
    count = 0
    while count < n:
        assert time.monotonic() < deadline, f"got {count} of {n} records"
        limit = None if max_records is None else min(max_records, n - count)
        for tp, recs in consumer.poll(50, max_records=limit).items():
            got.setdefault(tp, []).extend((r.offset, r.key, r.value) for r in recs)
            count += len(recs)
    assert count == n
    return got


def expected(start: int, n: int, size: int = 20) -> list[tuple[int, bytes, bytes]]:
    return [(o, b"k%d" % o, b"%0*d" % (size, o)) for o in range(start, start + n)]


# ---------------------------------------------------------------------------- names, stats


def test_metric_name_is_equal_by_name_group_and_tags_and_immutable() -> None:
    a = MetricName("records-lag", FETCH_GROUP, {"client-id": "c", "topic": "t",
                                                 "partition": "0"}, "lag")
    b = MetricName("records-lag", FETCH_GROUP, {"partition": "0", "topic": "t",
                                                 "client-id": "c"})
    assert a == b and hash(a) == hash(b) and {a: 1.0}[b] == 1.0
    assert a != MetricName("records-lag", FETCH_GROUP, {"client-id": "c", "topic": "t",
                                                        "partition": "1"})
    assert a != MetricName("records-lag", CONSUMER_GROUP, dict(a.tags))
    with pytest.raises(AttributeError):
        a.name = "x"
    with pytest.raises(TypeError):
        a.tags["topic"] = "u"  # type: ignore[index]


class Clock:
    def __init__(self) -> None:
        self.ms = 0.0

    def __call__(self) -> float:
        return self.ms


def metrics_on(clock: Clock, **settings: Any) -> ConsumerMetrics:
    cfg = ConsumerConfig(bootstrap_servers="localhost:9092", group_id="g", client_id="c",
                         **settings)
    return ConsumerMetrics(cfg, clock=clock)


def read(m: ConsumerMetrics, name: str, group: str) -> float:
    subs = SubscriptionState(ConsumerConfig(bootstrap_servers="x:1").offset_reset_strategy)
    return m.snapshot(subs, 0)[MetricName(name, group, {"client-id": "c"})]


def test_windowed_stats_follow_javas_sampled_stat_and_rate() -> None:
    clock = Clock()
    m = metrics_on(clock, metrics_sample_window_ms=1000, metrics_num_samples=2)
    rb = COORDINATOR_GROUP
    assert math.isnan(read(m, "rebalance-latency-avg", rb))
    assert math.isnan(read(m, "rebalance-latency-max", rb))
    assert read(m, "rebalance-total", rb) == 0.0
    assert read(m, "last-rebalance-seconds-ago", rb) == -1.0
    # two rebalances in the first sample (it starts at t=100): 100 ms and 300 ms
    clock.ms = 0
    m.rebalance_started()
    clock.ms = 100
    m.rebalance_completed()
    clock.ms = 200
    m.rebalance_started()
    m.rebalance_failed()                 # a failed round keeps the rebalance's start
    clock.ms = 500
    m.rebalance_completed()
    assert read(m, "rebalance-latency-avg", rb) == 200.0
    assert read(m, "rebalance-latency-max", rb) == 300.0
    assert read(m, "rebalance-latency-total", rb) == 400.0
    assert read(m, "rebalance-total", rb) == 2.0
    assert read(m, "failed-rebalance-total", rb) == 1.0
    # Java Rate: 2 events / (the sample spans 100..500: 400 ms, less than samples - 1 = 1
    # whole window, so one window is added: 1400 ms)
    assert read(m, "rebalance-rate-per-hour", rb) == pytest.approx(2 / (1400 / 3_600_000))
    # a third one rolls over to a new sample (t=1150 is a window after 100)
    clock.ms = 1100
    m.rebalance_started()
    clock.ms = 1150
    m.rebalance_completed()
    assert read(m, "rebalance-latency-max", rb) == 300.0
    assert read(m, "rebalance-latency-avg", rb) == pytest.approx(450 / 3)
    # at t=2100 the first sample (start 100) is samples * window old: forgotten
    clock.ms = 2100
    assert read(m, "rebalance-latency-max", rb) == 50.0
    assert read(m, "rebalance-latency-avg", rb) == 50.0
    assert read(m, "rebalance-total", rb) == 3.0          # cumulative: never forgotten
    assert read(m, "rebalance-latency-total", rb) == 450.0
    # 1 event over 2100 - 1150 = 950 ms -> at least one whole window: 1950 ms
    assert read(m, "rebalance-rate-per-hour", rb) == pytest.approx(1 / (1950 / 3_600_000))
    assert read(m, "last-rebalance-seconds-ago", rb) == 0.0    # 950 ms: whole seconds
    clock.ms = 3160
    assert math.isnan(read(m, "rebalance-latency-max", rb))
    assert read(m, "rebalance-rate-per-hour", rb) == 0.0
    assert read(m, "last-rebalance-seconds-ago", rb) == 2.0


def test_the_sample_ring_wraps_and_forgets_the_oldest_window() -> None:
    """Two samples of 1000 ms: each window's values land in their own sample; the third
    window reuses the first one's sample (reset), and a window as old as both is dropped."""
    from pyconsumer.metrics import _Avg, _Max, _Min, _Rate, _Window, _WindowedCount, _WindowedSum

    w = _Window(2, 1000.0)
    avg, hi, lo, total, count = _Avg(), _Max(), _Min(), _WindowedSum(), _WindowedCount()
    stats = (avg, hi, lo, total, count)
    for t, v in ((0, 5.0), (400, 1.0), (1000, 7.0), (1999, 3.0), (2000, 2.0), (2500, 4.0)):
        for stat in stats:
            stat.record(w, v, float(t))
        if t == 1999:        # windows [0, 1000) and [1000, 2000): every value so far
            assert [s.measure(w, 1999.0) for s in stats] == [4.0, 7.0, 1.0, 16.0, 4.0]
    # [1000, 2000) and [2000, 3000): the first window's 5 and 1 are gone
    assert [s.measure(w, 2999.0) for s in stats] == [4.0, 7.0, 2.0, 16.0, 4.0]
    # at 3000 the window that started at 1000 is two windows old: only [2000, 3000) is left
    assert [s.measure(w, 3000.0) for s in stats] == [3.0, 4.0, 2.0, 6.0, 2.0]
    assert _Rate(_WindowedCount()).measure(w, 0.0) == 0.0
    assert all(math.isnan(s.measure(w, 9000.0)) for s in (avg, hi, lo))


def test_poll_metrics_follow_javas_formulas() -> None:
    clock = Clock()
    m = metrics_on(clock)
    assert read(m, "last-poll-seconds-ago", CONSUMER_GROUP) == -1.0
    with m.poll_timer:                   # t=0..10: the first poll, 0 since the last one
        clock.ms = 10
    clock.ms = 100
    with m.poll_timer:                   # t=100..130: 100 ms after the previous start
        clock.ms = 130
    assert read(m, "time-between-poll-avg", CONSUMER_GROUP) == 50.0
    assert read(m, "time-between-poll-max", CONSUMER_GROUP) == 100.0
    # Java: poll time / (poll time + time since the last poll): 10/10 and 30/130
    assert read(m, "poll-idle-ratio-avg", CONSUMER_GROUP) == pytest.approx((1 + 30 / 130) / 2)
    clock.ms = 2099
    assert read(m, "last-poll-seconds-ago", CONSUMER_GROUP) == 1.0
    clock.ms = 2100
    assert read(m, "last-poll-seconds-ago", CONSUMER_GROUP) == 2.0


# ---------------------------------------------------------------------------- the assignment view


class Offsets:
    """A partition as ConsumerMetrics reads it (its PartitionView), without SubscriptionState."""

    def __init__(self, position: int | None, high_watermark: int | None,
                 last_stable_offset: int | None, log_start_offset: int | None) -> None:
        self.position = None if position is None else FetchPosition(position)
        self.has_valid_position = position is not None
        self.high_watermark = high_watermark
        self.last_stable_offset = last_stable_offset
        self.log_start_offset = log_start_offset


class Assignment:
    """An AssignmentView over a plain dict."""

    def __init__(self, partitions: dict[TopicPartition, Offsets]) -> None:
        self.partitions = partitions

    def assigned_partitions(self) -> list[TopicPartition]:
        return list(self.partitions)

    def is_assigned(self, tp: TopicPartition) -> bool:
        return tp in self.partitions

    def state(self, tp: TopicPartition) -> Offsets:
        return self.partitions[tp]

    def state_or_none(self, tp: TopicPartition) -> Offsets | None:
        return self.partitions.get(tp)


@pytest.mark.parametrize("isolation, lag", [("read_uncommitted", 3.0), ("read_committed", 2.0)])
def test_lag_and_lead_are_read_through_the_assignment_view(isolation: str, lag: float) -> None:
    """ConsumerMetrics takes any read-only view of the assignment: lag is the high watermark
    (last stable offset under read_committed) minus the position, lead the position minus
    the log start; a partition without a valid position or offsets has neither."""
    m = metrics_on(Clock(), isolation_level=isolation)
    view = Assignment({TP("t.x", 0): Offsets(7, 10, 9, 2), TP("t.x", 1): Offsets(None, 5, 5, 0),
                       TP("u", 0): Offsets(4, None, None, None)})
    out = m.snapshot(view, 3)
    tags = {"client-id": "c", "topic": "t_x", "partition": "0"}
    assert out[MetricName("records-lag", FETCH_GROUP, tags)] == lag
    assert out[MetricName("records-lead", FETCH_GROUP, tags)] == 5.0
    assert [n for n in out if n.name in ("records-lag", "records-lead")
            and n.tags != tags] == []
    assert out[MetricName("assigned-partitions", COORDINATOR_GROUP, {"client-id": "c"})] == 3.0
    assert out[MetricName("connection-count", CONSUMER_GROUP, {"client-id": "c"})] == 3.0


class Drained:
    """A used-up cursor as ConsumerMetrics.taken reads it (no trailing cut batch)."""

    is_drained = True
    incomplete_batch = None


def test_partition_stats_are_exact_and_named_only_when_read(monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """A drain of a partition makes its lag/lead stats but no MetricName (issue 26: a Sensor
    and four names each cost ~40 ms over 1,000 partitions' first drains); metrics() names
    them as before: records-lag-max/avg and records-lead-min/avg per partition (topic tag with
    '.' as '_'), the consumer-wide max/min over all, and none once unassigned."""
    clock = Clock()
    m = metrics_on(clock)
    parts = {TP("t.x", p): Offsets(10 * p + 5, 10 * p + 9, None, p) for p in range(3)}
    view = Assignment(parts)
    made: list[str] = []                 # partition-tagged names made (topic ones may be)
    real = MetricName

    def counting(name: str, group: str, tags: dict[str, str]) -> MetricName:
        if "partition" in tags:
            made.append(name)
        return real(name, group, tags)
    monkeypatch.setattr("pyconsumer.consumer.metrics.MetricName", counting)
    m.taken(TP("t.x", 0), 5, Drained(), b"x" * 100, view)        # type: ignore[arg-type]
    for tp in parts:
        m.taken(tp, 1, Drained(), None, view)                     # type: ignore[arg-type]
    assert made == []
    parts[TP("t.x", 0)] = Offsets(9, 9, None, 0)                   # lag 0, lead 9
    m.taken(TP("t.x", 0), 4, Drained(), None, view)               # type: ignore[arg-type]
    out = m.snapshot(view, 1)
    monkeypatch.undo()
    per: dict[tuple[str, str], float] = {
        (n.name, n.tags["partition"]): v for n, v in out.items() if "partition" in n.tags}
    assert {n.tags["topic"] for n in out if "partition" in n.tags} == {"t_x"}
    assert per == {
        ("records-lag-max", "0"): 4.0, ("records-lag-avg", "0"): 8 / 3,
        ("records-lead-min", "0"): 5.0, ("records-lead-avg", "0"): 19 / 3,
        ("records-lag-max", "1"): 4.0, ("records-lag-avg", "1"): 4.0,
        ("records-lead-min", "1"): 14.0, ("records-lead-avg", "1"): 14.0,
        ("records-lag-max", "2"): 4.0, ("records-lag-avg", "2"): 4.0,
        ("records-lead-min", "2"): 23.0, ("records-lead-avg", "2"): 23.0,
        ("records-lag", "0"): 0.0, ("records-lead", "0"): 9.0,
        ("records-lag", "1"): 4.0, ("records-lead", "1"): 14.0,
        ("records-lag", "2"): 4.0, ("records-lead", "2"): 23.0}
    assert find(out, "records-lag-max", FETCH_GROUP) == 4.0
    assert find(out, "records-lead-min", FETCH_GROUP) == 5.0
    assert find(out, "records-consumed-total", FETCH_GROUP) == 12.0
    assert find(out, "bytes-consumed-total", FETCH_GROUP) == 100.0
    # the same names again (kept), and gone with the partition
    assert m.snapshot(view, 1) == out
    del parts[TP("t.x", 1)]
    assert {n.tags["partition"] for n in m.snapshot(view, 1) if "partition" in n.tags} == {"0", "2"}


# ---------------------------------------------------------------------------- fetch metrics


def test_records_and_bytes_consumed_are_exact(make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1)
    cluster.create_topic("orders.eu", 2)
    p0, p1 = TP("orders.eu", 0), TP("orders.eu", 1)
    sizes = [append(cluster, p0, 0, 30), append(cluster, p0, 30, 5, size=300),
             append(cluster, p0, 35, 15), append(cluster, p1, 0, 40, size=7)]
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, **FAST) as c:
        c.assign([p0, p1])
        got = consume(c, 90)
        assert got[p0] == expected(0, 30) + expected(30, 5, 300) + expected(35, 15)
        assert got[p1] == expected(0, 40, 7)
        m = c.metrics()
    total = float(sum(sizes))
    assert find(m, "records-consumed-total", FETCH_GROUP) == 90.0
    assert find(m, "bytes-consumed-total", FETCH_GROUP) == total
    # per topic, tagged as Java tags it ('.' -> '_')
    assert find(m, "records-consumed-total", FETCH_GROUP, topic="orders_eu") == 90.0
    assert find(m, "bytes-consumed-total", FETCH_GROUP, topic="orders_eu") == total
    assert find(m, "records-consumed-rate", FETCH_GROUP) > 0
    # every byte was fetched exactly once, the responses after it were empty
    fetches = find(m, "fetch-total", FETCH_GROUP)
    assert fetches >= 1
    assert find(m, "fetch-size-avg", FETCH_GROUP) * fetches == pytest.approx(total)
    assert find(m, "fetch-size-max", FETCH_GROUP) <= total
    assert find(m, "fetch-latency-max", FETCH_GROUP) >= find(m, "fetch-latency-avg",
                                                             FETCH_GROUP) > 0
    assert find(m, "fetch-rate", FETCH_GROUP) > 0
    # lag 0 and lead = position - log start on both partitions
    assert find(m, "records-lag", FETCH_GROUP, topic="orders_eu", partition="0") == 0.0
    assert find(m, "records-lead", FETCH_GROUP, topic="orders_eu", partition="0") == 50.0
    assert find(m, "records-lead", FETCH_GROUP, topic="orders_eu", partition="1") == 40.0
    # no group.id: no coordinator metrics, as in Java
    assert not [n for n in m if n.group == COORDINATOR_GROUP]
    assert all(n.tags["client-id"] == c.config.client_id for n in m)
    assert all(type(v) is float for v in m.values())


def test_bytes_are_counted_once_the_data_is_used_up(make_cluster: Callable[..., FakeCluster]
                                                    ) -> None:
    """Produce 100, consume 40: lag 60, no bytes yet (the batch is not used up); the other 60
    make the batch's bytes count, once."""
    cluster = make_cluster(1, topics={"t": 1})
    tp = TP("t", 0)
    size = append(cluster, tp, 0, 100)
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, **FAST) as c:
        c.assign([tp])
        assert consume(c, 40, max_records=40) == {tp: expected(0, 40)}
        m = c.metrics()
        assert find(m, "records-consumed-total") == 40.0
        assert find(m, "bytes-consumed-total") == 0.0
        assert find(m, "records-lag", partition="0") == 60.0
        assert find(m, "records-lag-max", partition="0") == 60.0
        assert find(m, "records-lag-max", FETCH_GROUP) == 60.0   # over all partitions
        assert find(m, "records-lead", partition="0") == 40.0
        assert find(m, "records-lead-min", FETCH_GROUP) == 40.0
        assert consume(c, 60) == {tp: expected(40, 60)}
        m = c.metrics()
        assert find(m, "records-consumed-total") == 100.0
        assert find(m, "bytes-consumed-total") == float(size)
        assert find(m, "records-lag", partition="0") == 0.0
        assert find(m, "records-lag-avg", partition="0") == 30.0     # 60, then 0
        # unassigned: its partition metrics are gone (Java removes them)
        c.assign([])
        assert [n for n in c.metrics() if "partition" in n.tags] == []


def test_a_batch_cut_by_the_size_limit_is_not_counted_twice(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1, topics={"t": 1})
    tp = TP("t", 0)
    first = append(cluster, tp, 0, 10)
    second = append(cluster, tp, 10, 10, size=200)
    assert first < 1500 < first + second
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, max_partition_fetch_bytes=1500,
                       **FAST) as c:
        c.assign([tp])
        assert consume(c, 20) == {tp: expected(0, 10) + expected(10, 10, 200)}
        m = c.metrics()
    assert find(m, "bytes-consumed-total") == float(first + second)
    # fetched: 1500 bytes (the first batch and a cut piece of the second), then the second
    # batch whole (KIP-74: the first batch of a response goes out whole)
    assert find(m, "fetch-size-max") == float(max(1500, second))
    fetched = find(m, "fetch-size-avg") * find(m, "fetch-total")
    assert fetched == pytest.approx(1500 + second)


def test_no_sensor_work_per_record(make_cluster: Callable[..., FakeCluster],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The stat updates of one drain are the same for 10 records and for 3000."""
    from pyconsumer import metrics

    calls = {"n": 0}

    def counting(real: Callable[..., None]) -> Callable[..., None]:
        def record(self: Any, w: Any, value: float, now: float) -> None:
            calls["n"] += 1
            real(self, w, value, now)
        return record

    # patched before the consumers exist: their sensors bind these
    for kind in (metrics._Avg, metrics._Max, metrics._Min, metrics._WindowedCount,
                 metrics._Total):
        monkeypatch.setattr(kind, "record", counting(kind.record))
    # a partition's lag and lead rings (one call each: a max and an average apiece)
    from pyconsumer.consumer.metrics import _PartitionStats
    for name in ("record_lag", "record_lead"):
        monkeypatch.setattr(_PartitionStats, name, counting(getattr(_PartitionStats, name)))
    real_drain = Fetcher.drain
    per_drain: list[tuple[int, int]] = []     # (records drained, sensor calls)

    def drain(self: Fetcher, *args: Any, **kwargs: Any) -> Any:
        before = calls["n"]
        out = real_drain(self, *args, **kwargs)
        if out:
            per_drain.append((sum(len(chunk) for _, chunk in out), calls["n"] - before))
        return out

    monkeypatch.setattr(Fetcher, "drain", drain)
    cluster = make_cluster(1, topics={"t": 2})
    append(cluster, TP("t", 0), 0, 10)
    append(cluster, TP("t", 1), 0, 3000, size=5)
    for tp, n in ((TP("t", 0), 10), (TP("t", 1), 3000)):
        with KafkaConsumer(bootstrap_servers=cluster.bootstrap, **FAST) as c:
            c.assign([tp])
            consume(c, n, max_records=5000)
    # one drain each, all the records in one chunk: records and bytes, each a rate and a
    # total for the consumer and for the topic (8); lag: the consumer's max, the partition's
    # max and avg; lead: min, min and avg (6)
    assert per_drain == [(10, 12), (3000, 12)]


# ---------------------------------------------------------------------------- group metrics


def test_commit_total_counts_every_commit(make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1, topics={"t": 1})
    tp = TP("t", 0)
    append(cluster, tp, 0, 5)
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id="g-commit",
                       enable_auto_commit=False, **FAST) as c:
        c.assign([tp])
        m = c.metrics()
        assert find(m, "commit-total", COORDINATOR_GROUP) == 0.0
        assert math.isnan(find(m, "commit-latency-avg", COORDINATOR_GROUP))
        consume(c, 5)
        for offset in (1, 2, 3):
            c.commit({tp: offset})
        done: list[dict[TopicPartition, OffsetAndMetadata]] = []
        c.commit_async({tp: 4}, lambda offsets, err: done.append(offsets))
        c.commit_async({tp: 5}, lambda offsets, err: done.append(offsets))
        deadline = time.monotonic() + 5
        while len(done) < 2:
            assert time.monotonic() < deadline
            c.poll(20)
        m = c.metrics()
        commits = len(cluster.requests_of(ApiKey.OFFSET_COMMIT))
        assert commits == 5
        assert find(m, "commit-total", COORDINATOR_GROUP) == 5.0
        assert find(m, "commit-latency-max", COORDINATOR_GROUP) >= \
            find(m, "commit-latency-avg", COORDINATOR_GROUP) > 0
        assert find(m, "commit-rate", COORDINATOR_GROUP) > 0
        assert find(m, "assigned-partitions", COORDINATOR_GROUP) == 1.0
        assert find(m, "rebalance-total", COORDINATOR_GROUP) == 0.0   # assign(): no join
        assert find(m, "last-rebalance-seconds-ago", COORDINATOR_GROUP) == -1.0
        assert cluster.committed("g-commit") == {tp: 5}
        # every metric the module lists is there, and no other
        assert {(n.group, n.name) for n in m} == {(g, n) for g, names in METRICS.items()
                                                 for n in names}


def test_rebalance_and_heartbeat_metrics_after_a_join(make_cluster: Callable[..., FakeCluster]
                                                      ) -> None:
    cluster = make_cluster(1, topics={"t": 4})
    with KafkaConsumer("t", bootstrap_servers=cluster.bootstrap, group_id="g-join",
                       session_timeout_ms=3000, **FAST) as c:
        deadline = time.monotonic() + 10
        while len(c.assignment()) < 4:
            assert time.monotonic() < deadline, "no assignment"
            c.poll(50)
        m = c.metrics()
        joins = cluster.requests_of(ApiKey.JOIN_GROUP)
        assert find(m, "rebalance-total", COORDINATOR_GROUP) == 1.0
        # every JoinGroup round but the last one failed (MEMBER_ID_REQUIRED first: KIP-394)
        assert find(m, "failed-rebalance-total", COORDINATOR_GROUP) == float(len(joins) - 1)
        assert find(m, "assigned-partitions", COORDINATOR_GROUP) == 4.0
        assert find(m, "last-rebalance-seconds-ago", COORDINATOR_GROUP) == 0.0
        latency = find(m, "rebalance-latency-max", COORDINATOR_GROUP)
        assert latency == find(m, "rebalance-latency-total", COORDINATOR_GROUP) > 0
        # heartbeats every 100 ms (the heartbeat thread sends them while we wait)
        while len(cluster.requests_of(ApiKey.HEARTBEAT)) < 3:
            assert time.monotonic() < deadline, "no heartbeats"
            time.sleep(0.05)
        sent_before = len(cluster.requests_of(ApiKey.HEARTBEAT))
        m = c.metrics()
        sent_after = len(cluster.requests_of(ApiKey.HEARTBEAT))
        # answered heartbeats: all those sent, but the one that may be in flight
        assert sent_before - 1 <= find(m, "heartbeat-total", COORDINATOR_GROUP) <= sent_after
        assert find(m, "heartbeat-response-time-max", COORDINATOR_GROUP) > 0
        assert find(m, "last-heartbeat-seconds-ago", COORDINATOR_GROUP) == 0.0


def test_connection_count_is_the_connections_the_brokers_hold(
        make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(3)
    cluster.create_topic("t", 3)               # t-i led by broker i
    for p in range(3):
        append(cluster, TP("t", p), 0, 3)

    def held() -> int:
        return sum(len(b._conns) for b in cluster.brokers)

    c = KafkaConsumer(bootstrap_servers=cluster.bootstrap, **FAST)
    assert find(c.metrics(), "connection-count", CONSUMER_GROUP) == 0.0
    c.assign([TP("t", p) for p in range(3)])
    consume(c, 9)
    count = find(c.metrics(), "connection-count", CONSUMER_GROUP)
    # a bootstrap connection and one per leader
    assert count == float(held()) == 4.0
    c.close()
    cluster.wait_until(lambda: held() == 0, what="connections closed")
    assert find(c.metrics(), "connection-count", CONSUMER_GROUP) == 0.0


def test_window_settings_are_used(make_cluster: Callable[..., FakeCluster]) -> None:
    cluster = make_cluster(1, topics={"t": 1})
    tp = TP("t", 0)
    append(cluster, tp, 0, 7)
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, metrics_sample_window_ms=100,
                       metrics_num_samples=2, **FAST) as c:
        c.assign([tp])
        consume(c, 7)
        m = c.metrics()
        assert find(m, "records-consumed-rate") > 0
        assert not math.isnan(find(m, "fetch-latency-avg"))
        time.sleep(0.25)                        # past 2 samples of 100 ms
        m = c.metrics()
        assert find(m, "records-consumed-rate") == 0.0
        assert math.isnan(find(m, "fetch-latency-avg"))
        assert math.isnan(find(m, "time-between-poll-max"))
        assert find(m, "records-consumed-total") == 7.0


def test_metrics_from_another_thread_never_waits_for_poll_and_never_breaks(
        make_cluster: Callable[..., FakeCluster]) -> None:
    """Java's metrics() may be called from any thread: a monitoring thread reads while the
    application's poll() waits (it does not wait for it, nor raise ConcurrentAccessError) and
    while poll() records and the assignment changes under it."""
    import threading

    cluster = make_cluster(1, topics={"t": 4})
    for p in range(3):                    # t-3 stays empty
        cluster.produce(TopicPartition("t", p), [(b"k", b"v%d" % i) for i in range(200)])
    errors: list[BaseException] = []
    reads: list[float] = []
    stop = threading.Event()
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, **FAST) as c:
        c.assign([TopicPartition("t", 0)])
        c.poll(timeout_ms=2000)

        def monitor() -> None:
            try:
                while not stop.is_set():
                    t = time.monotonic()
                    m = c.metrics()
                    reads.append(time.monotonic() - t)
                    assert find(m, "records-consumed-total") >= 0
            except BaseException as e:  # reported below
                errors.append(e)

        t = threading.Thread(target=monitor)
        t.start()
        try:
            for i in range(40):           # records flowing, assignment changing
                c.assign([TopicPartition("t", p) for p in range(i % 4 + 1)])
                c.poll(timeout_ms=20)
            c.assign([TopicPartition("t", 3)])
            before = len(reads)
            started = time.monotonic()
            c.poll(timeout_ms=1500)       # nothing to read: poll() waits its whole timeout
            waited = time.monotonic() - started
            assert len(reads) > before + 10, "metrics() was not answered while poll() waited"
        finally:
            stop.set()
            t.join(10)
    assert not errors, errors
    assert waited >= 1.0 and max(reads) < waited


def test_a_closed_consumer_leaves_no_reference_cycle(make_cluster: Callable[..., FakeCluster]) -> None:
    """Everything a consumer held (partition states, metadata, metrics, connections) is freed
    by reference counting once it is closed and dropped: a cycle would leave it all to the
    cyclic collector, whose full passes grow with it (issue 26)."""
    import gc

    cluster = make_cluster(1, topics={"t": 3})
    for p in range(3):
        append(cluster, TP("t", p), 0, 50)
    gc.collect()
    gc.disable()
    try:
        with KafkaConsumer(bootstrap_servers=cluster.bootstrap, **FAST) as c:
            c.assign([TP("t", p) for p in range(3)])
            got = consume(c, 100, max_records=100)
            while sum(len(v) for v in got.values()) < 150:
                got.setdefault(TP("t", 0), []).extend([None] * c.poll_arrow(100).num_rows)  # type: ignore[list-item]
            assert c.metrics()                          # the per-partition stats were made
        del c
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        # the consumer's objects only: a fake cluster of an earlier test whose last thread
        # let go of it meanwhile is garbage of the test harness, not of the consumer
        left = [type(o).__qualname__ for o in gc.garbage
                if type(o).__module__.startswith("pyconsumer")
                and not type(o).__module__.startswith("pyconsumer.testing")]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert left == []


class Cursor:
    """A cursor as ConsumerMetrics reads it: used up or not, and its trailing cut batch."""

    def __init__(self, is_drained: bool, incomplete_batch: tuple[int, int, int] | None) -> None:
        self.is_drained = is_drained
        self.incomplete_batch = incomplete_batch


@pytest.mark.parametrize("seed", range(25))
def test_taken_many_leaves_the_metrics_taken_one_by_one_leaves(seed: int) -> None:
    """A poll_arrow chunk's partitions recorded with one taken_many (meters once per topic
    with the sums, the consumer's lag max / lead min once with the extremes) give every
    metric the value taken() per partition gives: random groups of partitions of two topics
    over windows that roll (records 0 or more, cursors used up or not, cut batches, records
    None, partitions without lag or lead), read after each group."""
    import random
    rnd = random.Random(seed)
    clocks = Clock(), Clock()
    one, many = metrics_on(clocks[0]), metrics_on(clocks[1])
    tps = [TP(t, p) for t in ("t.x", "u") for p in range(4)]
    for _ in range(12):
        step = rnd.choice([0.0, 10.0, 4_000.0, 31_000.0])
        for c in clocks:
            c.ms += step
        parts = {tp: Offsets(*rnd.choice([(5, 9, 8, 1), (None, 9, 9, 0), (3, None, None, 3),
                                          (7, 7, 7, None), (2, 100, 50, 2)])) for tp in tps}
        view = Assignment(parts)
        group = []
        for tp in rnd.sample(tps, rnd.randint(1, len(tps))):
            cut = rnd.choice([None, (40, 100, 7)])
            group.append((tp, rnd.choice([0, 1, 37]), Cursor(rnd.random() < 0.7, cut),
                          rnd.choice([None, b"x" * rnd.randint(0, 90) + b"y" * 10])))
        for tp, n, cursor, records in group:
            one.taken(tp, n, cursor, records, view)                      # type: ignore[arg-type]
        many.taken_many(group, view)                                     # type: ignore[arg-type]
        got, want = many.snapshot(view, 1), one.snapshot(view, 1)
        assert got.keys() == want.keys()
        assert {k: v for k, v in got.items() if not (math.isnan(v) and math.isnan(want[k]))} \
            == {k: v for k, v in want.items() if not (math.isnan(v) and math.isnan(got[k]))}
