"""The domain parsers: the values of settings that mean more than a Java type (bootstrap
servers, auto.offset.reset, group.instance.id, deserializers, assignors, interceptors, the
OAuth token provider, ssl.context) and the names the security settings accept."""
from __future__ import annotations

import importlib
import re
import ssl
import struct
import uuid
from collections.abc import Callable
from typing import Any

from pyconsumer.config.jaas import SASL_MECHANISMS as _SASL_MECHANISMS
from pyconsumer.config.parsers import Invalid, Parser, as_str, split_list

#: A value deserializer: raw bytes (None for a null key/value) -> anything.
Deserializer = Callable[[bytes | None], Any]


# ---- bootstrap.servers

_HOST_PORT = re.compile(
    r"^(?:[0-9a-zA-Z\-%._]*://)?"  # optional listener/scheme prefix, as Java allows
    r"(?:\[(?P<v6>[0-9a-fA-F:.%a-zA-Z\-_]+)\]|(?P<host>[0-9a-zA-Z\-%._:]*))"
    r":(?P<port>[0-9]+)$"
)


def parse_bootstrap_servers(raw: Any) -> list[tuple[str, int]]:
    """``"h1:9092,h2:9093"``, ``"[::1]:9092"`` or a list of such strings -> [(host, port)].

    Like Java: an optional ``SCHEME://`` prefix is dropped, a bare IPv6 address takes the
    last colon as the port separator, empty entries are skipped, duplicates are refused.
    """
    items = split_list(raw)
    servers: list[tuple[str, int]] = []
    for item in items:
        if not isinstance(item, str):
            raise Invalid(f"entry {item!r} is not a string")
        if not item:
            continue
        match = _HOST_PORT.match(item)
        if match is None:
            if re.fullmatch(r"(?:[0-9a-zA-Z\-%._]*://)?(?:\[[^\]]*\]|[0-9a-zA-Z\-%._]+)", item):
                raise Invalid(f"entry {item!r} has no port (expected host:port)")
            raise Invalid(f"entry {item!r} is not host:port")
        host = match.group("v6") or match.group("host") or ""
        port = int(match.group("port"))
        if not host:
            raise Invalid(f"entry {item!r} has no host")
        if not 0 < port <= 65535:
            raise Invalid(f"entry {item!r} has port {port} outside 1..65535")
        if (host, port) in servers:
            raise Invalid(f"entry {item!r} is given twice")
        servers.append((host, port))
    if not servers:
        raise Invalid("no host:port given")
    return servers


bootstrap_servers_parser: Parser[list[tuple[str, int]]] = Parser(
    parse_bootstrap_servers,
    "host:port entries, comma-separated or a list ('[::1]:9092' for IPv6)",
    "list",
)


# ---- auto.offset.reset

# java.time.Duration.parse: PnDTnHnMn.nS (days, hours, minutes, seconds; signs allowed)
_ISO_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?[0-9]+)D)?"
    r"(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?",
    re.IGNORECASE,
)


class OffsetResetStrategy:
    """A parsed ``auto.offset.reset``: ``kind`` is earliest/latest/none/by_duration;
    ``duration_ms`` is set for by_duration (reset to the offset at now - duration_ms)."""

    __slots__ = ("kind", "duration_ms")

    def __init__(self, kind: str, duration_ms: int | None = None) -> None:
        self.kind = kind
        self.duration_ms = duration_ms

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, OffsetResetStrategy)
            and (self.kind, self.duration_ms) == (other.kind, other.duration_ms)
        )

    def __hash__(self) -> int:
        return hash((self.kind, self.duration_ms))

    def __repr__(self) -> str:
        extra = f", duration_ms={self.duration_ms}" if self.duration_ms is not None else ""
        return f"OffsetResetStrategy({self.kind!r}{extra})"


def _iso_duration_ms(text: str) -> int:
    match = _ISO_DURATION.fullmatch(text)
    if match is None or match.group(3) == "T" or not any(match.group(i) for i in (2, 4, 5, 6)):
        raise Invalid(f"{text!r} is not an ISO-8601 duration (PnDTnHnMn.nS)")
    sign, days, _t, hours, minutes, seconds, fraction = match.groups()
    seconds_int = int(seconds or 0)
    nanos = int((fraction or "").ljust(9, "0")) if fraction else 0
    if seconds is not None and seconds.startswith("-"):
        nanos = -nanos
    total_ns = (
        ((int(days or 0) * 24 + int(hours or 0)) * 60 + int(minutes or 0)) * 60 + seconds_int
    ) * 1_000_000_000 + nanos
    if sign == "-":
        total_ns = -total_ns
    if total_ns < 0:
        raise Invalid("a negative duration is not allowed")
    return total_ns // 1_000_000  # Java: now.minus(duration).toEpochMilli()


def parse_auto_offset_reset(raw: Any) -> OffsetResetStrategy:
    """Parse an ``auto.offset.reset`` value as Java's AutoOffsetResetStrategy does
    (lower-case names; ``by_duration:<ISO-8601 duration>``, not negative)."""
    value = as_str(raw)
    if value in ("earliest", "latest", "none"):
        return OffsetResetStrategy(value)
    if value == "by_duration":
        raise Invalid("the <duration> part of by_duration:<duration> is missing")
    if value.startswith("by_duration:"):
        return OffsetResetStrategy("by_duration", _iso_duration_ms(value[len("by_duration:") :]))
    raise Invalid("unknown strategy")


def _check_auto_offset_reset(raw: Any) -> str:
    parse_auto_offset_reset(raw)
    return as_str(raw)


auto_offset_reset_parser: Parser[str] = Parser(
    _check_auto_offset_reset,
    "one of earliest, latest, none, by_duration:<ISO-8601 duration, e.g. PT1H or P1DT12H>",
    "string",
)


# ---- group.instance.id (Java: Topic.validate rules)


def check_group_instance_id(value: str) -> None:
    if not value:
        raise Invalid("must not be empty")
    if value in (".", ".."):
        raise Invalid("'.' and '..' are not allowed")
    if len(value) > 249:
        raise Invalid("longer than 249 characters")
    if not re.fullmatch(r"[a-zA-Z0-9._-]+", value):
        raise Invalid("may only contain ASCII letters, digits, '.', '_' and '-'")


# ---- deserializers


def _fixed(fmt: str, name: str) -> Deserializer:
    size = struct.calcsize(fmt)

    def deserialize(data: bytes | None) -> Any:
        if data is None:
            return None
        if len(data) != size:
            raise ValueError(f"{name}: expected {size} bytes, got {len(data)}")
        return struct.unpack(fmt, data)[0]

    deserialize.__name__ = name
    return deserialize


def _string_deserializer(data: bytes | None) -> str | None:
    return None if data is None else bytes(data).decode("utf-8")


def _bytes_deserializer(data: bytes | None) -> bytes | None:
    return None if data is None else bytes(data)


def _uuid_deserializer(data: bytes | None) -> uuid.UUID | None:
    # Java's UUIDDeserializer reads the UUID's string form
    return None if data is None else uuid.UUID(bytes(data).decode("utf-8"))


def _void_deserializer(data: bytes | None) -> None:
    if data is not None:
        raise ValueError("VoidDeserializer: data should be null")
    return None


def _boolean_deserializer(data: bytes | None) -> bool | None:
    if data is None:
        return None
    if len(data) != 1 or data[0] not in (0, 1):
        raise ValueError("BooleanDeserializer: expected one byte 0x00 or 0x01")
    return data[0] == 1


#: Java's built-in deserializers (org.apache.kafka.common.serialization.*), by simple name
JAVA_DESERIALIZERS: dict[str, Deserializer] = {
    "StringDeserializer": _string_deserializer,
    "ByteArrayDeserializer": _bytes_deserializer,
    "ByteBufferDeserializer": _bytes_deserializer,
    "BytesDeserializer": _bytes_deserializer,
    "ShortDeserializer": _fixed(">h", "ShortDeserializer"),
    "IntegerDeserializer": _fixed(">i", "IntegerDeserializer"),
    "LongDeserializer": _fixed(">q", "LongDeserializer"),
    "FloatDeserializer": _fixed(">f", "FloatDeserializer"),
    "DoubleDeserializer": _fixed(">d", "DoubleDeserializer"),
    "UUIDDeserializer": _uuid_deserializer,
    "VoidDeserializer": _void_deserializer,
    "BooleanDeserializer": _boolean_deserializer,
}
_JAVA_SERDE_PACKAGE = "org.apache.kafka.common.serialization."


def _parse_deserializer(raw: Any) -> Deserializer | None:
    if raw is None:
        return None
    if isinstance(raw, str):
        name = raw.strip()
        if name.startswith(_JAVA_SERDE_PACKAGE):
            name = name[len(_JAVA_SERDE_PACKAGE) :]
        if name in JAVA_DESERIALIZERS:
            return JAVA_DESERIALIZERS[name]
        raise Invalid("not a Java built-in deserializer")
    if callable(raw):
        return raw  # type: ignore[no-any-return]
    raise Invalid("expected a callable (bytes | None) -> Any")


deserializer_parser: Parser[Deserializer | None] = Parser(
    _parse_deserializer,
    "None (raw bytes), a callable (bytes | None) -> Any, or a Java built-in deserializer name "
    f"({', '.join(sorted(JAVA_DESERIALIZERS))})",
    "deserializer",
)


# ---- partition.assignment.strategy

ASSIGNOR_NAMES = ("range", "roundrobin", "sticky", "cooperative-sticky")
_JAVA_ASSIGNORS = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.StickyAssignor": "sticky",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
}
_JAVA_ASSIGNORS.update({k.rsplit(".", 1)[1]: v for k, v in list(_JAVA_ASSIGNORS.items())})


def _parse_assignors(raw: Any) -> list[Any]:
    result: list[Any] = []
    for item in split_list(raw):
        if isinstance(item, str):
            name = _JAVA_ASSIGNORS.get(item, item)
            if name not in ASSIGNOR_NAMES:
                raise Invalid(f"unknown assignor {item!r}")
            result.append(name)
        elif isinstance(getattr(item, "name", None), str):
            result.append(item)  # a custom assignor object
        else:
            raise Invalid(f"entry {item!r} is neither an assignor name nor an assignor object")
    names = [r if isinstance(r, str) else r.name for r in result]
    if len(set(names)) != len(names):
        raise Invalid("contains duplicate assignors")
    return result


assignors_parser: Parser[list[Any]] = Parser(
    _parse_assignors,
    f"assignor names ({', '.join(ASSIGNOR_NAMES)}), Java class names of the built-in "
    "assignors, or assignor objects with a 'name' attribute",
    "list",
)


# ---- interceptors

#: what makes an object an interceptor: at least one of these methods
INTERCEPTOR_METHODS = ("on_consume", "on_consume_arrow", "on_commit", "close")


def _load_class(path: str) -> type:
    """``"package.module:Class"`` or ``"package.module.Class"`` -> the class."""
    if ":" in path:
        module_name, _, attr_path = path.partition(":")
    else:
        module_name, _, attr_path = path.rpartition(".")
    if not module_name or not attr_path or not all(
            part.isidentifier() for part in attr_path.split(".")):
        raise Invalid(f"{path!r} is not an import path 'module:Class' or 'module.Class'")
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as e:
        raise Invalid(f"cannot import module {module_name!r} of {path!r}: {e}") from e
    for part in attr_path.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise Invalid(f"module {module_name!r} has no {attr_path!r} (from {path!r})") \
                from None
    if not isinstance(found, type):
        raise Invalid(f"{path!r} is a {type(found).__name__}, not a class")
    return found


def _check_interceptor_type(cls: type, what: str) -> None:
    if not any(callable(getattr(cls, m, None)) for m in INTERCEPTOR_METHODS):
        raise Invalid(f"{what} defines none of {', '.join(INTERCEPTOR_METHODS)}")


def _parse_interceptor_classes(raw: Any) -> list[type]:
    if raw is None:
        return []
    classes: list[type] = []
    for item in split_list(raw):
        if isinstance(item, str) and item:
            cls = _load_class(item)
            _check_interceptor_type(cls, f"class {item!r}")
        elif isinstance(item, type):
            cls = item
            _check_interceptor_type(cls, f"class {cls.__qualname__}")
        else:
            raise Invalid(f"entry {item!r} is neither an import path nor a class")
        classes.append(cls)
    return classes


interceptor_classes_parser: Parser[list[type]] = Parser(
    _parse_interceptor_classes,
    "a comma-separated string or a list of import paths ('module:Class' or 'module.Class') "
    "or classes, each defining on_consume, on_consume_arrow, on_commit or close",
    "list",
)


def _parse_interceptors(raw: Any) -> list[Any]:
    if raw is None:
        return []
    if not isinstance(raw, (list, tuple)):
        raise Invalid("expected a list of interceptor objects")
    for item in raw:
        if isinstance(item, type):
            raise Invalid(f"entry {item.__qualname__} is a class: give an instance here, or "
                           "the class in interceptor.classes")
        _check_interceptor_type(type(item), f"entry {item!r}")
    return list(raw)


interceptors_parser: Parser[list[Any]] = Parser(
    _parse_interceptors,
    "a list of objects defining on_consume, on_consume_arrow, on_commit or close",
    "list",
)


def _parse_token_provider(raw: Any) -> Any:
    if raw is None or callable(raw) or callable(getattr(raw, "token", None)):
        return raw
    raise Invalid("expected a callable, an object with a token() method, or None")


token_provider_parser: Parser[Any] = Parser(
    _parse_token_provider,
    "a callable () -> token (or (token, lifetime ms)), an object with token(), or None",
    "callable",
)

# what security.protocol and sasl.mechanism accept (the mechanisms are named once, with
# the JAAS login modules that serve them)
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = _SASL_MECHANISMS


# ---- ssl.context and the TLS versions ssl.protocol / ssl.enabled.protocols name (the context
# built from the settings is config.ssl's, which reads a whole config)

TLS_PROTOCOLS = ("TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3")


def _parse_ssl_context(raw: Any) -> ssl.SSLContext | None:
    if raw is None or isinstance(raw, ssl.SSLContext):
        return raw
    raise Invalid("expected an ssl.SSLContext or None")


ssl_context_parser: Parser[ssl.SSLContext | None] = Parser(
    _parse_ssl_context, "an ssl.SSLContext or None", "object"
)


# ---- typed values (value.schema / key.schema, the optional numbers of schema.registry.*)

def _parse_value_schema(raw: Any) -> Any:
    # only the kind is checked here (config sits below values): the consumer builds the
    # decoding plan at construction, which parses it and names the setting when it is bad
    if raw is None:
        return None
    if isinstance(raw, str):
        text = raw.strip()
        if not text:
            raise Invalid("an empty schema; leave it unset (None) for no schema")
        return text
    if isinstance(raw, (dict, list)):
        return raw                                 # an Avro schema as parsed JSON
    kind = type(raw)
    if kind.__module__.startswith(("pyarrow", "pyspark.")):
        return raw                                 # a pyarrow Schema, a pyspark StructType
    raise Invalid(f"expected a schema, got {kind.__name__}")


value_schema_parser: Parser[Any] = Parser(
    _parse_value_schema,
    "None, a Spark DDL string or Avro schema JSON text, a parsed Avro schema (dict/list), a "
    "pyarrow Schema or a pyspark StructType",
    "schema",
)


def optional_number(lo: float) -> Parser[float | None]:
    """None, or a number (int, float or its decimal string) > ``lo``."""
    def parse(raw: Any) -> float | None:
        if raw is None:
            return None
        if isinstance(raw, bool):
            raise Invalid("a boolean is not a number")
        try:
            value = float(raw.strip() if isinstance(raw, str) else raw)
        except (TypeError, ValueError):
            raise Invalid("expected a number") from None
        if not value > lo:
            raise Invalid(f"must be > {lo:g}")
        return value

    return Parser(parse, f"None or a number > {lo:g}", "double")


def optional_int(lo: int) -> Parser[int | None]:
    """None, or an integer (or its decimal string) >= ``lo``."""
    def parse(raw: Any) -> int | None:
        if raw is None:
            return None
        if isinstance(raw, bool):
            raise Invalid("a boolean is not an integer")
        if isinstance(raw, str) and re.fullmatch(r"[+-]?[0-9]+", raw.strip()):
            value = int(raw.strip())
        elif isinstance(raw, int):
            value = raw
        else:
            raise Invalid("expected an integer")
        if value < lo:
            raise Invalid(f"must be >= {lo}")
        return value

    return Parser(parse, f"None or an integer >= {lo}", "int")
