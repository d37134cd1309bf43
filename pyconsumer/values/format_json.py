"""The ``json`` format: JSON text (optionally in confluent-kafka's JSONSerializer framing) into
the struct of a given schema, with Spark ``from_json``'s results."""
from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from pyconsumer.errors import ConfigurationError
from pyconsumer.values.avro_decode import SchemaId
from pyconsumer.values.format_api import ColumnDecoder, ColumnSpec, ValueFormat, Words
from pyconsumer.values.framing import unframed_json
from pyconsumer.values.json import decode_json
from pyconsumer.values.json_rows import json_type
from pyconsumer.values.registry import SchemaRegistryClient, SubjectNameStrategy
from pyconsumer.values.result import Decoded
from pyconsumer.values.schema import to_arrow_schema

__all__ = ["JsonFormat"]

#: what a front end takes as a JSON schema: the settings take objects, the source's options text
_SCHEMA_FORMS = {False: "a Spark DDL string, a StructType or a pyarrow schema",
                 True: "a Spark DDL string, or a StructType's JSON"}


class _JsonColumn:
    def __init__(self, column: str, schema: Any) -> None:
        try:
            to_arrow_schema(schema)                 # a bad DDL fails here, not at the first poll
        except ConfigurationError as e:
            raise ConfigurationError(f"{column}.schema is not a usable JSON schema: {e}") from None
        self.schema = schema

    def arrow_type(self, topic: str) -> pa.DataType:
        return json_type(self.schema)

    def decode(self, topic: str, raw: pa.Array, batch: pa.RecordBatch, ids: set[SchemaId]) -> Decoded:
        return decode_json(unframed_json(raw, ids), self.schema)


class JsonFormat(ValueFormat):
    """JSON into a struct of the given schema (required)."""

    name = "json"
    takes_schema = True

    def missing_schema(self, framing: str, words: Words) -> str | None:
        return f"{words('format')}=json needs {words('schema')} ({_SCHEMA_FORMS[words.source]})"

    def schema_from_text(self, text: str) -> Any:
        """A Spark DDL string (kept as text), or a StructType's JSON (``df.schema.json()``,
        what from_json also takes) as a pyarrow schema."""
        if text.lstrip().startswith("{"):
            return _struct_type_json(text)
        try:
            to_arrow_schema(text)
        except ConfigurationError as e:
            raise ConfigurationError(f"is not a Spark DDL schema: {e}") from None
        return text

    def column(self, column: str, spec: ColumnSpec, registry: SchemaRegistryClient | None,
               strategy: SubjectNameStrategy | str | None) -> ColumnDecoder:
        return _JsonColumn(column, spec.schema)


def _struct_type_json(text: str) -> pa.Schema:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigurationError(f"starts like a StructType's JSON but is not JSON: {e}") from None
    if not isinstance(obj, dict) or obj.get("type") != "struct":
        raise ConfigurationError("a JSON schema here is a StructType's JSON "
                                 '({"type": "struct", "fields": [...]}); or give a DDL string')
    try:
        # pyspark only here: the source's options give a StructType as its JSON text
        from pyspark.sql.types import StructType
    except ImportError:
        raise ConfigurationError("reading a StructType's JSON needs pyspark; give a DDL string") from None
    try:
        return to_arrow_schema(StructType.fromJson(obj))
    except ConfigurationError:
        raise
    except Exception as e:      # pyspark's own errors for a malformed StructType JSON
        raise ConfigurationError(f"is not a StructType's JSON: {e}") from None
