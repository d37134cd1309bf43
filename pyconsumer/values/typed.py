"""Typed key and value columns for batches in Spark's Kafka schema: the one place a format is applied.

One job: take a batch as :func:`~pyconsumer.records.decode_arrow` and ``poll_arrow()`` give it
(``key, value, topic, partition, offset, timestamp, timestampType[, headers]``) and give the same
batch with ``key`` and/or ``value`` decoded into their format, the bad-record mode applied and the
counters moved. The consumer, the Spark source and ``pyconsumer ingest`` all go through
:class:`TypedValues`, so a format means the same thing everywhere.

Formats (per column) come from :data:`~pyconsumer.values.formats.FORMATS`: ``binary`` (as read),
``string`` (UTF-8 checked), ``json`` (a schema: DDL, StructType or pyarrow schema; Spark
``from_json`` results) and ``avro`` (:mod:`~pyconsumer.values.format_avro`). This module holds
the rules every format shares and asks the column's format the rest
(:class:`~pyconsumer.values.format_api.ValueFormat`).

Where a batch holds several topics, each topic's rows decode with that topic's reader; their types
must agree (one column), else :class:`~pyconsumer.errors.ConfigurationError` says to set a schema.
A registry that cannot be reached raises (after the client's retries): an outage is never null rows.
"""
from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pyarrow as pa
import pyarrow.compute as pc

from pyconsumer.errors import ConfigurationError
from pyconsumer.records import empty_batch
from pyconsumer.values.arrays import bools, int_scalar, strings
from pyconsumer.values.avro_decode import SchemaId
from pyconsumer.values.format_api import DEFAULT_FRAMING, ColumnDecoder, ValueFormat, Words
from pyconsumer.values.formats import (
    DEFAULT_FORMAT, FORMATS, FRAMINGS, Format, format_of, names_where, parse_format,
)
from pyconsumer.values.framing import SCHEMA_ID_HEADERS
from pyconsumer.values.modes import DEFAULT_CORRUPT_COLUMN, MalformedValueError, Mode, apply_mode, parse_mode
from pyconsumer.values.registry import SchemaRegistryClient, SubjectNameStrategy, shared_client, subject_name
from pyconsumer.values.result import Decoded, as_binary
from pyconsumer.values.writers import NOT_FOUND_TTL_S

__all__ = ["Format", "ColumnFormat", "TypedValues", "ValueCounts", "SCHEMA_ID_HEADERS", "parse_format",
           "NOT_FOUND_TTL_S"]

#: the columns of Spark's Kafka schema (decode_arrow / poll_arrow), headers included
_KAFKA_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers")


@dataclass(frozen=True)
class ColumnFormat:
    """How one column (``key`` or ``value``) is decoded.

    ``schema``: JSON: a DDL string, a StructType or a pyarrow schema (required). Avro: the reader
    schema as Avro JSON text, parsed JSON or a parsed :data:`~pyconsumer.values.avro.Schema`
    (with ``framing="none"``, also the writer's; required there); without it, the reader is
    the latest version of ``subject`` (or of the strategy's subject for the topic).
    ``framing``: Avro and Protobuf (``value.avro.framing``, ``value.protobuf.framing``).
    ``options``: the format's own settings (Protobuf: ``protobuf.message``, ...).
    """

    format: Format = Format(DEFAULT_FORMAT)
    schema: Any = None
    framing: Literal["confluent", "none"] = "confluent"
    subject: str | None = None
    #: the format's own settings, names after the column (``protobuf.message``), sorted
    options: tuple[tuple[str, Any], ...] = ()

    @property
    def kind(self) -> ValueFormat:
        """The format's object in the registry (its rules and decoder)."""
        return format_of(self.format)

    @property
    def decodes(self) -> bool:
        """False when the column stays as read (binary)."""
        return self.kind.decodes

    def check(self, column: str, has_registry: bool) -> None:
        """Refuse a combination that cannot work, naming the column's settings."""
        kind, words = self.kind, Words(column)
        if self.framing not in FRAMINGS:
            raise ConfigurationError(f"{column}.avro.framing must be {' or '.join(FRAMINGS)}, "
                                     f"not {self.framing!r}")
        missing = kind.missing_schema(self.framing, words) if self.schema is None else None
        if missing is not None:
            raise ConfigurationError(missing)
        if kind.needs_registry(self.framing, self.schema is not None) and not has_registry:
            raise ConfigurationError(kind.missing_registry(words))
        if self.subject is not None and not kind.takes_subject:
            raise ConfigurationError(f"{column}.subject applies to {column}.format="
                                     f"{names_where(lambda f: f.takes_subject)} only")
        unknown = [name for name, _ in self.options if name not in kind.option_names]
        if unknown:
            raise ConfigurationError(f"{column}.{unknown[0]} applies to another {column}.format "
                                     f"than {kind.name}")
        if self.schema is not None and not kind.takes_schema:
            raise ConfigurationError(f"{column}.schema applies to {column}.format "
                                     f"{names_where(lambda f: f.takes_schema)}, not {kind.name}")


@dataclass
class ValueCounts:
    """What the plan has done so far (the metrics): rows decoded, bad rows, schema ids seen."""

    decoded: int = 0
    malformed: int = 0
    dropped: int = 0
    schema_ids: set[SchemaId] = field(default_factory=set)


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
        # a schema that does not parse fails here, not at the first poll
        self._columns: dict[str, ColumnDecoder] = {
            column: spec.kind.column(column, spec, registry, strategies[column])
            for column, spec in (("key", self.key), ("value", self.value))}
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
            fmt = parse_format(settings.get(f"{name}.format") or DEFAULT_FORMAT, f"{name}.format")
            framing_setting = f"{name}.{fmt.value}.framing"
            if settings.get(framing_setting) is None:
                framing_setting = f"{name}.avro.framing"
            framing = str(settings.get(framing_setting) or DEFAULT_FRAMING).strip().lower()
            # the format's own settings: value.protobuf.message, ... (None is unset)
            prefix = f"{name}.{fmt.value}."
            options = tuple(sorted((k[len(name) + 1:], v) for k, v in settings.items()
                                   if k.startswith(prefix) and k != framing_setting
                                   and v is not None))
            schema = settings.get(f"{name}.schema")
            if schema is None:
                try:
                    schema = format_of(fmt).schema_from_options(dict(options))
                except ConfigurationError as e:
                    raise ConfigurationError(f"{name}.{e}") from None
            return ColumnFormat(fmt, schema, framing, settings.get(f"{name}.subject") or None,  # type: ignore[arg-type]
                                options)

        for name in ("value", "key"):
            chosen = str(settings.get(f"{name}.format") or DEFAULT_FORMAT).strip().lower()
            for other in FORMATS.values():
                given = [f"{name}.{o}" for o in other.option_names
                         if settings.get(f"{name}.{o}") is not None]
                if given and other.name != chosen:
                    raise ConfigurationError(f"{given[0]} is set but {name}.format is {chosen}, "
                                             f"not {other.name}")
        value, key = column("value"), column("key")
        if not value.decodes and not key.decodes:
            for name in ("value.schema", "key.schema", "value.subject", "key.subject"):
                if settings.get(name) is not None:
                    raise ConfigurationError(f"{name} is set but {name.split('.')[0]}.format is "
                                             f"{DEFAULT_FORMAT}")
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
        return self._columns[column].arrow_type(topic)

    def schema(self, base: pa.Schema, topics: list[str] | tuple[str, ...] = ()) -> pa.Schema:
        """``base`` (Spark's Kafka schema) with the typed key/value types and the corrupt column(s).
        With several topics their types must agree."""
        out = base
        for column in ("key", "value"):
            types = {self.column_type(column, t) for t in (topics or ("",))} if (
                self.needs_topic(column)) else {self.column_type(column, "")}
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
        """A format may read a record's schema id from a header (Confluent-framed Avro:
        ``__value_schema_id`` / ``__key_schema_id``): :meth:`apply` needs the ``headers``
        column then."""
        return any(spec.kind.reads_headers(spec.framing) for spec in (self.key, self.value))

    def needs_topic(self, column: str) -> bool:
        """Whether ``column``'s type depends on the topic: a reader that is the latest of the
        topic's subject (no schema, no subject given)."""
        spec = self.value if column == "value" else self.key
        return spec.kind.takes_subject and spec.schema is None and spec.subject is None

    def _corrupt_names(self) -> list[str]:
        if self.corrupt_column is None:
            return []
        names = []
        if self.value.decodes:
            names.append(self.corrupt_column)
        if self.key.decodes:
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
            if not spec.decodes:
                continue
            raw = batch.column(column)
            if n == 0:
                columns[column] = pa.nulls(0, self.column_type(column, topic))
                decoded = Decoded(columns[column], {})
            else:
                decoded = self._columns[column].decode(topic, raw, batch, ids)
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
            rejected = bools(i in reasons for i in range(n))
            for column in ("key", "value"):
                name = _corrupt_name(self.corrupt_column, column) or ""
                raw_bytes = as_binary(batch.column(column), f"raw {column}s")
                corrupt[name] = pc.if_else(rejected, raw_bytes, corrupt[name].cast(raw_bytes.type))
        out_schema = self.schema(batch.schema, [topic])
        arrays = [columns.get(name, batch.column(name)) for name in batch.schema.names]
        for name in self._corrupt_names():
            arrays.append(corrupt.get(name, pa.nulls(n, pa.binary())))
        if self.reason_column is not None:
            arrays.append(strings([reasons.get(i) for i in range(n)]) if reasons
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

    def snapshot(self) -> ValueCounts:
        with self._lock:
            return ValueCounts(self.counts.decoded, self.counts.malformed, self.counts.dropped,
                               set(self.counts.schema_ids))


def _raw_sizes(batch: pa.RecordBatch) -> pa.Array:
    """Each row's key + value length in bytes as read (a null counts 0)."""
    zero = int_scalar(0, pa.int64())
    total: pa.Array | None = None
    for column in ("key", "value"):
        lengths = pc.fill_null(pc.binary_length(batch.column(column)).cast(pa.int64()), zero)
        total = lengths if total is None else pc.add(total, lengths)
    assert total is not None
    return total


def _corrupt_name(base: str | None, column: str) -> str | None:
    if base is None:
        return None
    return base if column == "value" else f"{base}_key"


def _concat(parts: list[pa.RecordBatch], schema: pa.Schema) -> pa.RecordBatch:
    return pa.Table.from_batches([p.cast(schema) if p.schema != schema else p for p in parts],
                                 schema=schema).combine_chunks().to_batches()[0] if parts else \
        empty_batch(schema)
