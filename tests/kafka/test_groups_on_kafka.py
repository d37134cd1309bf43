"""Consumer groups with the classic protocol (JoinGroup/SyncGroup) on real Apache Kafka 4.2:
the four client-side assignors, cooperative rebalancing, static membership, the
max.poll.interval.ms guard, and a group shared with confluent-kafka (librdkafka) members.

The broker's own view of each member's assignment (DescribeGroups through confluent-kafka's
AdminClient) is the reference the members' ``assignment()`` is compared with; range and
roundrobin assignments are also computed here from the members' ids by the assignors' rules."""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import pytest

from pyconsumer import ConsumerRecord, KafkaConsumer, TopicPartition
from pyconsumer.errors import CommitFailedError
from pyconsumer.structs import ConsumerGroupMetadata
from pyconsumer.testing import KafkaCluster, TestRecord, produce, sample_records
from tests.integration.runners import (  # noqa: F401 - the fixture applies to this module
    Runner,
    close_what_a_failed_test_left,
    tps,
    wait_for,
)
from tests.listeners import Recorder

CLASSIC: dict[str, Any] = {
    "auto_offset_reset": "earliest", "group_protocol": "classic", "session_timeout_ms": 6000,
    "heartbeat_interval_ms": 500, "enable_auto_commit": False,
}
Expected = dict[tuple[TopicPartition, int], TestRecord]
#: for every topic that gets sample_records(): their timestamps are of November 2023, older than
#: the broker's time retention (7 days), so a retention check (30 s after the broker started,
#: then every 5 minutes) that comes mid-test deletes them and moves the log start offset past
#: them (seen: a new topic's 'earliest' reset answered 10, its end)
KEEP: dict[str, str] = {"retention.ms": "-1"}


# ---------------------------------------------------------------------------- helpers

class Member(Runner):
    """A Runner that keeps every record whole and, after each poll, the member's group
    metadata (read on the polling thread: the consumer refuses a second thread)."""

    def __init__(self, consumer: KafkaConsumer, commit: bool = True) -> None:
        self.full: list[ConsumerRecord] = []
        self.metadata = ConsumerGroupMetadata("")
        super().__init__(consumer, commit)

    def after_poll(self, got: dict[TopicPartition, list[ConsumerRecord]]) -> None:
        for recs in got.values():
            self.full += recs
        self.metadata = self.consumer.group_metadata()


class CommitOnRevoke(Recorder):
    """Records the listener calls and commits the consumed positions before partitions are
    revoked (the application's part of "no record read twice")."""

    def __init__(self) -> None:
        super().__init__()
        self.consumer: KafkaConsumer | None = None

    def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        assert self.consumer is not None
        self.consumer.commit()
        super().on_partitions_revoked(partitions)


def join(cluster: KafkaCluster, group: str, topics: Sequence[str], **extra: Any
         ) -> tuple[Member, CommitOnRevoke]:
    listener = CommitOnRevoke()
    consumer = KafkaConsumer(**{**CLASSIC, **extra}, bootstrap_servers=cluster.bootstrap_servers,
                             group_id=group)
    listener.consumer = consumer
    consumer.subscribe(list(topics), listener=listener)
    return Member(consumer), listener


def expected_records(topic: str, records: Sequence[TestRecord],
                     delivered: Sequence[tuple[int, int]]) -> Expected:
    return {(TopicPartition(topic, p), o): r for r, (p, o) in zip(records, delivered, strict=True)}


def assert_exactly_once(members: Iterable[Member], expected: Expected) -> None:
    """Every expected record was read once by exactly one member, whole (key, value, headers,
    CreateTime timestamp), and each member read each partition in offset order."""
    seen: list[tuple[TopicPartition, int]] = []
    for m in members:
        per_partition: dict[TopicPartition, list[int]] = {}
        for rec in m.full:
            tp = TopicPartition(rec.topic, rec.partition)
            seen.append((tp, rec.offset))
            per_partition.setdefault(tp, []).append(rec.offset)
            want = expected[(tp, rec.offset)]
            assert (rec.key, rec.value, rec.headers, rec.timestamp, rec.timestamp_type) == (
                want.key, want.value, want.headers or [], want.timestamp_ms, 0), (tp, rec.offset)
        for tp, offsets in per_partition.items():
            assert offsets == sorted(offsets), tp
    assert sorted(seen) == sorted(expected)          # none lost, none twice


_admins: dict[int, Any] = {}


def admin(cluster: KafkaCluster) -> Any:
    """One confluent-kafka AdminClient per cluster for the whole run."""
    if id(cluster) not in _admins:
        _admins[id(cluster)] = cluster.admin()
    return _admins[id(cluster)]


@pytest.fixture(autouse=True, scope="module")
def _drop_admins() -> Iterator[None]:
    """The AdminClients go before the session broker does (no reconnect noise at its end)."""
    yield
    _admins.clear()


def broker_view(cluster: KafkaCluster, group: str) -> dict[str, set[TopicPartition]]:
    """member id -> the partitions the group coordinator holds as that member's assignment;
    while the group rebalances (members then still show the last generation's partitions) a
    placeholder that matches no member."""
    from confluent_kafka import ConsumerGroupState
    desc = admin(cluster).describe_consumer_groups([group], request_timeout=20)[group].result()
    if desc.state not in (ConsumerGroupState.STABLE, ConsumerGroupState.EMPTY):
        return {f"(group {desc.state.name})": set()}
    return {m.member_id: {TopicPartition(tp.topic, tp.partition) for tp in m.assignment.topic_partitions}
            for m in desc.members}


def settled(cluster: KafkaCluster, group: str, members: Sequence[Member],
            everything: set[TopicPartition]) -> bool:
    """The group is stable with exactly ``members``, each holding what the broker says it
    holds, together every partition."""
    ids = [m.metadata.member_id for m in members]
    if not all(ids) or len({m.metadata.generation_id for m in members}) != 1:
        return False
    view = broker_view(cluster, group)
    return set(view) == set(ids) and all(view[m.metadata.member_id] == m.assignment for m in members) \
        and set().union(*view.values()) == everything


def range_assignment(topics: Mapping[str, int], members: Sequence[str]) -> dict[str, set[TopicPartition]]:
    """Java's RangeAssignor: per topic, members sorted by id, contiguous ranges, the first
    ``n % len(members)`` one partition longer."""
    out: dict[str, set[TopicPartition]] = {m: set() for m in members}
    order = sorted(members)
    for topic, n in topics.items():
        per, extra = divmod(n, len(order))
        start = 0
        for i, m in enumerate(order):
            size = per + (1 if i < extra else 0)
            out[m] |= {TopicPartition(topic, p) for p in range(start, start + size)}
            start += size
    return out


def roundrobin_assignment(topics: Mapping[str, int], members: Sequence[str]) -> dict[str, set[TopicPartition]]:
    """Java's RoundRobinAssignor: every partition sorted by (topic, partition), dealt to the
    members sorted by id in turn."""
    out: dict[str, set[TopicPartition]] = {m: set() for m in members}
    order = sorted(members)
    every = sorted((t, p) for t, n in topics.items() for p in range(n))
    for i, (t, p) in enumerate(every):
        out[order[i % len(order)]].add(TopicPartition(t, p))
    return out


def by_member(members: Sequence[Member]) -> dict[str, set[TopicPartition]]:
    return {m.metadata.member_id: m.assignment for m in members}


# ---------------------------------------------------------------------------- tests

@pytest.mark.parametrize("assignor", ["range", "roundrobin", "sticky", "cooperative-sticky"])
def test_assignor_three_members_then_two(kafka: KafkaCluster, make_kafka_topic: Callable[..., str],
                                         assignor: str) -> None:
    """Three members over two topics get the assignor's exact assignment (the broker holds the
    same); when one leaves the two others get the exact reassignment; eager assignors revoke
    everything at each rebalance, cooperative-sticky only what moves; with commits after each
    poll and on revoke, every record is read exactly once across the members."""
    a, b = make_kafka_topic(3, config=KEEP), make_kafka_topic(2, config=KEEP)
    topics = {a: 3, b: 2}
    everything = tps(a, 3) | tps(b, 2)
    recs_a, recs_b = sample_records(90, partitions=3), sample_records(60, partitions=2, seed=1)
    expected = expected_records(a, recs_a, produce(kafka.bootstrap_servers, a, recs_a))
    expected |= expected_records(b, recs_b, produce(kafka.bootstrap_servers, b, recs_b))
    group = f"g-{assignor}-{a}"
    strategy = {"partition_assignment_strategy": [assignor]}
    cooperative = assignor == "cooperative-sticky"

    m1, l1 = join(kafka, group, [a, b], **strategy)
    wait_for(lambda: settled(kafka, group, [m1], everything))
    history: list[dict[str, set[TopicPartition]]] = [by_member([m1])]
    m2, l2 = join(kafka, group, [a, b], **strategy)
    wait_for(lambda: settled(kafka, group, [m1, m2], everything))
    history.append(by_member([m1, m2]))
    m3, l3 = join(kafka, group, [a, b], **strategy)
    wait_for(lambda: settled(kafka, group, [m1, m2, m3], everything))
    three = by_member([m1, m2, m3])
    history.append(three)
    ids = [m.metadata.member_id for m in (m1, m2, m3)]
    if assignor == "range":
        assert three == range_assignment(topics, ids)
    elif assignor == "roundrobin":
        assert three == roundrobin_assignment(topics, ids)
    else:
        # sticky: balanced, and a newcomer only takes partitions: none moves between the others
        assert sorted(map(len, three.values())) == [1, 2, 2]
        assert three[ids[0]] <= history[1][ids[0]] and three[ids[1]] <= history[1][ids[1]]
        assert sorted(map(len, history[1].values())) == [2, 3]

    m3.stop()
    m3.consumer.close()                               # a LeaveGroup: the others rebalance at once
    wait_for(lambda: settled(kafka, group, [m1, m2], everything))
    two = by_member([m1, m2])
    history.append(two)
    if assignor == "range":
        assert two == range_assignment(topics, ids[:2])
    elif assignor == "roundrobin":
        assert two == roundrobin_assignment(topics, ids[:2])
    else:
        # sticky: the survivors keep all they had and share the leaver's partition
        assert two[ids[0]] >= three[ids[0]] and two[ids[1]] >= three[ids[1]]
        assert sorted(map(len, two.values())) == [2, 3]

    # the listeners: what each member was told at each rebalance
    for listener, member_id, first in ((l1, ids[0], 0), (l2, ids[1], 1)):
        steps = [h.get(member_id, set()) for h in history[first:]]
        revoked = [p for kind, p in listener.calls if kind == "revoked"]
        assigned = [p for kind, p in listener.calls if kind == "assigned"]
        if cooperative:
            # only what moved away is revoked (never a partition that stays), only what is
            # new is assigned
            assert revoked == [old - new for old, new in zip(steps, steps[1:]) if old - new]
            assert [p for p in assigned if p] == [new - old for old, new in
                                                  zip([set[TopicPartition]()] + steps, steps) if new - old]
        else:
            assert revoked == steps[:-1]
            assert assigned == steps
    assert "lost" not in {kind for kind, _ in l1.calls + l2.calls + l3.calls}

    more_a = sample_records(30, partitions=3, seed=2)
    expected |= expected_records(a, more_a, produce(kafka.bootstrap_servers, a, more_a))
    wait_for(lambda: set(m1.records + m2.records + m3.records) == set(expected))
    m1.stop()
    m2.stop()
    assert_exactly_once([m1, m2, m3], expected)
    m1.consumer.close()
    m2.consumer.close()


def test_cooperative_join_revokes_only_what_moves(kafka: KafkaCluster,
                                                  make_kafka_topic: Callable[..., str]) -> None:
    """cooperative-sticky: a member joining a group of two makes each old member revoke only
    the partitions that move to it (exactly those), never one that stays; the newcomer is
    assigned exactly them, and nothing is lost."""
    topic = make_kafka_topic(6)
    group = f"g-coop-{topic}"
    everything = tps(topic, 6)
    coop = {"partition_assignment_strategy": ["cooperative-sticky"]}
    m1, l1 = join(kafka, group, [topic], **coop)
    m2, l2 = join(kafka, group, [topic], **coop)
    wait_for(lambda: settled(kafka, group, [m1, m2], everything))
    before = by_member([m1, m2])
    calls1, calls2 = len(l1.calls), len(l2.calls)
    m3, l3 = join(kafka, group, [topic], **coop)
    wait_for(lambda: settled(kafka, group, [m1, m2, m3], everything))
    after = by_member([m1, m2, m3])
    for m, listener, calls in ((m1, l1, calls1), (m2, l2, calls2)):
        mine = m.metadata.member_id
        assert after[mine] <= before[mine] and len(after[mine]) == 2
        revoked = [p for kind, p in listener.calls[calls:] if kind == "revoked"]
        assert revoked == [before[mine] - after[mine]]
        assert [p for kind, p in listener.calls[calls:] if kind == "assigned" and p] == []
        assert "lost" not in {kind for kind, _ in listener.calls}
    # first round: nothing (every partition still has its owner, as in Java the listener is
    # told so); the follow-up round hands over what the others revoked
    assert l3.calls == [("assigned", set()), ("assigned", after[m3.metadata.member_id])]
    for m in (m1, m2, m3):
        m.stop()
        m.consumer.close()


def test_static_member_returns_within_the_session(kafka: KafkaCluster,
                                                  make_kafka_topic: Callable[..., str]) -> None:
    """A static member (group.instance.id) that closes sends no LeaveGroup; a new consumer
    with the same instance id back within session.timeout.ms gets exactly its partitions, in
    the same generation, and the other member sees no rebalance."""
    topic = make_kafka_topic(4)
    group = f"g-static-{topic}"
    everything = tps(topic, 4)
    static = {"session_timeout_ms": 20000, "partition_assignment_strategy": ["range"]}
    m1, l1 = join(kafka, group, [topic], group_instance_id="host-1", **static)
    wait_for(lambda: settled(kafka, group, [m1], everything))
    m2, l2 = join(kafka, group, [topic], group_instance_id="host-2", **static)
    wait_for(lambda: settled(kafka, group, [m1, m2], everything))
    generation = m1.metadata.generation_id
    assert m2.metadata.generation_id == generation
    calls2 = list(l2.calls)
    mine = m1.assignment
    old_id = m1.metadata.member_id
    m1.stop()
    m1.consumer.close()                                  # no LeaveGroup: the member stays
    assert set(broker_view(kafka, group)) == {old_id, m2.metadata.member_id}
    back, lb = join(kafka, group, [topic], group_instance_id="host-1", **static)
    wait_for(lambda: back.assignment == mine and back.metadata.generation_id > 0)
    assert back.metadata.generation_id == generation     # no rebalance
    assert back.metadata.member_id != old_id             # the broker replaced the member id
    wait_for(lambda: settled(kafka, group, [back, m2], everything))
    assert lb.calls == [("assigned", mine)]
    assert l2.calls == calls2 and m2.assignment == everything - mine
    assert m2.metadata.generation_id == generation
    for m in (back, m2):
        m.stop()
        m.consumer.close()


def test_max_poll_interval_exceeded_loses_the_partitions(kafka: KafkaCluster,
                                                         make_kafka_topic: Callable[..., str]) -> None:
    """A member that does not poll within max.poll.interval.ms leaves the group (the broker
    then has no member); committing fails with CommitFailedError naming the group and the
    cause; the next poll hands the partitions back as lost and rejoins."""
    topic = make_kafka_topic(2)
    group = f"g-mpi-{topic}"
    listener = Recorder()
    with KafkaConsumer(**CLASSIC, bootstrap_servers=kafka.bootstrap_servers, group_id=group,
                       max_poll_interval_ms=1500) as c:
        c.subscribe([topic], listener=listener)
        wait_for(lambda: c.poll(timeout_ms=100) is not None and c.assignment() == tps(topic, 2))
        member = c.group_metadata().member_id
        assert broker_view(kafka, group) == {member: tps(topic, 2)}
        wait_for(lambda: broker_view(kafka, group) == {})          # the heartbeat thread left
        with pytest.raises(CommitFailedError, match=f"group {group}.*max.poll.interval.ms"):
            c.commit({TopicPartition(topic, 0): 0})
        wait_for(lambda: c.poll(timeout_ms=100) is not None and c.assignment() == tps(topic, 2))
        assert listener.calls == [("assigned", tps(topic, 2)), ("lost", tps(topic, 2)),
                                  ("assigned", tps(topic, 2))]
        assert set(broker_view(kafka, group)) == {c.group_metadata().member_id}


class ConfluentMember:
    """A confluent-kafka (librdkafka) consumer polled in a thread: its records whole, its
    assignment and member id as it last saw them; it commits each record synchronously."""

    def __init__(self, conf: dict[str, Any], topics: list[str]) -> None:
        self.conf = conf
        self.topics = topics
        self.records: list[tuple[TopicPartition, int, bytes | None, bytes | None,
                                 list[tuple[str, bytes | None]], int, int]] = []
        self.assignment: set[TopicPartition] = set()
        self.member_id = ""
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        ck = pytest.importorskip("confluent_kafka")
        c = ck.Consumer(self.conf)
        try:
            c.subscribe(self.topics)
            while not self._stop.is_set():
                m = c.poll(0.1)
                if m is not None:
                    if m.error() is not None:
                        raise RuntimeError(str(m.error()))
                    ts_type, ts = m.timestamp()
                    self.records.append((TopicPartition(m.topic(), m.partition()), m.offset(),
                                         m.key(), m.value(), list(m.headers() or []), ts,
                                         ts_type - 1))   # librdkafka: 1 CreateTime, 2 LogAppendTime
                    c.commit(message=m, asynchronous=False)
                self.assignment = {TopicPartition(p.topic, p.partition) for p in c.assignment()}
                self.member_id = c.memberid() or ""
        except BaseException as e:  # reported by the test
            self.errors.append(e)
        finally:
            c.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        assert not self._thread.is_alive()
        assert not self.errors, self.errors


def test_mixed_classic_group_with_confluent_kafka(kafka: KafkaCluster,
                                                  make_kafka_topic: Callable[..., str]) -> None:
    """A pyconsumer member and a confluent-kafka member in one classic group, both with the
    range assignor: the partitions are split exactly as the range rule over their member ids
    says (whoever leads), the broker holds the same, and together they read every record
    exactly once, whole, across the join and the leave."""
    topic = make_kafka_topic(5, config=KEEP)
    group = f"g-mixed-{topic}"
    everything = tps(topic, 5)
    first = sample_records(50, partitions=5)
    expected = expected_records(topic, first, produce(kafka.bootstrap_servers, topic, first))
    ours, _ = join(kafka, group, [topic], partition_assignment_strategy=["range"])
    wait_for(lambda: set(ours.records) == set(expected))
    theirs = ConfluentMember({
        "bootstrap.servers": kafka.bootstrap_servers, "group.id": group,
        "group.protocol": "classic", "partition.assignment.strategy": "range",
        "session.timeout.ms": 6000, "heartbeat.interval.ms": 500,
        "enable.auto.commit": False, "auto.offset.reset": "earliest"}, [topic])
    try:
        split: list[dict[str, set[TopicPartition]]] = []

        def settled_split() -> bool:
            view = broker_view(kafka, group)
            members = {ours.metadata.member_id: ours.assignment, theirs.member_id: theirs.assignment}
            if bool(theirs.member_id) and view == members and set().union(*view.values()) == everything:
                split.append(view)          # one consistent snapshot: members and broker agree
                return True
            return False
        wait_for(settled_split)
        assert split[-1] == range_assignment({topic: 5}, list(split[-1])), sorted(split[-1])
        second = sample_records(50, partitions=5, seed=1)
        expected |= expected_records(topic, second, produce(kafka.bootstrap_servers, topic, second))
        wait_for(lambda: set(ours.records) | {(r[0], r[1]) for r in theirs.records} == set(expected))
        assert {r[0] for r in theirs.records} == theirs.assignment
    finally:
        theirs.stop()
    wait_for(lambda: ours.assignment == everything)     # confluent-kafka left: all is ours again
    third = sample_records(25, partitions=5, seed=2)
    expected |= expected_records(topic, third, produce(kafka.bootstrap_servers, topic, third))
    wait_for(lambda: set(ours.records) | {(r[0], r[1]) for r in theirs.records} == set(expected))
    ours.stop()
    ours.consumer.close()
    for tp, offset, key, value, headers, ts, ts_type in theirs.records:
        want = expected[(tp, offset)]
        assert (key, value, headers, ts, ts_type) == (want.key, want.value, want.headers or [],
                                                      want.timestamp_ms, 0)
    assert_exactly_once([ours], {k: v for k, v in expected.items()
                                 if k not in {(r[0], r[1]) for r in theirs.records}})
    assert len(theirs.records) == len({(r[0], r[1]) for r in theirs.records})
