"""The consumer group protocol (KIP-848, ``group.protocol=consumer``) on real Apache Kafka 4.2:
the broker's uniform and range assignors, a regular expression evaluated by the broker,
an invalid one, fencing, static members, and a group shared with confluent-kafka.

The session broker's KIP-848 timings are lowered (heartbeat 1 s, session 6 s). The broker's
view of each member (ConsumerGroupDescribe through confluent-kafka's AdminClient: current and
target assignment) is the reference the members' ``assignment()`` is compared with."""
from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from pyconsumer import ConsumerRecord, KafkaConsumer, TopicPartition
from pyconsumer.consumer.group.consumer_protocol import ConsumerProtocolMembership
from pyconsumer.errors import InvalidRegularExpressionError, KafkaError
from pyconsumer.net.connection import Response
from pyconsumer.net.future import Future
from pyconsumer.protocol import ApiKey
from pyconsumer.testing import FaultProxy, KafkaCluster, produce, sample_records
from tests.integration.runners import (  # noqa: F401 - the fixture applies to this module
    close_what_a_failed_test_left,
    tps,
    wait_for,
)
from tests.kafka.test_groups_on_kafka import (  # noqa: F401 - _drop_admins applies here too
    KEEP,
    CommitOnRevoke,
    ConfluentMember,
    Expected,
    Member,
    _drop_admins,
    admin,
    assert_exactly_once,
    expected_records,
)

CONSUMER: dict[str, Any] = {"auto_offset_reset": "earliest", "group_protocol": "consumer",
                            "enable_auto_commit": False}
#: the longest group.consumer.session.timeout.ms a test waits out (Kafka's default is 45 s)
MAX_SESSION_S = 15.0


def session_s(kafka: KafkaCluster) -> float:
    """The brokers' KIP-848 session timeout, s (6 on the clusters the tests start); an external
    cluster's own, skipping where it is too long to wait out."""
    found = max(int(kafka.broker_settings(n)["group.consumer.session.timeout.ms"]) for n in kafka.node_ids()) / 1000
    if found > MAX_SESSION_S:
        pytest.skip(f"waiting out a member's session needs group.consumer.session.timeout.ms <= "
                    f"{MAX_SESSION_S * 1000:.0f} as on the Kafka the tests start; the one at "
                    f"{kafka.bootstrap_servers} has {found * 1000:.0f}")
    return found


def member(bootstrap: str, group: str, topics: Sequence[str] = (), pattern: str | None = None,
           **extra: Any) -> tuple[Member, CommitOnRevoke]:
    listener = CommitOnRevoke()
    consumer = KafkaConsumer(**{**CONSUMER, **extra}, bootstrap_servers=bootstrap, group_id=group)
    listener.consumer = consumer
    consumer.subscribe(list(topics), pattern=pattern, listener=listener)
    return Member(consumer), listener


def view(cluster: KafkaCluster, group: str) -> dict[str, tuple[set[TopicPartition], set[TopicPartition]]]:
    """member id -> (current assignment, target assignment) as the group coordinator has them."""
    desc = admin(cluster).describe_consumer_groups([group], request_timeout=20)[group].result()

    def parts(a: Any) -> set[TopicPartition]:
        return set() if a is None else {TopicPartition(tp.topic, tp.partition) for tp in a.topic_partitions}
    return {m.member_id: (parts(m.assignment), parts(m.target_assignment)) for m in desc.members}


def settled(cluster: KafkaCluster, group: str, members: Sequence[Member],
            everything: set[TopicPartition]) -> bool:
    """Every member reconciled its target: the broker's current and target assignments and
    the member's own agree, and together they cover ``everything``."""
    ids = [m.metadata.member_id for m in members]
    if not all(ids):
        return False
    v = view(cluster, group)
    return set(v) == set(ids) and all(v[m.metadata.member_id] == (m.assignment, m.assignment)
                                      for m in members) \
        and set().union(*(m.assignment for m in members)) == everything


def joined(calls: list[tuple[str, set[TopicPartition]]]) -> list[tuple[str, set[TopicPartition]]]:
    """The listener calls without the empty assignment a new member's first reconciliation
    may report (as Java, the listener hears of it): the broker answers a join before its
    metadata names a topic just created, or before it resolved a regex."""
    return calls[1:] if calls[:1] == [("assigned", set())] else calls


def joined_whole(calls: list[tuple[str, set[TopicPartition]]]) -> list[tuple[str, set[TopicPartition]]]:
    """As :func:`joined`, for a member subscribed to topics that all exist before it joins:
    the leading "assigned" calls as one. The broker's group coordinator may learn of the
    topics just created one at a time (seen on a broker loaded by a full run), so the first
    assignment can come in parts: one topic's partitions, then the other's."""
    lead = 0
    while lead < len(calls) and calls[lead][0] == "assigned":
        lead += 1
    if lead < 2:
        return joined(calls)
    return [("assigned", set().union(*(parts for _, parts in calls[:lead])))] + calls[lead:]


def numbers(parts: set[TopicPartition], topic: str) -> list[int]:
    return sorted(tp.partition for tp in parts if tp.topic == topic)


@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_server_assignor_two_members(kafka: KafkaCluster, make_kafka_topic: Callable[..., str],
                                     assignor: str) -> None:
    """group.remote.assignor picks the broker's assignor. Alone, the member gets everything;
    with a second member: uniform balances the partitions (3 and 3 of 6) and moves only what
    the newcomer takes; range gives each member one contiguous half of each topic, the same
    partition numbers in both (co-partitioned). The first member revokes exactly what moved,
    the second is assigned exactly that; every record is read once."""
    a, b = make_kafka_topic(4, config=KEEP), make_kafka_topic(2)
    everything = tps(a, 4) | tps(b, 2)
    recs = sample_records(80, partitions=4)
    expected = expected_records(a, recs, produce(kafka.bootstrap_servers, a, recs))
    group = f"g-{assignor}-{a}"
    m1, l1 = member(kafka.bootstrap_servers, group, [a, b], group_remote_assignor=assignor)
    wait_for(lambda: settled(kafka, group, [m1], everything))
    assert joined_whole(l1.calls) == [("assigned", everything)]
    m2, l2 = member(kafka.bootstrap_servers, group, [a, b], group_remote_assignor=assignor)
    wait_for(lambda: settled(kafka, group, [m1, m2], everything))
    one, two = m1.assignment, m2.assignment
    if assignor == "uniform":
        assert len(one) == len(two) == 3
    else:
        for owned in (one, two):
            assert numbers(owned, a) in ([0, 1], [2, 3])
            assert numbers(owned, b) == [numbers(owned, a)[0] // 2]
    # as Java, a reconciliation ends with on_partitions_assigned, here with nothing added
    assert joined_whole(l1.calls) == [("assigned", everything), ("revoked", two), ("assigned", set())]
    # the newcomer's first assignment is empty (its partitions are still the first member's),
    # the next one brings them once revoked
    assert l2.calls == [("assigned", set()), ("assigned", two)]
    desc = admin(kafka).describe_consumer_groups([group])[group].result()
    assert desc.partition_assignor == assignor
    more = sample_records(40, partitions=4, seed=1)
    expected |= expected_records(a, more, produce(kafka.bootstrap_servers, a, more))
    wait_for(lambda: set(m1.records + m2.records) == set(expected))
    for m in (m1, m2):
        m.stop()
    assert_exactly_once([m1, m2], expected)
    for m in (m1, m2):
        m.consumer.close()


def test_regex_evaluated_by_the_broker_picks_up_a_new_topic(
        kafka: KafkaCluster, make_kafka_topic: Callable[..., str]) -> None:
    """subscribe(pattern=...) sends the expression to the broker (RE2/J, whole-name match):
    the member gets the matching topic's partitions and not the others; a matching topic
    created later is assigned once the broker re-resolves the expression (at most every
    10 s), and its records are read."""
    first = make_kafka_topic(2)
    prefix = first.rsplit("-", 1)[0]
    pattern = f"{prefix}-rx.*"
    a = make_kafka_topic(2, name=f"{prefix}-rx-a")
    group = f"g-rx-{first}"
    m, listener = member(kafka.bootstrap_servers, group, pattern=pattern)
    wait_for(lambda: settled(kafka, group, [m], tps(a, 2)))
    b = make_kafka_topic(3, name=f"{prefix}-rx-b", config=KEEP)
    recs = sample_records(30, partitions=3)
    expected = expected_records(b, recs, produce(kafka.bootstrap_servers, b, recs))
    wait_for(lambda: settled(kafka, group, [m], tps(a, 2) | tps(b, 3)), timeout=45)
    wait_for(lambda: set(m.records) == set(expected), timeout=60)
    m.stop()
    assert joined(listener.calls) == [("assigned", tps(a, 2)), ("assigned", tps(b, 3))]
    assert_exactly_once([m], expected)
    assert m.consumer.subscription() == {a, b}
    m.consumer.close()


def test_invalid_regex_is_the_brokers_error_naming_the_pattern(kafka: KafkaCluster) -> None:
    """A lookahead is valid Python but not RE2/J: the broker answers INVALID_REGULAR_EXPRESSION
    (128), raised from poll() (fatal: from every poll), naming the group and the pattern."""
    pattern = "(?=x)t.*"
    with KafkaConsumer(**CONSUMER, bootstrap_servers=kafka.bootstrap_servers,
                       group_id="g-bad-regex") as c:
        c.subscribe(pattern=pattern)
        with pytest.raises(InvalidRegularExpressionError) as info:
            wait_for(lambda: c.poll(timeout_ms=100) is None)
        assert info.value.errno == 128
        assert "g-bad-regex" in str(info.value) and pattern in str(info.value)
        with pytest.raises(InvalidRegularExpressionError):
            c.poll(timeout_ms=0)
        assert c.assignment() == set()


def test_static_member_keeps_its_assignment_across_a_restart(
        kafka: KafkaCluster, make_kafka_topic: Callable[..., str]) -> None:
    """A static member closes with epoch -2: the broker keeps it and its assignment for the
    session; a new consumer with the same group.instance.id (and a new member id) gets exactly
    those partitions, and the other member is not disturbed."""
    topic = make_kafka_topic(4)
    group = f"g-static848-{topic}"
    everything = tps(topic, 4)
    m1, l1 = member(kafka.bootstrap_servers, group, [topic], group_instance_id="host-1")
    m2, l2 = member(kafka.bootstrap_servers, group, [topic], group_instance_id="host-2")
    wait_for(lambda: settled(kafka, group, [m1, m2], everything) and len(m2.assignment) == 2)
    mine, old_id = set(m2.assignment), m2.metadata.member_id
    calls1 = list(l1.calls)
    epoch1 = m1.metadata.generation_id
    m2.stop()
    m2.consumer.close()
    assert view(kafka, group)[old_id][0] == mine            # still the member's, epoch -2
    back, lb = member(kafka.bootstrap_servers, group, [topic], group_instance_id="host-2")
    wait_for(lambda: settled(kafka, group, [m1, back], everything))
    assert back.assignment == mine and back.metadata.member_id != old_id
    assert lb.calls == [("assigned", mine)]
    assert l1.calls == calls1 and m1.assignment == everything - mine
    assert m1.metadata.generation_id == epoch1
    for m in (m1, back):
        m.stop()
        m.consumer.close()


def test_duplicate_static_instance_id_is_refused(kafka: KafkaCluster,
                                                 make_kafka_topic: Callable[..., str]) -> None:
    """A second consumer with the group.instance.id of a live member is refused by the broker
    (UNRELEASED_INSTANCE_ID, fatal: raised from poll() naming the group and the instance id);
    the live member keeps its partitions."""
    topic = make_kafka_topic(2)
    group = f"g-dup-{topic}"
    m1, l1 = member(kafka.bootstrap_servers, group, [topic], group_instance_id="twin")
    wait_for(lambda: settled(kafka, group, [m1], tps(topic, 2)))
    with KafkaConsumer(topic, **CONSUMER, bootstrap_servers=kafka.bootstrap_servers,
                       group_id=group, group_instance_id="twin") as twin:
        with pytest.raises(KafkaError) as info:
            wait_for(lambda: twin.poll(timeout_ms=100) is None)
        assert type(info.value).__name__ == "UnreleasedInstanceIdError"
        assert group in str(info.value) and "twin" in str(info.value)
        assert twin.assignment() == set()
    assert settled(kafka, group, [m1], tps(topic, 2))
    assert joined(l1.calls) == [("assigned", tps(topic, 2))]
    m1.stop()
    m1.consumer.close()


def test_member_expired_by_the_broker_is_fenced_and_rejoins(
        kafka: KafkaCluster, make_kafka_topic: Callable[..., str]) -> None:
    """A member whose heartbeats stop reaching the broker for longer than the session (its
    connection stalled) is removed: the other member gets every partition. When its
    connection recovers, its heartbeat is refused (fenced): its partitions are lost
    (on_partitions_lost, no revoke), it rejoins with the same member id, and the group
    splits again."""
    nodes = kafka.node_ids()
    if len(nodes) > 1:       # the proxy points every node's address at one broker
        pytest.skip(f"stalling a member through one proxy needs a one-node Kafka as the tests start; "
                    f"the one at {kafka.bootstrap_servers} has nodes {nodes}")
    session = session_s(kafka)
    topic = make_kafka_topic(4)
    group = f"g-fence-{topic}"
    everything = tps(topic, 4)
    with FaultProxy(kafka.bootstrap_servers, lifetime=120) as proxy:
        victim, lv = member(proxy.bootstrap, group, [topic])
        wait_for(lambda: settled(kafka, group, [victim], everything))
        other, lo = member(kafka.bootstrap_servers, group, [topic])
        wait_for(lambda: settled(kafka, group, [victim, other], everything))
        held, victim_id = set(victim.assignment), victim.metadata.member_id
        calls = len(lv.calls)
        proxy.stall(session + 3)
        wait_for(lambda: set(view(kafka, group)) == {other.metadata.member_id}
                 and other.assignment == everything, timeout=session + 20)
        wait_for(lambda: "lost" in {kind for kind, _ in lv.calls}, timeout=30)
        assert lv.calls[calls] == ("lost", held)
        assert "revoked" not in {kind for kind, _ in lv.calls[calls:]}
        wait_for(lambda: settled(kafka, group, [victim, other], everything)
                 and len(victim.assignment) == 2, timeout=30)
        assert victim.metadata.member_id == victim_id            # KIP-1082: the client's id
        for m in (victim, other):
            m.stop()
            m.consumer.close()


def test_mixed_group_with_confluent_kafka(kafka: KafkaCluster,
                                          make_kafka_topic: Callable[..., str]) -> None:
    """A pyconsumer member and a confluent-kafka member with group.protocol=consumer share
    the partitions exactly as the broker assigned them (3 and 3), and together read every
    record once, whole."""
    topic = make_kafka_topic(6, config=KEEP)
    group = f"g-mixed848-{topic}"
    everything = tps(topic, 6)
    first = sample_records(60, partitions=6)
    expected = expected_records(topic, first, produce(kafka.bootstrap_servers, topic, first))
    ours, _ = member(kafka.bootstrap_servers, group, [topic])
    wait_for(lambda: set(ours.records) == set(expected))
    theirs = ConfluentMember({
        "bootstrap.servers": kafka.bootstrap_servers, "group.id": group,
        "group.protocol": "consumer", "enable.auto.commit": False,
        "auto.offset.reset": "earliest"}, [topic])
    try:
        def split() -> bool:
            v = view(kafka, group)
            return (bool(theirs.member_id) and len(ours.assignment) == 3
                    and v == {ours.metadata.member_id: (ours.assignment, ours.assignment),
                              theirs.member_id: (theirs.assignment, theirs.assignment)}
                    and ours.assignment | theirs.assignment == everything)
        wait_for(split)
        second = sample_records(60, partitions=6, seed=1)
        expected |= expected_records(topic, second, produce(kafka.bootstrap_servers, topic, second))
        wait_for(lambda: set(ours.records) | {(r[0], r[1]) for r in theirs.records} == set(expected))
        assert {r[0] for r in theirs.records} == theirs.assignment
    finally:
        theirs.stop()
    wait_for(lambda: ours.assignment == everything)
    ours.stop()
    ours.consumer.close()
    theirs_keys = {(r[0], r[1]) for r in theirs.records}
    assert len(theirs.records) == len(theirs_keys)
    for tp, offset, key, value, headers, ts, ts_type in theirs.records:
        want = expected[(tp, offset)]
        assert (key, value, headers, ts, ts_type) == (want.key, want.value, want.headers or [],
                                                      want.timestamp_ms, 0)
    assert_exactly_once([ours], {k: v for k, v in expected.items() if k not in theirs_keys})


# ---------------------------------------------------------------------------- leave and fencing

class Tracked(Member):
    """A Member that also remembers the records of each poll whose commit failed: the only
    ones another member (or this one, after losing its partitions) may read again."""

    def __init__(self, consumer: KafkaConsumer) -> None:
        self.uncommitted: set[tuple[TopicPartition, int]] = set()
        self._failures_seen = 0
        super().__init__(consumer)

    def after_poll(self, got: dict[TopicPartition, list[ConsumerRecord]]) -> None:
        if len(self.commit_failures) != self._failures_seen:
            self._failures_seen = len(self.commit_failures)
            self.uncommitted |= {(tp, r.offset) for tp, recs in got.items() for r in recs}
        super().after_poll(got)


def tracked(bootstrap: str, group: str, topics: Sequence[str],
            setup: Callable[[KafkaConsumer], None] | None = None) -> tuple[Tracked, CommitOnRevoke]:
    """A committing member (after each poll, and on revoke through its listener)."""
    listener = CommitOnRevoke()
    consumer = KafkaConsumer(**CONSUMER, bootstrap_servers=bootstrap, group_id=group)
    listener.consumer = consumer
    consumer.subscribe(list(topics), listener=listener)
    if setup is not None:
        setup(consumer)
    return Tracked(consumer), listener


def read_twice(members: Sequence[Tracked], expected: Expected) -> set[tuple[TopicPartition, int]]:
    """Checks every record was read, whole, each member's partitions in offset order, none
    more than twice; returns those read twice."""
    counts: Counter[tuple[TopicPartition, int]] = Counter()
    for m in members:
        per_partition: dict[TopicPartition, list[int]] = {}
        for rec in m.full:
            tp = TopicPartition(rec.topic, rec.partition)
            counts[(tp, rec.offset)] += 1
            per_partition.setdefault(tp, []).append(rec.offset)
            want = expected[(tp, rec.offset)]
            assert (rec.key, rec.value, rec.headers, rec.timestamp, rec.timestamp_type) == (
                want.key, want.value, want.headers or [], want.timestamp_ms, 0), (tp, rec.offset)
        for tp, offsets in per_partition.items():
            assert offsets == sorted(set(offsets)), tp       # in order, none twice by one member
    assert set(counts) == set(expected)                       # none lost, none unknown
    assert max(counts.values()) <= 2
    return {k for k, n in counts.items() if n == 2}


def test_exactly_once_when_a_member_leaves(kafka: KafkaCluster,
                                           make_kafka_topic: Callable[..., str]) -> None:
    """Two members commit after each poll and on revoke. One closes while records are being
    written and read: it revokes exactly its partitions (committing) and leaves with epoch -1;
    the other is assigned exactly those and goes on from the committed offsets (the record
    after the last one read on each); every record is read, whole, in order, and one is read
    twice only if it was in a poll whose commit failed (with commit-on-revoke: none)."""
    topic = make_kafka_topic(6, config=KEEP)
    group = f"g-leave848-{topic}"
    everything = tps(topic, 6)
    first = sample_records(60, partitions=6)
    expected = expected_records(topic, first, produce(kafka.bootstrap_servers, topic, first))
    stays, ls = tracked(kafka.bootstrap_servers, group, [topic])
    wait_for(lambda: settled(kafka, group, [stays], everything))
    leaves, ll = tracked(kafka.bootstrap_servers, group, [topic])
    wait_for(lambda: settled(kafka, group, [stays, leaves], everything)
             and len(leaves.assignment) == 3)
    theirs = set(leaves.assignment)
    written: list[Expected] = []

    def feed() -> None:                  # written while both read, and while one leaves
        for seed in range(1, 6):
            recs = sample_records(24, partitions=6, seed=seed)
            written.append(expected_records(topic, recs, produce(kafka.bootstrap_servers, topic, recs)))
    feeder = threading.Thread(target=feed, daemon=True)
    read_before = len(leaves.full)
    feeder.start()
    wait_for(lambda: len(leaves.full) > read_before)           # mid-way through the feed
    leaves.stop()
    mark = len(stays.full)        # what it reads from here on includes the leaver's partitions
    leaves.consumer.close()
    assert joined(ll.calls) == [("assigned", theirs), ("revoked", theirs)]
    wait_for(lambda: settled(kafka, group, [stays], everything))
    # it handed the newcomer's share over (as Java, a reconciliation that adds nothing still
    # ends with on_partitions_assigned), then took the leaver's back, exactly those
    assert joined(ls.calls) == [("assigned", everything), ("revoked", theirs), ("assigned", set()),
                                ("assigned", theirs)]
    feeder.join(60)
    assert not feeder.is_alive()
    for part in written:
        expected |= part
    last = sample_records(60, partitions=6, seed=9)
    expected |= expected_records(topic, last, produce(kafka.bootstrap_servers, topic, last))
    wait_for(lambda: {(TopicPartition(r.topic, r.partition), r.offset)
                      for m in (stays, leaves) for r in list(m.full)} == set(expected))
    stays.stop()
    stays.consumer.close()
    for tp in theirs:             # taken over from the committed offset: the next record
        before = [r.offset for r in leaves.full + stays.full[:mark] if r.partition == tp.partition]
        after = [r.offset for r in stays.full[mark:] if r.partition == tp.partition]
        assert after[0] == max(before) + 1, tp
    twice = read_twice([stays, leaves], expected)
    assert twice <= leaves.uncommitted | stays.uncommitted, sorted(twice)
    print(f"leave: {len(expected)} records, {len(twice)} read twice, commit failures "
          f"{len(stays.commit_failures)}/{len(leaves.commit_failures)}, bound "
          f"{len(leaves.uncommitted | stays.uncommitted)}")


class Beat:
    """One ConsumerGroupHeartbeat as sent, and its answer."""

    def __init__(self, body: dict[str, Any]) -> None:
        self.member_id: str = body["member_id"]
        self.epoch: int = body["member_epoch"]
        self.error: int | None = None
        self.answered_epoch: int | None = None

    def answer(self, fut: Future[Response]) -> None:
        if not fut.failed():
            assert fut.value is not None
            self.error = fut.value.body["error_code"]
            self.answered_epoch = fut.value.body["member_epoch"]

    def __repr__(self) -> str:
        return f"Beat({self.member_id}, {self.epoch} -> {self.error}, {self.answered_epoch})"


def log_heartbeats(consumer: KafkaConsumer, beats: list[Beat]) -> None:
    """Every ConsumerGroupHeartbeat the consumer sends, with the broker's answer, in ``beats``."""
    client = consumer._network()
    send = client.send

    def logged(node_id: int, api_key: int, body: Any, *args: Any, **kwargs: Any) -> Future[Response]:
        fut = send(node_id, api_key, body, *args, **kwargs)
        if api_key == ApiKey.CONSUMER_GROUP_HEARTBEAT:
            beat = Beat(body)
            beats.append(beat)
            fut.add_callback(beat.answer, any_thread=True)
        return fut
    setattr(client, "send", logged)  # noqa: B010 - mypy refuses assigning to a method


def set_epoch_back(consumer: KafkaConsumer, beats: list[Beat]) -> tuple[int, int]:
    """Between heartbeats (none in flight, the client lock held so no answer lands meanwhile),
    sets the member's epoch back by one and makes the next heartbeat due at once; it carries
    no owned partitions (so Kafka does not take it for a member that missed an answer).
    Returns the stale epoch and the index in ``beats`` of the next heartbeat."""
    membership = consumer._membership
    assert isinstance(membership, ConsumerProtocolMembership)
    lock = consumer._network().lock
    while True:
        lock.acquire()
        try:
            if not membership.timer.in_flight and not membership.fields.full \
                    and not membership.fields.send_owned and membership.member_epoch > 0:
                membership.member_epoch -= 1
                membership.timer.next_due = 0.0
                return membership.member_epoch, len(beats)
        finally:
            lock.release()
        time.sleep(0.01)


def test_stale_member_epoch_is_fenced_and_rejoins(kafka: KafkaCluster,
                                                  make_kafka_topic: Callable[..., str]) -> None:
    """A heartbeat with a stale member epoch (one less than the broker's, no owned
    partitions) is answered FENCED_MEMBER_EPOCH (110). As Java: the member's partitions are
    lost (on_partitions_lost with exactly them, no revoke), its next heartbeat rejoins with
    epoch 0 and the same member id. Kafka had kept the member (a refused heartbeat changes
    nothing): it answers with the member's epoch and partitions as they were, the other
    member is not disturbed. With commits after each poll no record is lost (one is read
    twice only if its poll's commit failed)."""
    topic = make_kafka_topic(4, config=KEEP)
    group = f"g-stale848-{topic}"
    everything = tps(topic, 4)
    first = sample_records(40, partitions=4)
    expected = expected_records(topic, first, produce(kafka.bootstrap_servers, topic, first))
    beats: list[Beat] = []
    victim, lv = tracked(kafka.bootstrap_servers, group, [topic],
                         setup=lambda c: log_heartbeats(c, beats))
    other, lo = tracked(kafka.bootstrap_servers, group, [topic])

    def all_read() -> bool:
        return {(TopicPartition(r.topic, r.partition), r.offset)
                for m in (victim, other) for r in list(m.full)} == set(expected)
    wait_for(lambda: settled(kafka, group, [victim, other], everything)
             and len(victim.assignment) == 2 and all_read())
    held, victim_id = set(victim.assignment), victim.metadata.member_id
    calls, other_calls = len(lv.calls), list(lo.calls)
    stale, sent = set_epoch_back(victim.consumer, beats)
    wait_for(lambda: "lost" in {kind for kind, _ in lv.calls[calls:]})
    assert lv.calls[calls] == ("lost", held)
    # the runner's view after a poll that ended after the rejoin (the one before the fence
    # had the stale epoch)
    wait_for(lambda: victim.metadata.generation_id == stale + 1
             and settled(kafka, group, [victim, other], everything))
    assert "revoked" not in {kind for kind, _ in lv.calls[calls:]}
    assert joined(lv.calls[calls + 1:]) == [("assigned", victim.assignment)]
    assert victim.metadata.member_id == victim_id                 # KIP-1082: the client's id
    fenced, rejoin = beats[sent], beats[sent + 1]
    assert (fenced.member_id, fenced.epoch, fenced.error) == (victim_id, stale, 110), beats
    assert (rejoin.member_id, rejoin.epoch, rejoin.error) == (victim_id, 0, 0), beats
    # the refused heartbeat changed nothing at the broker: the member id rejoining at epoch
    # 0 is given the broker's epoch and assignment back; the group did not rebalance
    assert rejoin.answered_epoch == stale + 1
    assert victim.assignment == held
    assert lo.calls == other_calls and other.assignment == everything - held
    more = sample_records(40, partitions=4, seed=1)
    expected |= expected_records(topic, more, produce(kafka.bootstrap_servers, topic, more))
    wait_for(all_read)
    for m in (victim, other):
        m.stop()
        m.consumer.close()
    twice = read_twice([victim, other], expected)
    assert twice <= victim.uncommitted | other.uncommitted, sorted(twice)
    print(f"fenced: {len(expected)} records, {len(twice)} read twice, commit failures "
          f"{len(victim.commit_failures)}/{len(other.commit_failures)}")
