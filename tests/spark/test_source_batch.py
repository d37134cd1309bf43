"""Batch reads through the ``pyconsumer`` source with real PySpark and real brokers: the
DataFrame equals what confluent-kafka produced, row for row."""
from __future__ import annotations

import json
from typing import Any
from collections.abc import Callable

import pyarrow as pa
import pytest

from pyconsumer.records import kafka_arrow_schema
from pyconsumer.testing import MockCluster, TansuBroker, TestRecord, produce, produce_transactions, sample_records

from tests.spark.sparkdata import df_rows, expected_rows

pytestmark = pytest.mark.spark


def _read(spark: Any, bootstrap: str, **options: Any) -> Any:
    reader = spark.read.format("pyconsumer").option("kafka.bootstrap.servers", bootstrap)
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


@pytest.fixture
def produced(tansu: TansuBroker, make_tansu_topic: Callable[..., str]
             ) -> tuple[str, list[TestRecord], list[tuple[int, int]]]:
    topic = make_tansu_topic(3)
    records = sample_records(1500, partitions=3, seed=11)
    delivered = produce(tansu.bootstrap, topic, records, compression="lz4")
    return topic, records, delivered


def test_schema_is_sparks_kafka_schema(spark: Any, tansu: TansuBroker, produced: Any) -> None:
    topic, _, _ = produced
    df = _read(spark, tansu.bootstrap, subscribe=topic)
    assert [(f.name, f.dataType.simpleString(), f.nullable) for f in df.schema.fields] == [
        ("key", "binary", True), ("value", "binary", True), ("topic", "string", True),
        ("partition", "int", True), ("offset", "bigint", True),
        ("timestamp", "timestamp", True), ("timestampType", "int", True)]
    with_headers = _read(spark, tansu.bootstrap, subscribe=topic, includeHeaders="true")
    assert with_headers.schema.fields[-1].name == "headers"
    assert with_headers.schema.fields[-1].dataType.simpleString() == \
        "array<struct<key:string,value:binary>>"
    # the Arrow the decoder yields is what Spark expects from a Python source, exactly
    from pyspark.sql.pandas.types import to_arrow_schema
    assert to_arrow_schema(with_headers.schema, timezone="UTC").equals(
        kafka_arrow_schema(True), check_metadata=False) or \
        [f.type for f in to_arrow_schema(with_headers.schema, timezone="UTC")] == \
        [f.type for f in kafka_arrow_schema(True)]


def test_batch_read_equals_produced(spark: Any, tansu: TansuBroker, produced: Any) -> None:
    topic, records, delivered = produced
    df = _read(spark, tansu.bootstrap, subscribe=topic, includeHeaders="true")
    assert df_rows(df) == expected_rows(topic, records, delivered, headers=True)
    assert df.count() == 1500
    # Spark runs the same plan again for an aggregation: the same rows
    per_partition = {r["partition"]: r["count"] for r in df.groupBy("partition").count().collect()}
    assert per_partition == {0: 500, 1: 500, 2: 500}


def test_batch_starting_and_ending_offsets_json(spark: Any, tansu: TansuBroker,
                                                produced: Any) -> None:
    topic, records, delivered = produced
    start = {topic: {"0": 10, "1": -2, "2": 499}}
    end = {topic: {"0": 20, "1": 5, "2": -1}}
    df = _read(spark, tansu.bootstrap, subscribe=topic,
               startingOffsets=json.dumps(start), endingOffsets=json.dumps(end))
    want = [r for r in expected_rows(topic, records, delivered)
            if (r[1] == 0 and 10 <= r[2] < 20) or (r[1] == 1 and r[2] < 5)
            or (r[1] == 2 and r[2] >= 499)]
    assert len(want) == 10 + 5 + 1
    assert df_rows(df) == want


def test_batch_assign_and_pattern(spark: Any, tansu: TansuBroker, produced: Any) -> None:
    topic, records, delivered = produced
    df = _read(spark, tansu.bootstrap, assign=json.dumps({topic: [1]}))
    assert df_rows(df) == [r for r in expected_rows(topic, records, delivered) if r[1] == 1]
    df = _read(spark, tansu.bootstrap, subscribePattern=topic.replace("-", ".") + "$")
    assert df.count() == 1500


@pytest.mark.parametrize("options,tasks", [
    ({"minPartitions": "9"}, 9),                    # round(500 / 1500 * 9) = 3 each
    ({"maxRecordsPerPartition": "200"}, 9),           # 500 per partition: 3 pieces each
    ({"maxRecordsPerPartition": "400", "minPartitions": "12"}, 12),
])
def test_splitting_returns_each_record_once(spark: Any, tansu: TansuBroker, produced: Any,
                                            options: dict[str, str], tasks: int) -> None:
    topic, records, delivered = produced
    df = _read(spark, tansu.bootstrap, subscribe=topic, **options)   # default earliest/latest
    assert df.rdd.getNumPartitions() == tasks
    assert df_rows(df) == expected_rows(topic, records, delivered)


@pytest.mark.parametrize("options,tasks", [
    ({}, 1),                                          # 1,500 offsets: one task (default 100,000)
    ({"minRecordsPerPartition": "600"}, 2),           # 500 + 500, then the last 500
    ({"minRecordsPerPartition": "1"}, 3),             # a task per partition, as Spark
    ({"minRecordsPerPartition": "600", "minPartitions": "3"}, 3),   # ignored: Spark's count
])
def test_small_ranges_share_tasks_and_return_each_record_once(
        spark: Any, tansu: TansuBroker, produced: Any, options: dict[str, str], tasks: int) -> None:
    topic, records, delivered = produced
    df = _read(spark, tansu.bootstrap, subscribe=topic, **options)
    assert df.rdd.getNumPartitions() == tasks
    assert df_rows(df) == expected_rows(topic, records, delivered)


def test_min_records_per_partition_must_be_positive(spark: Any, tansu: TansuBroker,
                                                    produced: Any) -> None:
    topic, _, _ = produced
    with pytest.raises(Exception, match="minRecordsPerPartition"):
        _read(spark, tansu.bootstrap, subscribe=topic, minRecordsPerPartition="0").collect()


def test_ranges_ending_on_transaction_markers_and_aborted_batches(
        spark: Any, tansu: TansuBroker, make_tansu_topic: Callable[..., str]) -> None:
    topic = make_tansu_topic(1)
    recs = [sample_records(30, partitions=[0], seed=s) for s in (1, 2, 3)]
    delivered = produce_transactions(tansu.bootstrap, topic,
                                     [(recs[0], True), (recs[1], False), (recs[2], True)])
    # offsets: 0-29 committed, 30 marker, 31-60 aborted, 61 abort marker, 62-91, 92 marker
    assert [d[0][1] for d in delivered] == [0, 31, 62]
    committed = expected_rows(topic, recs[0], delivered[0]) + \
        expected_rows(topic, recs[2], delivered[2])
    everything = sorted(committed + expected_rows(topic, recs[1], delivered[1]),
                        key=lambda r: r[2])
    # Neither test broker fills a Fetch's aborted_transactions (tests/integration/
    # test_brokers.py), so what is checked here is where a range stops, with every record
    # the log holds: ends on a commit marker (30, 92), on the abort marker (61), inside and
    # at the end of the aborted batch (45, 60), right after markers (31, 62) and the log end.
    for end in (93, 92, 62, 61, 60, 45, 31, 30, 1):
        df = _read(spark, tansu.bootstrap, subscribe=topic,
                   endingOffsets=json.dumps({topic: {"0": end}}))
        assert df_rows(df) == [r for r in everything if r[2] < end], end
    # a range starting on a marker reads on from the next record
    df = _read(spark, tansu.bootstrap, subscribe=topic,
               startingOffsets=json.dumps({topic: {"0": 61}}),
               endingOffsets=json.dumps({topic: {"0": 63}}))
    assert df_rows(df) == [r for r in everything if r[2] == 62]


def test_batch_against_mock_cluster_three_leaders(spark: Any, mock_cluster: MockCluster) -> None:
    mock_cluster.create_topic("spread", 6)
    records = sample_records(1200, partitions=6, seed=3)
    delivered = produce(mock_cluster.bootstrap, "spread", records, compression="zstd")
    df = _read(spark, mock_cluster.bootstrap, subscribe="spread", includeHeaders="true",
               minPartitions="9")
    assert df_rows(df) == expected_rows("spread", records, delivered, headers=True)


@pytest.mark.parametrize("fail", [True, False])
def test_fail_on_data_loss_when_start_fell_out_of_retention(
        spark: Any, mock_cluster: MockCluster, fail: bool) -> None:
    mock_cluster.create_topic("lossy", 1)
    records = sample_records(100, partitions=[0], seed=4)
    delivered = produce(mock_cluster.bootstrap, "lossy", records, linger_ms=0, batch_size=1)
    mock_cluster.delete_records("lossy", 0, 40)       # log start moves to 40
    df = _read(spark, mock_cluster.bootstrap, subscribe="lossy",
               startingOffsets=json.dumps({"lossy": {"0": 10}}),
               failOnDataLoss=str(fail).lower())
    if fail:
        with pytest.raises(Exception) as info:
            df.collect()
        text = str(info.value)
        assert "lossy-0" in text and "10" in text and "40" in text and "failOnDataLoss" in text
    else:
        want = [r for r in expected_rows("lossy", records, delivered) if r[2] >= 40]
        assert df_rows(df) == want


def test_yields_record_batches_of_up_to_100k_rows(tansu: TansuBroker,
                                                  make_tansu_topic: Callable[..., str]) -> None:
    """The worker side on its own: read_range yields Arrow batches in Spark's schema, each as
    a poll returned it (at most 100k rows; only the last below 12.5k: smaller polls are
    gathered), stopping exactly at the range's end."""
    from pyconsumer.spark.options import parse_options
    from pyconsumer.spark.planning import OffsetRange
    from pyconsumer.spark.reader import read_range

    topic = make_tansu_topic(1)
    records = [TestRecord(key=None, value=b"x" * 10, partition=0) for _ in range(250_000)]
    produce(tansu.bootstrap, topic, records, linger_ms=50)
    options = parse_options({"kafka.bootstrap.servers": tansu.bootstrap, "subscribe": topic},
                            streaming=False)
    batches = list(read_range(OffsetRange(topic, 0, 1000, 240_000), options))
    sizes = [b.num_rows for b in batches]
    assert max(sizes) <= 100_000 and min(sizes[:-1]) >= 12_500, sizes
    assert sum(sizes) == 239_000
    assert all(b.schema.equals(kafka_arrow_schema(False)) for b in batches)
    offsets = pa.concat_arrays([b.column("offset") for b in batches]).to_pylist()
    assert offsets == list(range(1000, 240_000))
