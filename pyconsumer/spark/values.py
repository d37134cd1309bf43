"""Typed ``key`` and ``value`` columns in the Spark source: Spark-style options onto one
:class:`~pyconsumer.values.typed.TypedValues` plan.

Options (case-insensitive, as every source option): ``valueFormat`` / ``keyFormat`` (binary,
string, json, avro, protobuf), ``valueSchema`` / ``keySchema`` (JSON: a Spark DDL string or a
StructType's JSON, ``df.schema.json()``; Avro: the Avro JSON schema; Protobuf: .proto text),
``valueSubject`` / ``keySubject``, ``valueAvroFraming`` / ``keyAvroFraming`` and
``valueProtobufFraming`` / ``keyProtobufFraming`` (confluent, none), ``valueProtobufMessage``,
``valueProtobufDescriptorFile`` (and ``key...``), Spark from_protobuf's ``enums.as.ints``,
``emit.default.values``, ``recursive.fields.max.depth``, ``upcast.unsigned.ints``,
``unwrap.primitive.wrapper.types``, ``retain.empty.message.types`` (every protobuf column),
``valueSubjectNameStrategy`` /
``keySubjectNameStrategy``, ``mode`` (PERMISSIVE, DROPMALFORMED, FAILFAST),
``columnNameOfCorruptRecord`` and the ``schema.registry.*`` settings (confluent-kafka's names).

An Avro reader schema is fixed for a query: without ``valueSchema`` the driver asks the registry
for the latest version of the subject once per topic (:class:`ReaderPins`), the DataFrame
schema is made from it, and its exact text travels with every task, so all tasks decode into
the same schema even when a version is registered while the query runs. Executors keep one
plan per process for each pinned set (:meth:`ValueOptions.plan`), its registry client shared
per process.

Every format and its rules come from :data:`~pyconsumer.values.formats.FORMATS`; this module
holds only the options' names and the rules they share. Pure Python and pyarrow (pyspark only
to read a StructType's JSON, in the json format), so it is unit-tested alone.
"""
from __future__ import annotations

import collections
import json
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from pyconsumer.errors import ConfigurationError
from pyconsumer.values.format_api import DEFAULT_FRAMING, ValueFormat, Words
from pyconsumer.values.format_protobuf import DescriptorFile
from pyconsumer.values.formats import DEFAULT_FORMAT, FORMATS, FRAMINGS, Format, format_of, names_where, parse_format
from pyconsumer.values.modes import DEFAULT_CORRUPT_COLUMN, Mode, parse_mode
from pyconsumer.values.registry import SchemaRegistryClient, shared_client, subject_name
from pyconsumer.values.typed import ColumnFormat, TypedValues

__all__ = [
    "ColumnOptions", "ValueOptions", "PinnedSchema", "ReaderPins", "parse_value_options",
    "value_option_names", "declared_type", "PINS_METADATA_KEY",
]

#: the key of the ``key`` / ``value`` StructField metadata holding the pinned reader schemas
#: (JSON text, topic -> pin): how the schema the driver planned with reaches reader()
PINS_METADATA_KEY = "pyconsumer.avro.readers"

#: lower-cased option -> (documented spelling, TypedValues setting name)
_OPTIONS: dict[str, tuple[str, str]] = {name.lower(): (name, setting) for name, setting in (
    ("valueFormat", "value.format"), ("keyFormat", "key.format"),
    ("valueSchema", "value.schema"), ("keySchema", "key.schema"),
    ("valueSubject", "value.subject"), ("keySubject", "key.subject"),
    ("valueAvroFraming", "value.avro.framing"), ("keyAvroFraming", "key.avro.framing"),
    ("valueProtobufFraming", "value.protobuf.framing"), ("keyProtobufFraming", "key.protobuf.framing"),
    ("valueProtobufMessage", "value.protobuf.message"), ("keyProtobufMessage", "key.protobuf.message"),
    ("valueProtobufDescriptorFile", "value.protobuf.descriptor.file"),
    ("keyProtobufDescriptorFile", "key.protobuf.descriptor.file"),
    ("valueSubjectNameStrategy", "value.subject.name.strategy"),
    ("keySubjectNameStrategy", "key.subject.name.strategy"),
    ("mode", "bad.records.mode"), ("columnNameOfCorruptRecord", "corrupt.record.column"),
)}
#: Spark from_protobuf's own option names: they apply to every protobuf column (key and value)
_PROTOBUF_OPTIONS = ("enums.as.ints", "emit.default.values", "recursive.fields.max.depth",
                     "upcast.unsigned.ints", "unwrap.primitive.wrapper.types",
                     "retain.empty.message.types")
_OPTIONS.update({name: (name, f"protobuf.{name}") for name in _PROTOBUF_OPTIONS})
#: TypedValues setting -> documented option name (to say the user's word in messages)
_BY_SETTING = {setting: name for name, setting in _OPTIONS.values()}
_BY_SETTING.update({f"{c}.protobuf.{n}": n for c in ("value", "key") for n in _PROTOBUF_OPTIONS})
_SETTING_RE = re.compile(r"(?<![\w.])(" + "|".join(
    re.escape(s) for s in sorted(_BY_SETTING, key=len, reverse=True)) + r")(?![\w.])")

#: the Kafka schema's own columns: a corrupt column may not take one of these names
_KAFKA_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType",
                  "headers")


def value_option_names() -> list[str]:
    """The typed-value option names, as documented (``schema.registry.*`` aside)."""
    return sorted(name for name, _ in _OPTIONS.values())


def _fail(option: str, why: str) -> ConfigurationError:
    return ConfigurationError(f"Option '{option}': {why}")


def _in_option_words(error: ConfigurationError) -> ConfigurationError:
    """A TypedValues / registry error reworded with the source's option names
    (``value.schema`` -> ``valueSchema``), led by the first option it names."""
    text = _SETTING_RE.sub(lambda m: _BY_SETTING[m.group(1)], str(error))
    first = _SETTING_RE.search(str(error))
    if first is not None:
        return _fail(_BY_SETTING[first.group(1)], text)
    if "registry" in text:
        # the registry client names its settings bare ('timeout') or prefixed
        named = re.search(r"setting '(?:schema\.registry\.)?([\w.]+)'", text)
        option = f"schema.registry.{named.group(1)}" if named else (
            "schema.registry.url" if "URL" in text else "schema.registry.*")
        return _fail(option, text)
    return ConfigurationError(text)


# ------------------------------------------------------------------------------- options


@dataclass(frozen=True)
class ColumnOptions:
    """How one column (``key`` or ``value``) is read, as the options gave it. ``schema``: a DDL
    string or pyarrow schema (JSON), the Avro schema text (Avro), else None."""

    column: str
    format: Format = Format(DEFAULT_FORMAT)
    schema: str | pa.Schema | DescriptorFile | None = None
    framing: str = DEFAULT_FRAMING
    subject: str | None = None
    strategy: str | None = None
    #: the format's own options as TypedValues names them (``protobuf.message``), sorted
    options: tuple[tuple[str, str], ...] = ()

    @property
    def kind(self) -> ValueFormat:
        """The format's object in the registry (its rules)."""
        return format_of(self.format)

    @property
    def needs_pin(self) -> bool:
        """No schema given to a format whose reader may be a subject's latest (Avro): that
        reader is fixed on the driver."""
        return self.kind.takes_subject and self.schema is None

    def subject_for(self, topic: str) -> str:
        """The subject whose latest version is this column's reader for ``topic``."""
        if self.subject is not None:
            return self.subject
        return subject_name(self.strategy, topic, self.column == "key")

    def spec(self, pinned: PinnedSchema | None) -> ColumnFormat:
        """The TypedValues column format, with ``pinned`` as the Avro reader when given."""
        schema: Any = self.schema
        if pinned is not None:
            schema = pinned.parse(self.kind)
        # the subject only served to find the reader on the driver: with a pin it is not asked
        return ColumnFormat(self.format, schema, self.framing,  # type: ignore[arg-type]
                            None if pinned is not None else self.subject, self.options)


@dataclass(frozen=True)
class PinnedSchema:
    """A reader schema fixed for a query (Avro, JSON Schema): where it came from, its text and
    the schemas it references as (name, text), a dependency before what uses it."""

    subject: str
    version: int | None
    schema_id: int | None
    text: str
    references: tuple[tuple[str, str], ...] = ()

    def parse(self, kind: ValueFormat) -> Any:
        """The schema as ``kind`` reads it (a parsed Avro schema)."""
        try:
            return kind.registered_reader(self.text, self.references)
        except ConfigurationError as e:
            raise ConfigurationError(f"the latest schema of subject {self.subject!r} "
                                     f"(version {self.version}) is not usable: {e}") from None

    def to_json(self) -> dict[str, Any]:
        return {"subject": self.subject, "version": self.version, "id": self.schema_id,
                "schema": self.text, "references": [list(r) for r in self.references]}

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> PinnedSchema:
        # an earlier pin (a checkpoint's) kept the texts alone
        return cls(str(obj["subject"]), obj.get("version"), obj.get("id"), str(obj["schema"]),
                   tuple(("", str(r)) if isinstance(r, str) else (str(r[0]), str(r[1]))
                         for r in obj.get("references") or ()))


#: executors: plans by (options, pins), so every task of a process with the same pins shares
#: one plan (its counters, its compiled Avro programs)
_PLANS_CAPACITY = 32
_plans: collections.OrderedDict[Any, TypedValues] = collections.OrderedDict()
_plans_lock = threading.Lock()


@dataclass(frozen=True)
class ValueOptions:
    """The typed-value options of one read, parsed and checked (:func:`parse_value_options`)."""

    value: ColumnOptions
    key: ColumnOptions
    mode: Mode
    corrupt_column: str | None
    #: the ``schema.registry.*`` options (names as given, lower-cased), sorted
    registry: tuple[tuple[str, str], ...] = ()
    #: internal option columnNameOfCorruptReason (pyconsumer ingest --bad-records): PERMISSIVE's
    #: string column saying why each bad row failed
    reason_column: str | None = None
    #: internal option columnNameOfRawSize (pyconsumer ingest): a long column with each
    #: record's raw key + value bytes, the size it counts for decoded columns
    size_column: str | None = None

    def columns(self) -> tuple[ColumnOptions, ColumnOptions]:
        return (self.key, self.value)

    @property
    def needs_pins(self) -> bool:
        return self.key.needs_pin or self.value.needs_pin

    @property
    def needs_headers(self) -> bool:
        """A format may name a record's schema in a header (Confluent-framed Avro:
        ``__value_schema_id`` / ``__key_schema_id``): the reader must read headers to see it."""
        return any(c.kind.reads_headers(c.framing) for c in self.columns())

    def registry_client(self) -> SchemaRegistryClient | None:
        """The process's shared client for these settings (None without schema.registry.url)."""
        if not self.registry:
            return None
        try:
            return shared_client(dict(self.registry))
        except ConfigurationError as e:
            raise _in_option_words(e) from None

    def pin(self, column: ColumnOptions, topic: str) -> PinnedSchema:
        """The latest version of ``column``'s subject for ``topic``, asked now (driver)."""
        client = self.registry_client()
        assert client is not None       # parse_value_options requires it for a pin
        subject = column.subject_for(topic)
        latest = client.latest(subject)
        kind = column.kind
        if latest.schema_type.upper() != kind.schema_type:
            raise ConfigurationError(f"the latest schema of subject {subject!r} (for topic "
                                     f"{topic!r}'s {column.column}) is a {latest.schema_type} "
                                     f"schema, not {kind.title}")
        refs = tuple((ref.name, ref.schema.schema_text) for ref in latest.dependencies())
        return PinnedSchema(subject, latest.version, latest.id, latest.schema_text, refs)

    def plan(self, pins: Mapping[str, PinnedSchema] | None = None) -> TypedValues:
        """The TypedValues of one topic (``pins``: column -> its pinned Avro reader), shared
        per process."""
        pins = pins or {}
        cache_key = (self, tuple(sorted(pins.items())))
        with _plans_lock:
            found = _plans.get(cache_key)
            if found is not None:
                _plans.move_to_end(cache_key)
                return found
        for column in self.columns():
            if column.needs_pin and column.column not in pins:
                raise ConfigurationError(f"no {column.column} reader schema was fixed for this "
                                         "task: the driver pins one per topic")
        try:
            plan = TypedValues(self.value.spec(pins.get("value")), self.key.spec(pins.get("key")),
                               mode=self.mode, corrupt_column=self.corrupt_column,
                               registry=self.registry_client(), reason_column=self.reason_column,
                               size_column=self.size_column)
        except ConfigurationError as e:
            raise _in_option_words(e) from None
        with _plans_lock:
            plan = _plans.setdefault(cache_key, plan)
            while len(_plans) > _PLANS_CAPACITY:
                _plans.popitem(last=False)
        return plan


def _column_schema(column: str, kind: ValueFormat, text: str | None) -> str | pa.Schema | None:
    """``valueSchema`` / ``keySchema`` as the format takes it, checked now."""
    option = f"{column}Schema"
    if text is None:
        return None
    if not text.strip():
        raise _fail(option, "is empty")
    if not kind.takes_schema:
        raise _fail(option, f"applies to {column}Format {names_where(lambda f: f.takes_schema)}, "
                            f"not {kind.name}")
    try:
        schema: str | pa.Schema = kind.schema_from_text(text)
    except ConfigurationError as e:
        raise _fail(option, str(e)) from None
    return schema


def _column(opts: Mapping[str, str], column: str) -> ColumnOptions:
    def get(suffix: str) -> str | None:
        return opts.get(f"{column}{suffix}".lower())

    fmt_text = get("Format")
    try:
        fmt = parse_format(DEFAULT_FORMAT if fmt_text is None else fmt_text, f"{column}Format")
    except ConfigurationError:
        raise _fail(f"{column}Format", f"must be one of {', '.join(FORMATS)}, "
                                       f"got {fmt_text!r}") from None
    kind, words = format_of(fmt), Words(column, source=True)
    framing_option = "ProtobufFraming" if get("ProtobufFraming") is not None else "AvroFraming"
    framing_text = get(framing_option)
    framing = (framing_text or DEFAULT_FRAMING).strip().lower()
    if framing not in FRAMINGS:
        raise _fail(f"{column}{framing_option}", f"must be {' or '.join(FRAMINGS)}, got {framing_text!r}")
    if framing_option == "ProtobufFraming" and kind.name != "protobuf":
        raise _fail(f"{column}ProtobufFraming", f"applies to {column}Format=protobuf only")
    if framing_text is not None and not kind.framings:
        raise _fail(f"{column}{framing_option}", f"applies to {column}Format="
                                                 f"{names_where(lambda f: bool(f.framings))} only")
    # the protobuf options: the column's own, and from_protobuf's names for every column
    own = {"protobuf.message": get("ProtobufMessage"),
           "protobuf.descriptor.file": get("ProtobufDescriptorFile"),
           **{f"protobuf.{n}": opts.get(n) for n in _PROTOBUF_OPTIONS}}
    set_here = {k: v for k, v in own.items() if v is not None}
    options: tuple[tuple[str, str], ...] = ()
    if kind.option_names:
        options = tuple(sorted(set_here.items()))
    else:
        for name in ("protobuf.message", "protobuf.descriptor.file"):
            if name in set_here:
                option = _BY_SETTING[f"{column}.{name}"]
                raise _fail(option, f"applies to {column}Format=protobuf only, not {kind.name}")
    subject = get("Subject")
    strategy = get("SubjectNameStrategy")
    for suffix, given in (("Subject", subject), ("SubjectNameStrategy", strategy)):
        if given is not None and not kind.takes_subject:
            raise _fail(f"{column}{suffix}", f"applies to {column}Format="
                                             f"{names_where(lambda f: f.takes_subject)} only, "
                                             f"not {kind.name}")
    if subject is not None and not subject.strip():
        raise _fail(f"{column}Subject", "is empty")
    if strategy is not None:
        strategy = strategy.strip()
        try:
            subject_name(strategy, "t", column == "key", "r")
        except ConfigurationError as e:
            raise _fail(f"{column}SubjectNameStrategy", str(e)) from None
    schema_text = get("Schema")
    schema: str | pa.Schema | DescriptorFile | None = _column_schema(column, kind, schema_text)
    if schema is None and options:
        try:
            schema = kind.schema_from_options(dict(options))
        except ConfigurationError as e:
            raise _fail(f"{column}ProtobufDescriptorFile",
                        str(e).removeprefix("protobuf.descriptor.file: ")) from None
    missing = kind.missing_schema(framing, words) if schema is None else None
    if missing is not None:
        raise _fail(words("schema") if framing_option == "AvroFraming" or kind.name != "protobuf"
                    else f"{column}ProtobufDescriptorFile", missing)
    out = ColumnOptions(column, fmt, schema, framing, subject, strategy, options)
    if out.needs_pin and subject is None and strategy is not None:
        # the record strategies name the subject after the record, which only a schema knows
        try:
            subject_name(strategy, "t", column == "key")
        except ConfigurationError:
            raise _fail(f"{column}SubjectNameStrategy",
                        f"{strategy} names the subject after the record, so the reader schema "
                        f"cannot be found from the topic: set {column}Subject or "
                        f"{column}Schema") from None
    return out


def parse_value_options(opts: Mapping[str, str]) -> ValueOptions | None:
    """The typed-value options of ``opts`` (keys lower-cased), or None when key and value stay
    binary and nothing typed was asked. A :class:`ConfigurationError` names a bad option."""
    if str(opts.get("convert.any.fields.to.json", "false")).strip().lower() != "false":
        raise _fail("convert.any.fields.to.json", "is not supported: google.protobuf.Any fields "
                                                  "are read as struct<type_url, value>, as Spark "
                                                  "gives them without it")
    value, key = _column(opts, "value"), _column(opts, "key")
    given = [n for n in _PROTOBUF_OPTIONS if n in opts]
    if given and not any(c.kind.name == "protobuf" for c in (value, key)):
        raise _fail(given[0], "applies to valueFormat=protobuf or keyFormat=protobuf only")
    registry = tuple(sorted((k, v) for k, v in opts.items() if k.startswith("schema.registry.")))
    if not value.kind.decodes and not key.kind.decodes:
        for name in ("mode", "columnnameofcorruptrecord"):
            if name in opts:
                raise _fail(_OPTIONS[name][0], "applies only with valueFormat or keyFormat other "
                                               f"than {DEFAULT_FORMAT} (the values are not decoded)")
        if registry:
            users = [n for n, f in FORMATS.items()
                     if any(f.needs_registry(fr, False) for fr in FRAMINGS)]
            raise _fail(registry[0][0], "a schema registry is only used with " + " or ".join(
                f"{c}Format={n}" for c in ("value", "key") for n in users))
        return None
    try:
        mode = parse_mode(opts.get("mode", "PERMISSIVE"))
    except ConfigurationError:
        raise _fail("mode", f"must be PERMISSIVE, DROPMALFORMED or FAILFAST (any case), "
                            f"got {opts['mode']!r}") from None
    corrupt: str | None = opts.get("columnnameofcorruptrecord", DEFAULT_CORRUPT_COLUMN)
    if corrupt is not None and not corrupt.strip():
        raise _fail("columnNameOfCorruptRecord", "is empty")
    if mode is not Mode.PERMISSIVE:
        if "columnnameofcorruptrecord" in opts:
            raise _fail("columnNameOfCorruptRecord", f"applies to mode PERMISSIVE only, not "
                                                     f"{mode.value}")
        corrupt = None
    if corrupt is not None:
        names = [corrupt] if value.kind.decodes else []
        names += [f"{corrupt}_key"] if key.kind.decodes else []
        for name in names:
            if name in _KAFKA_COLUMNS:
                raise _fail("columnNameOfCorruptRecord", f"the corrupt record column {name!r} "
                                                         "would replace a column of the Kafka schema")
    reason = opts.get("columnnameofcorruptreason")
    if reason is not None and (mode is not Mode.PERMISSIVE or corrupt is None or not reason.strip()):
        raise _fail("columnNameOfCorruptReason", "is a non-empty name, with mode PERMISSIVE and a "
                                                 "columnNameOfCorruptRecord")
    size = opts.get("columnnameofrawsize")
    if size is not None and not size.strip():
        raise _fail("columnNameOfRawSize", "is empty")
    out = ValueOptions(value, key, mode, corrupt, registry, reason, size)
    if registry:
        out.registry_client()           # an unknown or ill-typed setting fails now
    else:
        lacking = next((c for c in out.columns()
                        if c.kind.needs_registry(c.framing, c.schema is not None)), None)
        if lacking is not None:
            # named after the first column of that format (the key's, when both are)
            column = next(c.column for c in out.columns() if c.format is lacking.format)
            words = Words(column, source=True)
            raise _fail(lacking.kind.missing_registry_option(words),
                        lacking.kind.missing_registry(words))
    if not out.needs_pins:
        out.plan()                      # what TypedValues itself refuses, now
    return out


# ----------------------------------------------------------------------------- the schema


def nullable_type(t: pa.DataType) -> pa.DataType:
    """``t`` with every nested field nullable (Spark's ``asNullable``: what from_json and
    from_avro in PERMISSIVE declare)."""
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, nullable_type(f.type), True) for f in t])
    if pa.types.is_map(t):
        return pa.map_(pa.field(t.key_field.name, nullable_type(t.key_type), False),
                       pa.field(t.item_field.name, nullable_type(t.item_type), True))
    if pa.types.is_list(t):
        return pa.list_(pa.field(t.value_field.name, nullable_type(t.value_type), True))
    if pa.types.is_large_list(t):
        return pa.large_list(pa.field(t.value_field.name, nullable_type(t.value_type), True))
    return t


def declared_type(kind: ValueFormat, t: pa.DataType) -> pa.DataType:
    """The Arrow form of the type the DataFrame declares for a column of format ``kind`` that
    decodes to ``t``: ``t`` itself where the format's nullability is Spark's own function's
    (from_protobuf), else :func:`nullable_type`."""
    return t if kind.exact_nullability else nullable_type(t)


class ReaderPins:
    """The driver's fixed Avro readers, per topic (column -> :class:`PinnedSchema`).

    Made from the pins the DataFrame schema was planned with; a topic met later (a pattern
    subscription finding a new topic) is pinned when first met, and its type must be the
    declared one: ``same_type(column, arrow_type)`` says whether it is (the caller compares
    Spark types; None: no check)."""

    def __init__(self, values: ValueOptions,
                 pinned: Mapping[str, Mapping[str, PinnedSchema]] | None = None,
                 same_type: Callable[[str, pa.DataType], bool] | None = None) -> None:
        self.values = values
        self._pins: dict[str, dict[str, PinnedSchema]] = {t: dict(p) for t, p in (pinned or {}).items()}
        self._same_type = same_type
        self._lock = threading.Lock()

    def for_topic(self, topic: str) -> dict[str, PinnedSchema]:
        """The pins of ``topic``, asking the registry the first time a topic is met."""
        if not self.values.needs_pins:
            return {}
        with self._lock:
            found = self._pins.get(topic)
        if found is not None:
            return found
        pins = {c.column: self.values.pin(c, topic) for c in self.values.columns() if c.needs_pin}
        plan = self.values.plan(pins)
        for column, pin in pins.items():
            got = plan.column_type(column, topic)
            if self._same_type is not None and not self._same_type(column, got):
                raise ConfigurationError(
                    f"topic {topic!r}: the latest schema of subject {pin.subject!r} (version "
                    f"{pin.version}) gives the {column} type {got}, not the type of the "
                    f"query's {column} column: set {column}Schema or {column}Subject so every "
                    "topic reads into one type")
        with self._lock:
            return self._pins.setdefault(topic, pins)

    def pin_all(self, topics: Iterable[str]) -> dict[str, dict[str, PinnedSchema]]:
        return {t: self.for_topic(t) for t in sorted(set(topics))}

    def to_metadata(self, column: str) -> str:
        """The pins of ``column`` as JSON text for the StructField's metadata."""
        with self._lock:
            return json.dumps({t: p[column].to_json() for t, p in sorted(self._pins.items())
                               if column in p}, sort_keys=True)

    @staticmethod
    def from_metadata(texts: Mapping[str, str]) -> dict[str, dict[str, PinnedSchema]]:
        """column -> metadata JSON (:meth:`to_metadata`) back to topic -> column -> pin."""
        out: dict[str, dict[str, PinnedSchema]] = {}
        for column, text in texts.items():
            for topic, obj in json.loads(text).items():
                out.setdefault(topic, {})[column] = PinnedSchema.from_json(obj)
        return out
