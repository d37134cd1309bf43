"""Streaming reads through the ``pyconsumer`` source with checkpoints: AvailableNow, restarts
(only new records), a query that dies mid-batch and is restarted (every record exactly once),
admission control (maxOffsetsPerTrigger bounds each micro-batch, shared fairly), new topics of
a pattern, lag in the query progress, and commitOffsetsToKafka."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any
from collections.abc import Callable

import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.testing import TansuBroker, TestRecord, produce, sample_records

from tests.spark.sparkdata import Row, df_rows, expected_rows

pytestmark = pytest.mark.spark


def _stream(spark: Any, bootstrap: str, **options: Any) -> Any:
    reader = spark.readStream.format("pyconsumer").option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def _to_parquet_once(spark: Any, bootstrap: str, out: Path, ck: Path, **options: Any) -> Any:
    """One AvailableNow run into a Parquet file sink (exactly-once through its metadata log)."""
    q = (_stream(spark, bootstrap, **options).writeStream.format("parquet")
         .option("path", str(out)).option("checkpointLocation", str(ck))
         .trigger(availableNow=True).start())
    q.awaitTermination(120)
    assert not q.isActive
    assert q.exception() is None, q.exception()
    return q


def _sink_rows(spark: Any, out: Path) -> list[Row]:
    return df_rows(spark.read.parquet(str(out)))


def test_available_now_reads_everything_once_then_only_new(
        spark: Any, tansu: TansuBroker, make_tansu_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic = make_tansu_topic(3)
    first = sample_records(900, partitions=3, seed=21)
    delivered = produce(tansu.bootstrap, topic, first)
    out, ck = tmp_path / "out", tmp_path / "ck"
    opts = {"subscribe": topic, "startingOffsets": "earliest", "includeHeaders": "true"}
    _to_parquet_once(spark, tansu.bootstrap, out, ck, **opts)
    want = expected_rows(topic, first, delivered, headers=True)
    assert _sink_rows(spark, out) == want

    second = sample_records(300, partitions=3, seed=22)
    delivered2 = produce(tansu.bootstrap, topic, second)
    q = _to_parquet_once(spark, tansu.bootstrap, out, ck, **opts)
    assert sum(p["numInputRows"] for p in q.recentProgress) == 300
    want = sorted(want + expected_rows(topic, second, delivered2, headers=True),
                  key=lambda r: (r[0], r[1], r[2]))
    assert _sink_rows(spark, out) == want

    q = _to_parquet_once(spark, tansu.bootstrap, out, ck, **opts)      # nothing new
    assert sum(p["numInputRows"] for p in q.recentProgress) == 0
    assert _sink_rows(spark, out) == want


def test_default_start_is_latest(spark: Any, tansu: TansuBroker,
                                 make_tansu_topic: Callable[..., str], tmp_path: Path) -> None:
    topic = make_tansu_topic(2)
    produce(tansu.bootstrap, topic, sample_records(100, partitions=2, seed=1))
    out, ck = tmp_path / "out", tmp_path / "ck"
    _to_parquet_once(spark, tansu.bootstrap, out, ck, subscribe=topic)   # starts at latest
    later = sample_records(40, partitions=2, seed=2)
    delivered = produce(tansu.bootstrap, topic, later)
    _to_parquet_once(spark, tansu.bootstrap, out, ck, subscribe=topic)
    assert _sink_rows(spark, out) == expected_rows(topic, later, delivered)


def test_query_killed_mid_batch_restarts_exactly_once(
        spark: Any, tansu: TansuBroker, make_tansu_topic: Callable[..., str], tmp_path: Path
) -> None:
    """The sink dies while writing batch 2 (after batch 0 and 1 committed): the restarted
    query replays batch 2 with the same offsets from the checkpoint and goes on; the output
    holds every record exactly once."""
    topic = make_tansu_topic(2)
    records = sample_records(1000, partitions=2, seed=31)
    delivered = produce(tansu.bootstrap, topic, records)
    out, ck = tmp_path / "out", tmp_path / "ck"
    seen: list[tuple[int, dict[str, Any]]] = []

    def sink(fail_on: int | None) -> Callable[[Any, int], None]:
        def write(df: Any, batch_id: int) -> None:
            # idempotent per batch id (a replay overwrites), as foreachBatch sinks must be
            df.write.mode("overwrite").parquet(str(out / f"batch={batch_id}"))
            if batch_id == fail_on:
                raise RuntimeError(f"killed while writing batch {batch_id}")
        return write

    def run(fail_on: int | None) -> Any:
        q = (_stream(spark, tansu.bootstrap, subscribe=topic, startingOffsets="earliest",
                     maxOffsetsPerTrigger="300")
             .writeStream.foreachBatch(sink(fail_on)).option("checkpointLocation", str(ck))
             .trigger(availableNow=True).start())
        try:
            q.awaitTermination(120)
        except Exception as exc:     # the failed run surfaces the sink's error
            assert "killed while writing batch 2" in str(exc)
        seen.extend((p["batchId"], p["sources"][0]) for p in q.recentProgress)
        return q

    failed = run(fail_on=2)
    assert failed.exception() is not None
    offsets_log = json.loads((ck / "offsets" / "2").read_text().splitlines()[-1])
    run(fail_on=None)
    batches = sorted({b for b, _ in seen})
    assert batches[:3] == [0, 1, 2] and len(batches) == 4       # 1000 rows, 300 per batch
    # the replayed batch 2 read exactly the range the offset log had planned before the kill
    replayed = [src for b, src in seen if b == 2][-1]["endOffset"]
    replayed = json.loads(replayed) if isinstance(replayed, str) else replayed
    assert replayed == offsets_log
    assert sum(offsets_log[topic].values()) == 900
    got = df_rows(spark.read.parquet(str(out)).drop("batch"))
    assert got == expected_rows(topic, records, delivered)


def test_max_offsets_per_trigger_bounds_batches_and_is_split_fairly(
        spark: Any, tansu: TansuBroker, make_tansu_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic = make_tansu_topic(3)
    recs = [TestRecord(key=f"k{i}".encode(), value=b"v", partition=p, timestamp_ms=1_000 + i)
            for p, n in ((0, 600), (1, 300), (2, 100)) for i in range(n)]
    delivered = produce(tansu.bootstrap, topic, recs)
    out, ck = tmp_path / "out", tmp_path / "ck"
    q = _to_parquet_once(spark, tansu.bootstrap, out, ck, subscribe=topic,
                         startingOffsets="earliest", maxOffsetsPerTrigger="100")
    progress = [p for p in q.recentProgress if p["numInputRows"] > 0]
    assert [p["numInputRows"] for p in progress] == [100] * 10
    first_end = progress[0]["sources"][0]["endOffset"]
    first_end = json.loads(first_end) if isinstance(first_end, str) else first_end
    # shared by backlog (600:300:100), not "first partition first"
    assert first_end == {topic: {"0": 60, "1": 30, "2": 10}}
    assert _sink_rows(spark, out) == expected_rows(topic, recs, delivered)


def test_pattern_picks_up_new_topics_at_earliest_and_reports_lag(
        spark: Any, tansu: TansuBroker, make_tansu_topic: Callable[..., str], tmp_path: Path
) -> None:
    stem = f"pat{int(time.time() * 1000) % 10**9}"
    a = make_tansu_topic(2, name=f"{stem}-a")
    ra = sample_records(50, partitions=2, seed=5)
    da = produce(tansu.bootstrap, a, ra)
    out, ck = tmp_path / "out", tmp_path / "ck"
    opts = {"subscribePattern": f"{stem}-.*", "startingOffsets": "earliest"}
    q = _to_parquet_once(spark, tansu.bootstrap, out, ck, **opts)
    latest = q.recentProgress[-1]["sources"][0]["latestOffset"]
    latest = json.loads(latest) if isinstance(latest, str) else latest
    assert latest == {a: {"0": 25, "1": 25}}           # what the query's lag is measured against
    b = make_tansu_topic(3, name=f"{stem}-b")         # a new topic matching the pattern
    rb = sample_records(60, partitions=3, seed=6)
    db = produce(tansu.bootstrap, b, rb)
    _to_parquet_once(spark, tansu.bootstrap, out, ck, **opts)
    want = sorted(expected_rows(a, ra, da) + expected_rows(b, rb, db),
                  key=lambda r: (r[0], r[1], r[2]))
    assert _sink_rows(spark, out) == want


def test_commit_offsets_to_kafka_publishes_finished_batches(
        spark: Any, tansu: TansuBroker, make_tansu_topic: Callable[..., str], tmp_path: Path
) -> None:
    topic = make_tansu_topic(2)
    produce(tansu.bootstrap, topic, sample_records(200, partitions=2, seed=8))
    group = f"lag-{topic}"
    out, ck = tmp_path / "out", tmp_path / "ck"
    opts = {"subscribe": topic, "startingOffsets": "earliest", "commitOffsetsToKafka": "true",
            "kafka.group.id": group}
    _to_parquet_once(spark, tansu.bootstrap, out, ck, maxOffsetsPerTrigger="150", **opts)
    tps = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    with KafkaConsumer(bootstrap_servers=tansu.bootstrap, group_id=group) as c:
        committed = {tp: (om.offset if om else None) for tp, om in c.committed(tps).items()}
    # batches finished: (75, 75) then (100, 100); the last one is committed when the next
    # batch is planned (Spark's commit() is lazy), at the latest on the next run
    assert committed[tps[0]] is not None and committed[tps[0]] >= 75
    _to_parquet_once(spark, tansu.bootstrap, out, ck, **opts)
    with KafkaConsumer(bootstrap_servers=tansu.bootstrap, group_id=group) as c:
        assert {tp: om.offset for tp, om in c.committed(tps).items() if om} == \
            {tps[0]: 100, tps[1]: 100}
