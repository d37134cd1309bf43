"""The ``json`` format: JSON text (optionally in confluent-kafka's JSONSerializer framing) into
the struct of a schema, with Spark ``from_json``'s results. The schema is the given one (a DDL,
a StructType, a pyarrow schema: it always wins), or else the JSON Schema of the column's subject
in the Schema Registry (the subject given, or the naming strategy's for the topic), mapped to
Arrow (:mod:`~pyconsumer.values.json_schema`) and fixed at first use for the life of the plan."""
from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from pyconsumer.errors import ConfigurationError
from pyconsumer.values.avro_decode import SchemaId
from pyconsumer.values.format_api import ColumnDecoder, ColumnSpec, ValueFormat, Words
from pyconsumer.values.framing import unframed_json
from pyconsumer.values.json import decode_json
from pyconsumer.values.json_rows import json_type
from pyconsumer.values.json_schema import JsonSchemaError, json_schema_to_arrow
from pyconsumer.values.registry import RegisteredSchema, SchemaRegistryClient, SubjectNameStrategy, subject_name
from pyconsumer.values.result import Decoded
from pyconsumer.values.schema import to_arrow_schema

__all__ = ["JsonFormat"]

#: what a front end takes as a JSON schema: the settings take objects, the source's options text
_SCHEMA_FORMS = {False: "a Spark DDL string, a StructType or a pyarrow schema",
                 True: "a Spark DDL string, or a StructType's JSON"}


class _JsonColumn:
    def __init__(self, column: str, spec: ColumnSpec, registry: SchemaRegistryClient | None,
                 strategy: SubjectNameStrategy | str | None) -> None:
        self.column = column
        self.given = spec.schema
        if self.given is not None:
            try:
                to_arrow_schema(self.given)          # a bad DDL fails here, not at the first poll
            except ConfigurationError as e:
                raise ConfigurationError(f"{column}.schema is not a usable JSON schema: {e}") from None
        self.subject = spec.subject
        self.registry = registry
        self.strategy = strategy
        self._readers: dict[str, pa.Schema] = {}
        self._lock = threading.Lock()

    def schema(self, topic: str) -> Any:
        """The given schema, or the subject's JSON Schema for ``topic`` (asked once)."""
        if self.given is not None:
            return self.given
        with self._lock:
            found = self._readers.get(topic)
            if found is None:
                assert self.registry is not None
                subject = self.subject or subject_name(self.strategy, topic, self.column == "key")
                found = self._readers[topic] = from_registry(
                    self.registry.latest(subject), f"the latest schema of subject {subject!r}")
            return found

    def arrow_type(self, topic: str) -> pa.DataType:
        return json_type(self.schema(topic))

    def decode(self, topic: str, raw: pa.Array, batch: pa.RecordBatch, ids: set[SchemaId]) -> Decoded:
        return decode_json(unframed_json(raw, ids), self.schema(topic))


def from_registry(registered: RegisteredSchema, what: str) -> pa.Schema:
    """A registered JSON Schema (with its references) as the Arrow schema values decode into."""
    if registered.schema_type.upper() != "JSON":
        raise ConfigurationError(f"{what} is a {registered.schema_type} schema, not a JSON Schema")
    refs = {ref.name: ref.schema.schema_text for ref in registered.dependencies()}
    try:
        return json_schema_to_arrow(registered.schema_text, refs)
    except JsonSchemaError as e:
        raise ConfigurationError(f"{what} has no Arrow type: {e}") from None


class JsonFormat(ValueFormat):
    """JSON into a struct of the given schema, or of the subject's JSON Schema."""

    name = "json"
    takes_schema = True
    takes_subject = True
    schema_type = "JSON"
    title = "a JSON Schema"

    def needs_registry(self, framing: str, has_schema: bool) -> bool:
        return not has_schema

    def missing_registry(self, words: Words) -> str:
        return (f"{words('format')}=json needs {words('schema')} ({_SCHEMA_FORMS[words.source]}), "
                "or schema.registry.url to read the subject's JSON Schema")

    def missing_registry_option(self, words: Words) -> str:
        return words("schema")                  # a DDL is the usual way: name that option

    def registered_reader(self, text: str, references: Sequence[tuple[str, str]]) -> Any:
        try:
            return json_schema_to_arrow(text, dict(references))
        except JsonSchemaError as e:
            raise ConfigurationError(str(e)) from None

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
        return _JsonColumn(column, spec, registry, strategy)


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
