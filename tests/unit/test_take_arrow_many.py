"""take_arrow_many: several cursors taken in turn into one RecordBatch give exactly the rows,
positions and errors of take_arrow on each in turn (issue 26: a poll over many small
partitions builds one batch instead of a batch per partition and their concatenation)."""
from __future__ import annotations

import struct

import pyarrow as pa
import pytest
from aiokafka.record.default_records import DefaultRecordBatchBuilder

from pyconsumer.errors import CorruptRecordError
from pyconsumer.records import CompletedFetch, take_arrow_many


def _record_set(base: int, batches: int, per: int, codec: int = 0, tag: bytes = b"") -> bytes:
    parts = []
    for k in range(batches):
        b = DefaultRecordBatchBuilder(2, codec, 0, -1, -1, -1, 1 << 30)
        for j in range(per):
            i = base + k * per + j
            key = None if i % 7 == 3 else b"k%06d" % i
            value = None if i % 11 == 5 else tag + b"v%08d" % i * (1 + i % 4)
            b.append(j, 1_700_000_000_000 + i, key, value, [(f"h{i % 3}", b"x")] if i % 2 else [])
        buf = b.build()
        struct.pack_into(">q", buf, 0, base + k * per)
        parts.append(bytes(buf))
    return b"".join(parts)


def _cursors(sets: list[tuple[str, int, bytes, int]]) -> list[CompletedFetch]:
    return [CompletedFetch(data, topic, partition, offset) for topic, partition, data, offset in sets]


SETS = [("orders", 3, _record_set(0, 3, 5), 2),
        ("orders", 0, _record_set(100, 2, 4, codec=1), 100),
        ("payments-é", 7, _record_set(40, 1, 6), 40),
        ("orders", 1, _record_set(0, 4, 3), 5)]


@pytest.mark.parametrize("headers", [False, True])
@pytest.mark.parametrize("budgets", [[100, 100, 100, 100], [13, 8, 6, 2], [13, 8, 6, 7]])
def test_many_equals_takes_in_turn(headers: bool, budgets: list[int]) -> None:
    one = _cursors(SETS)
    expected = []
    for c, n in zip(one, budgets):
        c.set_include_headers(headers)
        expected.append(c.take_arrow(n))
    many = _cursors(SETS)
    batch, rows = take_arrow_many(many, budgets, headers)
    assert rows == [b.num_rows for b in expected]
    assert rows[:3] == [13, 8, 6]
    assert batch.schema == expected[0].schema
    assert batch.to_pylist() == pa.concat_batches(expected).to_pylist()
    assert [c.next_fetch_offset for c in many] == [c.next_fetch_offset for c in one]
    assert [c.is_drained for c in many] == [c.is_drained for c in one]
    assert many[3].is_drained is (budgets[3] >= 7)


def test_stops_after_a_cursor_its_budget_ends() -> None:
    many = _cursors(SETS)
    batch, rows = take_arrow_many(many, [5, 100, 100, 100])
    assert rows == [5]                          # 13 records there: not drained, so it stops
    assert batch.column("offset").to_pylist() == [2, 3, 4, 5, 6]
    assert batch.column("partition").to_pylist() == [3] * 5
    assert [c.next_fetch_offset for c in many] == [7, 100, 40, 5]


def test_stops_after_a_cursor_with_no_rows() -> None:
    many = _cursors([("t", 0, _record_set(0, 1, 3), 3), *SETS[1:]])   # all below the offset
    batch, rows = take_arrow_many(many, [10, 10, 10, 10])
    assert rows == [0] and batch.num_rows == 0 and many[0].is_drained
    assert many[1].next_fetch_offset == 100


def test_an_error_stops_it_rows_first() -> None:
    good = _record_set(0, 2, 4)
    bad = bytearray(good)
    bad[len(_record_set(0, 1, 4)) + 30] ^= 0xFF            # second batch corrupt (CRC)
    many = _cursors([("t", 0, _record_set(50, 1, 2), 50), ("t", 1, bytes(bad), 0), SETS[2]])
    batch, rows = take_arrow_many(many, [10, 10, 10])
    assert rows == [2, 4]
    assert batch.column("offset").to_pylist() == [50, 51, 0, 1, 2, 3]
    assert batch.column("partition").to_pylist() == [0, 0, 1, 1, 1, 1]
    assert isinstance(many[1].pending_error, CorruptRecordError)
    assert many[1].next_fetch_offset == 4 and not many[1].is_drained
    with pytest.raises(CorruptRecordError, match="partition=1.*offset=4|offset 4"):
        many[1].take_arrow(10)
    assert many[2].next_fetch_offset == 40                 # not taken
    # the error first, no rows: nothing of it, it stays for the next take
    again = _cursors([("t", 1, bytes(bad), 4), SETS[2]])
    batch, rows = take_arrow_many(again, [10, 10])
    assert rows == [0] and batch.num_rows == 0
    assert isinstance(again[0].pending_error, CorruptRecordError)


def test_discarded_and_bad_arguments() -> None:
    many = _cursors(SETS)
    many[0].discard()
    batch, rows = take_arrow_many(many, [10, 10, 10, 10])
    assert rows == [0] and batch.num_rows == 0
    with pytest.raises(ValueError, match="2 cursors but 1 budgets"):
        take_arrow_many(_cursors(SETS[:2]), [1])
    with pytest.raises(ValueError, match="max_records must be >= 0, got -1"):
        take_arrow_many(_cursors(SETS[:1]), [-1])
    batch, rows = take_arrow_many([], [])
    assert rows == [] and batch.num_rows == 0
