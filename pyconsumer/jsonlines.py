"""Kafka records as JSON objects, the lines ``pyconsumer consume`` prints: raw records
(:func:`record_json`, a ConsumerRecord's bytes) and typed ones (:func:`batch_json`, a
``poll_arrow`` batch whose key or value a format decoded).

Bytes (key, value, header values) are written as a JSON string when they are valid UTF-8,
as ``{"base64": "..."}`` when they are not, and as ``null`` when the Kafka field is null. A
string is therefore always the exact bytes decoded as UTF-8, and an object always binary.
Typed values: see :data:`TYPED_HELP`.
"""
from __future__ import annotations

import base64
import datetime
import decimal
import json
import math
import struct
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["BYTES_HELP", "TIMESTAMP_TYPES", "TYPED_HELP", "batch_json", "encode_bytes",
           "record_json", "typed_json"]


#: ConsumerRecord.timestamp_type -> the Java TimestampType name written in the JSON
TIMESTAMP_TYPES = {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}

BYTES_HELP = ("bytes (key, value, header values) are written as a JSON string when they are "
              "valid UTF-8, as {\"base64\": \"...\"} when they are not, and as null when the "
              "Kafka field is null")


def encode_bytes(data: bytes | None) -> Any:
    """A key/value/header value as JSON: str if valid UTF-8, {"base64": ...} if not, None."""
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


TYPED_HELP = ("with -X value.format / -X key.format (string; json with -X value.schema=DDL; "
              "avro with -X schema.registry.url=URL) keys and values print typed: a struct as "
              "a JSON object, an array as an array, a map as an object, strings, numbers and "
              "booleans as themselves, NaN and infinities as \"NaN\", \"Infinity\", "
              "\"-Infinity\", timestamps as ISO-8601 text in UTC "
              "(\"2024-01-05T10:00:00.250Z\"), dates as \"2024-01-05\", decimals as text "
              "with their exact digits (\"12.30\"), bytes as above. A key or value that does "
              "not decode prints as null with its raw bytes, as above, in \"_corrupt_record\" "
              "(\"_corrupt_record_key\" for a key; -X bad.records.mode=PERMISSIVE, the "
              "default); DROPMALFORMED leaves the record out, FAILFAST stops with exit 1 "
              "naming its offset")

#: the columns of poll_arrow()'s batch that are not a corrupt-record column
_KAFKA_COLUMNS = frozenset(("key", "value", "topic", "partition", "offset", "timestamp",
                            "timestampType", "headers"))


def _float32(value: float) -> float:
    """A float32 as the shortest decimal that reads back as it (0.1, not 0.10000000149...)."""
    single = struct.unpack("f", struct.pack("f", value))[0]
    for digits in range(1, 10):
        short = float(f"{value:.{digits}g}")
        if struct.unpack("f", struct.pack("f", short))[0] == single:
            return short
    return value      # pragma: no cover (9 significant digits always read back)


def _iso(value: datetime.datetime | datetime.time) -> str:
    """ISO-8601 with as many fraction digits as needed, in groups of three (Java's
    Instant.toString): 10:00:00, 10:00:00.250, 10:00:00.250001."""
    micro = value.microsecond
    spec = "seconds" if micro == 0 else "milliseconds" if micro % 1000 == 0 else "microseconds"
    return value.isoformat(timespec=spec)


def typed_json(value: Any, type_: pa.DataType) -> Any:
    """A typed key or value (a Python value of Arrow type ``type_``, as ``to_pylist`` gives
    it) as JSON; see :data:`TYPED_HELP`."""
    import pyarrow as pa

    if value is None:
        return None
    types = pa.types
    if types.is_struct(type_):
        return {f.name: typed_json(value.get(f.name), f.type)
                for f in (type_.field(i) for i in range(type_.num_fields))}
    if types.is_map(type_):
        # JSON keys are text: a non-string key is written as its JSON text (1 -> "1")
        out: dict[str, Any] = {}
        for k, v in value:
            key = typed_json(k, type_.key_type)
            out[key if isinstance(key, str) else json.dumps(key)] = typed_json(v, type_.item_type)
        return out
    if types.is_list(type_) or types.is_large_list(type_) or types.is_fixed_size_list(type_):
        return [typed_json(v, type_.value_type) for v in value]
    if types.is_binary(type_) or types.is_large_binary(type_) or \
            types.is_fixed_size_binary(type_):
        return encode_bytes(value)
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:              # TIMESTAMP_NTZ: no zone to name
            return _iso(value)
        return _iso(value.astimezone(datetime.timezone.utc).replace(tzinfo=None)) + "Z"
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat() if isinstance(value, datetime.date) else _iso(value)
    if isinstance(value, decimal.Decimal):
        return format(value, "f")           # exact: a JSON number would be read as a float
    if isinstance(value, float):
        if not math.isfinite(value):
            return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
        return _float32(value) if types.is_float32(type_) else value
    if isinstance(value, (str, int)):       # bool is an int
        return value
    return str(value)


def batch_json(batch: pa.RecordBatch) -> list[dict[str, Any]]:
    """The JSON objects of a typed poll_arrow() batch (``include_headers=True``), in the
    shape of :func:`record_json`; a corrupt-record column is added to a line only where
    it holds the bytes of a bad key or value."""
    import pyarrow as pa

    schema = batch.schema
    key_type, value_type = schema.field("key").type, schema.field("value").type
    # Spark's Kafka schema keeps microseconds; Kafka's timestamp is milliseconds
    micros = batch.column("timestamp").cast(pa.int64()).to_pylist()
    cols = {name: batch.column(name).to_pylist()
            for name in ("topic", "partition", "offset", "timestampType", "key", "value",
                         "headers")}
    corrupt = [(f.name, f.type, batch.column(f.name).to_pylist())
               for f in schema if f.name not in _KAFKA_COLUMNS]
    out = []
    for i in range(batch.num_rows):
        ts_type = cols["timestampType"][i]
        line = {
            "topic": cols["topic"][i],
            "partition": cols["partition"][i],
            "offset": cols["offset"][i],
            "timestamp": None if micros[i] is None else micros[i] // 1000,
            "timestamp_type": TIMESTAMP_TYPES.get(ts_type, str(ts_type)),
            "key": typed_json(cols["key"][i], key_type),
            "value": typed_json(cols["value"][i], value_type),
            "headers": [[h["key"], encode_bytes(h["value"])] for h in cols["headers"][i] or ()],
        }
        for name, type_, values in corrupt:
            if values[i] is not None:
                line[name] = typed_json(values[i], type_)
        out.append(line)
    return out


def record_json(record: Any) -> dict[str, Any]:
    """The JSON object of one ConsumerRecord (raw bytes: no deserializers)."""
    return {
        "topic": record.topic,
        "partition": record.partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
        "timestamp_type": TIMESTAMP_TYPES.get(record.timestamp_type, str(record.timestamp_type)),
        "key": encode_bytes(record.key),
        "value": encode_bytes(record.value),
        "headers": [[k, encode_bytes(v)] for k, v in (record.headers or ())],
    }
