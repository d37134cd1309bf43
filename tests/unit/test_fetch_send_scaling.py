"""Issue 26: a Fetch send to an open fetch session costs what changed, not what is assigned.

No timing. The Python lines the consumer runs are counted (sys.settrace) for sends with 10
and with 2,000 assigned partitions in an open session: idle (nothing changed), and a poll
that drains records of the same five partitions and sends again (positions moved, prefetch at
work). A pass over the assignment or the session shows up as thousands of lines. Beside that,
the request :meth:`FetchSessionHandler.build_changes` makes from a few changes is the one the
walking builder makes from every partition, and a consumer checking each incremental send
against the walk (``check_incremental``) reads exact records through seeks, pauses and
rollbacks.
"""
from __future__ import annotations

import random
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import pyconsumer
from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.consumer.fetch import Fetcher
from pyconsumer.consumer.fetch.request import FetchRequests
from pyconsumer.consumer.poll import RecordsCollector
from pyconsumer.consumer.fetch.session import (
    ZERO_UUID,
    FetchRequestData,
    FetchSessionHandler,
    PartitionData,
)
from pyconsumer.protocol import ApiKey
from pyconsumer.testing import FakeCluster

_PKG = str(Path(pyconsumer.__file__).parent)


class Stop(Exception):
    """Raised where a poll's result is built: its records do not reach the caller."""

_MOVED = [1, 3, 5, 7, 9]

Row = tuple[int, bytes | None, bytes | None]


def _count_lines(fn: Callable[[], Any]) -> tuple[dict[str, int], Any]:
    """The lines of the package ``fn`` runs, per function (file:function)."""
    lines: dict[str, int] = {}

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        if not frame.f_code.co_filename.startswith(_PKG):
            return None
        if event == "line":
            where = f"{Path(frame.f_code.co_filename).name}:{frame.f_code.co_name}"
            lines[where] = lines.get(where, 0) + 1
        return tracer

    sys.settrace(tracer)
    try:
        out = fn()
    finally:
        sys.settrace(None)
    return lines, out


def _top(lines: dict[str, int]) -> list[tuple[str, int]]:
    return sorted(lines.items(), key=lambda kv: -kv[1])[:5]


def _quiet(c: KafkaConsumer, fetcher: Fetcher) -> None:
    """Wait until no Fetch is in flight (the fake answers an idle one after 10 ms)."""
    fetcher.requests.client.poll(timeout_ms=10_000, until=lambda: not fetcher._nodes_in_flight)
    assert not fetcher._nodes_in_flight


def _send_lines(n: int) -> tuple[dict[str, int], dict[str, int], dict[int, list[Row]],
                                 list[dict[str, Any]]]:
    """Lines of one idle send and of one draining poll with ``n`` partitions assigned; the
    records that poll returned and the Fetch bodies the broker got after it."""
    with FakeCluster(topics={"t": n}) as cluster:
        tps = [TopicPartition("t", p) for p in range(n)]
        with KafkaConsumer(bootstrap_servers=cluster.bootstrap, auto_offset_reset="earliest",
                           fetch_max_wait_ms=10) as c:
            c.assign(tps)
            deadline = time.monotonic() + 30
            fetcher = c._fetcher
            while not (fetcher is not None and all(
                    h.has_session and len(h.session_partitions) == n
                    for h in fetcher.sessions.values()) and fetcher.sessions):
                assert time.monotonic() < deadline, "no session holding every partition"
                assert c.poll(timeout_ms=20) == {}
                fetcher = c._fetcher
            assert fetcher is not None
            handler = fetcher.sessions[0]
            # warm: one idle send after the session holds everything (the plan is made)
            _quiet(c, fetcher)
            assert fetcher.send_fetches() == 1
            _quiet(c, fetcher)
            epoch = handler.next_metadata.epoch
            idle, sent = _count_lines(fetcher.send_fetches)
            assert sent == 1 and handler.next_metadata.epoch == epoch     # incremental
            _quiet(c, fetcher)
            # records for five partitions, answered together in one incremental fetch
            want: dict[int, list[Row]] = {}
            for p in _MOVED:
                recs = [(b"k%d-%d" % (p, i), b"v%d-%d" % (p, i)) for i in range(3)]
                offsets = cluster.produce(TopicPartition("t", p), recs)
                want[p] = [(o, k, v) for o, (k, v) in zip(offsets, recs)]
            done = fetcher.completions
            assert fetcher.send_fetches() == 1
            fetcher.requests.client.poll(timeout_ms=10_000,
                                         until=lambda: fetcher.completions != done)
            assert fetcher.buffer.buffered_partitions() == {TopicPartition("t", p)
                                                           for p in _MOVED}
            mark = cluster.mark()
            # the poll: prefetch (the five go again at their ends), drain, return
            drained, got = _count_lines(lambda: c.poll(timeout_ms=0, max_records=100))
            rows = {tp.partition: [(r.offset, r.key, r.value) for r in recs]
                    for tp, recs in got.items()}
            _quiet(c, fetcher)
            bodies = [r.body for r in cluster.requests_of(ApiKey.FETCH, mark)]
            assert cluster.errors == []
            return idle, drained, rows, bodies


def test_send_lines_do_not_grow_with_partitions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(FetchRequests, "check_incremental", False)    # that one walks
    small_idle, small_drain, small_rows, small_bodies = _send_lines(10)
    large_idle, large_drain, large_rows, large_bodies = _send_lines(2000)
    want = {p: [(i, b"k%d-%d" % (p, i), b"v%d-%d" % (p, i)) for i in range(3)] for p in _MOVED}
    assert small_rows == want and large_rows == want
    # the same few lines whatever the assignment (a walk would be thousands)
    assert large_idle == small_idle, (_top(small_idle), _top(large_idle))
    assert sum(large_idle.values()) < 1000          # far below one line per partition
    assert sum(large_drain.values()) <= sum(small_drain.values()) + 20, \
        (_top(small_drain), _top(large_drain))
    # the Fetch after the drain lists exactly the five, at their new positions, in session
    for bodies in (small_bodies, large_bodies):
        assert bodies, "no Fetch after the drain"
        listed = {p["partition"]: p["fetch_offset"]
                  for t in bodies[0]["topics"] for p in t["partitions"]}
        assert listed == dict.fromkeys(_MOVED, 3)
        assert bodies[0]["session_epoch"] > 0 and not bodies[0]["forgotten_topics_data"]


# ------------------------------------------------------------------ build_changes


def _same(a: FetchRequestData, b: FetchRequestData) -> None:
    assert a.to_send == b.to_send                   # the same entries (order aside)
    assert list(a.to_send)[:len(a.to_send) - sum(tp in b.session_partitions
                                                 for tp in a.to_send)] == \
        list(b.to_send)[:len(b.to_send) - sum(tp in a.session_partitions for tp in b.to_send)]
    assert sorted(map(str, a.to_forget)) == sorted(map(str, b.to_forget))
    assert sorted(map(str, a.to_replace)) == sorted(map(str, b.to_replace))
    assert dict(a.session_partitions) == dict(b.session_partitions)
    assert a.metadata == b.metadata and a.can_use_topic_ids == b.can_use_topic_ids


def test_build_changes_makes_the_walking_builders_request() -> None:
    """Two handlers in the same open session, one given every wanted partition (the walk),
    one given only the changes: the same request every time, over random changes (positions,
    epochs, max bytes, partitions added and removed, a topic re-created under a new id)."""
    rng = random.Random(2026)
    ids = {"a": uuid.uuid4(), "b": uuid.uuid4(), "c": uuid.uuid4()}
    universe = [TopicPartition(t, p) for t in ids for p in range(6)]
    walk, changes = FetchSessionHandler(1), FetchSessionHandler(1)
    wanted = {tp: PartitionData(ids[tp.topic], 0, 1 << 20, 0) for tp in universe[:10]}
    builder = walk.new_builder()
    for tp, d in wanted.items():
        builder.add(tp, d)
    full = builder.build()
    assert changes.build_changes({}) is None              # no session yet: build in full
    builder = changes.new_builder()
    for tp, d in wanted.items():
        builder.add(tp, d)
    assert changes.new_builder() is not None and builder.build() == full
    for h in (walk, changes):
        assert h.handle_response(0, 42, set())
    for step in range(500):
        delta: dict[TopicPartition, PartitionData | None] = {}
        for _ in range(rng.randrange(4)):
            tp = rng.choice(universe)
            old = wanted.get(tp)
            op = rng.randrange(6)
            if op == 0 and old is not None:
                delta[tp] = None
            elif op == 1 and old is not None and rng.random() < 0.05:
                ids[tp.topic] = uuid.uuid4()                   # re-created topic
                delta[tp] = old._replace(topic_id=ids[tp.topic])
            elif old is None:
                delta[tp] = PartitionData(ids[tp.topic], rng.randrange(100), 1 << 20, 0)
            else:
                delta[tp] = old._replace(fetch_offset=old.fetch_offset + rng.randrange(3),
                                         current_leader_epoch=old.current_leader_epoch
                                         + (op == 2), max_bytes=old.max_bytes << (op == 3))
        for tp, d in delta.items():
            if d is None:
                wanted.pop(tp, None)
            else:
                wanted[tp] = d
        builder = walk.new_builder()
        for tp, d in wanted.items():
            builder.add(tp, d)
        expect = builder.build()
        got = changes.build_changes(delta)
        assert got is not None, step
        _same(got, expect)
        assert changes.session_topic_names.items() >= walk.session_topic_names.items()
        for h in (walk, changes):
            assert h.handle_response(0, 42, set(got.to_send))
    # a partition without a topic id cannot join a session named by ids: build in full
    assert changes.build_changes({TopicPartition("z", 0): PartitionData(
        ZERO_UUID, 0, 1, 0)}) is None


# ------------------------------------------------------------------ checked against the walk


@pytest.mark.parametrize("prefetch", [True, False])
def test_incremental_sends_match_the_walk_with_exact_records(
        monkeypatch: pytest.MonkeyPatch, prefetch: bool) -> None:
    """Every incremental send is checked against the walk (an IllegalStateError otherwise)
    while records arrive on random partitions and the consumer seeks, pauses, resumes and
    has a poll's records not reach the caller (a rollback); every record comes in order,
    after a seek again from the seek's offset."""
    monkeypatch.setattr(FetchRequests, "check_incremental", True)
    monkeypatch.setattr(FetchRequests, "prefetch", prefetch)
    built = 0
    build_changes = FetchSessionHandler.build_changes

    def counting(self: FetchSessionHandler, changes: Any) -> FetchRequestData | None:
        nonlocal built
        data = build_changes(self, changes)
        built += data is not None
        return data

    monkeypatch.setattr(FetchSessionHandler, "build_changes", counting)
    rng = random.Random(26 + prefetch)
    n = 40
    with FakeCluster(topics={"t": n}) as cluster:
        tps = [TopicPartition("t", p) for p in range(n)]
        log: dict[int, list[Row]] = {p: [] for p in range(n)}
        with KafkaConsumer(bootstrap_servers=cluster.bootstrap, auto_offset_reset="earliest",
                           fetch_max_wait_ms=10, max_partition_fetch_bytes=200) as c:
            c.assign(tps)
            expect_next = dict.fromkeys(range(n), 0)       # the next offset each must give
            paused: set[int] = set()
            for step in range(150):
                op = rng.randrange(10)
                if op < 4:
                    p = rng.randrange(n)
                    recs = [(b"k%d-%d" % (step, i), b"v%d" % i * 5) for i in range(3)]
                    for o, (k, v) in zip(cluster.produce(TopicPartition("t", p), recs), recs):
                        log[p].append((o, k, v))
                elif op == 4:
                    p = rng.randrange(n)
                    to = rng.randrange(len(log[p]) + 1)
                    c.seek(TopicPartition("t", p), to)
                    expect_next[p] = to
                elif op == 5:
                    p = rng.randrange(n)
                    if p in paused:
                        c.resume(TopicPartition("t", p))
                        paused.discard(p)
                    else:
                        c.pause(TopicPartition("t", p))
                        paused.add(p)
                elif op == 6:
                    # a poll whose records do not reach the caller: positions roll back
                    class Boom(RecordsCollector):
                        def build(self, chunks: Any) -> Any:
                            raise Stop

                    with pytest.raises(Stop):
                        c._poll(50, 7, lambda _: Boom(c._interceptors))
                for tp, recs in c.poll(timeout_ms=30, max_records=rng.choice([1, 4, 50])
                                       ).items():
                    p = tp.partition
                    assert p not in paused
                    for r in recs:
                        assert (r.offset, r.key, r.value) == log[p][expect_next[p]], (step, p)
                        expect_next[p] += 1
            c.resume(*tps)
            paused.clear()
            deadline = time.monotonic() + 30
            while any(expect_next[p] < len(log[p]) for p in range(n)):
                assert time.monotonic() < deadline, expect_next
                for tp, recs in c.poll(timeout_ms=50).items():
                    p = tp.partition
                    for r in recs:
                        assert (r.offset, r.key, r.value) == log[p][expect_next[p]]
                        expect_next[p] += 1
            assert c.poll(timeout_ms=100) == {}
        assert cluster.errors == []
    assert built > 20          # the incremental sends did run (and were checked)
