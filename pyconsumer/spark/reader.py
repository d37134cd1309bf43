"""Worker side: read one offset range into Arrow record batches, stopping exactly at its end.

A range ``[start, end)`` is read with an assign-mode :class:`~pyconsumer.KafkaConsumer` and
``poll_arrow`` (the Cython decoder writes straight into Arrow buffers). The read stops when the
consumer's position reaches ``end``: the position moves past transaction markers, aborted
batches (read_committed) and compaction gaps with the batches that hold them, so a range
ending on any of them ends without waiting and without an extra lookup. Rows past ``end``
(the batch holding ``end`` is decoded whole) are cut off.

Spark reuses Python workers across tasks, so consumers are cached per worker process, keyed
by their settings, and reused by the next task with the same settings (Spark's executor
consumer pool): no new connections, no new metadata, per task.
"""
from __future__ import annotations

import collections
import logging
import threading
import time
import uuid
from collections.abc import Iterator
import pyarrow as pa
import pyarrow.compute as pc

from pyconsumer.consumer.consumer import KafkaConsumer
from pyconsumer.errors import KafkaTimeoutError, OffsetOutOfRangeError
from pyconsumer.spark.offsets import report_data_loss
from pyconsumer.spark.options import SourceOptions
from pyconsumer.spark.planning import OffsetRange
from pyconsumer.structs import TopicPartition

__all__ = ["read_range", "BATCH_ROWS", "consumer_cache_size", "close_cached_consumers"]

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


def _rows_before(batch: pa.RecordBatch, end: int) -> int:
    """How many leading rows of ``batch`` (one partition, offset order) have offset < end."""
    offsets = batch.column("offset")
    if offsets[len(offsets) - 1].as_py() < end:
        return len(offsets)
    return int(pc.sum(pc.less(offsets, end)).as_py() or 0)


def read_range(r: OffsetRange, options: SourceOptions, *, batch_rows: int = BATCH_ROWS,
               include_headers: bool | None = None) -> Iterator[pa.RecordBatch]:
    """The records of ``r`` in offset order, as RecordBatches in Spark's Kafka schema (with
    headers when includeHeaders, or when ``include_headers`` says so) of at most
    ``batch_rows`` rows, each as one poll returned it (no copy); polls of fewer than
    ``batch_rows // 8`` rows are gathered, so only the last batch may be smaller. Data lost
    below the log start or beyond the log end is reported per failOnDataLoss."""
    if r.size <= 0:
        return
    if include_headers is None:
        include_headers = options.include_headers
    key, consumer = _checkout(options)
    ok = False
    try:
        yield from _read(consumer, r, options, batch_rows, include_headers)
        ok = True
    finally:
        if ok:
            _checkin(key, consumer)
        else:       # a failed or abandoned read leaves the consumer in an unknown state
            consumer.close(timeout_ms=1000)


def _read(consumer: KafkaConsumer, r: OffsetRange, options: SourceOptions, batch_rows: int,
          include_headers: bool) -> Iterator[pa.RecordBatch]:
    tp = TopicPartition(r.topic, r.partition)
    consumer.assign([tp])
    consumer.seek(tp, r.start)
    position = r.start
    chunks: list[pa.RecordBatch] = []
    rows = 0
    min_rows = max(1, batch_rows // 8)
    timeout_s = options.poll_timeout_ms / 1000.0
    last_progress = time.monotonic()
    empty_polls = 0
    while position < r.end:
        want = max(1, min(batch_rows - rows, r.end - position))
        try:
            batch = consumer.poll_arrow(timeout_ms=min(500, options.poll_timeout_ms),
                                        max_records=want, include_headers=include_headers)
        except OffsetOutOfRangeError:
            position = _skip_lost(consumer, tp, position, r, options)
            continue
        new_position = consumer.position(tp)
        if batch.num_rows:
            keep = _rows_before(batch, r.end)
            if keep:
                chunks.append(batch if keep == batch.num_rows else batch.slice(0, keep))
                rows += keep
            # a poll's batch goes to Spark as it is: gathering polls up to batch_rows cost a
            # concatenation (a fresh 10+ MB copy, page faults) for every other batch, the
            # largest item of the worker's own time; only small fragments are gathered
            if rows >= min_rows:
                yield _concat(chunks)
                chunks, rows = [], 0
        if new_position != position:
            position = new_position
            last_progress = time.monotonic()
            empty_polls = 0
            continue
        # no progress: the data may be gone (log end below our end, topic deleted) or late
        empty_polls += 1
        lag = consumer.current_lag(tp)
        if lag is not None and lag <= 0:
            # the log ends (or, read_committed, is stable) below the range's end
            report_data_loss(options, f"Cannot read {r.topic}-{r.partition} offsets "
                                      f"{position} to {r.end - 1}: the log now ends at {position}")
            break
        if empty_polls % 4 == 0 and not consumer.partitions_for(r.topic, timeout_ms=5000):
            report_data_loss(options, f"Topic {r.topic} was deleted while offsets {position} "
                                      f"to {r.end - 1} of partition {r.partition} were unread")
            break
        if time.monotonic() - last_progress > timeout_s:
            raise KafkaTimeoutError(
                f"Cannot fetch records of {r.topic}-{r.partition} at offset {position} "
                f"(range {r.start} to {r.end}) within kafkaConsumer.pollTimeoutMs="
                f"{options.poll_timeout_ms} ms")
    if chunks:
        yield _concat(chunks)


def _skip_lost(consumer: KafkaConsumer, tp: TopicPartition, position: int, r: OffsetRange,
               options: SourceOptions) -> int:
    """The fetch position fell out of the log: report the loss and go on from the log start
    (or stop, when the log start is past the range)."""
    earliest = consumer.beginning_offsets([tp])[tp]
    latest = consumer.end_offsets([tp])[tp]
    if position < earliest:
        report_data_loss(options, f"Cannot read {tp.topic}-{tp.partition} offsets {position} "
                                  f"to {min(r.end, earliest) - 1}: the log now starts at "
                                  f"{earliest}")
        new = min(earliest, r.end)
    else:
        report_data_loss(options, f"Cannot read {tp.topic}-{tp.partition} from offset "
                                  f"{position}: the log now ends at {latest}")
        new = r.end
    if new < r.end:
        consumer.seek(tp, new)
    return new
