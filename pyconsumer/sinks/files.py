"""Parquet data files written from Arrow batches: one open file per partition, rolled at a target size."""

from __future__ import annotations

import io
import os
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from pyconsumer.sinks.base import DataFile, LocationError, OffsetRange, PartitionValue

Partition = tuple[tuple[str, PartitionValue], ...]


def resolve(location: str) -> tuple[pafs.FileSystem, str]:
    """The file system and path of a table location: a local path or a URI pyarrow knows."""
    if "://" in location:
        try:
            fs, path = pafs.FileSystem.from_uri(location)
        except (pa.ArrowInvalid, OSError) as e:
            raise LocationError(f"cannot use the table location {location}: {e}") from e
        return fs, path
    return pafs.LocalFileSystem(), os.path.abspath(location)


def check_writable(fs: pafs.FileSystem, path: str, location: str) -> None:
    """Write and delete a small file at the location, so that a run fails before it reads anything."""
    probe = f"{path}/.pyconsumer-probe-{uuid.uuid4().hex}"
    try:
        fs.create_dir(path, recursive=True)
        with fs.open_output_stream(probe) as out:
            out.write(b"")
        fs.delete_file(probe)
    except (OSError, pa.ArrowException) as e:
        raise LocationError(f"cannot write the table location {location}: {e}") from e


@dataclass
class ColumnStats:
    """Statistics of one file's top-level primitive columns: null counts, min and max where orderable.

    Nested columns (struct, list, map) are left out: a count for a whole struct is not what readers expect.
    """

    rows: int = 0
    nulls: dict[str, int] = field(default_factory=dict)
    mins: dict[str, Any] = field(default_factory=dict)
    maxs: dict[str, Any] = field(default_factory=dict)

    def update(self, batch: pa.RecordBatch) -> None:
        self.rows += batch.num_rows
        for name, column in zip(batch.schema.names, batch.columns):
            if pa.types.is_nested(column.type):
                continue
            self.nulls[name] = self.nulls.get(name, 0) + column.null_count
            if not _orderable(column.type) or column.null_count == len(column):
                continue
            # the topic column holds one value: an equality scan, no ordering
            one = one_value(column) if pa.types.is_string(column.type) else None
            if one is not None:
                lo = hi = one
            else:
                mm = pc.min_max(column)
                lo, hi = mm["min"].as_py(), mm["max"].as_py()
            self.mins[name] = lo if name not in self.mins else min(self.mins[name], lo)
            self.maxs[name] = hi if name not in self.maxs else max(self.maxs[name], hi)


def _orderable(t: pa.DataType) -> bool:
    return bool(pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_timestamp(t)
            or pa.types.is_date(t) or pa.types.is_boolean(t))


#: rows of a file's first batch looked at to choose its columns' encodings
ENCODING_SAMPLE = 2048

#: a text or binary column that snappy shrinks by less than this is stored uncompressed
MIN_COMPRESSION_GAIN = 0.1

#: bytes of each contiguous run of a text column that snappy is tried on (its window is 64 KB),
#: and how many runs, spread over the batch
COMPRESSION_PROBE_BYTES = 64 * 1024
COMPRESSION_PROBES = 3


@dataclass(frozen=True)
class Encodings:
    """How a file's leaf columns are written: which keep a dictionary, which have an encoding of
    their own (and no dictionary), which are stored uncompressed (the rest: snappy), which have
    no min/max statistics in the footer (the rest do)."""

    dictionary: list[str]
    encoding: dict[str, str]
    uncompressed: list[str]
    no_statistics: list[str] = field(default_factory=list)

    def writer_options(self, leaves: Sequence[str]) -> dict[str, Any]:
        """The ParquetWriter arguments for a file of these leaf columns."""
        return {
            "use_dictionary": self.dictionary,
            "column_encoding": self.encoding,
            "compression": {leaf: "none" if leaf in self.uncompressed else "snappy" for leaf in leaves},
            "write_statistics": [leaf for leaf in leaves if leaf not in self.no_statistics]
            if self.no_statistics else True,
        }


def leaf_paths(schema: pa.Schema) -> list[str]:
    """The Parquet leaf column paths of a schema (a struct's fields, a list's elements...), the
    names the writer's per-column options take."""
    buf = io.BytesIO()
    pq.write_table(schema.empty_table(), buf)
    buf.seek(0)
    parquet_schema = pq.read_metadata(buf).schema
    return [parquet_schema.column(i).path for i in range(len(parquet_schema))]


def choose_encodings(first: pa.RecordBatch, leaves: Sequence[str], *,
                     footer_bounds: bool = False) -> Encodings:
    """The encodings of a file's columns, judged on a sample of its first batch.

    The Parquet encoder tries a dictionary on every column and gives it up per column chunk only
    once its dictionary page is full, which for mostly-distinct columns (keys, ids, offsets,
    timestamps) costs about as much as the rest of the encoding. Columns (and fields of structs)
    whose sample is mostly distinct are written without one: integers, dates and timestamps
    delta-encoded (offsets and times of a partition rise, so their deltas pack small), text,
    binary and floating point plain. Text and binary that snappy barely shrinks (compressed or encrypted payloads)
    are stored uncompressed: compressing them costs a third of the encoding and saves nothing.
    That is judged on contiguous runs of the batch, as a page holds them: rows sampled far
    apart would show repeats (a cycle, a pool of payloads) that snappy never sees in a page.
    Mostly-distinct binary leaves (Kafka's keys and values, opaque payloads) get no footer
    min/max: it prunes nothing there and costs a tenth of the encoding; Delta's own file
    statistics never hold binary bounds. ``footer_bounds`` keeps them for a table format
    whose file metrics are read from the footers (Iceberg's bounds).
    Every other leaf (inside lists and maps too) keeps the dictionary and snappy.
    """
    # rows spread over the whole batch: a repeating pattern longer than a prefix still shows
    step = max(1, first.num_rows // ENCODING_SAMPLE)
    sample = first.take(pa.array(range(0, first.num_rows, step)[:ENCODING_SAMPLE], pa.int64()))
    encoding: dict[str, str] = {}
    uncompressed: list[str] = []
    no_statistics: list[str] = []

    def judge(path: str, column: pa.Array, whole: pa.Array) -> None:
        t = column.type
        if pa.types.is_struct(t):
            for i in range(t.num_fields):
                judge(f"{path}.{t.field(i).name}", column.field(i), whole.field(i))
            return
        texts = pa.types.is_binary(t) or pa.types.is_string(t)
        numbers = pa.types.is_int32(t) or pa.types.is_int64(t) or pa.types.is_timestamp(t) \
            or pa.types.is_date32(t)
        floats = pa.types.is_floating(t)
        if not (texts or numbers or floats) or len(column) - column.null_count < 64:
            return
        if pc.count_distinct(column, mode="only_valid").as_py() * 2 > len(column) - column.null_count:
            encoding[path] = "DELTA_BINARY_PACKED" if numbers else "PLAIN"
            if pa.types.is_binary(t) and not footer_bounds:
                no_statistics.append(path)
        if texts and not _compressible(whole):
            uncompressed.append(path)

    for name, column, whole in zip(sample.schema.names, sample.columns, first.columns):
        judge(name, column, whole)
    return Encodings([leaf for leaf in leaves if leaf not in encoding], encoding, uncompressed,
                     no_statistics)


def _compressible(column: pa.Array) -> bool:
    """Whether snappy shrinks a few contiguous runs of the column's values (start, middle, end)
    by MIN_COMPRESSION_GAIN."""
    first, end = _offsets_of(column)
    total = end - first
    if total == 0:
        return True
    n = len(column)
    rows = max(1, n * COMPRESSION_PROBE_BYTES // total)
    starts = sorted({round(k * (n - rows) / max(1, COMPRESSION_PROBES - 1))
                     for k in range(COMPRESSION_PROBES)} if rows < n else {0})
    raw = packed = 0
    for start in starts:
        data = _value_data(column.slice(start, rows))
        raw += data.size
        packed += pa.compress(data, "snappy").size
    return raw == 0 or packed <= raw * (1 - MIN_COMPRESSION_GAIN)


def _offsets_of(column: pa.Array) -> tuple[int, int]:
    """Where a (sliced) binary or string column's values start and end in its data buffer."""
    offsets = column.buffers()[1]
    if offsets is None:
        return 0, 0

    def at(row: int) -> int:
        return int.from_bytes(offsets.slice((column.offset + row) * 4, 4).to_pybytes(), "little",
                              signed=True)

    return at(0), at(len(column))


def _value_data(column: pa.Array) -> pa.Buffer:
    """The bytes of a (sliced) binary or string column's values, one buffer (no copy)."""
    values = column.buffers()[2]
    first, end = _offsets_of(column)
    return values.slice(first, end - first) if values is not None else pa.py_buffer(b"")


def single_partition(batch: pa.RecordBatch) -> tuple[str, int] | None:
    """The (topic, partition) of a batch whose rows all have the same, else None.

    A task's batches mostly come one partition each; a min/max scan and a comparison are much
    cheaper than a grouping.
    """
    if batch.num_rows == 0:
        return None
    parts = pc.min_max(batch.column("partition"))
    if parts["min"] != parts["max"]:
        return None
    topic = one_value(batch.column("topic"))
    return None if topic is None else (topic, parts["min"].as_py())


def one_value(column: pa.Array) -> Any:
    """The value every row of a column holds; None when they differ or one is null. (An equality
    scan: a text column's min/max compares its values in order, several times slower.)"""
    if len(column) == 0 or column.null_count:
        return None
    first = column[0]
    if first != column[len(column) - 1] or not pc.all(pc.equal(column, first)).as_py():
        return None
    return first.as_py()


def value_bytes(column: pa.Array) -> int:
    """The bytes of a binary or string column's values (nulls count 0), from its offsets
    without a scan when it has no nulls."""
    if column.null_count or not (pa.types.is_binary(column.type) or pa.types.is_string(column.type)):
        return int(pc.sum(pc.binary_length(column)).as_py() or 0)
    first, end = _offsets_of(column)
    return end - first


def offset_ranges(batch: pa.RecordBatch) -> dict[tuple[str, int], tuple[int, int]]:
    """First and last offset of each (topic, partition) in a batch of Kafka records."""
    one = single_partition(batch)
    if one is not None:
        mm = pc.min_max(batch.column("offset"))
        return {one: (mm["min"].as_py(), mm["max"].as_py())}
    t = pa.table([batch.column("topic"), batch.column("partition"), batch.column("offset")],
                 names=["topic", "partition", "offset"])
    g = t.group_by(["topic", "partition"], use_threads=False).aggregate([("offset", "min"), ("offset", "max")])
    return {
        (topic, part): (lo, hi)
        for topic, part, lo, hi in zip(g.column("topic").to_pylist(), g.column("partition").to_pylist(),
                                       g.column("offset_min").to_pylist(), g.column("offset_max").to_pylist())
    }


@dataclass
class _OpenFile:
    relpath: str
    stream: Any
    writer: pq.ParquetWriter
    stats: ColumnStats = field(default_factory=ColumnStats)
    offsets: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)


class FileRoller:
    """Writes batches into one Parquet file per partition; a file is closed once it reaches target_size bytes.

    directory(partition) gives a partition's folder under the root ('' for none); drop names the columns
    of the batches that the files leave out (Delta keeps partition columns in its log only);
    describe(stats) is the table format's statistics text of a file; footer_bounds keeps min/max
    in the footers for every column (see choose_encodings).
    """

    def __init__(
        self,
        fs: pafs.FileSystem,
        root: str,
        file_schema: pa.Schema,
        target_size: int,
        directory: Callable[[Partition], str],
        drop: Sequence[str] = (),
        describe: Callable[[ColumnStats], str] = lambda _: "",
        footer_bounds: bool = False,
    ) -> None:
        if target_size <= 0:
            raise ValueError(f"target file size must be positive, not {target_size}")
        self._fs, self._root, self._schema, self._target = fs, root, file_schema, target_size
        self._directory, self._drop, self._describe = directory, list(drop), describe
        self._footer_bounds = footer_bounds
        self._leaves = leaf_paths(file_schema)
        self._open: dict[Partition, _OpenFile] = {}
        self._done: list[DataFile] = []
        self._written: list[str] = []

    def add(self, partition: Partition, batch: pa.RecordBatch) -> None:
        """Append a batch whose rows all belong to the partition."""
        if batch.num_rows == 0:
            return
        # slices of about the target size, so that a big batch still rolls into files of that size
        per_slice = batch.num_rows
        if batch.nbytes > self._target:
            per_slice = max(1, batch.num_rows * self._target // batch.nbytes)
        for start in range(0, batch.num_rows, per_slice):
            self._add_slice(partition, batch.slice(start, per_slice))

    def _add_slice(self, partition: Partition, batch: pa.RecordBatch) -> None:
        data = batch.drop_columns(self._drop) if self._drop else batch
        data = data.select(self._schema.names)
        f = self._open.get(partition)
        if f is None:
            f = self._open[partition] = self._new_file(partition, data)
        for tp, (lo, hi) in offset_ranges(batch).items():
            old = f.offsets.get(tp)
            f.offsets[tp] = (lo, hi) if old is None else (min(old[0], lo), max(old[1], hi))
        f.stats.update(data)
        f.writer.write_batch(data)
        if f.stream.tell() >= self._target:
            self._close(partition)

    def _new_file(self, partition: Partition, first: pa.RecordBatch) -> _OpenFile:
        folder = self._directory(partition)
        relpath = f"{folder}/" if folder else ""
        relpath += f"part-{uuid.uuid4().hex}.parquet"
        full = f"{self._root}/{relpath}"
        self._fs.create_dir(full.rpartition("/")[0], recursive=True)
        self._written.append(full)
        stream = self._fs.open_output_stream(full)
        writer = pq.ParquetWriter(stream, self._schema,
                                  **choose_encodings(first, self._leaves, footer_bounds=self._footer_bounds)
                                  .writer_options(self._leaves))
        return _OpenFile(relpath, stream, writer)

    def _close(self, partition: Partition) -> None:
        f = self._open.pop(partition)
        f.writer.close()
        size = f.stream.tell()
        f.stream.close()
        self._done.append(DataFile(
            path=f.relpath,
            size=size,
            rows=f.stats.rows,
            partition=partition,
            offsets=tuple(OffsetRange(t, p, lo, hi) for (t, p), (lo, hi) in sorted(f.offsets.items())),
            modification_time=int(time.time() * 1000),
            stats=self._describe(f.stats),
        ))

    def finish(self) -> list[DataFile]:
        for partition in list(self._open):
            self._close(partition)
        return self._done

    def abort(self) -> None:
        """Close and delete every file written: none is committed, none is left behind."""
        for f in self._open.values():
            try:
                f.writer.close()
                f.stream.close()
            except (OSError, pa.ArrowException):
                pass
        self._open.clear()
        delete_files(self._fs, self._written)


def delete_files(fs: pafs.FileSystem, paths: Sequence[str]) -> None:
    for path in paths:
        try:
            fs.delete_file(path)
        except FileNotFoundError:
            pass
