"""Typed values in the ingest: the ``--value-format`` ... ``--bad-records`` flags as the Spark
source's options, checked before Spark starts, and the split of a read into the records that
decoded (the output) and those rejected (the ``--bad-records`` dataset).

Decoding itself is the source's (:class:`~pyconsumer.values.typed.TypedValues` inside the
``pyconsumer`` data source): this module only names it. With ``--bad-records`` the read is
PERMISSIVE with the corrupt-record column(s) and a reason column; a row with a reason is
rejected, every other row is good, so each record read lands in exactly one of the two.
DROPMALFORMED is read the same way, the rejected rows left out by the ingest (which counts
them: the source would drop them unseen). Typed reads carry each record's raw key + value
size, the bytes the summary counts (:func:`plan_read`).
"""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyconsumer.ingest.options import IngestError
from pyconsumer.values.formats import FORMATS, decodes, names_where

if TYPE_CHECKING:
    from pyconsumer.spark.values import ValueOptions

__all__ = ["ValueFlags", "value_options", "typed_values", "check_registry", "Rejects",
           "rejects", "with_rejects", "read_flag_text", "redact", "describe_values", "REASON_OPTION", "REASON_COLUMN",
           "REJECTED_COLUMNS", "SIZE_OPTION", "SIZE_COLUMN", "ReadPlan", "plan_read"]

#: the source's option naming the (internal) column that says why a row was rejected
REASON_OPTION = "columnNameOfCorruptReason"
#: its name in the ingest's read; it is never written to the output
REASON_COLUMN = "_corrupt_reason"
#: the columns of the rejected-records dataset (``headers`` too when the read includes them)
REJECTED_COLUMNS = ("topic", "partition", "offset", "timestamp", "timestampType", "key", "value",
                    "reason")
#: the source's (internal) option naming a long column with each record's raw key + value
#: bytes: a decoded key or value has no length of its own, and the summary counts bytes read
SIZE_OPTION = "columnNameOfRawSize"
#: its name in the ingest's read; it is never written
SIZE_COLUMN = "_raw_size"
_DEFAULT_CORRUPT = "_corrupt_record"

# the source's option -> the flag that sets it (an error names what the user typed)
_FLAG_OF = {
    "valueFormat": "--value-format", "keyFormat": "--key-format",
    "valueSchema": "--value-schema", "keySchema": "--key-schema",
    "valueSubject": "--value-subject", "mode": "--mode",
    "schema.registry.url": "--schema-registry", "schema.registry.*": "--schema-registry",
    "schema.registry.basic.auth.user.info": "--schema-registry-auth",
    "schema.registry.bearer.auth.token": "--schema-registry-token",
    "valueProtobufMessage": "--value-protobuf-message",
    "valueProtobufDescriptorFile": "--value-protobuf-descriptor-file",
}
# option names inside a message (camelCase ones and the registry URL; "mode" is also a word)
_NAMES_IN_TEXT = re.compile(r"(?<![\w.-])(valueFormat|keyFormat|valueSchema|keySchema|valueSubject"
                            r"|keySubject|valueAvroFraming|keyAvroFraming|valueSubjectNameStrategy"
                            r"|keySubjectNameStrategy|columnNameOfCorruptRecord"
                            r"|valueProtobufMessage|valueProtobufDescriptorFile"
                            r"|schema\.registry\.url)(?![\w.])")
_OPTION_ERROR = re.compile(r"Options? '([^']+)': (.*)", re.S)


def _as_flags(message: str) -> str:
    """The source's ``Option 'valueSchema': is not ...`` as ``--value-schema is not ...``: the
    flags the user typed (other options as ``-o name``)."""
    def flag(name: str) -> str:
        return _FLAG_OF.get(name, f"-o {name}")

    m = _OPTION_ERROR.match(message)
    if m is None:
        return _NAMES_IN_TEXT.sub(lambda n: flag(n.group(1)), message)
    option, rest = m.group(1), _NAMES_IN_TEXT.sub(lambda n: flag(n.group(1)), m.group(2))
    if flag(option) in rest:              # the message names it already
        return rest
    return f"{flag(option)} {rest}" if rest.startswith(("is ", "applies ", "must ")) \
        else f"{flag(option)}: {rest}"


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
    protobuf_message: str | None = None           # the value's message (full name)
    protobuf_descriptor_file: str | None = None   # the value's FileDescriptorSet, instead of the registry


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
    typed = value_format is not None and decodes(value_format) or \
        key_format is not None and decodes(key_format)
    mode = flags.mode.upper() if flags.mode else None
    if mode is not None and not typed and flags.bad_records is None:
        raise IngestError(f"--mode needs --value-format or --key-format ({_typed_names()}): "
                          "binary records are never malformed")
    value_kind = FORMATS.get(value_format or "")
    if flags.value_subject is not None and not (value_kind is not None and value_kind.takes_subject):
        raise IngestError("--value-subject applies to --value-format "
                          f"{names_where(lambda f: f.takes_subject)}")
    if flags.registry_auth is not None and flags.registry_token is not None:
        raise IngestError("give --schema-registry-auth or --schema-registry-token, not both")
    if (flags.registry_auth is not None or flags.registry_token is not None) \
            and flags.schema_registry is None:
        raise IngestError("--schema-registry-auth and --schema-registry-token need "
                          "--schema-registry URL")
    if flags.registry_auth is not None and ":" not in flags.registry_auth:
        raise IngestError("--schema-registry-auth is USER:PASSWORD (or @FILE holding it)")
    for flag, given in (("--value-protobuf-message", flags.protobuf_message),
                        ("--value-protobuf-descriptor-file", flags.protobuf_descriptor_file)):
        if given is not None and value_format != "protobuf":
            raise IngestError(f"{flag} applies to --value-format protobuf")
    opts: dict[str, str] = {}
    # (--bad-records' own options, PERMISSIVE and the reason column, are run_ingest's: with_rejects)
    for name, value in (("valueFormat", value_format), ("keyFormat", key_format),
                        ("valueSchema", flags.value_schema), ("keySchema", flags.key_schema),
                        ("valueSubject", flags.value_subject),
                        ("schema.registry.url", flags.schema_registry),
                        ("schema.registry.basic.auth.user.info", flags.registry_auth),
                        ("schema.registry.bearer.auth.token", flags.registry_token),
                        ("valueProtobufMessage", flags.protobuf_message),
                        ("valueProtobufDescriptorFile", flags.protobuf_descriptor_file),
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
    if not _typed(out):
        raise IngestError(f"--bad-records needs --value-format or --key-format ({_typed_names()}): "
                          "binary records are never rejected")
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


def _typed(opts: Mapping[str, str]) -> bool:
    """Whether the options decode the value or the key (a format other than binary)."""
    lowered = {k.lower(): v for k, v in opts.items()}
    return decodes(lowered.get("valueformat")) or decodes(lowered.get("keyformat"))


def _typed_names() -> str:
    """The formats that decode, for a message: ``string, json or avro``."""
    return names_where(lambda f: f.decodes)


def typed_values(opts: Mapping[str, str]) -> ValueOptions | None:
    """The typed-value options the source will parse from ``opts`` (None when key and value
    stay binary), parsed here by the source's own parser to check the formats, the schemas (a
    DDL or an Avro schema that does not parse) and the registry settings before Spark starts.
    No request is sent. Raises :class:`IngestError` naming the flag."""
    from pyconsumer.errors import ConfigurationError
    from pyconsumer.spark.values import parse_value_options

    try:
        return parse_value_options({k.lower(): v for k, v in opts.items()})
    except ConfigurationError as exc:
        raise IngestError(_as_flags(redact(str(exc)))) from None


def redact(text: str) -> str:
    """``text`` without the credentials of any URL in it (``https://user:pw@host``)."""
    return re.sub(r"(//)[^/@\s'\"]*@", r"\1***@", text)


def check_registry(values: ValueOptions, topics: Sequence[str]) -> None:
    """Before Spark starts, what the query's planning will ask the registry: each topic's
    latest reader schema where the read takes one (Avro without --value-schema), parsed. An
    unreachable registry, a missing subject or a schema that is not Avro fail here, naming the
    registry by its URL without credentials."""
    from pyconsumer.errors import ConfigurationError, KafkaError
    from pyconsumer.spark.values import ReaderPins

    if not values.needs_pins:
        return
    try:
        pins = ReaderPins(values).pin_all(topics)
        for topic_pins in pins.values():
            values.plan(topic_pins)
    except ConfigurationError as exc:
        raise IngestError(_as_flags(redact(str(exc)))) from None
    except KafkaError as exc:         # the registry's errors (not found, 401, unreachable)
        client = values.registry_client()
        where = ", ".join(client.urls) if client is not None else "(none)"
        raise IngestError(f"--schema-registry {where}: {redact(str(exc))}") from None


def describe_values(opts: Mapping[str, str]) -> str:
    """One line for the log: the formats and the registry (its URL without credentials)."""
    lowered = {k.lower(): v for k, v in opts.items()}
    parts = []
    for column in ("key", "value"):
        fmt = lowered.get(f"{column}format")
        if fmt and decodes(fmt):
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
    value_typed = decodes(lowered.get("valueformat"))
    key_typed = decodes(lowered.get("keyformat"))
    size = lowered.get(SIZE_OPTION.lower())
    added = tuple(([corrupt] if value_typed else []) + ([f"{corrupt}_key"] if key_typed else [])
                  + [reason] + ([size] if size else []))
    return Rejects(reason=reason, raw_value=corrupt if value_typed else "value",
                   raw_key=f"{corrupt}_key" if key_typed else "key", added=added)


@dataclass(frozen=True)
class ReadPlan:
    """How the ingest reads: typed values carry the raw size column (``sized``); ``split``
    tells rejected rows from good ones (--bad-records, or DROPMALFORMED, which the ingest
    applies itself so that it can count what it leaves out: ``drops``)."""

    sized: bool = False
    split: Rejects | None = None
    drops: bool = False

    def good(self, df: Any) -> Any:
        """What goes to the output: the good rows, without the columns the read added."""
        if self.split is not None:
            return self.split.good(df)
        return df.drop(SIZE_COLUMN) if self.sized else df


def plan_read(opts: Mapping[str, str], bad_records: bool) -> tuple[dict[str, str], ReadPlan]:
    """The source options of the ingest's read and how to split it. Typed values (a key or
    value format other than binary) read the raw size column; --bad-records reads PERMISSIVE
    with the reason column (:func:`with_rejects`); DROPMALFORMED reads the same way and drops
    the rejected rows itself, counting them (the source would drop them unseen)."""
    out = dict(opts)
    lowered = {k.lower(): k for k in out}
    if not _typed(out):
        return (with_rejects(out) if bad_records else out), ReadPlan()
    out[SIZE_OPTION] = SIZE_COLUMN
    if bad_records:
        out = with_rejects(out)
        return out, ReadPlan(sized=True, split=rejects(out))
    mode = out.get(lowered.get("mode", ""), "") or ""
    if mode.strip().upper() != "DROPMALFORMED":
        return out, ReadPlan(sized=True)
    del out[lowered["mode"]]
    out = with_rejects(out)
    return out, ReadPlan(sized=True, split=rejects(out), drops=True)
