"""The Prometheus endpoint of a live consumer on Apache Kafka, test data written by confluent-kafka
(the independent producer): scraped over HTTP on 127.0.0.1 and read with prometheus-client's
own text parser, records-consumed-total is the number of records poll() returned (all topics
and the topic's), and each partition's lag gauge is its end offset (ListOffsets) minus the
consumer's position (once its fetched data came up to be drained: the high watermark is
taken then, as in Java); after the rest is read, every lag is 0 and the total is every record."""
from __future__ import annotations

import time
import urllib.request
from collections.abc import Callable

import pytest

pytest.importorskip("prometheus_client")

from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from pyconsumer import KafkaConsumer, TopicPartition  # noqa: E402
from pyconsumer.metrics.prometheus import serve_prometheus  # noqa: E402
from pyconsumer.testing import KafkaCluster, TestRecord, produce  # noqa: E402

TOTAL = "kafka_consumer_fetch_manager_records_consumed_total"
LAG = "kafka_consumer_fetch_manager_records_lag"


def scrape(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    with urllib.request.urlopen(url, timeout=10) as r:
        text = r.read().decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for f in text_string_to_metric_families(text) for s in f.samples}


def test_a_scrape_gives_the_records_consumed_and_each_partitions_lag(
        kafka: KafkaCluster, make_kafka_topic: Callable[..., str]) -> None:
    topic = make_kafka_topic(3)
    counts = {0: 50, 1: 30, 2: 20}
    produce(kafka.bootstrap, topic, [TestRecord(key=b"k%d-%d" % (p, i), value=b"v%d" % i,
                                                partition=p)
                                     for p, n in counts.items() for i in range(n)])
    tps = [TopicPartition(topic, p) for p in counts]
    tag = topic.replace(".", "_")
    with KafkaConsumer(**kafka.client_settings(group_id="g-prom-kafka", client_id="scraped",
                                               auto_offset_reset="earliest",
                                               enable_auto_commit=False,
                                               fetch_max_wait_ms=100)) as c:
        c.assign(tps)
        seen: dict[TopicPartition, list[int]] = {tp: [] for tp in tps}
        deadline = time.monotonic() + 60
        # at least 60, and some of each partition: a partition's lag is known once its
        # fetched data came up to be drained (Java's initializeCompletedFetch takes the
        # high watermark then)
        while sum(map(len, seen.values())) < 60 or not all(seen.values()):
            assert time.monotonic() < deadline, {tp: len(o) for tp, o in seen.items()}
            for tp, records in c.poll(500, max_records=7).items():
                seen[tp] += [r.offset for r in records]
        consumed = sum(map(len, seen.values()))
        # every record once, in order, from offset 0
        assert all(offsets == list(range(len(offsets))) for offsets in seen.values())
        ends = c.end_offsets(tps)
        assert ends == {tp: counts[tp.partition] for tp in tps}
        with serve_prometheus(c, 0) as server:
            samples = scrape(server.url)
            base = {"client_id": "scraped", "group_id": "g-prom-kafka"}
            assert samples[(TOTAL, frozenset(base.items()))] == float(consumed)
            assert samples[(TOTAL, frozenset({**base, "topic": tag}.items()))] == float(consumed)
            lags = {int(dict(k[1])["partition"]): v for k, v in samples.items()
                    if k[0] == LAG and dict(k[1])["topic"] == tag}
            assert lags == {tp.partition: float(ends[tp] - c.position(tp)) for tp in tps}
            assert sum(lags.values()) == float(100 - consumed)
            # the rest read: lag 0 everywhere, every record counted
            while sum(map(len, seen.values())) < 100:
                assert time.monotonic() < deadline
                for tp, records in c.poll(500).items():
                    seen[tp] += [r.offset for r in records]
            assert {tp: len(o) for tp, o in seen.items()} == {tp: counts[tp.partition]
                                                              for tp in tps}
            samples = scrape(server.url)
            assert samples[(TOTAL, frozenset(base.items()))] == 100.0
            assert {int(dict(k[1])["partition"]): v for k, v in samples.items()
                    if k[0] == LAG} == {0: 0.0, 1: 0.0, 2: 0.0}
