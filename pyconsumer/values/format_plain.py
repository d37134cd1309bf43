"""The two formats without a schema: ``binary`` (the bytes as read) and ``string`` (UTF-8 checked)."""
from __future__ import annotations

import pyarrow as pa

from pyconsumer.values.avro_decode import SchemaId
from pyconsumer.values.format_api import ColumnDecoder, ColumnSpec, ValueFormat
from pyconsumer.values.registry import SchemaRegistryClient, SubjectNameStrategy
from pyconsumer.values.result import Decoded
from pyconsumer.values.string import decode_string

__all__ = ["BinaryFormat", "StringFormat"]


class _AsRead:
    def arrow_type(self, topic: str) -> pa.DataType:
        return pa.binary()

    def decode(self, topic: str, raw: pa.Array, batch: pa.RecordBatch, ids: set[SchemaId]) -> Decoded:
        return Decoded(raw, {})


class _Utf8:
    def arrow_type(self, topic: str) -> pa.DataType:
        return pa.string()

    def decode(self, topic: str, raw: pa.Array, batch: pa.RecordBatch, ids: set[SchemaId]) -> Decoded:
        return decode_string(raw)


class BinaryFormat(ValueFormat):
    """The bytes as read (Spark's Kafka source): nothing decoded, never a bad row."""

    name = "binary"
    decodes = False

    def column(self, column: str, spec: ColumnSpec, registry: SchemaRegistryClient | None,
               strategy: SubjectNameStrategy | str | None) -> ColumnDecoder:
        return _AsRead()


class StringFormat(ValueFormat):
    """UTF-8 text; a value that is not UTF-8 is a bad row."""

    name = "string"

    def column(self, column: str, spec: ColumnSpec, registry: SchemaRegistryClient | None,
               strategy: SubjectNameStrategy | str | None) -> ColumnDecoder:
        return _Utf8()
