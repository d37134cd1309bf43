"""Helpers for the Spark tier: expected rows from what confluent-kafka produced, and rows of a
DataFrame read through the ``pyconsumer`` source, in the same shape."""
from __future__ import annotations

import datetime as dt
from typing import Any

from pyconsumer.testing import TestRecord

#: (topic, partition, offset, key, value, timestamp ms, timestampType, headers or None)
Row = tuple[str, int, int, bytes | None, bytes | None, int, int, Any]


def expected_rows(topic: str, records: list[TestRecord], delivered: list[tuple[int, int]],
                  *, headers: bool = False) -> list[Row]:
    out = []
    for rec, (partition, offset) in zip(records, delivered):
        assert rec.timestamp_ms is not None
        hdrs = [(k, v) for k, v in rec.headers] if (headers and rec.headers) else None
        out.append((topic, partition, offset, rec.key, rec.value, rec.timestamp_ms, 0, hdrs))
    return sorted(out, key=lambda r: (r[0], r[1], r[2]))


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _ms(ts: dt.datetime) -> int:
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=dt.timezone.utc)
    # exact: ts.timestamp() is a float (1.001 s * 1000 = 1000.9999...)
    return (ts - _EPOCH) // dt.timedelta(milliseconds=1)


def table_rows(table: Any) -> list[Row]:
    """Rows of an Arrow table in Spark's Kafka schema, in the table's own order."""
    headers = "headers" in table.column_names
    out: list[Row] = []
    for r in table.to_pylist():
        hdrs = None
        if headers and r["headers"] is not None:
            hdrs = [(h["key"], h["value"]) for h in r["headers"]]
        out.append((r["topic"], r["partition"], r["offset"], r["key"], r["value"],
                    _ms(r["timestamp"]), r["timestampType"], hdrs))
    return out


def _rows(table: Any) -> list[Row]:
    return sorted(table_rows(table), key=lambda r: (r[0], r[1], r[2]))


def df_rows(df: Any) -> list[Row]:
    """The DataFrame's rows through Arrow (``toArrow``), sorted by topic, partition, offset."""
    return _rows(df.toArrow())


def parquet_rows(path: str) -> list[Row]:
    """Rows of a Parquet dataset written from the source, read back with pyarrow."""
    import pyarrow.parquet as pq

    return _rows(pq.read_table(path))
