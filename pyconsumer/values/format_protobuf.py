"""The ``protobuf`` format: Confluent-framed (0x00 + schema id + message-index array, or the id
in a header; the default) or bare messages (``framing="none"``), read as one message fixed for
the life of the plan, as Spark's ``from_protobuf`` reads them.

The message's descriptors come from a descriptor set file (``value.protobuf.descriptor.file``,
what ``protoc --include_imports --descriptor_set_out`` writes, what Spark's ``from_protobuf``
takes), from .proto text (``value.schema``), or from the registry (the latest schema of the
subject, fixed at first use; Spark's driver pins it per query). The message is
``value.protobuf.message`` (a full name); unnamed, the file's first for given descriptors, the
one the first framed record names for the registry's latest (fixed from then on), and a pinned
schema of several top-level messages is refused. With a registry, the rows of each
distinct (schema id, message indexes) are read only when those indexes name the same message
(by full name) in that writer schema: another message is a bad row, an unknown id too (asked
again after a while), and a registry that cannot be reached raises (never null rows).
"""
from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from pyconsumer import records
from pyconsumer.errors import ConfigurationError
from pyconsumer.values.avro_decode import SchemaId, UnknownSchemaError
from pyconsumer.values.format_api import ColumnDecoder, ColumnSpec, ValueFormat, Words
from pyconsumer.values.framing import SCHEMA_ID_HEADERS
from pyconsumer.values.protobuf import (
    Program, ProtobufOptions, ProtobufSchemaError, Schema, compile_program, load_descriptor_set,
    message_by_indexes, schema_from_registry_text,
)
from pyconsumer.values.protobuf_decode import decode_protobuf, header_prefixes, parse_prefix
from pyconsumer.values.registry import (
    RegisteredSchema, SchemaRegistryClient, SubjectNameStrategy, subject_name,
)
from pyconsumer.values.result import Decoded, as_binary
from pyconsumer.values.writers import RegistryWriters, schema_name

__all__ = ["ProtobufFormat", "DescriptorFile", "OPTION_NAMES", "options_from"]

#: the format's own settings (after ``value.`` / ``key.``) and what each takes
OPTION_NAMES = {
    "protobuf.message": "the message's full name",
    "protobuf.descriptor.file": "a descriptor set file",
    "protobuf.enums.as.ints": "true or false",
    "protobuf.emit.default.values": "true or false",
    "protobuf.upcast.unsigned.ints": "true or false",
    "protobuf.unwrap.primitive.wrapper.types": "true or false",
    "protobuf.retain.empty.message.types": "true or false",
    "protobuf.recursive.fields.max.depth": "an integer (-1: recursion refused, 1..10: cut there)",
}


@dataclass(frozen=True)
class DescriptorFile:
    """A column's schema given as a descriptor set file: its path and its bytes, read once where
    the options are read (a Spark driver), so that executors need no copy of the file."""

    path: str
    data: bytes = field(repr=False, default=b"")

    @classmethod
    def read(cls, path: str) -> DescriptorFile:
        try:
            with open(path, "rb") as fh:
                return cls(path, fh.read())
        except OSError as e:
            raise ConfigurationError(f"protobuf.descriptor.file: cannot read the descriptor file "
                                     f"{path}: {e.strerror}") from None


def _flag(value: Any, setting: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "false"):
        return text == "true"
    raise ConfigurationError(f"{setting} must be true or false, not {value!r}")


def options_from(column: str, options: Mapping[str, Any]) -> tuple[ProtobufOptions, str | None]:
    """Spark from_protobuf's options and the message name out of a column's format options
    (names as in :data:`OPTION_NAMES`); an unknown name or a bad value names the setting."""
    for name in options:
        if name not in OPTION_NAMES:
            raise ConfigurationError(f"{column}.{name} is not a Protobuf setting (known: "
                                     f"{', '.join(f'{column}.{n}' for n in OPTION_NAMES)})")

    def flag(name: str) -> bool:
        v = options.get(f"protobuf.{name}")
        return False if v is None else _flag(v, f"{column}.protobuf.{name}")
    depth_text = options.get("protobuf.recursive.fields.max.depth")
    try:
        depth = -1 if depth_text is None else int(str(depth_text).strip())
    except ValueError:
        raise ConfigurationError(f"{column}.protobuf.recursive.fields.max.depth must be an "
                                 f"integer, not {depth_text!r}") from None
    if depth_text is not None and not (depth == -1 or 1 <= depth <= 10):
        raise ConfigurationError(f"{column}.protobuf.recursive.fields.max.depth must be -1 or "
                                 f"1..10 (as Spark's from_protobuf), not {depth}")
    opts = ProtobufOptions(
        enums_as_ints=flag("enums.as.ints"), emit_default_values=flag("emit.default.values"),
        upcast_unsigned_ints=flag("upcast.unsigned.ints"),
        unwrap_wrappers=flag("unwrap.primitive.wrapper.types"), recursive_max_depth=depth,
        retain_empty_messages=flag("retain.empty.message.types"))
    message = options.get("protobuf.message")
    if message is not None and not str(message).strip():
        raise ConfigurationError(f"{column}.protobuf.message is empty")
    return opts, None if message is None else str(message).strip()


class ProtobufFormat(ValueFormat):
    """Protobuf messages, Confluent-framed (the default) or bare."""

    name = "protobuf"
    takes_schema = True
    takes_subject = True
    framings = ("confluent", "none")
    schema_type = "PROTOBUF"
    title = "Protobuf"
    option_names = tuple(OPTION_NAMES)
    exact_nullability = True

    def schema_from_options(self, options: dict[str, Any]) -> Any:
        path = options.get("protobuf.descriptor.file")
        if path is None:
            return None
        if not str(path).strip():
            raise ConfigurationError("protobuf.descriptor.file is empty")
        return DescriptorFile.read(str(path).strip())

    def missing_schema(self, framing: str, words: Words) -> str | None:
        if framing != "none":
            return None                 # the reader is the registry's latest
        file = f"{words.column}ProtobufDescriptorFile" if words.source else \
            f"{words.column}.protobuf.descriptor.file"
        return (f"{words('format')}=protobuf with {_framing(words)}=none needs the message's "
                f"descriptors: {file} (a descriptor set) or {words('schema')} (.proto text)")

    def needs_registry(self, framing: str, has_schema: bool) -> bool:
        return framing == "confluent" and not has_schema

    def missing_registry(self, words: Words) -> str:
        file = f"{words.column}ProtobufDescriptorFile" if words.source else \
            f"{words.column}.protobuf.descriptor.file"
        return (f"{words('format')}=protobuf without {file} or {words('schema')} reads the "
                "message's schema from a Schema Registry: set schema.registry.url")

    def reads_headers(self, framing: str) -> bool:
        return framing == "confluent"

    def schema_from_text(self, text: str) -> Any:
        try:
            schema_from_registry_text(text, (), "the .proto schema")
        except ProtobufSchemaError as e:
            raise ConfigurationError(str(e)) from None
        return text

    def registered_reader(self, text: str, references: Sequence[tuple[str, str]]) -> Any:
        try:
            return schema_from_registry_text(text, references, "the registry's Protobuf schema")
        except ProtobufSchemaError as e:
            raise ConfigurationError(str(e)) from None

    def column(self, column: str, spec: ColumnSpec, registry: SchemaRegistryClient | None,
               strategy: SubjectNameStrategy | str | None) -> ColumnDecoder:
        return _ProtobufColumn(column, spec, registry, strategy)


class _ProtobufColumn:
    """One column's Protobuf decoding: the message per topic (fixed at first use), its program,
    and the check of each writer (schema id, indexes) against it."""

    def __init__(self, column: str, spec: ColumnSpec, registry: SchemaRegistryClient | None,
                 strategy: SubjectNameStrategy | str | None) -> None:
        self.column = column
        self.framing = spec.framing
        self.subject = spec.subject
        self.registry = registry
        self.strategy = strategy
        self.opts, self.message = options_from(column, dict(spec.options))
        self._given: Schema | None = None
        schema = spec.schema
        try:
            if isinstance(schema, Schema):
                # a registry schema fixed for a query (a Spark driver's pin): its type is fixed
                # before any record is read, so several messages need one named
                tops = list(schema.files[-1].message_types_by_name) if schema.files else []
                if self.message is None and len(tops) > 1:
                    raise ConfigurationError(
                        f"{column}.protobuf.message is needed: the registry's schema has the "
                        f"messages {', '.join(tops)}; name the one the values are")
                self._given = schema
            elif isinstance(schema, DescriptorFile):
                try:
                    self._given = load_descriptor_set(schema.data,
                                                      f"the descriptor file {schema.path}")
                except ProtobufSchemaError as e:
                    raise ConfigurationError(f"{column}.protobuf.descriptor.file: {e}") from None
            elif isinstance(schema, str):
                self._given = schema_from_registry_text(schema, (), f"{column}.schema")
            elif schema is not None:
                raise ConfigurationError(f"{column}.schema for protobuf is .proto text, not "
                                         f"{type(schema).__name__}")
            self._given_program = None if self._given is None else self._program(self._given)
        except ProtobufSchemaError as e:
            raise ConfigurationError(f"{column}: {e}") from None
        self._readers: dict[str, Program] = {}
        self._unfixed: dict[str, Program] = {}
        self._schemas: dict[str, Schema] = {}
        self._writers: dict[tuple[SchemaId, tuple[int, ...]], str | None] = {}
        self._registered = None if registry is None else RegistryWriters(registry)
        self._lock = threading.Lock()

    def _program(self, schema: Schema) -> Program:
        desc = schema.message(self.message) if self.message else _first_message(schema)
        return compile_program(desc, self.opts)

    def reader(self, topic: str, raw: pa.Array | None = None,
               batch: pa.RecordBatch | None = None) -> Program:
        """The program of ``topic``'s message. Given descriptors, or a message named: that one.
        Else the registry's latest schema of the subject, and in it the message the first
        Confluent-framed record names (``raw``, ``batch``), fixed from then on; before any
        record (an empty batch's type) the file's first message, not fixed."""
        if self._given_program is not None:
            return self._given_program
        with self._lock:
            found = self._readers.get(topic)
            if found is not None:
                return found
            schema = self._latest(topic)
            try:
                if self.message:
                    found = self._readers[topic] = self._program(schema)
                    return found
                named = None
                if raw is not None and self.framing == "confluent":
                    named = self._named_by_records(raw, batch)
                if named is None:
                    return self._unfixed.setdefault(topic, self._program(schema))
                found = self._readers[topic] = compile_program(schema.message(named), self.opts)
                return found
            except ProtobufSchemaError as e:
                raise ConfigurationError(f"{self.column}: {e}") from None

    def _latest(self, topic: str) -> Schema:
        found = self._schemas.get(topic)
        if found is None:
            assert self.registry is not None
            subject = self.subject or subject_name(self.strategy, topic, self.column == "key")
            registered = self.registry.latest(subject)
            try:
                found = self._schemas[topic] = _from_registry(
                    registered, f"the latest schema of subject {subject!r}")
            except ProtobufSchemaError as e:
                raise ConfigurationError(f"{self.column}: {e}") from None
        return found

    def _named_by_records(self, raw: pa.Array, batch: pa.RecordBatch | None) -> str | None:
        """The full name of the message the first readable Confluent prefix names (in its
        writer schema), or None when no row of the first ones has one or its id is unknown."""
        head = as_binary(raw, "Protobuf values").slice(0, 256)
        headers = None if batch is None else header_prefixes(batch.slice(0, 256),
                                                             SCHEMA_ID_HEADERS[self.column])
        if pa.types.is_large_binary(head.type):
            head = head.cast(pa.binary())
        slots_b, _, keys = records.protobuf_frame_scan(head, headers)
        if not keys:
            return None
        sid, indexes = parse_prefix(keys[0])
        try:
            writer = _from_registry(self._writer(sid), schema_name(sid))
            return str(message_by_indexes(writer, indexes).full_name)
        except (UnknownSchemaError, ProtobufSchemaError):
            return None                 # those rows are bad rows of the decode, saying why

    def arrow_type(self, topic: str) -> pa.DataType:
        return self.reader(topic).arrow_type

    def _check(self, reader: Program) -> Any:
        def check(schema_id: SchemaId, indexes: list[int]) -> str | None:
            if self.registry is None:
                return None             # no registry: every row is read as the message given
            key = (schema_id, tuple(indexes))
            with self._lock:
                if key in self._writers:
                    return self._writers[key]
            name = schema_name(schema_id)
            try:
                writer = _from_registry(self._writer(schema_id), name)
                written = message_by_indexes(writer, indexes).full_name
            except ProtobufSchemaError as e:
                reason: str | None = f"{name} with message indexes {indexes}: {e}"
            else:
                reason = None if written == reader.message else (
                    f"{name} with message indexes {indexes} was written as {written}, not "
                    f"{reader.message} (the message this read decodes: "
                    f"{self.column}.protobuf.message names it)")
            with self._lock:
                self._writers[key] = reason
            return reason
        return check

    def _writer(self, schema_id: SchemaId) -> RegisteredSchema:
        assert self._registered is not None
        registered = self._registered.fetch(schema_id)
        if registered.schema_type.upper() != "PROTOBUF":
            raise UnknownSchemaError(f"{schema_name(schema_id)} is a {registered.schema_type} schema, "
                                     "not Protobuf")
        return registered

    def decode(self, topic: str, raw: pa.Array, batch: pa.RecordBatch, ids: set[SchemaId]) -> Decoded:
        reader = self.reader(topic, raw, batch)
        if self.framing == "none":
            return decode_protobuf(raw, reader, framing="none",
                                   emit_default_values=self.opts.emit_default_values)
        return decode_protobuf(raw, reader, framing="confluent", check=self._check(reader),
                               headers=header_prefixes(batch, SCHEMA_ID_HEADERS[self.column]),
                               ids=ids, emit_default_values=self.opts.emit_default_values)


def _framing(words: Words) -> str:
    return f"{words.column}ProtobufFraming" if words.source else f"{words.column}.protobuf.framing"


def _first_message(schema: Schema) -> Any:
    return message_by_indexes(schema, [0])


def _from_registry(registered: RegisteredSchema, what: str) -> Schema:
    if registered.schema_type.upper() != "PROTOBUF":
        raise ConfigurationError(f"{what} is a {registered.schema_type} schema, not Protobuf")
    refs = [(ref.name, ref.schema.schema_text) for ref in registered.dependencies()]
    return schema_from_registry_text(registered.schema_text, refs, what)
