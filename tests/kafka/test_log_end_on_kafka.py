"""Exact log ends cost nothing on Apache Kafka: the Spark source's latest() is one ListOffsets per
leader, no Fetch and no connection of its own; a broker that versions no features (Tansu, whose
ListOffsets(latest) falls short of the log end) still gets its ends confirmed by a fetch."""

from __future__ import annotations

from collections.abc import Callable

from pyconsumer import TopicPartition
from pyconsumer.consumer.log_end import lists_exact_ends
from pyconsumer.spark.offsets import OffsetReader
from pyconsumer.spark.options import parse_options
from pyconsumer.testing import FaultProxy, KafkaCluster, TansuBroker, produce, sample_records

LIST_OFFSETS, FETCH, METADATA = 2, 1, 3

#: test data carries 2023 timestamps: without this, time retention could delete it mid-test
KEEP = {"retention.ms": "-1"}


def test_latest_on_kafka_is_one_list_offsets_per_leader_and_no_fetch(
        kafka: KafkaCluster, make_kafka_topic: Callable[..., str]) -> None:
    topic = make_kafka_topic(3, config=KEEP)
    produce(kafka.bootstrap_servers, topic, sample_records(60, partitions=3))
    tps = [TopicPartition(topic, p) for p in range(3)]
    with FaultProxy(kafka.bootstrap_servers, lifetime=120) as proxy:
        reader = OffsetReader(parse_options({"kafka.bootstrap.servers": proxy.bootstrap,
                                             "subscribe": topic}, streaming=True))
        try:
            assert reader.latest(tps) == {tp: 20 for tp in tps}
            assert lists_exact_ends(reader.consumer)
            leaders = {p.leader for p in reader.consumer.partitions_for(topic)}
            first = proxy.stats
            assert first.requests.get(FETCH, 0) == 0
            for _ in range(3):                      # a stream's later triggers
                before = proxy.stats
                assert reader.latest(tps) == {tp: 20 for tp in tps}
                after = proxy.stats
                sent = {k: n - before.requests.get(k, 0) for k, n in after.requests.items()
                        if n != before.requests.get(k, 0)}
                assert sent == {LIST_OFFSETS: len(leaders)}
                assert after.connections == first.connections
        finally:
            reader.close()


def test_a_broker_without_kafkas_features_gets_its_listed_ends_confirmed(
        tansu: TansuBroker, make_tansu_topic: Callable[..., str]) -> None:
    topic = make_tansu_topic(1)
    # one producer batch: this broker lists its base offset + 1 as the end
    produce(tansu.bootstrap, topic, sample_records(500, partitions=1),
            **{"linger.ms": 200})
    tp = TopicPartition(topic, 0)
    reader = OffsetReader(parse_options({"kafka.bootstrap.servers": tansu.bootstrap,
                                         "subscribe": topic}, streaming=False))
    try:
        assert reader.latest([tp]) == {tp: 500}
        assert not lists_exact_ends(reader.consumer)
    finally:
        reader.close()
