"""Typed values: Kafka record values decoded to Arrow (JSON, Avro, Protobuf, string).

Core-level: imports only :mod:`pyconsumer.errors`, :mod:`pyconsumer.structs`, :mod:`pyconsumer.records`,
pyarrow and the stdlib. Every decoder returns a :class:`~pyconsumer.values.result.Decoded`
(the typed array, a bad row null, and the reasons by row index); :func:`apply_mode` then applies
Spark's PERMISSIVE / DROPMALFORMED / FAILFAST to it.

- :mod:`~pyconsumer.values.schema`: a Spark DDL string, a pyspark StructType or a pyarrow schema
  -> a pyarrow schema; :func:`infer_schema` from a JSON sample (once, on the driver).
- :mod:`~pyconsumer.values.json`: :func:`decode_json` (Spark ``from_json`` results), by a
  pyarrow fast path (:mod:`~pyconsumer.values.json_blocks`) and a Python reader following
  Spark's rules (:mod:`~pyconsumer.values.json_rows`, :func:`decode_json_rows`).
- :mod:`~pyconsumer.values.string`: :func:`decode_string`.
- :mod:`~pyconsumer.values.protobuf` (descriptors -> Spark ``from_protobuf``'s types and the
  decoder's program) and :mod:`~pyconsumer.values.protobuf_decode` (:func:`decode_protobuf`
  over pyext/protobuf.pyx); the ``protobuf`` format in
  :mod:`~pyconsumer.values.format_protobuf`.
- :mod:`~pyconsumer.values.modes`: the bad-record modes.
- :mod:`~pyconsumer.values.formats`: :data:`FORMATS`, every value format by name, each one
  :class:`~pyconsumer.values.format_api.ValueFormat` (its options, Arrow type, decoder, framing).
- :mod:`~pyconsumer.values.typed`: :class:`TypedValues`, the one plan the consumer, the Spark
  source and ingest apply to a batch in Spark's Kafka schema (formats, schemas, registry, mode).
- :mod:`~pyconsumer.values.decode`: :func:`decode_arrow`, :func:`pyconsumer.records.decode_arrow`
  with ``value_format=`` / ``key_format=`` (a record set or log segment to a typed batch).
"""
from __future__ import annotations

from pyconsumer.values.decode import decode_arrow, typed_values
from pyconsumer.values.format_api import ValueFormat
from pyconsumer.values.formats import FORMATS
from pyconsumer.values.json import decode_json
from pyconsumer.values.modes import (
    DEFAULT_CORRUPT_COLUMN,
    MalformedValueError,
    Mode,
    ModeResult,
    apply_mode,
    parse_mode,
)
from pyconsumer.values.result import Decoded
from pyconsumer.values.schema import SchemaError, infer_schema, parse_ddl, to_arrow_schema
from pyconsumer.values.string import decode_string
from pyconsumer.values.typed import ColumnFormat, Format, TypedValues, ValueCounts

__all__ = [
    "Decoded",
    "decode_json", "decode_string",
    "Mode", "ModeResult", "MalformedValueError", "apply_mode", "parse_mode", "DEFAULT_CORRUPT_COLUMN",
    "SchemaError", "infer_schema", "parse_ddl", "to_arrow_schema",
    "ColumnFormat", "Format", "TypedValues", "ValueCounts", "FORMATS", "ValueFormat",
    "decode_arrow", "typed_values",
]
