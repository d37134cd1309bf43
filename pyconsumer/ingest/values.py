"""Typed values in the ingest: the ``--value-format`` ... ``--bad-records`` flags as the Spark
source's options, checked before Spark starts, and the split of a read into the records that
decoded (the output) and those rejected (the ``--bad-records`` dataset).

Decoding itself is the source's (:class:`~pyconsumer.values.typed.TypedValues` inside the
``pyconsumer`` data source): this module only names it. With ``--bad-records`` the read is
PERMISSIVE with the corrupt-record column(s) and a reason column; a row with a reason is
rejected, every other row is good, so each record read lands in exactly one of the two.
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyconsumer.ingest.options import IngestError

__all__ = ["ValueFlags", "value_options", "typed_values", "check_registry", "Rejects",
           "rejects", "with_rejects", "read_flag_text", "redact", "describe_values", "REASON_OPTION", "REASON_COLUMN",
           "REJECTED_COLUMNS"]

#: the source's option naming the (internal) column that says why a row was rejected
REASON_OPTION = "columnNameOfCorruptReason"
#: its name in the ingest's read; it is never written to the output
REASON_COLUMN = "_corrupt_reason"
#: the columns of the rejected-records dataset (``headers`` too when the read includes them)
REJECTED_COLUMNS = ("topic", "partition", "offset", "timestamp", "timestampType", "key", "value",
                    "reason")
_DEFAULT_CORRUPT = "_corrupt_record"

# the Spark source's option -> TypedValues.from_settings' name (the consumer settings' names)
_SETTING_OF = {
    "valueformat": "value.format", "keyformat": "key.format",
    "valueschema": "value.schema", "keyschema": "key.schema",
    "valuesubject": "value.subject", "keysubject": "key.subject",
    "valueavroframing": "value.avro.framing", "keyavroframing": "key.avro.framing",
    "valuesubjectnamestrategy": "value.subject.name.strategy",
    "keysubjectnamestrategy": "key.subject.name.strategy",
    "mode": "bad.records.mode", "columnnameofcorruptrecord": "corrupt.record.column",
}

# a setting's name in an error -> the flag the user typed (longest first: key.schema before key)
_FLAG_OF = {
    "schema.registry.basic.auth.user.info": "--schema-registry-auth",
    "schema.registry.bearer.auth.token": "--schema-registry-token",
    "schema.registry.url": "--schema-registry",
    "value.format": "--value-format", "key.format": "--key-format",
    "value.schema": "--value-schema", "key.schema": "--key-schema",
    "value.subject": "--value-subject", "bad.records.mode": "--mode",
}
_SETTING_NAMES = re.compile("|".join(re.escape(n) for n in sorted(_FLAG_OF, key=len, reverse=True)))


def _as_flags(message: str) -> str:
    return _SETTING_NAMES.sub(lambda m: _FLAG_OF[m.group(0)], message)


@dataclass(frozen=True)
class ValueFlags:
    """The ingest's typed-value flags, as typed (None: not given)."""

    value_format: str | None = None
    key_format: str | None = None
    value_schema: str | None = None
    key_schema: str | None = None
    value_subject: str | None = None
    schema_registry: str | None = None
    registry_auth: str | None = None          # user:password (basic auth)
    registry_token: str | None = None         # a static bearer token
    mode: str | None = None
    bad_records: str | None = None


def read_flag_text(text: str | None, flag: str) -> str | None:
    """A flag's text, or with ``@path`` the file's content (stripped of its final newline)."""
    if text is None or not text.startswith("@"):
        return text
    path = text[1:]
    try:
        with open(path, encoding="utf-8") as f:
            content = f.read()
    except OSError as exc:
        raise IngestError(f"{flag} @{path}: cannot read the file: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise IngestError(f"{flag} @{path}: the file is not UTF-8 text ({exc.reason} at byte "
                          f"{exc.start})") from None
    content = content.rstrip("\r\n")
    if not content.strip():
        raise IngestError(f"{flag} @{path}: the file is empty")
    return content


def value_options(flags: ValueFlags) -> dict[str, str]:
    """The Spark source's options for ``flags`` (empty when none is given). Raises
    :class:`IngestError` naming the flag for a combination that cannot work; the schemas and
    the registry URL are checked by :func:`typed_values`, ``--bad-records`` by
    :func:`with_rejects`."""
    value_format = (flags.value_format or "").lower() or None
    key_format = (flags.key_format or "").lower() or None
    typed = {value_format, key_format} - {None, "binary"}
    mode = flags.mode.upper() if flags.mode else None
    if mode is not None and not typed and flags.bad_records is None:
        raise IngestError("--mode needs --value-format or --key-format (string, json or avro): "
                          "binary records are never malformed")
    if flags.value_subject is not None and value_format != "avro":
        raise IngestError("--value-subject applies to --value-format avro")
    if flags.registry_auth is not None and flags.registry_token is not None:
        raise IngestError("give --schema-registry-auth or --schema-registry-token, not both")
    if (flags.registry_auth is not None or flags.registry_token is not None) \
            and flags.schema_registry is None:
        raise IngestError("--schema-registry-auth and --schema-registry-token need "
                          "--schema-registry URL")
    if flags.registry_auth is not None and ":" not in flags.registry_auth:
        raise IngestError("--schema-registry-auth is USER:PASSWORD (or @FILE holding it)")
    opts: dict[str, str] = {}
    # (--bad-records' own options, PERMISSIVE and the reason column, are run_ingest's: with_rejects)
    for name, value in (("valueFormat", value_format), ("keyFormat", key_format),
                        ("valueSchema", flags.value_schema), ("keySchema", flags.key_schema),
                        ("valueSubject", flags.value_subject),
                        ("schema.registry.url", flags.schema_registry),
                        ("schema.registry.basic.auth.user.info", flags.registry_auth),
                        ("schema.registry.bearer.auth.token", flags.registry_token),
                        ("mode", mode)):
        if value is not None:
            opts[name] = value
    return opts


def with_rejects(opts: Mapping[str, str]) -> dict[str, str]:
    """``opts`` for a read whose rejected records go apart (``--bad-records``): PERMISSIVE, the
    corrupt-record column(s) and the reason column. Raises :class:`IngestError` when the read
    has nothing to reject or a mode that would drop or fail instead."""
    out = dict(opts)
    lowered = {k.lower(): k for k in out}
    formats = {(out.get(lowered.get(f"{c}format", ""), "") or "binary").lower()
               for c in ("value", "key")}
    if formats <= {"binary"}:
        raise IngestError("--bad-records needs --value-format or --key-format (string, json "
                          "or avro): binary records are never rejected")
    mode = out.pop(lowered["mode"], None) if "mode" in lowered else None
    if mode is not None and mode.strip().upper() != "PERMISSIVE":
        raise IngestError(f"--bad-records does not go with --mode {mode.strip().upper()}: "
                          "rejected records are written apart, so the read keeps every record "
                          "(PERMISSIVE)")
    if "columnnameofcorruptrecord" in lowered and not out[lowered["columnnameofcorruptrecord"]]:
        raise IngestError("--bad-records takes the raw bytes from the corrupt-record column: "
                          "-o columnNameOfCorruptRecord cannot be empty")
    out["mode"] = "PERMISSIVE"
    out[REASON_OPTION] = REASON_COLUMN
    return out


def _settings(opts: Mapping[str, str]) -> dict[str, Any]:
    """The source's typed-value options under TypedValues.from_settings' names."""
    out: dict[str, Any] = {}
    for key, value in opts.items():
        low = key.lower()
        if low in _SETTING_OF:
            out[_SETTING_OF[low]] = value
        elif low.startswith("schema.registry."):
            out[low] = value
    return out


def typed_values(opts: Mapping[str, str]) -> Any:
    """The :class:`~pyconsumer.values.typed.TypedValues` the source will build from ``opts``
    (None when key and value stay binary), built here to check the formats, the schemas (a DDL
    or an Avro schema that does not parse) and the registry URL before Spark starts.
    No request is sent. Raises :class:`IngestError` naming the flag."""
    from pyconsumer.errors import ConfigurationError
    from pyconsumer.values.registry import SchemaRegistryClient
    from pyconsumer.values.schema import to_arrow_schema
    from pyconsumer.values.typed import TypedValues

    settings = _settings(opts)
    for column in ("value", "key"):
        # a bad DDL, named by its flag (TypedValues' own message does not say which column)
        if str(settings.get(f"{column}.format", "")).lower() == "json" \
                and settings.get(f"{column}.schema") is not None:
            try:
                to_arrow_schema(settings[f"{column}.schema"])
            except ConfigurationError as exc:
                raise IngestError(f"--{column}-schema is not a Spark DDL schema: {exc}") from None
    registry = None
    conf = {k: v for k, v in settings.items() if k.startswith("schema.registry.")}
    if conf:
        try:
            registry = SchemaRegistryClient.from_config(conf)
        except ConfigurationError as exc:
            text = _as_flags(redact(str(exc)))
            raise IngestError(text if text.startswith("--") else f"--schema-registry: {text}") \
                from None
    try:
        return TypedValues.from_settings(settings, registry=registry)
    except ConfigurationError as exc:
        raise IngestError(_as_flags(redact(str(exc)))) from None


def redact(text: str) -> str:
    """``text`` without the credentials of any URL in it (``https://user:pw@host``)."""
    return re.sub(r"(//)[^/@\s'\"]*@", r"\1***@", text)


#: Spark's Kafka schema, as the source's Arrow batches have it (headers are not typed)
def _kafka_schema() -> Any:
    import pyarrow as pa

    return pa.schema([("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()),
                      ("partition", pa.int32()), ("offset", pa.int64()),
                      ("timestamp", pa.timestamp("us", tz="UTC")), ("timestampType", pa.int32())])


def check_registry(typed: Any, topics: Sequence[str], registry_flag: str | None) -> Any:
    """Before Spark starts: the typed output schema for ``topics``, which asks the registry for
    each topic's latest reader schema where the query will (Avro without --value-schema). An
    unreachable registry, a missing subject or topics whose reader schemas differ fail here,
    naming the registry by its URL without credentials. Returns the pyarrow schema."""
    from pyconsumer.errors import ConfigurationError, KafkaError

    try:
        return typed.schema(_kafka_schema(), list(topics))
    except ConfigurationError as exc:
        raise IngestError(_as_flags(str(exc))) from None
    except KafkaError as exc:         # the registry's errors (not found, 401, unreachable)
        where = ", ".join(typed.registry.urls) if typed.registry is not None else registry_flag
        raise IngestError(f"--schema-registry {where}: {exc}") from None


def describe_values(opts: Mapping[str, str]) -> str:
    """One line for the log: the formats and the registry (its URL without credentials)."""
    lowered = {k.lower(): v for k, v in opts.items()}
    parts = []
    for column in ("key", "value"):
        fmt = lowered.get(f"{column}format")
        if fmt and fmt.lower() != "binary":
            parts.append(f"{column} {fmt.lower()}")
    if not parts:
        return ""
    url = lowered.get("schema.registry.url")
    if url:
        from pyconsumer.values.registry import SchemaRegistryClient

        try:
            parts.append("registry " + ", ".join(SchemaRegistryClient(url).urls))
        except Exception:                  # checked before; never echo what did not parse
            parts.append("registry (given)")
    mode = lowered.get("mode")
    if lowered.get(REASON_OPTION.lower()):
        parts.append("rejected records apart")
    elif mode:
        parts.append(mode.upper())
    return "; ".join(parts)


# --------------------------------------------------------------------------- the split


@dataclass(frozen=True)
class Rejects:
    """Where a PERMISSIVE read with a reason column keeps what the rejected-records dataset
    needs: the raw value and key columns (the corrupt-record columns of the typed ones) and
    the reason."""

    reason: str
    raw_value: str                # the corrupt column, or "value" when the value stays binary
    raw_key: str                  # the key's corrupt column, or "key"
    added: tuple[str, ...]        # the columns the read adds (dropped from the good rows)

    def good(self, df: Any) -> Any:
        """The rows that decoded, without the added columns: the output."""
        from pyspark.sql import functions as F

        return df.filter(F.col(self.reason).isNull()).drop(*self.added)

    def rejected(self, df: Any) -> Any:
        """The rejected rows as the bad-records dataset keeps them: topic, partition, offset,
        timestamp, timestampType, the raw key and value, [headers], the reason."""
        from pyspark.sql import functions as F

        cols = [F.col(c) for c in ("topic", "partition", "offset", "timestamp", "timestampType")]
        cols += [F.col(self.raw_key).alias("key"), F.col(self.raw_value).alias("value")]
        if "headers" in df.columns:
            cols.append(F.col("headers"))
        cols.append(F.col(self.reason).alias("reason"))
        return df.filter(F.col(self.reason).isNotNull()).select(*cols)


def rejects(opts: Mapping[str, str]) -> Rejects | None:
    """The split of a read with these options, or None when it has no reason column."""
    lowered = {k.lower(): v for k, v in opts.items()}
    reason = lowered.get(REASON_OPTION.lower())
    if not reason:
        return None
    corrupt = lowered.get("columnnameofcorruptrecord") or _DEFAULT_CORRUPT
    value_typed = (lowered.get("valueformat") or "binary").lower() != "binary"
    key_typed = (lowered.get("keyformat") or "binary").lower() != "binary"
    added = tuple(([corrupt] if value_typed else []) + ([f"{corrupt}_key"] if key_typed else [])
                  + [reason])
    return Rejects(reason=reason, raw_value=corrupt if value_typed else "value",
                   raw_key=f"{corrupt}_key" if key_typed else "key", added=added)
