"""The consumer group protocol (KIP-848, ``group.protocol=consumer``) on real Apache Kafka 4.2:
the broker's uniform and range assignors, a regular expression evaluated by the broker,
an invalid one, fencing, static members, and a group shared with confluent-kafka.

The session broker's KIP-848 timings are lowered (heartbeat 1 s, session 6 s). The broker's
view of each member (ConsumerGroupDescribe through confluent-kafka's AdminClient: current and
target assignment) is the reference the members' ``assignment()`` is compared with."""
from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.errors import InvalidRegularExpressionError, KafkaError
from pyconsumer.testing import FaultProxy, KafkaCluster, produce, sample_records
from tests.integration.runners import (  # noqa: F401 - the fixture applies to this module
    close_what_a_failed_test_left,
    tps,
    wait_for,
)
from tests.kafka.test_groups_on_kafka import (  # noqa: F401 - _drop_admins applies here too
    CommitOnRevoke,
    ConfluentMember,
    Member,
    _drop_admins,
    admin,
    assert_exactly_once,
    expected_records,
)
from tests.listeners import Recorder

CONSUMER: dict[str, Any] = {"auto_offset_reset": "earliest", "group_protocol": "consumer",
                            "enable_auto_commit": False}
SESSION_S = 6.0      # the cluster's group.consumer.session.timeout.ms


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
    a, b = make_kafka_topic(4), make_kafka_topic(2)
    everything = tps(a, 4) | tps(b, 2)
    recs = sample_records(80, partitions=4)
    expected = expected_records(a, recs, produce(kafka.bootstrap_servers, a, recs))
    group = f"g-{assignor}-{a}"
    m1, l1 = member(kafka.bootstrap_servers, group, [a, b], group_remote_assignor=assignor)
    wait_for(lambda: settled(kafka, group, [m1], everything))
    assert l1.calls == [("assigned", everything)]
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
    assert l1.calls == [("assigned", everything), ("revoked", two), ("assigned", set())]
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
    b = make_kafka_topic(3, name=f"{prefix}-rx-b")
    recs = sample_records(30, partitions=3)
    expected = expected_records(b, recs, produce(kafka.bootstrap_servers, b, recs))
    wait_for(lambda: settled(kafka, group, [m], tps(a, 2) | tps(b, 3)), timeout=45)
    wait_for(lambda: set(m.records) == set(expected))
    m.stop()
    # the broker resolves the expression after the join: the first assignment is empty
    assert listener.calls == [("assigned", set()), ("assigned", tps(a, 2)), ("assigned", tps(b, 3))]
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
