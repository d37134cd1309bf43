"""Fetch sessions (KIP-227) end to end over the fake cluster (pyconsumer.testing.FakeCluster
keeps sessions as Kafka's FetchManager does): the fetcher alone (each step where the test puts it)
and the consumer (exact records over polls while the assignment, pauses and the session
change). The request log shows what each Fetch listed and forgot, with which session id and
epoch."""
from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pyconsumer import KafkaConsumer
from pyconsumer.consumer.fetch.session import FINAL_EPOCH, FetchMetadata
from pyconsumer.consumer.subscription import FetchState
from pyconsumer.errors import ErrorCode
from pyconsumer.protocol import ApiKey
from pyconsumer.records import CompletedFetch, ConsumerRecord
from pyconsumer.structs import TopicPartition
from pyconsumer.testing import FakeCluster, Request

from tests.unit import fetch_rig
from tests.unit.fetch_rig import Takes

Row = tuple[int, bytes | None]
FAST: dict[str, Any] = dict(fetch_max_wait_ms=50, retry_backoff_ms=20, reconnect_backoff_ms=20,
                            reconnect_backoff_max_ms=200, auto_offset_reset="earliest")


def T(p: int, topic: str = "t") -> TopicPartition:
    return TopicPartition(topic, p)


class Fetch:
    """One logged Fetch request, its topics resolved to names."""

    def __init__(self, cluster: FakeCluster, req: Request) -> None:
        b = req.body
        names = {t.topic_id: t.name for t in cluster.topics.values()}
        self.broker, self.size = req.broker, req.size
        self.meta = FetchMetadata(b["session_id"], b["session_epoch"]) if req.version >= 7 \
            else FetchMetadata(0, -1)
        self.listed = {TopicPartition(t["topic"] or names[t["topic_id"]], p["partition"]):
                       (p["fetch_offset"], p["partition_max_bytes"], p["current_leader_epoch"])
                       for t in b["topics"] for p in t["partitions"]}
        self.forgotten = {TopicPartition(t["topic"] or names[t["topic_id"]], p)
                          for t in b.get("forgotten_topics_data") or () for p in t["partitions"]}

    def __repr__(self) -> str:
        return f"Fetch@{self.broker}{self.meta}{sorted(map(str, self.listed))}-{self.forgotten}"


def fetches(cluster: FakeCluster, after: int = 0, broker: int | None = None) -> list[Fetch]:
    return [Fetch(cluster, r) for r in cluster.requests_of(ApiKey.FETCH, after)
            if broker is None or r.broker == broker]


def without_close(log: list[Fetch]) -> list[Fetch]:
    """``log`` without the session-closing Fetch close() sends (epoch -1, no partitions) when no
    Fetch is in flight then, so not on every run: it must be the last of its broker."""
    closing = [i for i, f in enumerate(log) if f.meta.epoch == FINAL_EPOCH]
    for i in closing:
        assert not log[i].listed and all(f.meta.epoch != FINAL_EPOCH
                                         for f in log[i + 1:] if f.broker == log[i].broker), log
    return [f for i, f in enumerate(log) if i not in closing]


def check_incremental(log: list[Fetch]) -> int:
    """Replay one broker's fetches: each incremental one carries the session's next epoch and
    lists only partitions new to the session or changed; returns how many were incremental."""
    session: dict[TopicPartition, tuple[int, int, int]] = {}
    expect: FetchMetadata | None = None
    count = 0
    for f in log:
        if f.meta.is_full:
            session = dict(f.listed)
            expect = None
            continue
        count += 1
        if expect is not None and expect.session_id == f.meta.session_id:
            assert f.meta == expect, log
        for tp, ask in f.listed.items():
            assert session.get(tp) != ask, f"{tp} listed unchanged in {f}"
        session.update(f.listed)
        for tp in f.forgotten:
            session.pop(tp)
        expect = FetchMetadata(f.meta.session_id, f.meta.epoch + 1)
    return count


class Rig(fetch_rig.Rig):
    """The fetch tests' rig; its drain gives each partition's rows as one list."""

    def fetch(self) -> None:
        """One Fetch, answered."""
        done = self.fetcher.completions
        assert self.fetcher.send_fetches() == 1
        self.client.poll(timeout_ms=5000, until=lambda: self.fetcher.completions != done)
        assert self.fetcher.completions == done + 1

    def drain(self, n: int = 1000) -> dict[TopicPartition, list[Row]]:
        def take(cursor: CompletedFetch, k: int) -> list[ConsumerRecord]:
            return cursor.take_records(k)

        out: dict[TopicPartition, list[Row]] = {}
        for tp, recs in self.fetcher.drain(n, Takes(take, len)):
            out.setdefault(tp, []).extend((r.offset, r.value) for r in recs)
        return out

def put(cluster: FakeCluster, tp: TopicPartition, n: int, start: int = 0) -> list[Row]:
    values = [b"%s-%d-%d" % (tp.topic.encode(), tp.partition, i) for i in range(start, start + n)]
    offsets = cluster.produce(tp, [(None, v) for v in values])
    return list(zip(offsets, values))


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    with FakeCluster(2) as c:
        yield c
        assert c.errors == []


def poll_until(c: KafkaConsumer, want: dict[TopicPartition, int], got: dict[TopicPartition,
               list[Row]], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while any(len(got.get(tp, [])) < n for tp, n in want.items()):
        assert time.monotonic() < deadline, f"timed out: {got} wanting {want}"
        for tp, recs in c.poll(50).items():
            got.setdefault(tp, []).extend((r.offset, r.value) for r in recs)


# ------------------------------------------------------------------ the consumer


def test_exact_records_while_the_assignment_and_pauses_change(cluster: FakeCluster) -> None:
    cluster.create_topic("t", 4, leaders=[0, 0, 0, 1])
    expected = {T(p): put(cluster, T(p), 3) for p in range(4)}
    got: dict[TopicPartition, list[Row]] = {}
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, **FAST) as c:
        c.assign([T(0), T(1), T(2)])
        poll_until(c, {T(0): 3, T(1): 3, T(2): 3}, got)
        c.pause(T(1))
        paused_at = cluster.mark()
        for p in range(4):
            expected[T(p)] += put(cluster, T(p), 2, start=3)
        poll_until(c, {T(0): 5, T(2): 5}, got)
        assert c.poll(150) == {}                            # t-1 is paused
        resumed_at = cluster.mark()
        c.resume(T(1))
        poll_until(c, {T(1): 5}, got)
        moved_at = cluster.mark()
        c.assign([T(0), T(2), T(3)])                        # t-1 goes, t-3 comes
        expected[T(0)] += put(cluster, T(0), 1, start=5)
        poll_until(c, {T(0): 6, T(3): 5}, got)
        assert c.poll(150) == {}
    expected[T(1)] = expected[T(1)][:5]
    assert got == expected
    on0 = fetches(cluster, broker=0)
    # close() frees the session with an empty epoch -1 fetch, only when no Fetch is in flight
    # then (so not on every run): it is the last one and names the session
    closing = [f for f in on0 if f.meta.epoch == FINAL_EPOCH]
    if closing:
        assert closing == on0[-1:] and not closing[0].listed and closing[0].meta.session_id != 0
        on0 = on0[:-1]
    assert on0[0].meta == FetchMetadata(0, 0) and set(on0[0].listed) == {T(0), T(1), T(2)}
    # one session throughout, every later fetch incremental, each listing only changes
    assert all(not f.meta.is_full for f in on0[1:]), "\n".join(map(repr, on0))
    assert len({f.meta.session_id for f in on0[1:]}) == 1
    assert check_incremental(on0) == len(on0) - 1 >= 5
    # the first fetch sent after the pause forgets t-1 (one in flight may still list it)
    while_paused = fetches(cluster, paused_at, 0)[:-len(fetches(cluster, resumed_at, 0))]
    first = next(i for i, f in enumerate(while_paused) if T(1) not in f.listed)
    assert first <= 1 and while_paused[first].forgotten == {T(1)}, while_paused
    assert all(T(1) not in f.listed for f in while_paused[first:])
    after_resume = fetches(cluster, resumed_at, broker=0)
    assert after_resume[0].listed[T(1)][0] == 3 and not after_resume[0].forgotten
    # the first fetch sent after the move forgets t-1 (one sent before it may still be in flight)
    after_move = [f for f in fetches(cluster, moved_at, broker=0) if f.meta.epoch != FINAL_EPOCH]
    first = next(i for i, f in enumerate(after_move) if f.forgotten)
    assert first <= 1 and after_move[first].forgotten == {T(1)}, after_move
    assert all(T(1) not in f.listed for f in after_move[first:]), after_move
    on1 = fetches(cluster, moved_at, broker=1)
    # broker 1's session is freed at close() the same way, when no Fetch is in flight there
    closing = [f for f in on1 if f.meta.epoch == FINAL_EPOCH]
    if closing:
        assert closing == on1[-1:] and not closing[0].listed and closing[0].meta.session_id != 0
        on1 = on1[:-1]
    assert on1[0].meta == FetchMetadata(0, 0) and set(on1[0].listed) == {T(3)}
    assert check_incremental(on1) == len(on1) - 1


@pytest.mark.parametrize("how", ["evicted", "injected"])
def test_session_id_not_found_gives_one_full_fetch_then_incremental_again(
        cluster: FakeCluster, how: str) -> None:
    cluster.create_topic("t", 3, leaders=[0, 0, 0])
    expected = {T(p): put(cluster, T(p), 4) for p in range(3)}
    got: dict[TopicPartition, list[Row]] = {}
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, **FAST) as c:
        c.assign([T(p) for p in range(3)])
        poll_until(c, {T(p): 4 for p in range(3)}, got)
        [old] = cluster.fetch_sessions_of(0)
        mark = cluster.mark()
        if how == "evicted":
            cluster.evict_fetch_sessions(0)
        else:
            cluster.inject(ApiKey.FETCH, ErrorCode.FETCH_SESSION_ID_NOT_FOUND, broker=0)
        for p in range(3):
            expected[T(p)] += put(cluster, T(p), 2, start=4)
        poll_until(c, {T(p): 6 for p in range(3)}, got)
        assert c.poll(150) == {}
    assert got == expected
    log = without_close(fetches(cluster, mark))
    full = [i for i, f in enumerate(log) if f.meta.is_full]
    assert len(full) == 1, log
    i = full[0]
    assert log[i - 1].meta.session_id == old.session_id          # refused
    assert log[i].meta == FetchMetadata(0, 0)                    # a new session, from scratch
    # at the positions then: before the new records or after them (the fetch in flight
    # when the session went may have brought them)
    assert set(log[i].listed) == {T(0), T(1), T(2)}
    assert len({ask for ask in log[i].listed.values()}) == 1
    assert log[i].listed[T(0)] in ((4, 1048576, 0), (6, 1048576, 0))
    [new] = cluster.fetch_sessions_of(0) if how == "evicted" else \
        [s for s in cluster.fetch_sessions_of(0) if s.session_id != old.session_id]
    assert log[i + 1].meta == FetchMetadata(new.session_id, 1)
    assert check_incremental(log[i:]) == len(log) - i - 1 >= 2


def test_invalid_epoch_closes_the_session_in_the_next_full_fetch(cluster: FakeCluster) -> None:
    cluster.create_topic("t", 2, leaders=[0, 0])
    expected = {T(p): put(cluster, T(p), 3) for p in range(2)}
    got: dict[TopicPartition, list[Row]] = {}
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, **FAST) as c:
        c.assign([T(0), T(1)])
        poll_until(c, {T(0): 3, T(1): 3}, got)
        [old] = cluster.fetch_sessions_of(0)
        mark = cluster.mark()
        cluster.inject(ApiKey.FETCH, ErrorCode.INVALID_FETCH_SESSION_EPOCH, broker=0)
        expected[T(1)] += put(cluster, T(1), 2, start=3)
        poll_until(c, {T(1): 5}, got)
        assert c.poll(150) == {}
        [new] = cluster.fetch_sessions_of(0)               # the old one was closed
    assert got == expected
    log = without_close(fetches(cluster, mark))
    [i] = [i for i, f in enumerate(log) if f.meta.is_full]
    assert log[i].meta == FetchMetadata(old.session_id, 0)
    assert set(log[i].listed) == {T(0), T(1)}
    assert new.session_id != old.session_id
    assert log[i + 1].meta == FetchMetadata(new.session_id, 1)


def test_a_dropped_connection_makes_the_next_fetch_full(cluster: FakeCluster) -> None:
    cluster.create_topic("t", 2, leaders=[0, 0])
    expected = {T(p): put(cluster, T(p), 3) for p in range(2)}
    got: dict[TopicPartition, list[Row]] = {}
    with KafkaConsumer(bootstrap_servers=cluster.bootstrap, **FAST) as c:
        c.assign([T(0), T(1)])
        poll_until(c, {T(0): 3, T(1): 3}, got)
        [old] = cluster.fetch_sessions_of(0)
        mark = cluster.mark()
        cluster.drop_next(ApiKey.FETCH, broker=0)
        expected[T(0)] += put(cluster, T(0), 2, start=3)
        poll_until(c, {T(0): 5}, got)
        assert c.poll(150) == {}
    assert got == expected
    log = without_close(fetches(cluster, mark))
    assert not log[0].meta.is_full                          # dropped
    assert log[1].meta == FetchMetadata(old.session_id, 0) and set(log[1].listed) == {T(0), T(1)}


@pytest.mark.parametrize("sessions, max_version", [(False, None), (True, 6)],
                         ids=["sessions-off", "fetch-v6"])
def test_brokers_without_sessions_get_full_fetches(sessions: bool, max_version: int | None
                                                   ) -> None:
    versions = {} if max_version is None else {ApiKey.FETCH: max_version}
    with FakeCluster(1, topics={"t": 2}, fetch_sessions=sessions, max_versions=versions) as cl:
        expected = {T(p): put(cl, T(p), 3) for p in range(2)}
        got: dict[TopicPartition, list[Row]] = {}
        with KafkaConsumer(bootstrap_servers=cl.bootstrap, **FAST) as c:
            c.assign([T(0), T(1)])
            poll_until(c, {T(0): 3, T(1): 3}, got)
            expected[T(1)] += put(cl, T(1), 2, start=3)
            poll_until(c, {T(1): 5}, got)
            assert c.poll(150) == {}
        assert got == expected
        log = fetches(cl)
        assert len(log) >= 3 and cl.sessions == {}
        for f in log:                       # every one lists both partitions
            assert f.meta == (FetchMetadata(0, 0) if max_version is None
                              else FetchMetadata(0, -1)) and set(f.listed) == {T(0), T(1)}
        assert cl.errors == []


def test_requests_shrink_with_a_session_of_fifty_partitions() -> None:
    sizes: dict[bool, list[int]] = {}
    for sessions in (True, False):
        with FakeCluster(1, topics={"t": 50}, fetch_sessions=sessions) as cl:
            expected = {T(p): put(cl, T(p), 2) for p in range(50)}
            got: dict[TopicPartition, list[Row]] = {}
            with KafkaConsumer(bootstrap_servers=cl.bootstrap, **FAST) as c:
                c.assign([T(p) for p in range(50)])
                poll_until(c, {T(p): 2 for p in range(50)}, got)
                c.poll(200)           # the fetch listing the 50 new positions goes out
                mark = cl.mark()
                expected[T(7)] += put(cl, T(7), 1, start=2)
                poll_until(c, {T(7): 3}, got)
                c.poll(300)
            assert got == expected
            sizes[sessions] = [f.size for f in fetches(cl, mark)]
            if sessions:
                listed = [set(f.listed) for f in fetches(cl, mark)]
                assert {T(7)} in listed and all(s <= {T(7)} for s in listed), listed
            assert cl.errors == []
    with_session = statistics.median(sizes[True])
    without = statistics.median(sizes[False])
    print(f"median Fetch request bytes, 50 partitions: {with_session} in a session, "
          f"{without} without")
    assert with_session * 10 < without, sizes


# ------------------------------------------------------------------ the fetcher


def test_an_incremental_answer_lists_only_what_changed() -> None:
    with FakeCluster(1, topics={"t": 4}) as cl:
        for p in range(4):
            put(cl, T(p), 2)
        answers: list[dict[str, Any]] = []

        def record(req: Request) -> dict[str, Any]:
            answers.append(cl.default_answer(req))
            return answers[-1]

        cl.control(ApiKey.FETCH, record)
        rig = Rig(cl)
        try:
            rig.assign({T(p): 0 for p in range(4)})
            rig.fetch()
            assert rig.drain() == {T(p): [(0, b"t-%d-0" % p), (1, b"t-%d-1" % p)]
                                   for p in range(4)}
            rig.fetch()                        # every position moved: all four listed
            assert [len(f.listed) for f in fetches(cl)] == [4, 4]
            assert answers[1]["responses"] == []     # nothing new anywhere: an empty answer
            assert rig.drain() == {}
            put(cl, T(2), 1, start=2)
            rig.fetch()
            assert fetches(cl)[2].listed == {}       # nothing changed on our side
            assert [[p["partition_index"] for p in t["partitions"]]
                    for t in answers[2]["responses"]] == [[2]]
            assert rig.drain() == {T(2): [(2, b"t-2-2")]}
            # the partitions the answer left out are unchanged: no error, no reset
            for p in range(4):
                st = rig.subs.state(T(p))
                assert st.fetch_state is FetchState.FETCHING and st.high_watermark == \
                    (3 if p == 2 else 2)
            rig.fetch()
            assert fetches(cl)[3].listed == {T(2): (3, 1048576, 0)}
            assert [f.meta.epoch for f in fetches(cl)] == [0, 1, 2, 3]
        finally:
            rig.close()
        assert cl.errors == []


@pytest.mark.parametrize("sessions", [True, False])
def test_a_session_node_with_buffered_partitions_is_not_fetched(sessions: bool) -> None:
    """Java's rule, with prefetch off (with it on, see the next test)."""
    with FakeCluster(1, topics={"t": 3}, fetch_sessions=sessions) as cl:
        for p in range(3):
            put(cl, T(p), 5)
        rig = Rig(cl)
        rig.fetcher.prefetch = False
        try:
            rig.assign({T(0): 0, T(1): 0})
            rig.fetch()
            assert rig.drain(3) == {T(0): [(i, b"t-0-%d" % i) for i in range(3)]}
            # t-2 comes in with data to fetch while t-0 and t-1 still have records buffered
            rig.subs.assign_from_user([T(0), T(1), T(2)])
            rig.subs.seek(T(2), 0)
            if sessions:
                # a fetch now would forget t-0 and t-1 in the session, or bring their data
                # again: it waits until they are drained (Java, KAFKA-17182)
                assert rig.fetcher.send_fetches() == 0
            else:
                rig.fetch()
                assert set(fetches(cl)[-1].listed) == {T(2)}
            rig.drain()
            if sessions:
                rig.fetch()
                f = fetches(cl)[-1]
                assert f.listed == {T(2): (0, 1048576, 0), T(0): (5, 1048576, 0),
                                    T(1): (5, 1048576, 0)} and f.forgotten == set()
        finally:
            rig.close()
        assert cl.errors == []


@pytest.mark.parametrize("sessions", [True, False])
def test_buffered_partitions_are_prefetched_from_where_their_data_ends(sessions: bool) -> None:
    with FakeCluster(1, topics={"t": 3}, fetch_sessions=sessions) as cl:
        for p in range(3):
            put(cl, T(p), 5)
        rig = Rig(cl)
        try:
            rig.assign({T(0): 0, T(1): 0, T(2): 0})
            rig.fetch()
            assert rig.drain(3) == {T(0): [(i, b"t-0-%d" % i) for i in range(3)]}
            for p in range(3):
                put(cl, T(p), 2, start=5)
            # every partition has its data in hand: all go again from offset 5, where their
            # batches end (t-0 half drained, t-1 and t-2 waiting); nothing forgotten
            rig.fetch()
            f = fetches(cl)[-1]
            assert f.listed == {T(p): (5, 1048576, 0) for p in range(3)} and f.forgotten == set()
            # two responses buffered per partition is the limit: nothing more is sent
            assert rig.fetcher.send_fetches() == 0
            assert rig.drain() == {T(p): [(i, b"t-%d-%d" % (p, i)) for i in range(3 if p == 0 else 0, 7)]
                                   for p in range(3)}
        finally:
            rig.close()
        assert cl.errors == []


def test_a_partition_with_data_waiting_and_none_in_hand_goes_first_in_a_full_fetch() -> None:
    # fairness: t-2 (new, nothing fetched yet) must get its turn before t-0 and t-1 go again,
    # and a broker fills a response in its session's order: the fetch that asks for t-2 is a
    # full one (a new session, in request order) listing t-2 first and t-0/t-1 from where
    # their buffered data ends, so nothing waits for the drain and nothing is forgotten
    with FakeCluster(1, topics={"t": 3}, fetch_sessions=True) as cl:
        for p in range(3):
            put(cl, T(p), 5)
        rig = Rig(cl)
        try:
            rig.assign({T(0): 0, T(1): 0})
            rig.fetch()
            rig.subs.assign_from_user([T(0), T(1), T(2)])
            rig.subs.seek(T(2), 0)
            rig.fetch()
            f = fetches(cl)[-1]
            assert f.meta.is_full and list(f.listed) == [T(2), T(0), T(1)]
            assert f.listed == {T(2): (0, 1048576, 0), T(0): (5, 1048576, 0),
                                T(1): (5, 1048576, 0)} and f.forgotten == set()
            assert rig.drain() == {T(p): [(i, b"t-%d-%d" % (p, i)) for i in range(5)]
                                   for p in range(3)}
        finally:
            rig.close()
        assert cl.errors == []


def test_paused_buffered_partitions_do_not_hold_the_node_back() -> None:
    with FakeCluster(1, topics={"t": 3}) as cl:
        for p in range(3):
            put(cl, T(p), 5)
        rig = Rig(cl)
        try:
            rig.assign({T(0): 0, T(1): 0})
            rig.fetch()
            rig.subs.pause(T(0))
            rig.subs.pause(T(1))
            rig.subs.assign_from_user([T(0), T(1), T(2)])
            rig.subs.seek(T(2), 0)
            rig.fetch()
            f = fetches(cl)[-1]
            assert not f.meta.is_full and f.listed == {T(2): (0, 1048576, 0)}
            assert f.forgotten == {T(0), T(1)}
            assert rig.drain() == {T(2): [(i, b"t-2-%d" % i) for i in range(5)]}
        finally:
            rig.close()
        assert cl.errors == []


def test_epochs_wrap_in_step_with_the_broker() -> None:
    with FakeCluster(1, topics={"t": 1}) as cl:
        rig = Rig(cl)
        try:
            rig.assign({T(0): 0})
            rig.fetch()
            [session] = cl.fetch_sessions_of()
            top = 2**31 - 1
            cl.sessions[session.session_id].epoch = top
            rig.fetcher.sessions[0].next_metadata = FetchMetadata(session.session_id, top)
            for _ in range(2):
                rig.drain()
                rig.fetch()
            assert [f.meta.epoch for f in fetches(cl)] == [0, top, 1]
            assert cl.fetch_sessions_of()[0].epoch == 2
        finally:
            rig.close()
        assert cl.errors == []


def test_close_sessions_frees_them_at_the_broker() -> None:
    with FakeCluster(1, topics={"t": 2}) as cl:
        rig = Rig(cl)
        try:
            rig.assign({T(0): 0, T(1): 0})
            rig.fetch()
            [session] = cl.fetch_sessions_of()
            rig.fetcher.close_sessions(2000)
            f = fetches(cl)[-1]
            assert f.meta == FetchMetadata(session.session_id, -1) and f.listed == {}
            assert cl.fetch_sessions_of() == []
        finally:
            rig.close()
        assert cl.errors == []


def test_in_a_session_the_broker_order_gives_every_partition_its_turn() -> None:
    # the sessionless twin is test_fetcher_drain.py's "fetched next": here the broker keeps
    # the order, moving a partition that returned records to the end of its session (Kafka)
    with FakeCluster(1, topics={"t": 2}) as cl:
        for i in range(12):
            cl.produce(T(0), [(None, b"0-%d" % i)])          # 76-byte batches
        cl.produce(T(1), [(None, b"x" * 500)])               # one 570-byte batch
        rig = Rig(cl, max_partition_fetch_bytes=200)
        try:
            rig.assign({T(0): 0, T(1): 0})
            rig.fetch()                  # full: t-0 first, two batches; t-1: nothing fits
            assert rig.drain() == {T(0): [(0, b"0-0"), (1, b"0-1")]}
            rig.fetch()                  # incremental: the session still has t-0 first
            assert rig.drain() == {T(0): [(2, b"0-2"), (3, b"0-3")]}
            rig.fetch()                  # t-0 went to the end of the session: t-1's turn
            assert rig.drain() == {T(1): [(0, b"x" * 500)], T(0): [(4, b"0-4"), (5, b"0-5")]}
        finally:
            rig.close()
        assert cl.errors == []


def test_answered_partitions_are_the_assignments_own_objects() -> None:
    """An answer's partitions are queued under the very TopicPartition objects the assignment
    holds (no new one per partition of every answer; dict lookups by identity), also after
    the assignment changes; their records are exact."""
    with FakeCluster(1, topics={"t": 3}) as cl:
        for p in range(3):
            put(cl, T(p), 2)
        rig = Rig(cl)
        try:
            first = [T(p) for p in range(3)]
            rig.assign({tp: 0 for tp in first})
            rig.fetch()
            queued = [f.tp for f in rig.fetcher.buffer._completed]
            assert queued == first and all(a is b for a, b in zip(queued, first))
            assert rig.drain() == {T(p): [(0, b"t-%d-0" % p), (1, b"t-%d-1" % p)]
                                   for p in range(3)}
            second = [T(2), T(0)]                   # new objects, another assignment
            rig.assign({second[0]: 1, second[1]: 0})
            rig.fetch()
            queued = [f.tp for f in rig.fetcher.buffer._completed]
            assert sorted(queued) == sorted(second)
            assert all(any(q is s for s in second) for q in queued)
            assert rig.drain() == {T(0): [(0, b"t-0-0"), (1, b"t-0-1")], T(2): [(1, b"t-2-1")]}
        finally:
            rig.close()
        assert cl.errors == []
