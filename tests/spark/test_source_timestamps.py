"""Batch reads bounded by timestamps through real Spark, on noida-db (the one offline broker
whose ListOffsets by timestamp is right: Tansu answers offset 0, librdkafka's mock -1).

The data: partitions 0 and 1 hold records whose timestamps rise (sample_records: base + 7 ms
per record, alternating between the two), partition 2 records whose timestamps zig-zag (every
other one 400 ms ahead). A timestamp stands for the first offset, in log order, of a record
at or after it (Kafka's ListOffsets), and the read goes from there by offset: on partition 2
it keeps records older than the timestamp that follow that offset. The expected rows are
worked out from what the producer was told, the same way.
"""
from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from pyconsumer.testing import SAMPLE_TIMESTAMP_BASE_MS, NoidaBroker, TestRecord, produce, sample_records

from tests.spark.sparkdata import Row, df_rows, expected_rows

pytestmark = pytest.mark.spark

BASE = SAMPLE_TIMESTAMP_BASE_MS
AFTER_ALL = BASE + 10_000


@dataclass
class Data:
    bootstrap: str
    topic: str
    rows: list[Row]             # every record, sorted by partition and offset
    ends: dict[int, int]        # partition -> log end offset

    def first_at(self, partition: int, ts: int) -> int:
        """The first offset of ``partition`` whose timestamp is >= ``ts``; the end if none."""
        return min((r[2] for r in self.rows if r[1] == partition and r[5] >= ts),
                   default=self.ends[partition])

    def between(self, start: Mapping[int, int], end: Mapping[int, int]) -> list[Row]:
        return [r for r in self.rows if start[r[1]] <= r[2] < end[r[1]]]

    def starting_at(self, ts: Mapping[int, int]) -> list[Row]:
        return self.between({p: self.first_at(p, t) for p, t in ts.items()}, self.ends)

    def ending_at(self, ts: Mapping[int, int]) -> list[Row]:
        return self.between({p: 0 for p in ts}, {p: self.first_at(p, t) for p, t in ts.items()})

    def per_partition(self, ts: Mapping[int, int]) -> str:
        return json.dumps({self.topic: {str(p): t for p, t in ts.items()}})

    def read(self, spark: Any, **options: str) -> Any:
        reader = (spark.read.format("pyconsumer")
                  .option("kafka.bootstrap.servers", self.bootstrap)
                  .option("subscribe", self.topic))
        for key, value in options.items():
            reader = reader.option(key, value)
        return reader.load()


def _all(ts: int) -> dict[int, int]:
    return {0: ts, 1: ts, 2: ts}


@pytest.fixture(scope="module")
def data(noida: NoidaBroker) -> Data:
    topic = f"ts-{uuid.uuid4().hex[:10]}"
    noida.create_topic(topic, 3)
    rising = sample_records(60, partitions=2, seed=31)        # BASE + 7 i, i = 0..59
    zigzag = [TestRecord(key=f"z{i}".encode(), value=bytes([i]) * i, partition=2,
                         timestamp_ms=BASE + 30 * i + (400 if i % 2 else 0))
              for i in range(20)]
    records = rising + zigzag
    delivered = produce(noida.bootstrap, topic, records)
    rows = expected_rows(topic, records, delivered)
    ends = {p: 1 + max(r[2] for r in rows if r[1] == p) for p in range(3)}
    assert ends == {0: 30, 1: 30, 2: 20}
    return Data(noida.bootstrap, topic, rows, ends)


def test_starting_timestamp(spark: Any, data: Data) -> None:
    df = data.read(spark, startingTimestamp=str(BASE + 200))
    want = data.starting_at(_all(BASE + 200))
    # p0 from i = 30 (offset 15), p1 from i = 29 (offset 14), p2 from offset 1 (BASE + 430),
    # and offset 2 on p2 (BASE + 60) is read although it is older than the timestamp
    assert [data.first_at(p, BASE + 200) for p in range(3)] == [15, 14, 1]
    assert any(r[1] == 2 and r[5] < BASE + 200 for r in want)
    assert df_rows(df) == want


def test_starting_offsets_by_timestamp(spark: Any, data: Data) -> None:
    ts = {0: BASE, 1: BASE + 350, 2: BASE + 900}
    df = data.read(spark, startingOffsetsByTimestamp=data.per_partition(ts))
    want = data.starting_at(ts)
    assert [data.first_at(p, t) for p, t in ts.items()] == [0, 25, 17]
    assert df_rows(df) == want


def test_ending_timestamp_and_by_timestamp(spark: Any, data: Data) -> None:
    df = data.read(spark, endingTimestamp=str(BASE + 200))
    assert df_rows(df) == data.ending_at(_all(BASE + 200))
    # a timestamp after every record of p1 ends it at the latest offset
    ts = {0: BASE + 100, 1: AFTER_ALL, 2: BASE + 500}
    df = data.read(spark, endingOffsetsByTimestamp=data.per_partition(ts))
    want = data.ending_at(ts)
    assert [data.first_at(p, t) for p, t in ts.items()] == [8, 30, 5]
    assert df_rows(df) == want


def test_starting_and_ending_timestamps(spark: Any, data: Data) -> None:
    df = data.read(spark, startingTimestamp=str(BASE + 100), endingTimestamp=str(BASE + 300))
    want = data.between({p: data.first_at(p, BASE + 100) for p in range(3)},
                        {p: data.first_at(p, BASE + 300) for p in range(3)})
    assert want and df_rows(df) == want


def test_start_after_every_record(spark: Any, data: Data) -> None:
    # strategy error (explicit, and the default): a clear error naming the partitions, the
    # timestamp and the way out
    for options in ({"startingOffsetsByTimestampStrategy": "error"}, {}):
        df = data.read(spark, startingTimestamp=str(AFTER_ALL), **options)
        with pytest.raises(Exception) as info:
            df.collect()
        text = str(info.value)
        assert "No offset matched the starting timestamp" in text, text[:2000]
        for p in range(3):
            assert f"{data.topic}-{p} (timestamp {AFTER_ALL})" in text
        assert "startingOffsetsByTimestampStrategy" in text
    # strategy latest: such a partition starts at its end, so nothing is read from it
    ts = {0: AFTER_ALL, 1: BASE + 350, 2: BASE}
    df = data.read(spark, startingOffsetsByTimestamp=data.per_partition(ts),
                   startingOffsetsByTimestampStrategy="LATEST")
    want = data.starting_at(ts)
    assert {r[1] for r in want} == {1, 2}
    assert df_rows(df) == want


def test_start_after_every_record_latest_reads_nothing(spark: Any, data: Data) -> None:
    df = data.read(spark, startingTimestamp=str(AFTER_ALL),
                   startingOffsetsByTimestampStrategy="latest")
    assert df_rows(df) == []


def test_timestamps_take_precedence(spark: Any, data: Data) -> None:
    # startingTimestamp > startingOffsetsByTimestamp > startingOffsets: "latest", which a batch
    # query may not start from, is not even looked at
    df = data.read(spark, startingTimestamp=str(BASE + 200),
                   startingOffsetsByTimestamp=data.per_partition(_all(BASE)),
                   startingOffsets="latest")
    assert df_rows(df) == data.starting_at(_all(BASE + 200))
    ts = {0: BASE, 1: BASE + 350, 2: BASE + 900}
    df = data.read(spark, startingOffsetsByTimestamp=data.per_partition(ts),
                   startingOffsets=json.dumps({data.topic: {"0": 29, "1": 29, "2": 19}}))
    assert df_rows(df) == data.starting_at(ts)
    # the same on the ending side (an "earliest" end is rejected only when it decides)
    df = data.read(spark, endingTimestamp=str(BASE + 200),
                   endingOffsetsByTimestamp=data.per_partition(_all(AFTER_ALL)),
                   endingOffsets="earliest")
    assert df_rows(df) == data.ending_at(_all(BASE + 200))
