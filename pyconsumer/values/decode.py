"""``decode_arrow`` with formats: a record set (a Fetch response's ``records`` for one partition,
or a log segment) straight to a typed batch in Spark's Kafka schema.

One job: :func:`pyconsumer.records.decode_arrow` (the compiled decoder: batches, codecs, CRCs,
transactions) then the one :class:`~pyconsumer.values.typed.TypedValues` plan the consumer and
the Spark source apply, so a format means the same thing here as in ``poll_arrow()``.
"""
from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from pyconsumer import records
from pyconsumer.errors import ConfigurationError
from pyconsumer.values.modes import DEFAULT_CORRUPT_COLUMN, Mode
from pyconsumer.values.registry import SchemaRegistryClient, shared_client
from pyconsumer.values.formats import DEFAULT_FORMAT, FRAMINGS, Format, format_of, parse_format
from pyconsumer.values.typed import ColumnFormat, TypedValues

__all__ = ["decode_arrow", "typed_values"]

#: plans kept by their arguments (when every one is hashable): an Avro plan compiles each
#: writer schema once, so a caller decoding segment after segment pays that once
_PLANS: dict[tuple[Any, ...], TypedValues] = {}
_PLANS_MAX = 64
_plans_lock = threading.Lock()


def typed_values(*, value_format: str | Format | None = None, value_schema: Any = None,
                 key_format: str | Format | None = None, key_schema: Any = None,
                 value_subject: str | None = None, key_subject: str | None = None,
                 value_framing: str = "confluent", key_framing: str = "confluent",
                 mode: str | Mode = Mode.PERMISSIVE,
                 corrupt_column: str | None = DEFAULT_CORRUPT_COLUMN,
                 registry: SchemaRegistryClient | None = None,
                 schema_registry_url: str | Mapping[str, object] | None = None,
                 subject_strategy: str | None = None,
                 value_options: Mapping[str, Any] | None = None,
                 key_options: Mapping[str, Any] | None = None) -> TypedValues | None:
    """The plan of these arguments (None when key and value stay binary), shared between
    calls with the same hashable arguments. ``schema_registry_url``: a URL, or
    confluent-kafka's registry settings (``{"url": ..., "basic.auth.user.info": ...}``);
    ``registry``: a ready client (one of the two). ``value_options`` / ``key_options``: the
    format's own settings without the column (protobuf: ``{"protobuf.message": ...,
    "protobuf.descriptor.file": ...}``)."""
    if registry is not None and schema_registry_url is not None:
        raise ValueError("give registry (a client) or schema_registry_url, not both")
    if schema_registry_url is not None:
        conf = ({"url": schema_registry_url} if isinstance(schema_registry_url, str)
                else dict(schema_registry_url))
        registry = shared_client(conf)
    value = _column("value", value_format, value_schema, value_framing, value_subject, value_options)
    key = _column("key", key_format, key_schema, key_framing, key_subject, key_options)
    if not value.decodes and not key.decodes:
        for name, given in (("value_schema", value_schema), ("key_schema", key_schema),
                            ("value_subject", value_subject), ("key_subject", key_subject)):
            if given is not None:
                raise ValueError(f"{name} is given but {name.split('_')[0]}_format is {DEFAULT_FORMAT}")
        return None
    key_args = (value, key, mode, corrupt_column, id(registry), subject_strategy)
    try:
        hash(key_args)
    except TypeError:                     # a dict or StructType schema: a plan of its own
        return TypedValues(value, key, mode=mode, corrupt_column=corrupt_column,
                           registry=registry, subject_strategy=subject_strategy)
    with _plans_lock:
        plan = _PLANS.get(key_args)
        if plan is None or plan.registry is not registry:
            if len(_PLANS) >= _PLANS_MAX:
                _PLANS.pop(next(iter(_PLANS)))
            plan = _PLANS[key_args] = TypedValues(
                value, key, mode=mode, corrupt_column=corrupt_column, registry=registry,
                subject_strategy=subject_strategy)
        return plan


def _column(name: str, fmt: str | Format | None, schema: Any, framing: str, subject: str | None,
            options: Mapping[str, Any] | None) -> ColumnFormat:
    kind = parse_format(fmt or DEFAULT_FORMAT, f"{name}_format")
    opts = tuple(sorted((options or {}).items()))
    if schema is None and opts:
        try:
            schema = format_of(kind).schema_from_options(dict(opts))
        except ConfigurationError as e:
            raise ConfigurationError(f"{name}_options: {e}") from None
    return ColumnFormat(kind, schema, _framing(framing, f"{name}_framing"), subject, opts)


def _framing(framing: str, name: str) -> Any:
    folded = framing.strip().lower() if isinstance(framing, str) else framing
    if folded not in FRAMINGS:
        raise ValueError(f"{name} must be {' or '.join(FRAMINGS)}, not {framing!r}")
    return folded


def decode_arrow(record_set: Any, topic: str, partition: int, *,
                 value_format: str | Format | None = None, value_schema: Any = None,
                 key_format: str | Format | None = None, key_schema: Any = None,
                 value_subject: str | None = None, key_subject: str | None = None,
                 value_framing: str = "confluent", key_framing: str = "confluent",
                 mode: str | Mode = Mode.PERMISSIVE,
                 corrupt_column: str | None = DEFAULT_CORRUPT_COLUMN,
                 registry: SchemaRegistryClient | None = None,
                 schema_registry_url: str | Mapping[str, object] | None = None,
                 subject_strategy: str | None = None,
                 value_options: Mapping[str, Any] | None = None,
                 key_options: Mapping[str, Any] | None = None,
                 plan: TypedValues | None = None,
                 check_crcs: bool = True, include_headers: bool = False, fetch_offset: int = 0,
                 isolation_level: str = "read_uncommitted",
                 aborted_transactions: Iterable[tuple[int, int]] | None = None) -> pa.RecordBatch:
    """:func:`pyconsumer.records.decode_arrow` (same record-set arguments, same errors) with the
    key and value typed: ``value_format`` / ``key_format`` binary (default), string, json
    (``*_schema``: Spark DDL, StructType or pyarrow schema), avro (``*_schema`` the reader's,
    or the latest of ``*_subject`` / of the topic's subject; ``*_framing`` confluent, with
    writer schemas from ``registry`` or ``schema_registry_url``, or none with ``*_schema``
    the writer's) or protobuf (``*_options``: ``protobuf.message``,
    ``protobuf.descriptor.file``, ...; ``*_schema`` .proto text). ``mode`` PERMISSIVE (bad
    values null, raw bytes in ``corrupt_column``), DROPMALFORMED (bad records left out) or FAILFAST
    (:class:`~pyconsumer.values.modes.MalformedValueError` naming topic, partition and
    offset). ``plan``: a ready :class:`TypedValues` instead of the format arguments.
    Bad arguments raise :class:`~pyconsumer.errors.ConfigurationError` (or ValueError)."""
    if plan is None:
        plan = typed_values(value_format=value_format, value_schema=value_schema,
                            key_format=key_format, key_schema=key_schema,
                            value_subject=value_subject, key_subject=key_subject,
                            value_framing=value_framing, key_framing=key_framing, mode=mode,
                            corrupt_column=corrupt_column, registry=registry,
                            schema_registry_url=schema_registry_url,
                            subject_strategy=subject_strategy, value_options=value_options,
                            key_options=key_options)
    elif value_format is not None or key_format is not None:
        raise ValueError("give plan or the format arguments, not both")
    headers = include_headers or (plan is not None and plan.reads_headers)
    batch = records.decode_arrow(record_set, topic, partition, check_crcs=check_crcs,
                                 include_headers=headers, fetch_offset=fetch_offset,
                                 isolation_level=isolation_level,
                                 aborted_transactions=aborted_transactions)
    if plan is None:
        return batch
    typed = plan.apply(batch) if batch.num_rows else records.empty_batch(
        plan.schema(batch.schema, [topic]))
    if headers and not include_headers:
        typed = typed.drop_columns(["headers"])     # read for the schema ids only
    return typed
