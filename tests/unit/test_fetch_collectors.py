"""The drain's collectors, over the in-process fake.

Typed poll_arrow() (value.format json) takes several buffered partitions in one call (its
collector's MANY strategy) with exactly the rows, order, positions, errors (and value counts,
but for FAILFAST's rolled-back polls) of taking them one at a time or side by side, in every bad-record mode, with budgets that cut
partitions and with partitions of two topics interleaved. Each step of the drain happens where
the test puts it (no poll loop around it: no fetch races a drain).
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.consumer.fetch import Strategy, decode
from pyconsumer.consumer.poll import TypedArrowCollector
from pyconsumer.testing import FakeCluster
from pyconsumer.values import MalformedValueError


A0, A1, A2 = (TopicPartition("a", p) for p in range(3))
B0, B1 = TopicPartition("b", 0), TopicPartition("b", 1)
#: the fetch order: runs of one topic and topics interleaved
ORDER = [A0, A1, B0, B1, A2]
BAD = {A0: set(), A1: {5}, B0: {0}, B1: {13, 39}, A2: {20}}
COUNT = 40


@pytest.fixture(params=["named", "plain"])
def typed_cluster(request: pytest.FixtureRequest) -> Iterator[FakeCluster]:
    """The partitions of ORDER, COUNT records each in two batches, bad JSON at BAD (values of
    two sizes: record sets of other sizes take other paths)."""
    c = FakeCluster(1)
    c.create_topic("a", 3)
    c.create_topic("b", 2)
    for tp in ORDER:
        name = str(tp).encode() if request.param == "named" else b"x"
        for start, n in ((0, 17), (17, COUNT - 17)):
            c.produce(tp, [(b"k%d" % i, b"{bad" if i in BAD[tp] else
                            b'{"id": %d, "name": "%s-%d"}' % (i, name, i), [],
                            1_700_000_000_000 + i) for i in range(start, start + n)])
    yield c
    c.close()
    assert c.errors == [], c.errors


def _fetch(c: KafkaConsumer) -> None:
    client, fetcher, _ = c._parts()
    done = fetcher.completions
    assert fetcher.send_fetches() == 1
    client.poll(timeout_ms=5000, until=lambda: fetcher.completions != done)


def _collect(c: KafkaConsumer, limit: int, strategy: Strategy) -> pa.RecordBatch:
    """One drain and build as PollLoop.run does them (positions rolled back on a raise)."""
    _, fetcher, _ = c._parts()
    loop = c._poll_loop
    plan = c._typed
    assert loop is not None and plan is not None
    collector = TypedArrowCollector(plan, loop, c._decode_threads, False, c._arrow_schema,
                                    c._interceptors)
    collector.strategy = strategy
    subs = c._subscriptions
    before = subs.start_journal()
    try:
        return collector.build(fetcher.drain(limit, collector))
    except BaseException:
        loop._roll_back(before)
        raise
    finally:
        subs.stop_journal()


Step = tuple[str, Any, dict[TopicPartition, int]]


def _read(cluster: FakeCluster, strategy: Strategy, mode: str, limit: int, threads: int
          ) -> tuple[list[Step], tuple[int, int, int]]:
    settings: dict[str, Any] = dict(
        bootstrap_servers=cluster.bootstrap, value_format="json",
        value_schema="id BIGINT, name STRING", bad_records_mode=mode, decode_threads=threads,
        fetch_max_wait_ms=10)
    steps: list[Step] = []
    with KafkaConsumer(**settings) as c:
        c.assign(ORDER)
        for tp in ORDER:
            c.seek(tp, 0)
        client, fetcher, _ = c._parts()
        client.update_metadata(["a", "b"], timeout_ms=5000)
        deadline = time.monotonic() + 30
        while True:
            positions = {tp: c.position(tp) for tp in ORDER}
            if all(p == COUNT for p in positions.values()):
                break
            assert time.monotonic() < deadline, steps
            if not fetcher.has_available():
                _fetch(c)
                continue
            try:
                batch = _collect(c, limit, strategy)
            except MalformedValueError as e:
                assert e.topic is not None and e.partition is not None and e.offset is not None
                tp = TopicPartition(e.topic, e.partition)
                steps.append(("error", (tp, e.offset), {t: c.position(t) for t in ORDER}))
                c.seek(tp, e.offset + 1)
                continue
            steps.append(("rows", list(zip(*(batch.column(n).to_pylist() for n in (
                "topic", "partition", "offset", "key", "value", *batch.schema.names[7:])))),
                {tp: c.position(tp) for tp in ORDER}))
        plan = c._typed
        assert plan is not None
        counts = plan.snapshot()
        return steps, (counts.decoded, counts.malformed, counts.dropped)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("limit", [7, 60, 500])
@pytest.mark.parametrize("mode", ["PERMISSIVE", "DROPMALFORMED", "FAILFAST"])
def test_typed_arrow_takes_many_partitions_with_the_result_of_one_at_a_time(
        typed_cluster: FakeCluster, monkeypatch: pytest.MonkeyPatch, mode: str, limit: int,
        threads: int) -> None:
    monkeypatch.setattr(decode, "min_bytes", 0)       # small data goes side by side too
    many_calls: list[int] = []
    take_many = TypedArrowCollector.take_many

    def spy(self: TypedArrowCollector, cursors: Any, budgets: list[int]) -> Any:
        many_calls.append(len(cursors))
        return take_many(self, cursors, budgets)

    monkeypatch.setattr(TypedArrowCollector, "take_many", spy)
    one = _read(typed_cluster, Strategy.ONE_BY_ONE, mode, limit, threads)
    assert many_calls == []
    side = _read(typed_cluster, Strategy.SIDE_BY_SIDE, mode, limit, threads)
    assert many_calls == []
    many = _read(typed_cluster, Strategy.MANY, mode, limit, threads)
    if limit > COUNT:                   # (a partition's index bound is all of its records)
        assert many_calls and max(many_calls) > 1
    if mode == "FAILFAST":
        # a poll that raises is decoded again after its rollback, and a many-partitions take
        # may have cut the partitions after the bad one into other chunks (same records): the
        # values decoded count that work, so only what was handed out must match
        many, side, one = many[:1], side[:1], one[:1]
    assert many == one
    assert side == one
    steps = one[0]
    rows = [r for kind, got, _ in steps if kind == "rows" for r in got]
    errors = [got for kind, got, _ in steps if kind == "error"]
    bad = sum(len(b) for b in BAD.values())
    if mode == "FAILFAST":
        assert sorted(errors) == sorted((tp, o) for tp, offsets in BAD.items() for o in offsets)
        assert len(rows) == len(ORDER) * COUNT - bad
    else:
        assert errors == []
        assert len(rows) == len(ORDER) * COUNT - (bad if mode == "DROPMALFORMED" else 0)
    # each partition's rows in offset order, once
    for tp in ORDER:
        offsets = [r[2] for r in rows if (r[0], r[1]) == (tp.topic, tp.partition)]
        assert offsets == sorted(set(offsets))


@pytest.mark.parametrize("mode", ["PERMISSIVE", "DROPMALFORMED", "FAILFAST"])
def test_typed_arrow_many_gives_each_cursor_what_its_own_take_gives(mode: str) -> None:
    """Two responses of one partition (the second prefetched behind the first) and another
    partition in one take: each cursor's part is what typed_arrow gives it alone, and the
    chunk's rows are theirs in turn."""
    import functools

    from pyconsumer.consumer.poll import typed_arrow, typed_arrow_many
    from pyconsumer.records import CompletedFetch, take_arrow_many

    from tests import recordsets as rs

    def record_set(base: int, bad: set[int]) -> bytes:
        return rs.kp_v2([(i, 1_700_000_000_000 + i, b"k", b"{bad" if base + i in bad else
                          b'{"id": %d, "name": "n"}' % (base + i), []) for i in range(5)],
                        base_offset=base)

    sets = [("t", 0, 0, record_set(0, {1})), ("t", 0, 5, record_set(5, {7, 8})),
            ("t", 1, 0, record_set(0, {3}))]

    def cursors() -> list[CompletedFetch]:
        return [CompletedFetch(data, topic, p, offset) for topic, p, offset, data in sets]

    with KafkaConsumer(bootstrap_servers="127.0.0.1:9", value_format="json",
                       value_schema="id BIGINT, name STRING", bad_records_mode=mode) as c:
        plan = c._typed
        assert plan is not None
        run = functools.partial(decode.run, threads=1)
        alone = [typed_arrow(plan, [cu.take_arrow(100)], run, False) for cu in cursors()]
        taken = cursors()
        batch, counts = take_arrow_many(taken, [100] * 3)
        chunk, rows = typed_arrow_many(plan, batch, taken, counts, run, 1, False)
    assert rows == counts == [5, 5, 5]
    assert chunk.parts is not None
    assert [(tp, part.rows, part.taken, part.error and part.error.offset,
             [b.to_pylist() for b in part.out]) for tp, part in chunk.parts] == [
        (TopicPartition(t, p), one.rows, one.taken, one.error and one.error.offset,
         [b.to_pylist() for b in one.out]) for (t, p, _, _), one in zip(sets, alone)]
    assert [r for b in chunk.out for r in b.to_pylist()] == [
        r for one in alone for b in one.out for r in b.to_pylist()]
