"""The ``pyconsumer`` Spark source and ``pyconsumer ingest`` on real Apache Kafka (KRaft).

Data comes from confluent-kafka (``produce``, ``produce_transactions``); where the broker
decides a value (LogAppendTime timestamps, what compaction left) confluent-kafka's Consumer
reads the log as the independent oracle. Rows are compared in the order the DataFrame holds
them (one task per partition, in offset order), with every column: topic, partition, offset,
key, value, timestamp (ms), timestampType and headers.
"""
from __future__ import annotations

import datetime as dt
import json
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from pyconsumer.testing import CODECS, KafkaCluster, TestRecord, produce, produce_transactions, sample_records

from tests.spark.sparkdata import Row, expected_rows

pytestmark = pytest.mark.spark

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The Spark tier's session (tests/spark/conftest.py): getOrCreate gives the same one."""
    pytest.importorskip("pyspark", reason="the Spark tier needs pyspark (pip install -e '.[test]')")
    if shutil.which("java") is None:
        pytest.skip("the Spark tier needs Java 17 on PATH")
    from pyconsumer.spark.session import local_session

    session = local_session("local[2]", app_name="pyconsumer-tests", fast_jvm=True,
                            local_dir=str(tmp_path_factory.mktemp("spark-local")),
                            conf={"spark.driver.memory": "2g", "spark.sql.shuffle.partitions": "2"})
    try:
        yield session
    finally:
        session.stop()


# ------------------------------------------------------------------------------- helpers


def _read(spark: Any, bootstrap: str, **options: str) -> Any:
    reader = spark.read.format("pyconsumer").option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def _ms(ts: dt.datetime) -> int:
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=dt.timezone.utc)
    return (ts - _EPOCH) // dt.timedelta(milliseconds=1)


def _table_rows(table: Any) -> list[Row]:
    """Rows of an Arrow table in its own order (not sorted)."""
    headers = "headers" in table.column_names
    out: list[Row] = []
    for r in table.to_pylist():
        hdrs = None
        if headers and r["headers"] is not None:
            hdrs = [(h["key"], h["value"]) for h in r["headers"]]
        out.append((r["topic"], r["partition"], r["offset"], r["key"], r["value"],
                    _ms(r["timestamp"]), r["timestampType"], hdrs))
    return out


def rows(df: Any) -> list[Row]:
    """The DataFrame's rows in the order Spark returns them (tasks in topic-partition order)."""
    return _table_rows(df.toArrow())


def _sorted(rs: Sequence[Row]) -> list[Row]:
    return sorted(rs, key=lambda r: (r[0], r[1], r[2]))


def oracle_rows(bootstrap: str, topic: str, partitions: int, *, headers: bool = True,
                isolation: str = "read_uncommitted") -> list[Row]:
    """Every record of ``topic`` as confluent-kafka's Consumer reads it (the independent view of
    what the broker stored: LogAppendTime timestamps, compaction survivors)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer
    from confluent_kafka import TopicPartition as CkTopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "oracle", "enable.auto.commit": False,
                  "isolation.level": isolation, "enable.partition.eof": True})
    try:
        c.assign([CkTopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        out: list[Row] = []
        at_eof: set[int] = set()
        deadline = time.monotonic() + 60
        while len(at_eof) < partitions:
            assert time.monotonic() < deadline, f"oracle read of {topic} did not reach the end"
            msg = c.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                if msg.error().code() == -191:        # _PARTITION_EOF
                    at_eof.add(msg.partition())
                    continue
                raise AssertionError(f"oracle read of {topic}: {msg.error()}")
            at_eof.discard(msg.partition())
            ts_type, ts = msg.timestamp()
            hdrs = msg.headers()
            out.append((topic, msg.partition(), msg.offset(), msg.key(), msg.value(), ts,
                        ts_type - 1,      # librdkafka: 1 CreateTime, 2 LogAppendTime
                        [(k, v) for k, v in hdrs] if (headers and hdrs) else None))
        return _sorted(out)
    finally:
        c.close()


# ------------------------------------------------------------------------------- batch reads


def test_every_codec_headers_and_nulls_read_exactly(spark: Any, kafka: KafkaCluster,
                                                    make_kafka_topic: Callable[..., str]) -> None:
    """Partition p holds records compressed with CODECS[p]: with includeHeaders the DataFrame is
    exactly what was produced (null keys and values, empty values, repeated and null headers),
    without it the same rows and no headers column."""
    topic = make_kafka_topic(len(CODECS))
    want: list[Row] = []
    for p, codec in enumerate(CODECS):
        records = sample_records(120, partitions=[p], seed=p)
        delivered = produce(kafka.bootstrap_servers, topic, records, compression=codec)
        want += expected_rows(topic, records, delivered, headers=True)
    want = _sorted(want)
    assert any(r[3] is None for r in want) and any(r[4] is None for r in want)
    df = _read(spark, kafka.bootstrap_servers, subscribe=topic, includeHeaders="true")
    assert rows(df) == want
    plain = _read(spark, kafka.bootstrap_servers, subscribe=topic, includeheaders="false")
    assert "headers" not in plain.columns
    assert rows(plain) == [r[:7] + (None,) for r in want]


def test_log_append_time_topic_gives_the_brokers_timestamps(
        spark: Any, kafka: KafkaCluster, make_kafka_topic: Callable[..., str]) -> None:
    """On a LogAppendTime topic the rows carry the broker's timestamps and timestampType 1, as
    confluent-kafka reads them, not the producer's CreateTime."""
    topic = make_kafka_topic(2, config={"message.timestamp.type": "LogAppendTime"})
    records = sample_records(200, partitions=2, seed=7)
    before = int(time.time() * 1000)
    delivered = produce(kafka.bootstrap_servers, topic, records, compression="zstd")
    want = oracle_rows(kafka.bootstrap_servers, topic, 2)
    produced = expected_rows(topic, records, delivered, headers=True)
    # the oracle saw the produced records, with the broker's time in place of the producer's
    assert [r[:5] + r[7:] for r in want] == [r[:5] + r[7:] for r in produced]
    assert all(r[6] == 1 and r[5] >= before - 1000 for r in want)
    df = _read(spark, kafka.bootstrap_servers, subscribe=topic, includeHeaders="true")
    assert rows(df) == want
