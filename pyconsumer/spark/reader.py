"""Worker side: read a task's offset ranges into Arrow record batches, each stopping exactly
at its end.

A task's ranges ``[start, end)`` (one topic, one range per partition: one range unless small
ranges were grouped, planning.group_ranges) are read together with an assign-mode
:class:`~pyconsumer.KafkaConsumer` and ``poll_arrow`` (the Cython decoder writes straight into
Arrow buffers; one fetch serves all of them). A partition is done, and paused, when the
consumer's position reaches its ``end``: the position moves past transaction markers, aborted
batches (read_committed) and compaction gaps with the batches that hold them, so a range
ending on any of them ends without waiting and without an extra lookup. Rows past ``end``
(the batch holding ``end`` is decoded whole) are cut off.

Spark reuses Python workers across tasks, so consumers are cached per worker process, keyed
by their settings, and reused by the next task with the same settings (Spark's executor
consumer pool): no new connections, no new metadata, per task.
"""
from __future__ import annotations

import collections
import gc
import logging
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
import pyarrow as pa
import pyarrow.compute as pc

from pyconsumer.consumer.consumer import KafkaConsumer
from pyconsumer.errors import KafkaTimeoutError, OffsetOutOfRangeError
from pyconsumer.spark.offsets import report_data_loss
from pyconsumer.spark.options import SourceOptions
from pyconsumer.spark.planning import OffsetRange
from pyconsumer.structs import TopicPartition

__all__ = ["read_range", "read_ranges", "BATCH_ROWS", "consumer_cache_size", "close_cached_consumers",
           "settle_worker_heap"]

log = logging.getLogger(__name__)

#: at most this many rows per RecordBatch handed to Spark (Spark's Arrow path is fastest
#: near 100k; a poll returns up to this many)
BATCH_ROWS = 100_000

#: consumers kept per worker process
_CACHE_CAPACITY = 8

# Range reads know their data is there: a fetch waits at the broker only once the log end is
# reached, which for a range that ends at the log end is the last, useless, prefetch; the next
# task on this cached consumer waits for it before its own first fetch (Kafka answers a
# connection's requests in order): 5 ms, not 50, a task (measured on Kafka). Larger
# partition fetches give one round trip per ~100k small records instead of per ~8k. Both
# apply only when the user did not set them (kafka.fetch.max.wait.ms, ...).
_READER_DEFAULTS = {
    "fetch.max.wait.ms": "5",
    "max.partition.fetch.bytes": str(16 * 1024 * 1024),
    "fetch.max.bytes": str(64 * 1024 * 1024),
}

_Key = tuple[tuple[str, str], ...]
_cache: collections.OrderedDict[_Key, KafkaConsumer] = collections.OrderedDict()
_cache_lock = threading.Lock()
_heap_settled = False


def settle_worker_heap() -> None:
    """Spark's reused Python worker runs a full ``gc.collect()`` after every task, which walks
    every object its imports made (pyarrow, pyspark, the table libraries: tens of ms a task).
    They live as long as the worker, so the first task moves them into the permanent
    generation (``gc.freeze``); later collections walk only what tasks made since. Called at
    the start of the code that runs in Spark's Python workers, never in a user's process."""
    global _heap_settled
    if not _heap_settled:
        _heap_settled = True
        gc.freeze()


def _settings(options: SourceOptions) -> dict[str, str]:
    settings = dict(_READER_DEFAULTS)
    settings.update(options.consumer_settings())
    settings["auto.offset.reset"] = "none"     # a start out of range is data loss, not a reset
    return settings


def _checkout(options: SourceOptions) -> tuple[_Key, KafkaConsumer]:
    """A cached consumer for these settings (taken out of the cache while in use), or a new one."""
    settings = _settings(options)
    key = tuple(sorted(settings.items()))
    with _cache_lock:
        consumer = _cache.pop(key, None)
    if consumer is None or consumer.closed:
        settings.setdefault("client.id", f"{options.group_id_prefix}-"
                                         f"{uuid.uuid4().hex[:8]}-executor")
        consumer = KafkaConsumer(**settings)
    return key, consumer


def _checkin(key: _Key, consumer: KafkaConsumer) -> None:
    evicted = []
    with _cache_lock:
        old = _cache.pop(key, None)
        if old is not None and old is not consumer:
            evicted.append(old)
        _cache[key] = consumer
        while len(_cache) > _CACHE_CAPACITY:
            evicted.append(_cache.popitem(last=False)[1])
    for c in evicted:
        c.close(timeout_ms=1000)


def consumer_cache_size() -> int:
    with _cache_lock:
        return len(_cache)


def close_cached_consumers() -> None:
    with _cache_lock:
        consumers = list(_cache.values())
        _cache.clear()
    for c in consumers:
        c.close(timeout_ms=1000)


def _concat(chunks: list[pa.RecordBatch]) -> pa.RecordBatch:
    if len(chunks) == 1:
        return chunks[0]
    if hasattr(pa, "concat_batches"):
        return pa.concat_batches(chunks)
    return pa.Table.from_batches(chunks).combine_chunks().to_batches()[0]


def _keep_below_ends(batch: pa.RecordBatch, ends: dict[int, int]) -> pa.RecordBatch:
    """The rows of ``batch`` (one topic, each partition's rows in offset order) below their
    partition's range end (``ends``: partition -> end); the batch itself when all are."""
    offsets = batch.column("offset")
    partitions = batch.column("partition")
    if len(ends) == 1:
        (end,) = ends.values()
        if offsets[len(offsets) - 1].as_py() < end:
            return batch
        return batch.slice(0, int(pc.sum(pc.less(offsets, end)).as_py() or 0))
    keys = list(ends)
    row_ends = pc.take(pa.array([ends[k] for k in keys], pa.int64()),
                       pc.index_in(partitions, value_set=pa.array(keys, partitions.type)))
    below = pc.less(offsets, row_ends)
    if pc.all(below).as_py():
        return batch
    return batch.filter(below)


def read_range(r: OffsetRange, options: SourceOptions, *, batch_rows: int = BATCH_ROWS,
               include_headers: bool | None = None) -> Iterator[pa.RecordBatch]:
    """:func:`read_ranges` of one range."""
    return read_ranges((r,), options, batch_rows=batch_rows, include_headers=include_headers)


def bytes_per_offset(r: OffsetRange, options: SourceOptions, *, sample: int = 500
                     ) -> float | None:
    """Bytes of keys and values per offset at the start of ``r``, from reading at most
    ``sample`` of its offsets (``None`` when none of them holds a record)."""
    head = OffsetRange(r.topic, r.partition, r.start, min(r.end, r.start + sample))
    rows = nbytes = 0
    for batch in read_range(head, options, batch_rows=sample):
        rows += batch.num_rows
        for name in ("key", "value"):
            nbytes += int(pc.sum(pc.binary_length(batch.column(name))).as_py() or 0)
    return nbytes / max(1, head.size) if rows else None


def read_ranges(ranges: Sequence[OffsetRange], options: SourceOptions, *,
                batch_rows: int = BATCH_ROWS, include_headers: bool | None = None
                ) -> Iterator[pa.RecordBatch]:
    """The records of ``ranges`` (one task: one topic, distinct partitions), each partition's
    in offset order, as RecordBatches in Spark's Kafka schema (with headers when
    includeHeaders, or when ``include_headers`` says so) of at most ``batch_rows`` rows, each
    as one poll returned it (no copy); polls of fewer than ``batch_rows // 8`` rows are
    gathered, so only the last batch may be smaller. The partitions are read together, one
    fetch for all, each stopping exactly at its end. Data lost below the log start or beyond
    the log end is reported per failOnDataLoss."""
    todo = [r for r in ranges if r.size > 0]
    if not todo:
        return
    if len({r.topic for r in todo}) != 1 or len({r.partition for r in todo}) != len(todo):
        raise ValueError(f"a task reads distinct partitions of one topic: {list(todo)}")
    if include_headers is None:
        include_headers = options.include_headers
    key, consumer = _checkout(options)
    ok = False
    try:
        yield from _read(consumer, todo, options, batch_rows, include_headers)
        ok = True
    finally:
        if ok:
            _checkin(key, consumer)
        else:       # a failed or abandoned read leaves the consumer in an unknown state
            consumer.close(timeout_ms=1000)


def _read(consumer: KafkaConsumer, ranges: list[OffsetRange], options: SourceOptions,
          batch_rows: int, include_headers: bool) -> Iterator[pa.RecordBatch]:
    topic = ranges[0].topic
    left = {r.partition: r for r in ranges}           # partitions short of their end
    ends = {r.partition: r.end for r in ranges}
    tps = [TopicPartition(topic, p) for p in left]
    consumer.assign(tps)
    consumer.resume(*tps)               # a cached consumer may have paused one in a past task
    for r in ranges:
        consumer.seek(TopicPartition(topic, r.partition), r.start)
    positions = {p: r.start for p, r in left.items()}
    chunks: list[pa.RecordBatch] = []
    rows = 0
    min_rows = max(1, batch_rows // 8)
    timeout_s = options.poll_timeout_ms / 1000.0
    last_progress = time.monotonic()
    empty_polls = 0
    while left:
        want = max(1, min(batch_rows - rows,
                          sum(r.end - positions[p] for p, r in left.items())))
        try:
            batch = consumer.poll_arrow(timeout_ms=min(500, options.poll_timeout_ms),
                                        max_records=want, include_headers=include_headers)
        except OffsetOutOfRangeError:
            _skip_lost(consumer, left, positions, options)
            _finish(consumer, topic, left, positions)
            continue
        if batch.num_rows:
            kept = _keep_below_ends(batch, ends)
            if kept.num_rows:
                chunks.append(kept)
                rows += kept.num_rows
            # a poll's batch goes to Spark as it is: gathering polls up to batch_rows cost a
            # concatenation (a fresh 10+ MB copy, page faults) for every other batch, the
            # largest item of the worker's own time; only small fragments are gathered
            if rows >= min_rows:
                yield _concat(chunks)
                chunks, rows = [], 0
        moved = False
        for p in left:
            now_at = consumer.position(TopicPartition(topic, p))
            if now_at != positions[p]:
                positions[p] = now_at
                moved = True
        _finish(consumer, topic, left, positions)
        if moved:
            last_progress = time.monotonic()
            empty_polls = 0
            continue
        # no progress: the data may be gone (log end below our end, topic deleted) or late
        empty_polls += 1
        for p in list(left):
            lag = consumer.current_lag(TopicPartition(topic, p))
            if lag is not None and lag <= 0:
                # the log ends (or, read_committed, is stable) below the range's end
                report_data_loss(options, f"Cannot read {topic}-{p} offsets {positions[p]} "
                                          f"to {left[p].end - 1}: the log now ends at "
                                          f"{positions[p]}")
                positions[p] = left[p].end
        _finish(consumer, topic, left, positions)
        if left and empty_polls % 4 == 0 and not consumer.partitions_for(topic, timeout_ms=5000):
            for p in sorted(left):
                report_data_loss(options, f"Topic {topic} was deleted while offsets "
                                          f"{positions[p]} to {left[p].end - 1} of partition "
                                          f"{p} were unread")
            break
        if left and time.monotonic() - last_progress > timeout_s:
            p = min(left)
            raise KafkaTimeoutError(
                f"Cannot fetch records of {topic}-{p} at offset {positions[p]} "
                f"(range {left[p].start} to {left[p].end}) within kafkaConsumer.pollTimeoutMs="
                f"{options.poll_timeout_ms} ms")
    if chunks:
        yield _concat(chunks)


def _finish(consumer: KafkaConsumer, topic: str, left: dict[int, OffsetRange],
            positions: dict[int, int]) -> None:
    """Partitions whose position reached their range's end are done: paused, so no fetch
    asks for them again while the others are read."""
    done = [p for p, r in left.items() if positions[p] >= r.end]
    if done:
        consumer.pause(*[TopicPartition(topic, p) for p in done])
        for p in done:
            del left[p]


def _skip_lost(consumer: KafkaConsumer, left: dict[int, OffsetRange],
               positions: dict[int, int], options: SourceOptions) -> None:
    """A fetch position fell out of the log: for every partition still to read whose position
    is outside the log now, report the loss and go on from the log start (or stop, when the
    log start is past the range, or the log ends below the position)."""
    topic = next(iter(left.values())).topic
    tps = [TopicPartition(topic, p) for p in left]
    earliest = consumer.beginning_offsets(tps)
    latest = consumer.end_offsets(tps)
    for tp in tps:
        r, position = left[tp.partition], positions[tp.partition]
        if earliest[tp] <= position <= latest[tp]:
            continue
        if position < earliest[tp]:
            report_data_loss(options, f"Cannot read {tp.topic}-{tp.partition} offsets "
                                      f"{position} to {min(r.end, earliest[tp]) - 1}: the log "
                                      f"now starts at {earliest[tp]}")
            new = min(earliest[tp], r.end)
        else:
            report_data_loss(options, f"Cannot read {tp.topic}-{tp.partition} from offset "
                                      f"{position}: the log now ends at {latest[tp]}")
            new = r.end
        if new < r.end:
            consumer.seek(tp, new)
        positions[tp.partition] = new
