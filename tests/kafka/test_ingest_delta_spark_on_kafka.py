"""Delta tables on Apache Kafka, read back and written by Spark's own Delta Lake (delta-spark).

``pyconsumer ingest --table-format delta`` writes its tables with deltalake (delta-rs) from Arrow;
Spark's Delta reader, an independent implementation of the protocol, must read every record of
them exactly as produced, partition columns and history included. And the conventional route,
``format("pyconsumer")`` (or Spark's own ``format("kafka")``) into Spark's Delta writer, must give
the very same table, so users can move between the two routes (or mix them) without a record
changing. Records come from confluent-kafka (headers, null keys and values, explicit timestamps).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pyconsumer.cli import main
from pyconsumer.testing import KafkaCluster, produce, sample_records

from tests.spark.sparkdata import Row, df_rows, expected_rows, table_rows

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

deltalake = pytest.importorskip("deltalake")

DAY = 86_400_000
#: 2023-11-15T00:00:00Z
BASE = 1_700_006_400_000


def _sorted(rows: list[Row]) -> list[Row]:
    return sorted(rows, key=lambda r: (r[0], r[1], r[2]))


def _ingest(capsys: pytest.CaptureFixture[str], *args: str) -> None:
    code = main(["ingest", *args])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "Traceback" not in captured.err


def _produce(kafka: KafkaCluster, topic: str, n: int, seed: int) -> list[Row]:
    records = [dataclasses.replace(r, timestamp_ms=BASE + (i % 3) * DAY + i)
               for i, r in enumerate(sample_records(n, partitions=3, seed=seed))]
    return expected_rows(topic, records, produce(kafka.bootstrap_servers, topic, records),
                         headers=True)


def _spark_delta_rows(spark: Any, path: str, *, drop: tuple[str, ...] = ()) -> list[Row]:
    df = spark.read.format("delta").load(path)
    return df_rows(df.drop(*drop))


def _spark_version(spark: Any, path: str) -> int:
    history = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect()
    return max(int(r["version"]) for r in history)


def test_spark_reads_our_delta_table_every_record_once(
        spark_delta: Any, kafka: KafkaCluster, make_kafka_topic: Callable[..., str],
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spark = spark_delta
    topic = make_kafka_topic(3)
    want = _produce(kafka, topic, 240, seed=71)
    plain, by_day = str(tmp_path / "plain"), str(tmp_path / "by-day")
    common = ["-b", kafka.bootstrap_servers, "-t", topic, "--table-format", "delta",
              "-o", "includeHeaders=true"]
    _ingest(capsys, *common, "--output", plain)
    _ingest(capsys, *common, "--output", by_day, "--partition-by", "day(timestamp)",
            "--partition-by", "partition", "--target-file-size", "16KiB")

    assert _spark_delta_rows(spark, plain) == want
    assert _sorted(table_rows(deltalake.DeltaTable(plain).to_pyarrow_table())) == want
    assert _spark_version(spark, plain) == deltalake.DeltaTable(plain).version() == 1

    # the partition column Delta adds (the day of each record's timestamp) as Spark reads it
    df = spark.read.format("delta").load(by_day)
    assert df_rows(df.drop("timestamp_date")) == want
    days = {(r["partition"], r["offset"]): str(r["timestamp_date"])
            for r in df.select("partition", "offset", "timestamp_date").collect()}
    assert days == {(r[1], r[2]): ("2023-11-15", "2023-11-16", "2023-11-17")[(r[5] - BASE) // DAY]
                    for r in want}
    # partition pruning through Spark's reader: one day, all three Kafka partitions
    one_day = df.where("timestamp_date = DATE'2023-11-16' AND partition = 2")
    assert df_rows(one_day.drop("timestamp_date")) == [
        r for r in want if (r[5] - BASE) // DAY == 1 and r[1] == 2]
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{by_day}`").collect()[0]
    assert list(detail["partitionColumns"]) == ["timestamp_date", "partition"]
    assert detail["numFiles"] == len(deltalake.DeltaTable(by_day).file_uris())

    # more records: ours resumes from the table, Spark reads the new version
    more = _produce(kafka, topic, 90, seed=72)
    _ingest(capsys, *common, "--output", plain)
    assert _spark_delta_rows(spark, plain) == _sorted(want + more)
    assert _spark_version(spark, plain) == 2


def test_the_conventional_route_into_sparks_delta_writer_gives_the_same_table(
        spark_delta: Any, kafka: KafkaCluster, make_kafka_topic: Callable[..., str],
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """format("pyconsumer") and format("kafka") into write.format("delta"): the same rows as our
    Arrow writer's table; Spark's idempotent batch writes (txnAppId / txnVersion) skip a rerun."""
    spark = spark_delta
    topic = make_kafka_topic(3)
    want = _produce(kafka, topic, 180, seed=73)
    ours = str(tmp_path / "ours")
    _ingest(capsys, "-b", kafka.bootstrap_servers, "-t", topic, "--table-format", "delta",
            "--output", ours, "-o", "includeHeaders=true")

    def read(fmt: str) -> Any:
        return (spark.read.format(fmt).option("kafka.bootstrap.servers", kafka.bootstrap_servers)
                .option("subscribe", topic).option("includeHeaders", "true").load())

    via_source = str(tmp_path / "via-pyconsumer")
    for _ in range(2):          # the rerun: same app id and version, Delta adds nothing
        (read("pyconsumer").write.format("delta").mode("append")
         .option("txnAppId", "ingest-job").option("txnVersion", 1).save(via_source))
    assert deltalake.DeltaTable(via_source).transaction_version("ingest-job") == 1
    assert _spark_delta_rows(spark, via_source) == want

    ours_table = deltalake.DeltaTable(ours).to_pyarrow_table()
    theirs_table = deltalake.DeltaTable(via_source).to_pyarrow_table()
    assert ours_table.schema.names == theirs_table.schema.names
    assert [f.type for f in ours_table.schema] == [f.type for f in theirs_table.schema]
    assert _sorted(table_rows(ours_table)) == _sorted(table_rows(theirs_table)) == want

    from tests.conftest import _SPARK_KAFKA_MISSING
    if _SPARK_KAFKA_MISSING is None:
        via_kafka = str(tmp_path / "via-kafka")
        read("kafka").write.format("delta").save(via_kafka)
        assert _sorted(table_rows(deltalake.DeltaTable(via_kafka).to_pyarrow_table())) == want
