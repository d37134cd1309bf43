"""Three-node Apache Kafka (the session ``kafka3`` cluster): a leader SIGKILLed under
consumption, the group coordinator's broker killed, a rolling restart under a committing group,
follower fetching (KIP-392) and log truncation after an unclean leader election (KIP-320).

Node 1 is the only controller: never killed, only restarted cleanly once. A SIGKILLed broker keeps its registration
(and its leaderships) until ``broker.session.timeout.ms`` (30 s on this cluster) runs out: only
then does the controller fence it and elect new leaders, and only then can it register again,
so each kill below costs about 30 s. Partitions are placed with explicit replica assignments so
the partitions a test kills are led by node 2 or 3.
"""
from __future__ import annotations

import logging
import socket
import struct
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pyconsumer import ConsumerRecord, KafkaConsumer, TopicPartition
from pyconsumer.consumer.offsets import OffsetAndTimestamp
from pyconsumer.errors import CommitFailedError, LogTruncationError, RebalanceInProgressError
from pyconsumer.net.connection import Response
from pyconsumer.net.future import Future
from pyconsumer.protocol import ApiKey
from pyconsumer.testing import KafkaCluster, TestRecord, produce, sample_records
from tests.integration.runners import wait_for
from tests.conftest import unique_topic_name

pytestmark = pytest.mark.kafka

#: (offset, key, value, headers, timestamp, timestamp type) of a record
Row = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]], int, int]
#: record timestamps: recent ones. The brokers' time-based retention (7 days, checked every
#: 5 minutes, the active segment included) deletes records stamped in 2023 (sample_records'
#: default) from under a consumer of a session cluster that has run that long.
TS0 = int(time.time() * 1000) - 60_000
FAST: dict[str, Any] = dict(fetch_max_wait_ms=100, retry_backoff_ms=50, reconnect_backoff_ms=50,
                            reconnect_backoff_max_ms=500, metadata_max_age_ms=5000,
                            auto_offset_reset="earliest")


def row(r: ConsumerRecord) -> Row:
    return (r.offset, r.key, r.value, list(r.headers), r.timestamp, r.timestamp_type)


def make_topic(kafka3: KafkaCluster, assignment: list[list[int]],
               config: dict[str, str] | None = None) -> str:
    """A topic whose partition p has replicas ``assignment[p]`` (the first one leads)."""
    from confluent_kafka.admin import NewTopic  # type: ignore[attr-defined]

    name = unique_topic_name()
    admin = kafka3.admin()           # kept: the futures fail if the handle is collected
    futures = admin.create_topics(
        [NewTopic(name, num_partitions=len(assignment), replica_assignment=assignment,
                  config=dict(config or {}))], operation_timeout=30, request_timeout=30)
    futures[name].result(timeout=30)
    kafka3.wait_for_isr(name, min(len(r) for r in assignment), timeout=60)
    wait_for(lambda: kafka3.leaders(name) == {p: r[0] for p, r in enumerate(assignment)})
    return name


def epochs(kafka3: KafkaCluster, topic: str) -> dict[int, tuple[int, int | None]]:
    """partition -> (leader, leader epoch), as a fresh pyconsumer reads the metadata."""
    with KafkaConsumer(bootstrap_servers=kafka3.bootstrap_servers) as c:
        return {p.partition: (p.leader, p.leader_epoch) for p in c.partitions_for(topic)}


def settle(read: Callable[[], Any], expected: Any, timeout: float = 30.0) -> None:
    """Wait until ``read()`` gives ``expected``; fail showing the last value read."""
    deadline = time.monotonic() + timeout
    while (value := read()) != expected:
        assert time.monotonic() < deadline, f"still {value!r}, not {expected!r}, after {timeout} s"
        time.sleep(0.1)


class Feeder:
    """An idempotent acks=all producer (confluent-kafka) writing numbered records round robin
    over ``partitions`` in a thread until stopped; keeps every acknowledged record as the
    consumer must see it. Idempotence: a retry after a leader change is not written twice,
    so the log holds exactly the acknowledged records."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, every_s: float = 0.004) -> None:
        from confluent_kafka import Producer

        self.topic = topic
        self.partitions = partitions
        self.every_s = every_s
        self.acked: dict[int, list[tuple[Any, ...]]] = defaultdict(list)
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                                   "enable.idempotence": True, "linger.ms": 5,
                                   "message.timeout.ms": 180_000})
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        seq = 0
        while not self._stop.is_set():
            key, value = b"k%d" % seq, b"v%d" % seq
            headers: list[tuple[str, bytes | None]] = [("seq", b"%d" % seq)]
            wire: list[tuple[str, str | bytes | None]] = [("seq", b"%d" % seq)]
            ts = TS0 + seq

            def done(err: Any, msg: Any, key: bytes = key, value: bytes = value,
                     headers: list[tuple[str, bytes | None]] = headers, ts: int = ts) -> None:
                if err is not None:
                    self.errors.append(str(err))
                else:
                    with self._lock:
                        self.acked[msg.partition()].append((msg.offset(), key, value, headers, ts, 0))

            try:
                self._producer.produce(self.topic, value=value, key=key, headers=wire,
                                       partition=seq % self.partitions, timestamp=ts, on_delivery=done)
            except BufferError:
                self._producer.poll(0.1)
                continue
            seq += 1
            self._producer.poll(self.every_s)

    def count(self, partition: int) -> int:
        with self._lock:
            return len(self.acked[partition])

    def stop(self) -> dict[int, list[Row]]:
        """Stop writing, wait for every acknowledgement; the acknowledged records per partition
        in offset order. A retry the broker answers DUPLICATE_SEQUENCE_NUMBER (the first try
        was written) is acknowledged without an offset (None): idempotence keeps a partition's
        log exactly its records in the order sent, so its offset is its rank, and every offset
        the broker did report must be that rank."""
        self._stop.set()
        self._thread.join(30)
        assert self._producer.flush(180) == 0
        assert self.errors == []
        out: dict[int, list[Row]] = {}
        for p, rows in self.acked.items():
            in_order = sorted(rows, key=lambda x: int(x[4]))    # by timestamp: by sequence number
            assert [o for o, *_ in in_order if o is not None] == [
                i for i, (o, *_) in enumerate(in_order) if o is not None], p
            out[p] = [(i, x[1], x[2], x[3], x[4], x[5]) for i, x in enumerate(in_order)]
        return out


class Reader:
    """Polls a consumer in a thread, keeping every record with the assignment it came under;
    with ``commit``, commits synchronously after each poll that returned records and remembers
    the records of each poll whose commit failed (the only ones another member may read again)."""

    def __init__(self, consumer: KafkaConsumer, commit: bool = False) -> None:
        self.consumer = consumer
        self.commit = commit
        self.records: list[ConsumerRecord] = []
        self.assignments: list[set[TopicPartition]] = []
        self.commits_ok = 0
        self.commit_failures: list[BaseException] = []
        self.uncommitted: set[tuple[TopicPartition, int]] = set()
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        _readers.append(self)

    def _run(self) -> None:
        c = self.consumer
        try:
            while not self._stop.is_set():
                got = c.poll(timeout_ms=100)
                polled = [r for recs in got.values() for r in recs]
                self.records += polled
                assignment = c.assignment()
                if not self.assignments or self.assignments[-1] != assignment:
                    self.assignments.append(assignment)
                if polled and self.commit:
                    try:
                        c.commit()
                        self.commits_ok += 1
                    except (CommitFailedError, RebalanceInProgressError) as e:
                        self.commit_failures.append(e)
                        self.uncommitted |= {(TopicPartition(r.topic, r.partition), r.offset)
                                             for r in polled}
        except BaseException as e:  # noqa: BLE001 - reported by stop()
            self.errors.append(e)

    def rows(self, partition: int) -> list[Row]:
        return [row(r) for r in list(self.records) if r.partition == partition]

    def count(self) -> int:
        return len(self.records)

    @property
    def assignment(self) -> set[TopicPartition]:
        return self.assignments[-1] if self.assignments else set()

    def stop(self) -> None:
        if self in _readers:
            _readers.remove(self)
        self._stop.set()
        self._thread.join(30)
        assert not self._thread.is_alive()
        assert self.errors == []


_readers: list[Reader] = []


def stop_then_close(readers: list[Reader]) -> None:
    """Stop every reader's polling before closing any consumer: a member that closes leaves
    its group, and a member still polling then would be rebalanced (its partitions revoked
    and reassigned) after the test's last look, which the assignment checks would count."""
    for rd in readers:
        rd.stop()
    for rd in readers:
        rd.consumer.close()


@pytest.fixture(autouse=True)
def _close_readers() -> Iterator[None]:
    yield
    while _readers:
        r = _readers.pop()
        r._stop.set()
        r._thread.join(30)
        r.consumer.close(timeout_ms=0)


def recent(records: list[TestRecord], start: int = 0) -> list[TestRecord]:
    """``records`` stamped TS0 + their index (see TS0)."""
    for i, r in enumerate(records):
        r.timestamp_ms = TS0 + start + i
    return records


def frozen(x: Row) -> tuple[Any, ...]:
    return (*x[:3], tuple(x[3]), *x[4:])


def total(acked: dict[int, list[Row]]) -> int:
    return sum(len(rows) for rows in acked.values())


# ------------------------------------------------------------------ 1, 2. a leader and the coordinator killed

OFFSETS_TOPIC = "__consumer_offsets"


def reorder_replicas(kafka3: KafkaCluster, topic: str, partition: int, replicas: list[int]) -> None:
    """AlterPartitionReassignments v0 (confluent-kafka has no binding for it) giving
    ``topic``-``partition`` the same replicas in a new order (the first is the preferred
    leader), sent to node 1, which forwards it to the controller."""
    from pyconsumer.protocol.primitives import Reader as WireReader, Writer

    w = Writer()
    w.int16(45)                                     # header v2: api key, version, correlation
    w.int16(0)
    w.int32(1)
    w.int16(len(b"three-nodes"))
    w.raw(b"three-nodes")
    w.unsigned_varint(0)
    w.int32(30_000)                                 # timeout_ms
    w.unsigned_varint(2)                            # one topic
    w.unsigned_varint(len(topic) + 1)
    w.raw(topic.encode())
    w.unsigned_varint(2)                            # one partition
    w.int32(partition)
    w.unsigned_varint(len(replicas) + 1)
    for r in replicas:
        w.int32(r)
    for _ in range(3):                              # partition, topic, body tagged fields
        w.unsigned_varint(0)
    frame = bytes(w.out)
    with socket.create_connection((kafka3[1].host, kafka3[1].port), timeout=30) as s:
        s.sendall(struct.pack(">i", len(frame)) + frame)
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack_from(">i", data)[0]:
            chunk = s.recv(65536)
            assert chunk, "node 1 closed the connection"
            data += chunk
    rd = WireReader(data, 4)
    assert rd.int32() == 1
    rd.unsigned_varint()                            # header tagged fields
    rd.int32()                                      # throttle
    top = rd.int16()
    assert top == 0, f"AlterPartitionReassignments: error {top}"
    n = rd.unsigned_varint() - 1
    if n > 0:
        rd.raw(n)                                   # error message
    assert rd.unsigned_varint() == 2                # one topic
    rd.raw(rd.unsigned_varint() - 1)
    assert rd.unsigned_varint() == 2                # one partition
    assert rd.int32() == partition
    code = rd.int16()
    assert code == 0, f"AlterPartitionReassignments of {topic}-{partition}: error {code}"


def offsets_leader(kafka3: KafkaCluster) -> int:
    return kafka3.leaders(OFFSETS_TOPIC).get(0, -1)


def coordinator_of(kafka3: KafkaCluster, group: str) -> int:
    admin = kafka3.admin()
    try:
        return int(admin.describe_consumer_groups([group])[group].result(timeout=10).coordinator.id)
    except Exception:  # noqa: BLE001 - no coordinator while it moves
        return -1


def move_offsets_leadership_off_node_1(kafka3: KafkaCluster, group: str) -> int:
    """The node (2 or 3) leading the one __consumer_offsets partition, hence every group's
    coordinator: if node 1 leads it, the replicas are reordered to [2, 3, 1] and a preferred
    election moves the leadership to 2."""
    from confluent_kafka import ElectionType, TopicPartition as CkTopicPartition

    # the first FindCoordinator creates __consumer_offsets
    wait_for(lambda: coordinator_of(kafka3, group) > 0 and offsets_leader(kafka3) > 0, 60)
    leader = offsets_leader(kafka3)
    if leader != 1:
        return leader
    reorder_replicas(kafka3, OFFSETS_TOPIC, 0, [2, 3, 1])
    admin = kafka3.admin()
    admin.elect_leaders(ElectionType.PREFERRED, [CkTopicPartition(OFFSETS_TOPIC, 0)]).result(timeout=60)
    settle(lambda: offsets_leader(kafka3), 2)
    return 2


GROUP: dict[str, Any] = dict(FAST, heartbeat_interval_ms=1000)


def owned_once(reader: Reader) -> set[TopicPartition]:
    """The one assignment ``reader`` had from its first non-empty one on (fails if it changed)."""
    seen = reader.assignments
    first = next(i for i, a in enumerate(seen) if a)
    assert seen[first:] == [seen[first]], seen
    return seen[first]


def committed(kafka3: KafkaCluster, group: str, topic: str, partitions: int) -> dict[int, int | None]:
    with KafkaConsumer(bootstrap_servers=kafka3.bootstrap_servers, group_id=group) as c:
        got = c.committed([TopicPartition(topic, p) for p in range(partitions)])
    return {tp.partition: (None if om is None else om.offset) for tp, om in got.items()}


def test_a_killed_broker_leading_partitions_and_the_group_coordinator_costs_no_record(
        kafka3: KafkaCluster) -> None:
    """One SIGKILL, two proofs (a kill costs the 30 s broker session either way). The victim
    (2 or 3) leads partitions 0 and 3 and the one __consumer_offsets partition (moved off
    node 1 if needed), while an idempotent acks=all producer writes, an assigned consumer reads
    all four partitions, and a group of two (classic protocol) reads them committing after each
    poll. Partitions 1 and 2 go on meanwhile; once the victim is fenced 0 and 3 move to their
    next in-sync replica (epoch 1) and the coordinator to another replica. The assigned
    consumer ends with every acknowledged record of each partition exactly once, in order; the
    group members keep their partitions (no rebalance), commit against the new coordinator
    without a failure, read every record exactly once and commit the end offsets."""
    group = unique_topic_name("g")
    victim = move_offsets_leadership_off_node_1(kafka3, group)
    other = 5 - victim
    topic = make_topic(kafka3, [[victim, other, 1], [other, victim, 1], [1, victim, other],
                                [victim, 1, other]])
    everything = {TopicPartition(topic, p) for p in range(4)}
    feeder = Feeder(kafka3.bootstrap_servers, topic, 4)
    assigned = KafkaConsumer(bootstrap_servers=kafka3.bootstrap_servers, **FAST)
    assigned.assign(sorted(everything))
    reader = Reader(assigned)
    members = [Reader(KafkaConsumer(topic, bootstrap_servers=kafka3.bootstrap_servers, group_id=group,
                                    **GROUP), commit=True) for _ in range(2)]
    wait_for(lambda: all(len(r.assignment) == 2 and r.commits_ok >= 3 for r in members)
             and all(len(reader.rows(p)) >= 20 for p in range(4)), 60)
    assert coordinator_of(kafka3, group) == victim
    kafka3.kill(victim)
    at_kill = [feeder.count(p) for p in range(4)]
    # partitions 1 and 2 are written and read while the victim is down and still registered
    wait_for(lambda: all(len(reader.rows(p)) >= at_kill[p] + 30 for p in (1, 2)), 60)
    settle(lambda: coordinator_of(kafka3, group) in (other, 1), True, 90)
    assert kafka3.leaders(topic) == {0: other, 1: other, 2: 1, 3: 1}
    since = [r.commits_ok for r in members]
    wait_for(lambda: all(r.commits_ok >= n + 3 for r, n in zip(members, since)), 60)
    kafka3.restart(victim)
    wait_for(lambda: all(feeder.count(p) >= at_kill[p] + 30 for p in (0, 3)), 60)
    acked = feeder.stop()
    settle(lambda: [len(reader.rows(p)) for p in range(4)], [len(acked[p]) for p in range(4)], 60)
    settle(lambda: [sum(len(r.rows(p)) for r in members) for p in range(4)],
           [len(acked[p]) for p in range(4)], 60)
    settle(lambda: committed(kafka3, group, topic, 4), {p: len(acked[p]) for p in range(4)})
    time.sleep(0.3)                # anything beyond the acknowledged records would show up here
    stop_then_close([reader, *members])
    for p in range(4):
        assert reader.rows(p) == acked[p], f"partition {p}"
    epochs_of = {p: [-1 if r.leader_epoch is None else r.leader_epoch
                     for r in reader.records if r.partition == p] for p in range(4)}
    for p in (0, 3):               # led by the victim at epoch 0, then by the next replica at 1
        assert epochs_of[p] == sorted(epochs_of[p]) and set(epochs_of[p]) == {0, 1}, p
    for p in (1, 2):
        assert set(epochs_of[p]) == {0}, p
    owned = [owned_once(r) for r in members]
    assert owned[0] | owned[1] == everything and not owned[0] & owned[1]
    for r, mine in zip(members, owned):
        assert r.commit_failures == []
        for p in range(4):
            assert r.rows(p) == (acked[p] if TopicPartition(topic, p) in mine else []), p


# ------------------------------------------------------------------ 3. a rolling restart


def test_a_rolling_restart_under_a_committing_group_loses_nothing(kafka3: KafkaCluster) -> None:
    """Nodes 2, 3, then 1 (the only controller: the brokers serve on while it is down) are
    restarted (SIGTERM, a controlled shutdown, then start; the next one only when every replica
    is back in sync) while a group of two commits after each poll and an acks=all producer
    writes: every acknowledged record is read, and a record is read twice
    only if it was in a poll whose commit failed. Each controlled shutdown moves the node's
    leaderships to the next in-sync replica and bumps their leader epoch; partitions it only
    followed keep theirs, and leadership does not come back when it returns."""
    topic = make_topic(kafka3, [[2, 3, 1], [3, 1, 2], [1, 2, 3], [2, 1, 3]])
    group = unique_topic_name("g")
    feeder = Feeder(kafka3.bootstrap_servers, topic, 4)
    readers = [Reader(KafkaConsumer(topic, bootstrap_servers=kafka3.bootstrap_servers, group_id=group,
                                    **GROUP), commit=True) for _ in range(2)]
    wait_for(lambda: all(len(r.assignment) == 2 and r.commits_ok >= 3 for r in readers), 60)
    assert epochs(kafka3, topic) == {0: (2, 0), 1: (3, 0), 2: (1, 0), 3: (2, 0)}
    after = {2: {0: (3, 1), 1: (3, 0), 2: (1, 0), 3: (1, 1)},
             3: {0: (2, 2), 1: (1, 1), 2: (1, 0), 3: (1, 1)},
             1: {0: (2, 2), 1: (3, 2), 2: (2, 1), 3: (2, 2)}}
    for node in (2, 3, 1):
        kafka3.restart(node)
        assert epochs(kafka3, topic) == after[node]
        kafka3.wait_for_isr(topic, 3, timeout=60)
        kafka3.wait_for_isr(OFFSETS_TOPIC, 3, timeout=60)
        read = sum(r.count() for r in readers)

        def going_on(n: int = read) -> bool:
            return sum(r.count() for r in readers) >= n + 40

        wait_for(going_on, 60)                       # written and read while the node is back
    acked = feeder.stop()
    expected = {(TopicPartition(topic, p), frozen(x)) for p in range(4) for x in acked[p]}

    def seen() -> set[tuple[TopicPartition, tuple[Any, ...]]]:
        return {(TopicPartition(r.topic, r.partition), frozen(row(r))) for rd in readers
                for r in list(rd.records)}

    wait_for(lambda: seen() >= expected, 60)
    time.sleep(0.3)                # anything beyond the acknowledged records would show up here
    stop_then_close(readers)
    assert seen() == expected                             # nothing lost, nothing unknown
    counts: dict[tuple[TopicPartition, int], int] = defaultdict(int)
    for rd in readers:
        for r in rd.records:
            counts[(TopicPartition(r.topic, r.partition), r.offset)] += 1
    twice = {k for k, n in counts.items() if n > 1}
    allowed = readers[0].uncommitted | readers[1].uncommitted
    # a record is read again only by the next owner of a partition whose last poll before the
    # rebalance was not committed, and only once
    assert twice <= allowed and all(counts[k] == 2 for k in twice), sorted(twice - allowed)
    print(f"rolling restart: {sum(counts.values())} records read, {len(twice)} twice (bound "
          f"{len(allowed)}), commit failures {[len(r.commit_failures) for r in readers]}, "
          f"assignments {[r.assignments for r in readers]}")
    for rd in readers:
        if len([a for a in rd.assignments if a]) == 1:   # no rebalance: each partition in order
            for p in range(4):
                offsets = [r.offset for r in rd.records if r.partition == p]
                assert offsets == sorted(set(offsets)), p


# ------------------------------------------------------------------ 4. follower fetching


def watch_fetches(consumer: KafkaConsumer) -> list[tuple[int, int, int]]:
    """(node, preferred_read_replica, record bytes) of each Fetch answer the consumer gets,
    taken from the responses as they arrive."""
    client = consumer._network()
    seen: list[tuple[int, int, int]] = []
    send = client.send

    def spy(node_id: int, api_key: int, *args: Any, **kwargs: Any) -> Future[Response]:
        fut = send(node_id, api_key, *args, **kwargs)
        if api_key == ApiKey.FETCH:
            def done(f: Future[Response]) -> None:
                if f.succeeded():
                    assert f.value is not None
                    for t in f.value.body["responses"]:
                        for p in t["partitions"]:
                            seen.append((node_id, p.get("preferred_read_replica", -1),
                                         len(p["records"] or b"")))
            fut.add_callback(done)
        return fut

    client.send = spy  # type: ignore[method-assign]
    return seen


@pytest.mark.parametrize("rack, replica", [("r2", 2), ("r3", 3), ("", 1)])
def test_a_consumer_with_client_rack_reads_from_the_in_rack_follower(
        kafka3: KafkaCluster, rack: str, replica: int) -> None:
    """Leader on node 1 (rack r1), followers on 2 and 3: node 1 answers the first Fetch with
    ``preferred_read_replica`` = the node of the consumer's rack and no records, and every
    record then comes from that follower, exactly as written; without client.rack the leader
    serves everything."""
    topic = make_topic(kafka3, [[1, 2, 3]])
    tp = TopicPartition(topic, 0)
    first = recent(sample_records(30, partitions=1))
    assert produce(kafka3.bootstrap_servers, topic, first) == [(0, i) for i in range(30)]
    kafka3.wait_for_isr(topic, 3)
    got: list[ConsumerRecord] = []
    with KafkaConsumer(bootstrap_servers=kafka3.bootstrap_servers, client_rack=rack, **FAST) as c:
        fetches = watch_fetches(c)
        c.assign([tp])

        def poll_until(n: int) -> bool:
            for recs in c.poll(100).values():
                got.extend(recs)
            return len(got) >= n

        wait_for(lambda: poll_until(30), 30)
        more = recent(sample_records(20, partitions=1, seed=1), 30)
        assert produce(kafka3.bootstrap_servers, topic, more) == [(0, i) for i in range(30, 50)]
        wait_for(lambda: poll_until(50), 30)
        assert c.poll(300) == {}
        assert c.position(tp) == 50
    expected = [(i, r.key, r.value, r.headers or [], r.timestamp_ms, 0)
                for i, r in enumerate(first + more)]
    assert [row(r) for r in got] == expected
    with_records = {node for node, _, size in fetches if size}
    assert with_records == {replica}, fetches
    if replica != 1:
        # the leader named the replica once, answering without records; no other node did
        assert fetches[0] == (1, replica, 0), fetches
        assert [f for f in fetches if f[1] != -1] == [(1, replica, 0)], fetches
    else:
        assert {node for node, _, _ in fetches} == {1} and all(r == -1 for _, r, _ in fetches)


# ------------------------------------------------------------------ 5. truncation (KIP-320)


def poll_rows(c: KafkaConsumer, n: int, timeout: float = 30.0) -> list[ConsumerRecord]:
    got: list[ConsumerRecord] = []

    def more() -> bool:
        for recs in c.poll(100).values():
            got.extend(recs)
        return len(got) >= n

    wait_for(more, timeout)
    return got


def test_an_unclean_election_truncates_what_the_consumer_read_and_it_notices(
        kafka3: KafkaCluster, caplog: pytest.LogCaptureFixture) -> None:
    """RF 2 on nodes 2 and 3, min.insync.replicas=1: with 3 stopped, 2 takes three acks=1
    records no one else has, and two consumers read up to offset 6. 2 is SIGKILLed, the stale 3
    comes back; fencing 2 leaves the partition leaderless at epoch 1, and 3 is elected
    uncleanly (ElectLeaders UNCLEAN) at epoch 2; then two new records
    land at offsets 3 and 4. OffsetForLeaderEpoch tells both consumers that epoch 0 ends at 3:
    with auto.offset.reset the consumer logs the truncation and resumes at 3 (the new records,
    epoch 2); with none, poll raises LogTruncationError naming the partition and the divergent
    offset, until the user seeks. Node 2, back, drops its three records too."""
    from confluent_kafka import ElectionType, TopicPartition as CkTopicPartition

    topic = make_topic(kafka3, [[2, 3]], {"min.insync.replicas": "1",
                                          "unclean.leader.election.enable": "false"})
    tp = TopicPartition(topic, 0)
    replicated = [TestRecord(b"a%d" % i, b"a%d" % i, partition=0, timestamp_ms=TS0 + i) for i in range(3)]
    assert produce(kafka3.bootstrap_servers, topic, replicated) == [(0, 0), (0, 1), (0, 2)]
    kafka3.stop(3)
    settle(lambda: epochs(kafka3, topic), {0: (2, 0)})
    lost = [TestRecord(b"b%d" % i, b"b%d" % i, partition=0, timestamp_ms=TS0 + 3 + i) for i in range(3)]
    assert produce(kafka3.bootstrap_servers, topic, lost, acks="1") == [(0, 3), (0, 4), (0, 5)]
    resetting = KafkaConsumer(bootstrap_servers=kafka3.bootstrap_servers, **FAST)
    strict = KafkaConsumer(bootstrap_servers=kafka3.bootstrap_servers,
                           **{**FAST, "auto_offset_reset": "none"})
    try:
        resetting.assign([tp])
        strict.assign([tp])
        strict.seek(tp, 0)
        for c in (resetting, strict):
            got = poll_rows(c, 6)
            assert [(r.offset, r.value, r.leader_epoch) for r in got] == [
                (i, rec.value, 0) for i, rec in enumerate(replicated + lost)]
            assert c.position(tp) == 6

        kafka3.kill(2)
        kafka3.restart(3)
        # 2 is fenced when its session runs out; 3 is not in the ISR: no leader
        settle(lambda: epochs(kafka3, topic), {0: (-1, 1)}, 60)   # leaderless: epoch 1
        admin = kafka3.admin()
        # (confluent-kafka 2.16's elect_leaders fails with SystemError given a timeout)
        result = admin.elect_leaders(ElectionType.UNCLEAN,
                                     [CkTopicPartition(topic, 0)]).result(timeout=90)
        assert {(t.topic, t.partition): err for t, err in result.items()} == {(topic, 0): None}
        settle(lambda: epochs(kafka3, topic), {0: (3, 2)})
        fresh = [TestRecord(b"c%d" % i, b"c%d" % i, partition=0, timestamp_ms=TS0 + 10 + i) for i in range(2)]
        assert produce(kafka3.bootstrap_servers, topic, fresh, acks="1") == [(0, 3), (0, 4)]

        with caplog.at_level(logging.WARNING, logger="pyconsumer.consumer.offsets"):
            got = poll_rows(resetting, 2)
        assert [(r.offset, r.key, r.value, r.timestamp, r.leader_epoch) for r in got] == [
            (3, b"c0", b"c0", TS0 + 10, 2), (4, b"c1", b"c1", TS0 + 11, 2)]
        assert resetting.position(tp) == 5
        assert f"truncation detected for {tp}: position 6 is past the end (3) of leader epoch 0; " \
               "resetting to the first offset known to diverge" in caplog.messages

        def raises() -> bool:
            try:
                assert strict.poll(100) == {}
            except LogTruncationError as e:
                errors.append(e)
                return True
            return False

        errors: list[LogTruncationError] = []
        wait_for(raises, 30)
        assert str(errors[0]) == (
            f"Truncated partition detected: {tp} was fetched up to 6 but the leader's epoch 0 "
            "ends at 3 (auto.offset.reset=none)")
        assert errors[0].divergent_offsets == {tp: OffsetAndTimestamp(3, -1, 0)}
        with pytest.raises(LogTruncationError):      # until the user seeks
            strict.poll(2000)
        strict.seek(tp, errors[0].divergent_offsets[tp].offset)
        assert [(r.offset, r.value, r.leader_epoch) for r in poll_rows(strict, 2)] == [
            (3, b"c0", 2), (4, b"c1", 2)]
    finally:
        resetting.close()
        strict.close()

    kafka3.restart(2)                   # it truncates its log to 3 and follows 3
    kafka3.wait_for_isr(topic, 2, timeout=60)
    with KafkaConsumer(bootstrap_servers=kafka3.bootstrap_servers, client_rack="r2", **FAST) as c:
        fetches = watch_fetches(c)
        c.assign([tp])
        got = poll_rows(c, 5)
        assert c.poll(300) == {}
    assert [(r.offset, r.value, r.leader_epoch) for r in got] == [
        (0, b"a0", 0), (1, b"a1", 0), (2, b"a2", 0), (3, b"c0", 2), (4, b"c1", 2)]
    assert {node for node, _, size in fetches if size} == {2}     # read from node 2's copy
