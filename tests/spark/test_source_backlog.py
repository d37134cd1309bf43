"""The streaming backlog Spark's Kafka source reports (offsets behind latest, min / max / avg,
estimated bytes behind) for ``format("pyconsumer")`` queries, through
:mod:`pyconsumer.spark.progress`: a known backlog read in micro-batches of a known size."""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pyconsumer import TopicPartition
from pyconsumer.spark.progress import BacklogListener, source_backlog
from pyconsumer.testing import TansuBroker, TestRecord, produce

pytestmark = pytest.mark.spark


def test_backlog_per_micro_batch_equals_offsets_behind_latest(
        spark: Any, tansu: TansuBroker, make_tansu_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic = make_tansu_topic(3)
    # 14 bytes of key and value per record: 4-byte keys, 10-byte values
    recs = [TestRecord(key=b"k%03d" % i, value=b"v" * 10, partition=p, timestamp_ms=1_000 + i)
            for p, n in ((0, 600), (1, 300), (2, 100)) for i in range(n)]
    produce(tansu.bootstrap, topic, recs)
    options = {"kafka.bootstrap.servers": tansu.bootstrap, "subscribe": topic,
               "startingOffsets": "earliest", "maxOffsetsPerTrigger": "100"}
    listener = BacklogListener(options)
    spark.streams.addListener(listener)
    try:
        reader = spark.readStream.format("pyconsumer")
        for k, v in options.items():
            reader = reader.option(k, v)
        q = (reader.load().writeStream.format("noop")
             .option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(availableNow=True).start())
        q.awaitTermination(120)
        assert q.exception() is None, q.exception()
        progress = [p for p in q.recentProgress if p["numInputRows"] > 0]
        assert len(progress) == 10
        # each batch takes 100 offsets shared 6:3:1, so after batch n (1-based) the
        # partitions are 540, 270, 90 offsets behind, times (10 - n) / 9
        for n, p in enumerate(progress, 1):
            b = source_backlog(p["sources"][0])
            left = 10 - n
            assert b.behind == {TopicPartition(topic, 0): 60 * left,
                                TopicPartition(topic, 1): 30 * left,
                                TopicPartition(topic, 2): 10 * left}
            assert (b.min, b.max, b.avg) == (10 * left, 60 * left, 100 * left / 3)
            assert b.bytes_behind is None
        first = source_backlog(progress[0]["sources"][0], {
            TopicPartition(topic, p): 14.0 for p in range(3)})
        assert first.metrics() == {"minOffsetsBehindLatest": "90",
                                   "maxOffsetsBehindLatest": "540",
                                   "avgOffsetsBehindLatest": "300.0",
                                   "estimatedTotalBytesBehindLatest": str(900 * 14)}

        # the listener hears the same progress (asynchronously) and samples the bytes
        deadline = time.monotonic() + 30
        while len(listener.batches(q.id)) < len(q.recentProgress) and time.monotonic() < deadline:
            time.sleep(0.2)
        heard = listener.batches(q.id)
        by_batch = {p["batchId"]: p for p in progress}
        assert set(by_batch) <= set(heard)
        for batch_id, p in by_batch.items():
            [b] = heard[batch_id]
            left = sum(b.behind.values()) // 100
            assert b.behind == source_backlog(p["sources"][0]).behind
            assert b.bytes_behind == 100 * left * 14.0
        assert heard[progress[0]["batchId"]][0].metrics() == first.metrics()
        assert heard[progress[-1]["batchId"]][0].metrics() == {
            "minOffsetsBehindLatest": "0", "maxOffsetsBehindLatest": "0",
            "avgOffsetsBehindLatest": "0.0", "estimatedTotalBytesBehindLatest": "0"}
    finally:
        spark.streams.removeListener(listener)


def test_source_backlog_names_a_missing_or_bad_field() -> None:
    with pytest.raises(ValueError, match="latestOffset is missing"):
        source_backlog({"endOffset": {"t": {"0": 5}}, "latestOffset": None})
    with pytest.raises(ValueError, match="endOffset"):
        source_backlog({"endOffset": "[1, 2]", "latestOffset": {"t": {"0": 5}}})
