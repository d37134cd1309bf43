"""Record sets (a Fetch response's ``records`` field for one partition) decoded.

Thin public layer over the compiled :mod:`pyconsumer._records` (sources in ``pyext/``):

* :func:`decode_records` -> ``list[ConsumerRecord]`` (what ``poll()`` returns per partition);
* :func:`decode_arrow` -> ``pyarrow.RecordBatch`` in Spark's Kafka source schema
  (:func:`kafka_arrow_schema`), built without a Python object per record;
* :class:`CompletedFetch` -> a per-partition cursor handing out at most N records (or rows)
  per call, the way Java's Fetcher drains a completed fetch under ``max.poll.records``;
  :func:`take_arrow_many` takes several cursors in turn into one RecordBatch (no
  concatenation: a poll over many small partitions);
* :class:`RecordSetIndex` -> where a record set's batches are, from one pass over their
  headers: the prefetch end, the record bound, cut points for a parallel take, byte counts;
* :func:`decode_fetch_response` -> a Fetch response body (the dict
  :mod:`pyconsumer.protocol`'s generic codec gives, which it stands in for) decoded in one
  pass, with each partition's :class:`RecordSetIndex` built in it
  (:attr:`FetchResponseBody.indexes`); malformed bytes raise
  :class:`~pyconsumer.errors.KafkaProtocolError` naming the field and byte.

All of them accept magic v2 record batches and legacy v0/v1 message sets (compressed
wrappers included), check CRCs when ``check_crcs`` (CRC32C for v2, CRC32 for v0/v1),
decompress gzip, snappy (raw and xerial framing), lz4 (frame, including Kafka's broken
magic-0 header checksum) and zstd, skip control batches, drop aborted transactions under
``isolation_level="read_committed"`` given the response's ``aborted_transactions``
(``[(producer_id, first_offset)]``), skip records below ``fetch_offset``, and stop at a
truncated trailing batch (a fetch cut at ``max.partition.fetch.bytes``;
:attr:`CompletedFetch.incomplete_batch` then gives its offset, declared size and the bytes
that arrived). Malformed or truncated data raises :class:`pyconsumer.errors.CorruptRecordError`
(an unknown codec, :class:`~pyconsumer.errors.UnsupportedCodecError`) naming topic, partition
and offset; a deserializer that raises becomes
:class:`~pyconsumer.errors.RecordDeserializationError`. A CompletedFetch hands out the good
records before bad data first; it then stays at the first record not handed out (not drained,
``next_fetch_offset`` unchanged) and every later take raises the same error.

Limits: Arrow ``binary`` columns use int32 offsets, so one RecordBatch holds at most 2 GiB
of keys (and of values). :func:`decode_arrow` raises ``OverflowError`` for a larger record
set; :meth:`CompletedFetch.take_arrow` instead ends the batch early and hands out the rest
on the next call. Freed column buffers of 1 MiB or more are kept for reuse, up to
:func:`get_buffer_cache_limit` bytes (256 MiB by default; :func:`set_buffer_cache_limit`
changes it, 0 disables): a fresh large buffer costs more in page faults than the decoding that
fills it. A compressed batch may decompress to at most
:func:`get_max_decompressed_size` bytes (256 MiB by default,
:func:`set_max_decompressed_size` changes it); more is reported as corruption.
"""
from __future__ import annotations

import pyarrow as pa

from pyconsumer import errors as _errors
from pyconsumer._records import (
    FETCH_RESPONSE_VERSIONS,
    AvroProgram,
    CompletedFetch,
    ConsumerRecord,
    FetchResponseBody,
    ProtobufProgram,
    JsonProgram,
    RecordSetIndex,
    _set_error_classes,
    avro_decode,
    avro_frame_scan,
    decode_arrow,
    decode_fetch_response,
    decode_records,
    get_buffer_cache_limit,
    get_max_decompressed_size,
    json_decode,
    kafka_arrow_schema,
    protobuf_decode,
    protobuf_frame_scan,
    records_columns,
    records_with,
    set_buffer_cache_limit,
    set_max_decompressed_size,
    take_arrow_many,
)

# The extension imports nothing from pyconsumer (no import cycle, either can be imported
# first): it raises the classes it is given here.
_set_error_classes(_errors.CorruptRecordError, _errors.UnsupportedCodecError,
                   _errors.RecordDeserializationError, _errors.KafkaProtocolError)


def empty_batch(schema: pa.Schema) -> pa.RecordBatch:
    """A batch of no rows with ``schema``, made from the schema alone: converting Python
    values (``from_pylist([])``, ``pa.array([])``) makes pyarrow import pandas the first time,
    half a second on a process's first poll."""
    return pa.RecordBatch.from_arrays([pa.nulls(0, f.type) for f in schema], schema=schema)

__all__ = [
    "FETCH_RESPONSE_VERSIONS",
    "AvroProgram",
    "CompletedFetch",
    "ConsumerRecord",
    "FetchResponseBody",
    "ProtobufProgram",
    "JsonProgram",
    "RecordSetIndex",
    "avro_decode",
    "avro_frame_scan",
    "decode_arrow",
    "decode_fetch_response",
    "decode_records",
    "empty_batch",
    "get_buffer_cache_limit",
    "get_max_decompressed_size",
    "json_decode",
    "kafka_arrow_schema",
    "protobuf_decode",
    "protobuf_frame_scan",
    "records_columns",
    "records_with",
    "set_buffer_cache_limit",
    "set_max_decompressed_size",
    "take_arrow_many",
]
