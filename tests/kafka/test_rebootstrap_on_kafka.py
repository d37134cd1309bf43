"""metadata.recovery.strategy on a real 3-node Apache Kafka cluster whose brokers all restart on
new ports (a rolled cluster: same data, same cluster id, every broker answering elsewhere).

The consumers know the cluster by a bootstrap address, a TCP forwarder on 127.0.0.1 standing
for a DNS name (it forwards bytes only: the brokers' Metadata answers name their own
addresses, as behind a real name); once the cluster is back, the name is repointed at it.
The ``none`` consumer has a name of its own, so what dials it can be told apart.
Four consumers read all along, each in its own thread: an assigned one and group members of
both protocols (classic and KIP-848) with ``rebootstrap`` (Java's default) read on, every record exactly once and in order; one with
``none`` does what Java's consumer does: it keeps dialling the brokers it knew, never the
name again, says so at WARNING, and reads nothing new.

The cluster is this module's own: moving its brokers would pull the session cluster from under
other tests.
"""
from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.testing import FaultProxy, KafkaCluster, TestRecord, produce
from tests.backends import start_or_skip
from tests.conftest import unique_topic_name

pytestmark = pytest.mark.kafka

PARTITIONS = 3
PER_ROUND = 10            # records per partition produced before, and again after, the move
#: (offset, key, value) of a record
Row = tuple[int, bytes | None, bytes | None]


@pytest.fixture(scope="module")
def cluster() -> Iterator[KafkaCluster]:
    pytest.importorskip("confluent_kafka", reason="confluent-kafka produces the test records")
    # a KIP-848 member keeps its partitions through the outage (the test cluster's 6 s session
    # would fence it: a fenced member's last commit fails and its records come again)
    kafka = KafkaCluster(nodes=3, broker_config={"group.consumer.session.timeout.ms": "60000"})
    try:
        yield start_or_skip(kafka)
    finally:
        kafka.close()


def round_of(n: int) -> list[TestRecord]:
    """Round ``n``'s records: PER_ROUND per partition, numbered so a record names its round."""
    return [TestRecord(key=b"k%d-%d" % (p, n * PER_ROUND + i), value=b"v%d-%d" % (p, n * PER_ROUND + i),
                       partition=p, timestamp_ms=int(time.time() * 1000))
            for i in range(PER_ROUND) for p in range(PARTITIONS)]


def expected(rounds: int) -> dict[int, list[Row]]:
    return {p: [(i, b"k%d-%d" % (p, i), b"v%d-%d" % (p, i)) for i in range(rounds * PER_ROUND)]
            for p in range(PARTITIONS)}


class Reader:
    """A consumer polling in its own thread (named ``name``: its log records say who logged
    them) until stopped, keeping every record per partition in the order polled. A group
    member commits synchronously after every poll that returned records, so a rejoin after
    the outage resumes exactly where it read (nothing read twice even then)."""

    def __init__(self, name: str, topic: str, settings: dict[str, Any], *, group: bool) -> None:
        self.name = name
        self.topic = topic
        self.settings = settings
        self.group = group
        self.rows: dict[int, list[Row]] = {p: [] for p in range(PARTITIONS)}
        self.errors: list[BaseException] = []
        self.commit_errors: list[BaseException] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, name=name, daemon=True)
        self.thread.start()

    def run(self) -> None:
        try:
            with KafkaConsumer(**self.settings) as consumer:
                if self.group:
                    consumer.subscribe([self.topic])
                else:
                    consumer.assign([TopicPartition(self.topic, p) for p in range(PARTITIONS)])
                while not self.stopping.is_set():
                    got = consumer.poll(timeout_ms=200)
                    with self.lock:
                        for tp, recs in got.items():
                            self.rows[tp.partition] += [(r.offset, r.key, r.value) for r in recs]
                    if self.group and got:
                        try:
                            consumer.commit()
                        except Exception as e:  # noqa: BLE001 - kept: the test shows them
                            self.commit_errors.append(e)
        except BaseException as e:  # noqa: BLE001 - the test fails on it
            self.errors.append(e)

    def count(self) -> int:
        with self.lock:
            return sum(map(len, self.rows.values()))

    def snapshot(self) -> dict[int, list[Row]]:
        with self.lock:
            return {p: list(rows) for p, rows in self.rows.items()}

    def wait_for(self, n: int, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while self.count() < n and time.monotonic() < deadline and self.thread.is_alive():
            time.sleep(0.1)
        assert self.count() >= n, (f"{self.name}: {self.count()} of {n} records after {seconds} s; "
                                   f"errors {self.errors}, commit errors {self.commit_errors}")

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(60)
        assert not self.thread.is_alive(), f"{self.name} did not stop"


def test_every_broker_moved_rebootstrap_reads_on_none_keeps_dialling_the_old_brokers(
        cluster: KafkaCluster, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="pyconsumer")
    topic = cluster.create_topic(unique_topic_name("reboot"), PARTITIONS, replication_factor=3,
                                 timeout=60)
    produce(cluster.bootstrap_servers, topic, round_of(0), acks="all")
    with FaultProxy(cluster.address_of(1), rewrite_addresses=False, lifetime=1200) as name, \
            FaultProxy(cluster.address_of(1), rewrite_addresses=False, lifetime=1200) as own_name:
        common: dict[str, Any] = dict(
            bootstrap_servers=name.bootstrap, auto_offset_reset="earliest", fetch_max_wait_ms=100,
            reconnect_backoff_ms=50, reconnect_backoff_max_ms=1000, request_timeout_ms=10_000,
            retry_backoff_ms=100)
        readers = {
            "assigned": Reader("reader-assigned", topic, dict(common), group=False),
            # a session longer than the outage: the member keeps its partitions through it
            "group": Reader("reader-group", topic, dict(
                common, group_id=unique_topic_name("g"), enable_auto_commit=False,
                session_timeout_ms=120_000, default_api_timeout_ms=240_000), group=True),
            "group848": Reader("reader-group848", topic, dict(
                common, group_id=unique_topic_name("g"), enable_auto_commit=False,
                group_protocol="consumer", default_api_timeout_ms=240_000), group=True),
            "none": Reader("reader-none", topic, dict(
                common, bootstrap_servers=own_name.bootstrap, metadata_recovery_strategy="none"),
                group=False),
        }
        try:
            for r in readers.values():
                r.wait_for(PARTITIONS * PER_ROUND, 90)
            own_before = own_name.stats.connections

            old = cluster.restart_on_new_ports()        # while the three go on polling
            moved = {i: old[i]["PLAINTEXT"] for i in old}
            assert not set(moved.values()) & set(cluster.bootstrap_servers.split(","))
            for proxy in (name, own_name):              # the names now mean the moved cluster
                proxy.point_at(cluster.address_of(1))
            repointed_at = time.time()
            produce(cluster.bootstrap_servers, topic, round_of(1), acks="all")

            for who in ("assigned", "group", "group848"):
                readers[who].wait_for(2 * PARTITIONS * PER_ROUND, 180)
            time.sleep(5)       # the none reader had as long as both others, and then some
            none_rows = readers["none"].snapshot()
            own_after = own_name.stats.connections
        finally:
            for r in readers.values():
                r.stop()

    for who in ("assigned", "group", "group848"):
        r = readers[who]
        assert r.errors == [], f"{who}: {r.errors}"
        assert r.snapshot() == expected(2), who       # every offset once, in order, exact records
        mine = [rec.getMessage() for rec in caplog.records if rec.threadName == r.name]
        assert any(m.startswith("no known broker could be reached (") and
                   m.endswith(f"rebootstrapping from {name.bootstrap}") for m in mine), (who, mine)
    # while the name still led nowhere, both lists failed, each named as what it is (the name
    # is theirs alone: the none reader has its own)
    assert any(re.match(r"cannot connect to any of the known brokers \(([^)]*)\) or "
                        rf"bootstrap.servers \({re.escape(name.bootstrap)}\); retrying: ",
                        rec.getMessage()) for rec in caplog.records)

    # none: what it read before the move, then nothing; it never dialled its name again, and
    # it says it is still dialling the brokers it knew
    assert readers["none"].errors == []
    assert none_rows == expected(1)
    assert own_after == own_before
    warnings = [rec.getMessage() for rec in caplog.records
                if rec.threadName == "reader-none" and rec.levelno == logging.WARNING]
    dialled = [w.split("(", 1)[1].split(")", 1)[0].split(", ") for w in warnings
               if w.startswith("cannot connect to any of the known brokers (")]
    # still dialling them once the cluster was back and named anew
    assert any(rec.created > repointed_at and rec.getMessage().startswith("cannot connect to any")
               for rec in caplog.records if rec.threadName == "reader-none")
    # the brokers it knew: those the last Metadata before the move listed (brokers shut down
    # first are no longer listed by the time the last one goes), all at their old addresses
    assert dialled and all(set(d) <= set(moved.values()) for d in dialled), warnings
    assert not any("rebootstrapping" in w for w in warnings)
