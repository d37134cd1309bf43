"""The ``avro`` format: Confluent-framed (0x00 + id or 0x01 + GUID, or the schema id in a
header; writer schemas from the registry by id) or bare bodies (``framing="none"``: the given
schema is the writer's). The reader schema is the given one, or the latest of the subject (the
column's subject, or the naming strategy's subject for the topic), fixed at first use for the
life of the plan: every writer resolves into it."""
from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from pyconsumer.errors import ConfigurationError
from pyconsumer.values.avro import AvroSchemaError, Schema, arrow_type, parse_schema, parse_with_references
from pyconsumer.values.avro_decode import SchemaId, UnknownSchemaError, WriterSchemas, decode_avro
from pyconsumer.values.format_api import ColumnDecoder, ColumnSpec, ValueFormat, Words
from pyconsumer.values.framing import SCHEMA_ID_HEADERS, header_ids, prefix_ids
from pyconsumer.values.registry import (
    RegisteredSchema, SchemaNotFoundError, SchemaRegistryClient, SubjectNameStrategy, subject_name,
)
from pyconsumer.values.result import Decoded
from pyconsumer.values.writers import NOT_FOUND_TTL_S, RegistryWriters

__all__ = ["AvroFormat", "NOT_FOUND_TTL_S"]



class AvroFormat(ValueFormat):
    """Avro binary bodies, Confluent-framed (the default) or bare."""

    name = "avro"
    takes_schema = True
    takes_subject = True
    framings = ("confluent", "none")
    schema_type = "AVRO"
    title = "Avro"

    def missing_schema(self, framing: str, words: Words) -> str | None:
        if framing != "none":
            return None                 # the reader is the registry's latest
        if words.source:
            return (f"{words('format')}=avro with {words('framing')}=none needs the writer's "
                    f"Avro schema in {words('schema')}")
        return (f"{words('format')}=avro with {words('framing')}=none needs {words('schema')}, "
                "the writer's Avro schema")

    def needs_registry(self, framing: str, has_schema: bool) -> bool:
        return framing == "confluent"

    def missing_registry(self, words: Words) -> str:
        if words.source:
            return (f"{words('format')}=avro with Confluent framing reads writer schemas by id "
                    "from a Schema Registry: set schema.registry.url (or "
                    f"{words('framing')}=none with {words('schema')})")
        return (f"{words('format')}=avro (Confluent framing) needs schema.registry.url to fetch "
                "writer schemas by id")

    def reads_headers(self, framing: str) -> bool:
        return framing == "confluent"

    def schema_from_text(self, text: str) -> Any:
        try:
            parse_schema(text)
        except AvroSchemaError as e:
            raise ConfigurationError(f"is not a usable Avro schema: {e}") from None
        return text

    def registered_reader(self, text: str, references: Sequence[tuple[str, str]]) -> Any:
        try:
            if references:
                return parse_with_references(text, [ref for _, ref in references])
            return parse_schema(text)
        except AvroSchemaError as e:
            raise ConfigurationError(str(e)) from None

    def column(self, column: str, spec: ColumnSpec, registry: SchemaRegistryClient | None,
               strategy: SubjectNameStrategy | str | None) -> ColumnDecoder:
        return _AvroColumn(column, spec, registry, strategy)


class _AvroColumn:
    """One column's Avro decoding: the reader schema per topic (fixed at first use), one source
    of writer programs per reader."""

    def __init__(self, column: str, spec: ColumnSpec, registry: SchemaRegistryClient | None,
                 strategy: SubjectNameStrategy | str | None) -> None:
        self.column = column
        self.framing = spec.framing
        self.subject = spec.subject
        self.registry = registry
        self.strategy = strategy
        self._given: Schema | None = None if spec.schema is None else _parse(spec.schema, column)
        self._readers: dict[str, tuple[Schema, WriterSchemas | None]] = {}
        self._writers = None if registry is None else RegistryWriters(registry)
        self._lock = threading.Lock()

    def reader(self, topic: str) -> tuple[Schema, WriterSchemas | None]:
        with self._lock:
            found = self._readers.get(topic)
            if found is None:
                reader = self._given if self._given is not None else self._latest(topic)
                source = None if self.framing == "none" else WriterSchemas(
                    self._writer, reader, not_found=(SchemaNotFoundError,))
                found = self._readers[topic] = (reader, source)
            return found

    def arrow_type(self, topic: str) -> pa.DataType:
        return arrow_type(self.reader(topic)[0])

    def _latest(self, topic: str) -> Schema:
        assert self.registry is not None
        subject = self.subject or subject_name(self.strategy, topic, self.column == "key")
        registered = self.registry.latest(subject)
        return _from_registry(registered, f"the latest schema of subject {subject!r}")

    def _writer(self, schema_id: SchemaId) -> Schema:
        assert self._writers is not None
        registered = self._writers.fetch(schema_id)
        if registered.schema_type.upper() != "AVRO":
            raise UnknownSchemaError(f"schema {schema_id} is a {registered.schema_type} schema, not Avro")
        return _from_registry(registered, f"schema {schema_id}")

    def decode(self, topic: str, raw: pa.Array, batch: pa.RecordBatch, ids: set[SchemaId]) -> Decoded:
        reader, source = self.reader(topic)
        if self.framing == "none":
            return decode_avro(raw, framing="none", writer=reader)
        from_headers = header_ids(batch, SCHEMA_ID_HEADERS[self.column])
        ids.update(prefix_ids(raw, from_headers))
        return decode_avro(raw, framing="confluent", reader=reader, source=source, schema_ids=from_headers)


def _parse(schema: Any, column: str) -> Schema:
    # an already parsed schema passes as is: a caller that fixed a registry schema with its
    # references (the Spark source pins each subject's latest on the driver) parses it itself
    if isinstance(schema, Schema):
        return schema
    try:
        return parse_schema(schema)
    except AvroSchemaError as e:
        raise ConfigurationError(f"{column}.schema is not a usable Avro schema: {e}") from None


def _from_registry(registered: RegisteredSchema, what: str) -> Schema:
    if registered.schema_type.upper() != "AVRO":
        raise ConfigurationError(f"{what} is a {registered.schema_type} schema, not Avro")
    refs = [ref.schema.schema_text for ref in registered.dependencies()]
    return parse_with_references(registered.schema_text, refs)
