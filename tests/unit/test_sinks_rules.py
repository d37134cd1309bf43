"""The sinks' table-independent rules: the exactly-once check, offsets as properties, partition spellings."""
from __future__ import annotations

import pyarrow as pa
import pytest

from pyconsumer.records import kafka_arrow_schema
from pyconsumer.sinks import (
    DataFile,
    OffsetConflictError,
    OffsetRange,
    PartitionBy,
    SchemaConflictError,
    parse_partition_by,
)
from pyconsumer.sinks.offsets import offset_properties, parse_offset_properties, should_commit
from pyconsumer.sinks.partitioning import split_rows


def file(topic: str, partition: int, first: int, last: int) -> DataFile:
    return DataFile("f.parquet", 1, last - first + 1, (), (OffsetRange(topic, partition, first, last),), 0)


def test_commit_when_every_partition_is_ahead() -> None:
    assert should_commit({("t", 0): 10}, {("t", 0): 20, ("t", 1): 5}, [file("t", 0, 10, 19), file("t", 1, 0, 4)])
    # gaps (compaction, transaction markers, retention) are fine
    assert should_commit({("t", 0): 10}, {("t", 0): 30}, [file("t", 0, 15, 19)])


def test_skip_when_every_partition_is_held() -> None:
    assert not should_commit({("t", 0): 20, ("t", 1): 9}, {("t", 0): 20, ("t", 1): 5}, [file("t", 0, 10, 19)])


@pytest.mark.parametrize("held, offsets, files, match", [
    ({("t", 0): 20}, {("t", 0): 20, ("t", 1): 5}, [], r"up to t\[0\]=20 but not t\[1\]=none"),
    ({("t", 0): 10}, {("t", 0): 20}, [file("t", 0, 5, 19)], r"offsets from 5, but the table already holds them up to 10"),
    ({}, {("t", 0): 20}, [file("t", 0, 0, 20)], r"offset 20, at or past the commit's next offset 20"),
    ({}, {("t", 0): 20}, [file("t", 1, 0, 3)], r"records of t\[1\], which the commit's offsets do not name"),
])
def test_refused(held: dict[tuple[str, int], int], offsets: dict[tuple[str, int], int],
                 files: list[DataFile], match: str) -> None:
    with pytest.raises(OffsetConflictError, match=match):
        should_commit(held, offsets, files)


def test_a_commit_needs_offsets() -> None:
    with pytest.raises(ValueError, match="needs the offsets"):
        should_commit({}, {}, [])


def test_offset_properties_round_trip_topics_with_dots() -> None:
    offsets = {("a.b.c", 12): 5, ("x", 0): 0}
    props = offset_properties("app", offsets)
    assert props == {"pyconsumer.app-id": "app", "pyconsumer.offset.a.b.c.12": "5", "pyconsumer.offset.x.0": "0"}
    assert parse_offset_properties({**props, "other": "1"}) == offsets


def test_partition_spellings() -> None:
    assert parse_partition_by("topic") == PartitionBy(("topic",))
    assert parse_partition_by("value.country") == PartitionBy(("value", "country"))
    assert parse_partition_by("day(timestamp)") == PartitionBy(("timestamp",), "day")
    assert parse_partition_by(" date( timestamp ) ").name == "timestamp_date"
    assert parse_partition_by("hour(timestamp)").name == "timestamp_hour"
    assert parse_partition_by("value.country").name == "value_country"
    for bad in ("", "a..b", "month(timestamp)", ".a"):
        with pytest.raises(ValueError, match="partition by"):
            parse_partition_by(bad)


def test_partition_sources_are_checked_against_the_schema() -> None:
    schema = kafka_arrow_schema(include_headers=True)
    parse_partition_by("hour(timestamp)").check(schema)
    for spec, match in [("day(offset)", "offset is int64, not a timestamp"), ("key", "key is binary"),
                        ("value.country", "value is binary, with no field 'country'"), ("nope", "no column 'nope'")]:
        with pytest.raises(SchemaConflictError, match=match):
            parse_partition_by(spec).check(schema)


def test_split_rows_keeps_each_groups_order_and_nulls() -> None:
    b = pa.record_batch({"k": ["a", None, "a", "b", None], "i": [0, 1, 2, 3, 4]})
    groups = {key: part.column("i").to_pylist() for key, part in split_rows(b, [b.column("k")])}
    assert groups == {("a",): [0, 2], (None,): [1, 4], ("b",): [3]}
