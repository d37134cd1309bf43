"""The streaming backlog metrics, format("kafka") (Spark's own Kafka source, the reference)
vs format("pyconsumer") through :func:`pyconsumer.spark.progress.source_backlog`: the same
AvailableNow query with maxOffsetsPerTrigger over uneven partitions gives, batch by batch, the
offsets behind latest Spark's source puts in its progress's ``metrics``."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pyconsumer.spark.progress import source_backlog
from pyconsumer.testing import KafkaCluster, TestRecord, produce

from tests.kafka.test_spark_vs_kafka_streaming import FORMATS, KEEP, _start

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

OFFSET_METRICS = ("minOffsetsBehindLatest", "maxOffsetsBehindLatest", "avgOffsetsBehindLatest")


def test_offsets_behind_latest_as_spark_reports_them(
        spark_kafka: Any, kafka: KafkaCluster, make_kafka_topic: Callable[..., str],
        tmp_path: Path) -> None:
    topic = make_kafka_topic(3, config=KEEP)
    recs = [TestRecord(key=b"k%03d" % i, value=b"v" * 10, partition=p, timestamp_ms=1_000 + i)
            for p, n in ((0, 500), (1, 200), (2, 50)) for i in range(n)]
    produce(kafka.bootstrap_servers, topic, recs)
    options = {"subscribe": topic, "startingOffsets": "earliest", "maxOffsetsPerTrigger": "150"}
    queries = {fmt: _start(spark_kafka, fmt, kafka.bootstrap_servers, tmp_path / fmt / "out",
                           tmp_path / fmt / "ck", options) for fmt in FORMATS}
    try:
        for fmt, q in queries.items():
            q.awaitTermination(240)
            assert q.exception() is None, f"{fmt}: {q.exception()}"
    finally:
        for q in queries.values():
            q.stop()
    spark_metrics = [p["sources"][0]["metrics"] for p in queries["kafka"].recentProgress
                     if p["numInputRows"] > 0]
    ours = [source_backlog(p["sources"][0]).metrics()
            for p in queries["pyconsumer"].recentProgress if p["numInputRows"] > 0]
    assert len(spark_metrics) == len(ours) == 5          # 750 records, 150 a batch
    # Apache Spark's source gives these three only (estimatedTotalBytesBehindLatest is the
    # Databricks runtime's); ours estimates bytes only with a BacklogListener
    assert spark_metrics == ours
    assert all(sorted(m) == sorted(OFFSET_METRICS) for m in ours)
    # the first batch, worked by hand: 150 shared 500:200:50 is 100, 40, 10
    assert ours[0] == {"minOffsetsBehindLatest": "40", "maxOffsetsBehindLatest": "400",
                       "avgOffsetsBehindLatest": "200.0"}
