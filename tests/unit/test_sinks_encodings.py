"""The data files' column encodings: chosen per file from its first batch, read back unchanged."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from pyconsumer.sinks.files import (
    FileRoller,
    choose_encodings,
    leaf_paths,
    offset_ranges,
    one_value,
    single_partition,
    value_bytes,
)

N = 10_000

SCHEMA = pa.schema([
    ("key", pa.binary()),
    ("value", pa.binary()),
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("offset", pa.int64()),
    ("timestamp", pa.timestamp("us", tz="UTC")),
    ("typed", pa.struct([("country", pa.string()), ("tags", pa.list_(pa.string())), ("id", pa.int64()),
                         ("blob", pa.binary())])),
])


def batch(n: int = N, start: int = 0, partition: int = 0, topic: str = "t") -> pa.RecordBatch:
    return pa.record_batch([
        pa.array([b"k%09d" % i for i in range(start, start + n)]),            # all distinct
        pa.array([b"v%d" % (i % 4096) for i in range(start, start + n)]),      # a 4096-value cycle
        pa.array([topic] * n),
        pa.array([partition] * n, pa.int32()),
        pa.array(range(start, start + n), pa.int64()),
        pa.array([1_700_000_000_000_000 + i * 1000 for i in range(start, start + n)], pa.timestamp("us", tz="UTC")),
        pa.array([{"country": ["fr", "de", "nl"][i % 3], "tags": ["a", "b"][: i % 3], "id": i * 7,
                   "blob": random.Random(i).randbytes(40) if i % 5 else None} for i in range(n)],
                 SCHEMA.field("typed").type),
    ], schema=SCHEMA)


def test_distinct_columns_lose_the_dictionary_repeating_ones_keep_it() -> None:
    enc = choose_encodings(batch(), leaf_paths(SCHEMA))
    assert enc.encoding == {"key": "PLAIN", "offset": "DELTA_BINARY_PACKED", "timestamp": "DELTA_BINARY_PACKED",
                            "typed.id": "DELTA_BINARY_PACKED", "typed.blob": "PLAIN"}
    # the value cycles through 4096 values: a prefix of the batch would look all distinct
    assert enc.dictionary == ["value", "topic", "partition", "typed.country", "typed.tags.list.element"]
    # random bytes do not compress; keys, repeating values and text do
    assert enc.uncompressed == ["typed.blob"]
    # opaque, mostly distinct binary leaves: no footer min/max; text and numbers keep theirs
    assert enc.no_statistics == ["key", "typed.blob"]
    assert choose_encodings(batch(), leaf_paths(SCHEMA), footer_bounds=True).no_statistics == []


def test_a_sliced_column_is_judged_on_its_own_bytes() -> None:
    # the first half random, the second a repeated text: a slice of each judged alone
    blobs = [random.Random(i).randbytes(50) for i in range(300)] + [b"abc" * 20] * 300
    schema = pa.schema([("b", pa.binary())])
    whole = pa.record_batch([pa.array(blobs)], schema=schema)
    assert choose_encodings(whole.slice(0, 300), ["b"]).uncompressed == ["b"]
    assert choose_encodings(whole.slice(300, 300), ["b"]).uncompressed == []


def test_compressibility_is_judged_on_contiguous_runs_as_pages_hold_them() -> None:
    """Random payloads drawn from a pool: rows far apart repeat (a strided sample of them
    compresses), but a page's contiguous rows do not, and snappy sees only those."""
    pool = [random.Random(i).randbytes(90) for i in range(4096)]
    rows = [b"%010d" % i + pool[i & 4095] for i in range(65_536)]   # sampled every 32nd row
    column = pa.array(rows, pa.binary())
    schema = pa.schema([("v", pa.binary())])
    assert choose_encodings(pa.record_batch([column], schema=schema), ["v"]).uncompressed == ["v"]
    # the same payloads each written four times in a row: contiguous repeats, worth snappy
    repeated = pa.array([r for r in rows[:16_384] for _ in range(4)], pa.binary())
    assert choose_encodings(pa.record_batch([repeated], schema=schema), ["v"]).uncompressed == []
    # nulls have no bytes: judged on the values there are
    with_nulls = pa.array([None if i % 3 == 0 else r for i, r in enumerate(rows)], pa.binary())
    assert choose_encodings(pa.record_batch([with_nulls], schema=schema), ["v"]).uncompressed == ["v"]


def test_distinct_floats_and_dates_lose_the_dictionary_too() -> None:
    schema = pa.schema([("amount", pa.float64()), ("ratio", pa.float32()), ("day", pa.date32()),
                        ("level", pa.float64())])
    n = 5000
    columns = [pa.array([i / 7 for i in range(n)]), pa.array([i / 3 for i in range(n)], pa.float32()),
               pa.array(range(n), pa.int32()).cast(pa.date32()), pa.array([float(i % 5) for i in range(n)])]
    enc = choose_encodings(pa.record_batch(columns, schema=schema), schema.names)
    assert enc.encoding == {"amount": "PLAIN", "ratio": "PLAIN", "day": "DELTA_BINARY_PACKED"}
    assert enc.dictionary == ["level"]


def test_a_small_first_batch_keeps_every_dictionary() -> None:
    enc = choose_encodings(batch(20), leaf_paths(SCHEMA))
    assert enc.encoding == {} and enc.uncompressed == []
    assert enc.dictionary == leaf_paths(SCHEMA)


def on_disk(path: str) -> tuple[dict[str, set[str]], dict[str, set[str]], dict[str, set[bool]]]:
    """Each leaf column's encodings, compressions and whether it has min/max statistics, over
    the file's row groups."""
    meta = pq.read_metadata(path)
    encodings: dict[str, set[str]] = {}
    compressions: dict[str, set[str]] = {}
    bounds: dict[str, set[bool]] = {}
    for rg in range(meta.num_row_groups):
        for c in range(meta.num_columns):
            col = meta.row_group(rg).column(c)
            encodings.setdefault(col.path_in_schema, set()).update(col.encodings)
            compressions.setdefault(col.path_in_schema, set()).add(col.compression)
            bounds.setdefault(col.path_in_schema, set()).add(
                col.is_stats_set and col.statistics.has_min_max)
    return encodings, compressions, bounds


def test_the_files_carry_the_chosen_encodings_and_read_back_unchanged(tmp_path: Path) -> None:
    roller = FileRoller(pafs.LocalFileSystem(), str(tmp_path), SCHEMA, 1 << 30, directory=lambda _: "")
    sent = [batch(N, i * N) for i in range(3)]
    for b in sent:
        roller.add((), b)
    [f] = roller.finish()
    path = os.path.join(tmp_path, f.path)
    encodings, compression, bounds = on_disk(path)
    assert "DELTA_BINARY_PACKED" in encodings["offset"] and "DELTA_BINARY_PACKED" in encodings["timestamp"]
    assert not {"PLAIN_DICTIONARY", "RLE_DICTIONARY"} & encodings["key"]
    for dictionary_coded in ("value", "topic", "partition", "typed.country"):
        assert {"PLAIN_DICTIONARY", "RLE_DICTIONARY"} & encodings[dictionary_coded], dictionary_coded
    assert compression["typed.blob"] == {"UNCOMPRESSED"}
    assert all(compression[c] == {"SNAPPY"} for c in compression if c != "typed.blob")
    assert {c for c, has in bounds.items() if has == {False}} == {"key", "typed.blob"}
    assert all(bounds[c] == {True} for c in ("value", "topic", "partition", "offset", "timestamp", "typed.id"))
    assert pq.read_table(path).equals(pa.Table.from_batches(sent))
    assert f.rows == 3 * N and f.offsets[0].first == 0 and f.offsets[0].last == 3 * N - 1


def test_offset_ranges_of_one_partition_and_of_many() -> None:
    assert single_partition(batch(100, 7, partition=3)) == ("t", 3)
    assert offset_ranges(batch(100, 7, partition=3)) == {("t", 3): (7, 106)}
    mixed = pa.Table.from_batches([batch(5, 0, 1), batch(5, 100, 2), batch(5, 50, 1, topic="u")]).combine_chunks()
    [one] = mixed.to_batches()
    assert single_partition(one) is None
    assert offset_ranges(one) == {("t", 1): (0, 4), ("t", 2): (100, 104), ("u", 1): (50, 54)}
    same_partition_two_topics = pa.Table.from_batches([batch(5, 0, 1), batch(5, 9, 1, topic="u")]).combine_chunks()
    [two] = same_partition_two_topics.to_batches()
    assert single_partition(two) is None
    assert offset_ranges(two) == {("t", 1): (0, 4), ("u", 1): (9, 13)}


def test_one_value_and_value_bytes_on_slices_nulls_and_types() -> None:
    words = pa.array(["a", "bb", "a", "ccc", None, "dddd"])
    assert value_bytes(words) == 1 + 2 + 1 + 3 + 4
    assert value_bytes(words.slice(1, 3)) == 2 + 1 + 3
    assert value_bytes(pa.array([b"xy", b"", b"z"]).slice(1)) == 1
    assert value_bytes(pa.array(["ab", "c"], pa.large_string())) == 3
    assert value_bytes(words.slice(0, 0)) == 0
    assert one_value(pa.array(["t"] * 5)) == "t"
    assert one_value(pa.array(["t", "u", "t"])) is None              # first and last agree
    assert one_value(pa.array(["t", None, "t"])) is None
    assert one_value(words.slice(0, 1)) == "a" and one_value(words.slice(0, 0)) is None
    assert one_value(pa.array([3, 3], pa.int32())) == 3


def test_an_empty_batch_has_no_partition() -> None:
    assert single_partition(batch(0)) is None
