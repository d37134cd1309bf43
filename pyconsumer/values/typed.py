"""Typed key and value columns for batches in Spark's Kafka schema: the one place a format is applied.

One job: take a batch as :func:`~pyconsumer.records.decode_arrow` and ``poll_arrow()`` give it
(``key, value, topic, partition, offset, timestamp, timestampType[, headers]``) and give the same
batch with ``key`` and/or ``value`` decoded into their format, the bad-record mode applied and the
counters moved. The consumer, the Spark source and ``pyconsumer ingest`` all go through
:class:`TypedValues`, so a format means the same thing everywhere.

Formats (per column): ``binary`` (as read), ``string`` (UTF-8 checked), ``json`` (a schema: DDL,
StructType or pyarrow schema; Spark ``from_json`` results) and ``avro``: Confluent-framed
(``framing="confluent"``: 0x00 + id or 0x01 + GUID, or the ``__value_schema_id`` /
``__key_schema_id`` header; writer schemas from the registry by id) or bare bodies
(``framing="none"``: the given schema is the writer's). Avro's reader schema is the given one, or
the latest of the subject (``subject``, or the naming strategy's subject for the topic), fixed at
first use for the life of the plan: every writer resolves into it.

Where a batch holds several topics, each topic's rows decode with that topic's reader; their types
must agree (one column), else :class:`~pyconsumer.errors.ConfigurationError` says to set a schema.
A registry that cannot be reached raises (after the client's retries): an outage is never null rows.
"""
from __future__ import annotations

import enum
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc

from pyconsumer.errors import ConfigurationError
from pyconsumer.records import empty_batch
from pyconsumer.values.avro import AvroSchemaError, Schema, arrow_type, parse_schema, parse_with_references
from pyconsumer.values.avro_decode import (
    SchemaId, UnknownSchemaError, WriterSchemas, decode_avro, schema_id_from_header,
)
from pyconsumer.values.json import decode_json
from pyconsumer.values.json_rows import json_type
from pyconsumer.values.modes import DEFAULT_CORRUPT_COLUMN, MalformedValueError, Mode, apply_mode, parse_mode
from pyconsumer.values.registry import (
    RegisteredSchema, SchemaNotFoundError, SchemaRegistryClient, SubjectNameStrategy, shared_client,
    subject_name,
)
from pyconsumer.values.result import Decoded, as_binary
from pyconsumer.values.schema import to_arrow_schema
from pyconsumer.values.string import decode_string

__all__ = ["Format", "ColumnFormat", "TypedValues", "ValueCounts", "SCHEMA_ID_HEADERS"]

#: the headers that carry a record's writer schema id when the body has no prefix
SCHEMA_ID_HEADERS = {"key": "__key_schema_id", "value": "__value_schema_id"}

#: the columns of Spark's Kafka schema (decode_arrow / poll_arrow), headers included
_KAFKA_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers")

#: how long an id the registry answered "not found" for is not asked again
NOT_FOUND_TTL_S = 30.0


class Format(enum.Enum):
    BINARY = "binary"
    STRING = "string"
    JSON = "json"
    AVRO = "avro"


def parse_format(name: str | Format, setting: str) -> Format:
    if isinstance(name, Format):
        return name
    if isinstance(name, str):
        try:
            return Format(name.strip().lower())
        except ValueError:
            pass
    raise ConfigurationError(f"{setting} must be one of binary, string, json, avro, not {name!r}")


@dataclass(frozen=True)
class ColumnFormat:
    """How one column (``key`` or ``value``) is decoded.

    ``schema``: JSON: a DDL string, a StructType or a pyarrow schema (required). Avro: the reader
    schema as Avro JSON text, parsed JSON or a parsed :data:`~pyconsumer.values.avro.Schema`
    (with ``framing="none"``, also the writer's; required there); without it, the reader is
    the latest version of ``subject`` (or of the strategy's subject for the topic).
    ``framing``: Avro only.
    """

    format: Format = Format.BINARY
    schema: Any = None
    framing: Literal["confluent", "none"] = "confluent"
    subject: str | None = None

    def check(self, column: str, has_registry: bool) -> None:
        """Refuse a combination that cannot work, naming the column's settings."""
        if self.framing not in ("confluent", "none"):
            raise ConfigurationError(f"{column}.avro.framing must be confluent or none, not {self.framing!r}")
        if self.format is Format.JSON and self.schema is None:
            raise ConfigurationError(f"{column}.format=json needs {column}.schema (a Spark DDL string, "
                                     "a StructType or a pyarrow schema)")
        if self.format is Format.AVRO:
            if self.framing == "none" and self.schema is None:
                raise ConfigurationError(f"{column}.format=avro with {column}.avro.framing=none needs "
                                         f"{column}.schema, the writer's Avro schema")
            if self.framing == "confluent" and not has_registry:
                raise ConfigurationError(f"{column}.format=avro (Confluent framing) needs "
                                         "schema.registry.url to fetch writer schemas by id")
        elif self.subject is not None:
            raise ConfigurationError(f"{column}.subject applies to {column}.format=avro only")
        if self.format in (Format.BINARY, Format.STRING) and self.schema is not None:
            raise ConfigurationError(f"{column}.schema applies to {column}.format json or avro, "
                                     f"not {self.format.value}")


@dataclass
class ValueCounts:
    """What the plan has done so far (the metrics): rows decoded, bad rows, schema ids seen."""

    decoded: int = 0
    malformed: int = 0
    dropped: int = 0
    schema_ids: set[SchemaId] = field(default_factory=set)


class _Avro:
    """One column's Avro decoding: the reader schema per topic (fixed at first use), one source
    of writer programs per reader."""

    def __init__(self, column: str, spec: ColumnFormat, registry: SchemaRegistryClient | None,
                 strategy: SubjectNameStrategy | str | None) -> None:
        self.column = column
        self.spec = spec
        self.registry = registry
        self.strategy = strategy
        self._given: Schema | None = None if spec.schema is None else _parse(spec.schema, column)
        self._readers: dict[str, tuple[Schema, WriterSchemas | None]] = {}
        self._missing: dict[SchemaId, tuple[float, str]] = {}
        self._lock = threading.Lock()

    def reader(self, topic: str) -> tuple[Schema, WriterSchemas | None]:
        with self._lock:
            found = self._readers.get(topic)
            if found is None:
                reader = self._given if self._given is not None else self._latest(topic)
                source = None if self.spec.framing == "none" else WriterSchemas(
                    self._writer, reader, not_found=(SchemaNotFoundError,))
                found = self._readers[topic] = (reader, source)
            return found

    def arrow_type(self, topic: str) -> pa.DataType:
        return arrow_type(self.reader(topic)[0])

    def _latest(self, topic: str) -> Schema:
        assert self.registry is not None
        subject = self.spec.subject or subject_name(self.strategy, topic, self.column == "key")
        registered = self.registry.latest(subject)
        return _from_registry(registered, f"the latest schema of subject {subject!r}")

    def _writer(self, schema_id: SchemaId) -> Schema:
        assert self.registry is not None
        # an id the registry did not know is asked again only after a while: a topic full of
        # records naming a deleted schema must not send one request per batch
        missing = self._missing.get(schema_id)
        if missing is not None and time.monotonic() - missing[0] < NOT_FOUND_TTL_S:
            raise UnknownSchemaError(missing[1])
        try:
            if isinstance(schema_id, int):
                registered = self.registry.schema_by_id(schema_id)
            else:
                registered = self.registry.schema_by_guid(schema_id)
        except SchemaNotFoundError as e:
            reason = f"unknown schema {'id' if isinstance(schema_id, int) else 'GUID'} {schema_id} ({e})"
            self._missing[schema_id] = (time.monotonic(), reason)
            raise UnknownSchemaError(reason) from e
        if registered.schema_type.upper() != "AVRO":
            raise UnknownSchemaError(f"schema {schema_id} is a {registered.schema_type} schema, not Avro")
        return _from_registry(registered, f"schema {schema_id}")

    def decode(self, topic: str, values: pa.Array, header_ids: pa.Array | None) -> Decoded:
        reader, source = self.reader(topic)
        if self.spec.framing == "none":
            return decode_avro(values, framing="none", writer=reader)
        return decode_avro(values, framing="confluent", reader=reader, source=source, schema_ids=header_ids)


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


class TypedValues:
    """The decoding plan of one consumer, Spark read or ingest job (thread-safe: decode threads
    call :meth:`apply` at once). Build it with :meth:`from_settings` or directly."""

    def __init__(self, value: ColumnFormat | None = None, key: ColumnFormat | None = None, *,
                 mode: str | Mode = Mode.PERMISSIVE,
                 corrupt_column: str | None = DEFAULT_CORRUPT_COLUMN,
                 registry: SchemaRegistryClient | None = None,
                 subject_strategy: SubjectNameStrategy | str | None = None,
                 reason_column: str | None = None,
                 key_subject_strategy: SubjectNameStrategy | str | None = None,
                 size_column: str | None = None) -> None:
        self.value = value or ColumnFormat()
        self.key = key or ColumnFormat()
        self.mode = parse_mode(mode)
        if corrupt_column is not None and not (isinstance(corrupt_column, str) and corrupt_column):
            raise ConfigurationError(f"the corrupt record column must be a non-empty name, not {corrupt_column!r}")
        self.corrupt_column = corrupt_column if self.mode is Mode.PERMISSIVE else None
        # PERMISSIVE only: a string column with why each bad row failed (key and value reasons
        # joined), for a job that writes rejected records apart (ingest --bad-records)
        self.reason_column = reason_column if self.mode is Mode.PERMISSIVE else None
        # a long column with each record's raw key + value bytes as read (null counts 0): a
        # decoded column has no length of its own (ingest counts the bytes it read with it)
        self.size_column = size_column
        self.registry = registry
        self.value.check("value", registry is not None)
        self.key.check("key", registry is not None)
        # the key's subject strategy defaults to the value's (one setting for both)
        strategies = {"value": subject_strategy,
                      "key": subject_strategy if key_subject_strategy is None else key_subject_strategy}
        for column, strategy in strategies.items():
            if strategy is not None:
                try:
                    subject_name(strategy, "t", False, "r")      # refuse an unknown name now
                except ConfigurationError as e:
                    raise ConfigurationError(f"{column}.subject.name.strategy: {e}") from None
        self._check_column_names()
        self._columns: dict[str, _Avro] = {}
        for column, spec in (("key", self.key), ("value", self.value)):
            if spec.format is Format.JSON:
                try:
                    to_arrow_schema(spec.schema)                 # a bad DDL fails here, not at the first poll
                except ConfigurationError as e:
                    raise ConfigurationError(f"{column}.schema is not a usable JSON schema: {e}") from None
            elif spec.format is Format.AVRO:
                self._columns[column] = _Avro(column, spec, registry, strategies[column])
        self._lock = threading.Lock()
        self.counts = ValueCounts()

    def _check_column_names(self) -> None:
        """The corrupt and reason columns are added to Spark's Kafka schema: a name already
        there (or the two the same) would make two columns of one name."""
        taken = set(_KAFKA_COLUMNS)
        added = [("corrupt record column (corrupt.record.column)", n) for n in self._corrupt_names()]
        if self.reason_column is not None:
            added.append(("reason column", self.reason_column))
        if self.size_column is not None:
            added.append(("size column", self.size_column))
        for what, name in added:
            if name in taken:
                raise ConfigurationError(f"the {what} {name!r} is already a column of the batch: "
                                         "choose another name")
            taken.add(name)

    # --------------------------------------------------------------------------- building
    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], *, registry: SchemaRegistryClient | None = None
                      ) -> TypedValues | None:
        """A plan from the settings' names (None when key and value stay binary):
        ``value.format``, ``key.format``, ``value.schema``, ``key.schema``, ``value.subject``,
        ``key.subject``, ``value.avro.framing``, ``key.avro.framing``, ``bad.records.mode``,
        ``corrupt.record.column`` (None or "" for no column), ``schema.registry.*`` (confluent-kafka's
        names: ``url``, ``basic.auth.user.info``, ``bearer.auth.token``, ...) and
        ``value.subject.name.strategy`` / ``key.subject.name.strategy``."""
        def column(name: str) -> ColumnFormat:
            fmt = parse_format(settings.get(f"{name}.format") or "binary", f"{name}.format")
            framing = str(settings.get(f"{name}.avro.framing") or "confluent").strip().lower()
            return ColumnFormat(fmt, settings.get(f"{name}.schema"), framing,  # type: ignore[arg-type]
                                settings.get(f"{name}.subject") or None)

        value, key = column("value"), column("key")
        if value.format is Format.BINARY and key.format is Format.BINARY:
            for name in ("value.schema", "key.schema", "value.subject", "key.subject"):
                if settings.get(name) is not None:
                    raise ConfigurationError(f"{name} is set but {name.split('.')[0]}.format is binary")
            return None
        registry_conf = {k: v for k, v in settings.items() if k.startswith("schema.registry.") and v is not None}
        if registry is None and registry_conf:
            try:
                registry = shared_client(registry_conf)
            except ConfigurationError as e:
                raise ConfigurationError(f"schema.registry.* settings: {e}") from None
        corrupt = settings.get("corrupt.record.column", DEFAULT_CORRUPT_COLUMN)
        return cls(value, key, mode=settings.get("bad.records.mode") or Mode.PERMISSIVE,
                   corrupt_column=corrupt or None, registry=registry,
                   subject_strategy=settings.get("value.subject.name.strategy") or None,
                   key_subject_strategy=settings.get("key.subject.name.strategy") or None)

    # --------------------------------------------------------------------------- schema
    def column_type(self, column: str, topic: str) -> pa.DataType:
        """The Arrow type of ``key`` or ``value`` for ``topic`` (Avro may ask the registry)."""
        spec = self.value if column == "value" else self.key
        if spec.format is Format.BINARY:
            return pa.binary()
        if spec.format is Format.STRING:
            return pa.string()
        if spec.format is Format.JSON:
            return json_type(spec.schema)
        return self._columns[column].arrow_type(topic)

    def schema(self, base: pa.Schema, topics: list[str] | tuple[str, ...] = ()) -> pa.Schema:
        """``base`` (Spark's Kafka schema) with the typed key/value types and the corrupt column(s).
        With several topics their types must agree."""
        out = base
        for column in ("key", "value"):
            types = {self.column_type(column, t) for t in (topics or ("",))} if (
                self._needs_topic(column)) else {self.column_type(column, "")}
            if len(types) > 1:
                raise ConfigurationError(
                    f"the topics {sorted(topics)} have different {column} reader schemas: set "
                    f"{column}.schema or {column}.subject so they decode into one column")
            i = out.get_field_index(column)
            out = out.set(i, pa.field(column, types.pop(), nullable=True))
        for name in self._corrupt_names():
            out = out.append(pa.field(name, pa.binary(), nullable=True))
        if self.reason_column is not None:
            out = out.append(pa.field(self.reason_column, pa.string(), nullable=True))
        if self.size_column is not None:
            out = out.append(pa.field(self.size_column, pa.int64(), nullable=True))
        return out

    @property
    def reads_headers(self) -> bool:
        """Confluent-framed Avro may name its writer schema in a header (``__value_schema_id``
        / ``__key_schema_id``): :meth:`apply` needs the ``headers`` column then."""
        return any(spec.format is Format.AVRO and spec.framing == "confluent"
                   for spec in (self.key, self.value))

    def _needs_topic(self, column: str) -> bool:
        spec = self.value if column == "value" else self.key
        return spec.format is Format.AVRO and spec.schema is None and spec.subject is None

    def _corrupt_names(self) -> list[str]:
        if self.corrupt_column is None:
            return []
        names = []
        if self.value.format is not Format.BINARY:
            names.append(self.corrupt_column)
        if self.key.format is not Format.BINARY:
            names.append(f"{self.corrupt_column}_key")
        return names

    # --------------------------------------------------------------------------- decoding
    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` in Spark's Kafka schema -> the typed batch (rows dropped under DROPMALFORMED;
        :class:`~pyconsumer.values.modes.MalformedValueError` under FAILFAST, naming topic,
        partition and offset)."""
        topics = batch.column("topic")
        if batch.num_rows and pc.count_distinct(topics).as_py() > 1:
            parts = []
            for topic in pc.unique(topics).to_pylist():
                parts.append(self._apply_one(batch.filter(pc.equal(topics, topic)), topic))
            return _concat(parts, self.schema(batch.schema, [p.column("topic")[0].as_py() for p in parts]))
        topic = topics[0].as_py() if batch.num_rows else ""
        return self._apply_one(batch, topic)

    def _apply_one(self, batch: pa.RecordBatch, topic: str) -> pa.RecordBatch:
        n = batch.num_rows
        keep: pa.Array | None = None
        columns: dict[str, pa.Array] = {}
        corrupt: dict[str, pa.Array] = {}
        malformed = 0
        ids: set[SchemaId] = set()
        reasons: dict[int, str] = {}
        failed: MalformedValueError | None = None

        def locate(row: int) -> tuple[str, int, int]:
            return (topic, batch.column("partition")[row].as_py(), batch.column("offset")[row].as_py())

        for column in ("key", "value"):
            spec = self.value if column == "value" else self.key
            if spec.format is Format.BINARY:
                continue
            raw = batch.column(column)
            if n == 0:
                columns[column] = pa.nulls(0, self.column_type(column, topic))
                decoded = Decoded(columns[column], {})
            else:
                decoded = self._decode(column, spec, topic, raw, batch, ids)
            for row, why in decoded.errors.items():
                reasons[row] = f"{reasons[row]}; {column}: {why}" if row in reasons else f"{column}: {why}"
            try:
                result = apply_mode(decoded, raw, self.mode, _corrupt_name(self.corrupt_column, column), locate)
            except MalformedValueError as e:
                # FAILFAST names the batch's first bad record, whichever column it is bad in
                # (the key is decoded first: its first bad row may come after the value's)
                if failed is None or e.row < failed.row:
                    failed = e
                continue
            columns[column] = result.values
            if result.corrupt is not None:
                corrupt[_corrupt_name(self.corrupt_column, column) or ""] = result.corrupt
            if result.keep is not None:
                keep = result.keep if keep is None else pc.and_(keep, result.keep)
            malformed += result.malformed
        if failed is not None:
            raise failed
        if self.reason_column is not None and reasons and len(corrupt) == 2:
            # a rejected record is kept whole: with key and value both typed, a row bad in one
            # column also gets the other's raw bytes, else its good half would be lost as raw
            rejected = pa.array([i in reasons for i in range(n)], pa.bool_())
            for column in ("key", "value"):
                name = _corrupt_name(self.corrupt_column, column) or ""
                raw_bytes = as_binary(batch.column(column), f"raw {column}s")
                corrupt[name] = pc.if_else(rejected, raw_bytes, corrupt[name].cast(raw_bytes.type))
        out_schema = self.schema(batch.schema, [topic])
        arrays = [columns.get(name, batch.column(name)) for name in batch.schema.names]
        for name in self._corrupt_names():
            arrays.append(corrupt.get(name, pa.nulls(n, pa.binary())))
        if self.reason_column is not None:
            arrays.append(pa.array([reasons.get(i) for i in range(n)], pa.string()) if reasons
                          else pa.nulls(n, pa.string()))
        if self.size_column is not None:
            arrays.append(_raw_sizes(batch))
        out = pa.RecordBatch.from_arrays(arrays, schema=out_schema)
        dropped = 0
        if keep is not None:
            out = out.filter(keep)
            dropped = n - out.num_rows
        with self._lock:
            self.counts.decoded += n - dropped
            self.counts.malformed += malformed
            self.counts.dropped += dropped
            self.counts.schema_ids |= ids
        return out

    def _decode(self, column: str, spec: ColumnFormat, topic: str, raw: pa.Array,
                batch: pa.RecordBatch, ids: set[SchemaId]) -> Decoded:
        if spec.format is Format.STRING:
            return decode_string(raw)
        if spec.format is Format.JSON:
            return decode_json(_unframed_json(raw, ids), spec.schema)
        avro = self._columns[column]
        header_ids = None
        if spec.framing == "confluent":
            header_ids = _header_ids(batch, SCHEMA_ID_HEADERS[column])
            ids.update(_prefix_ids(raw, header_ids))
        return avro.decode(topic, raw, header_ids)

    def snapshot(self) -> ValueCounts:
        with self._lock:
            return ValueCounts(self.counts.decoded, self.counts.malformed, self.counts.dropped,
                               set(self.counts.schema_ids))


def _raw_sizes(batch: pa.RecordBatch) -> pa.Array:
    """Each row's key + value length in bytes as read (a null counts 0)."""
    total = pa.array([0] * batch.num_rows, pa.int64())
    for column in ("key", "value"):
        lengths = pc.binary_length(batch.column(column)).cast(pa.int64())
        total = pc.add(total, pc.fill_null(lengths, 0))
    return total


def _corrupt_name(base: str | None, column: str) -> str | None:
    if base is None:
        return None
    return base if column == "value" else f"{base}_key"


def _concat(parts: list[pa.RecordBatch], schema: pa.Schema) -> pa.RecordBatch:
    return pa.Table.from_batches([p.cast(schema) if p.schema != schema else p for p in parts],
                                 schema=schema).combine_chunks().to_batches()[0] if parts else \
        empty_batch(schema)


def _header_ids(batch: pa.RecordBatch, name: str) -> list[SchemaId | None] | None:
    """Per-row schema ids from the ``name`` header (None where a row has none), or None when the
    batch carries no headers or no row has one. A header that is not an id is a bad row of the
    decode (its body then has no readable prefix either)."""
    if "headers" not in batch.schema.names:
        return None
    headers = batch.column("headers")
    if pc.sum(pc.list_value_length(headers).fill_null(0)).as_py() in (0, None):
        return None
    out: list[SchemaId | None] = []
    seen = False
    for row in headers.to_pylist():
        sid: SchemaId | None = None
        for entry in row or ():
            if entry["key"] == name and entry["value"] is not None:
                try:
                    sid = schema_id_from_header(entry["value"])
                except ValueError:
                    sid = None
                seen = True
        out.append(sid)
    return out if seen else None


def _unframed_json(raw: pa.Array, ids: set[SchemaId]) -> pa.Array:
    """JSON values with confluent-kafka's JSONSerializer framing (0x00 + a 4-byte schema id)
    without it; plain JSON as it is. No JSON text starts with a NUL byte, so the prefix is
    recognised without a setting; a framed value too short for its id stays as it is (and is a
    bad row)."""
    binary = as_binary(raw, "JSON values")
    framed = pc.fill_null(pc.and_(pc.starts_with(binary, pattern="\x00"),
                                  pc.greater_equal(pc.binary_length(binary), 5)), False)
    if not pc.any(framed).as_py():
        return binary
    ids.update(_prefix_ids(pc.filter(binary, framed), None))
    # a stop is given: binary_slice without one failed on such arrays (negative buffer resize)
    return pc.if_else(framed, pc.binary_slice(binary, 5, (1 << 31) - 1), binary)


def _prefix_ids(raw: pa.Array, header_ids: list[SchemaId | None] | None) -> set[SchemaId]:
    """The schema ids the rows name (for the metrics): magic-0 prefixes, 0x01 GUIDs, header ids."""
    found: set[SchemaId] = set(i for i in header_ids or () if i is not None)
    binary = as_binary(raw, "Avro values")
    if found:
        # a row whose id came in a header has a bare body: its first bytes are data, not an id
        assert header_ids is not None
        binary = pc.filter(binary, pa.array([i is None for i in header_ids], pa.bool_()))
    for magic, width in ((b"\x00", 4), (b"\x01", 16)):
        framed = pc.fill_null(pc.starts_with(binary, pattern=magic.decode("latin-1")), False)
        if not pc.any(framed).as_py():
            continue
        for head in pc.unique(pc.binary_slice(pc.filter(binary, framed), 1, 1 + width)).to_pylist():
            if head is not None and len(head) == width:
                found.add(int.from_bytes(head, "big") if width == 4 else uuid.UUID(bytes=head))
    return found
