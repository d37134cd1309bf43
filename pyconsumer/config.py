"""Every consumer setting: one table of Java names, defaults, parsers and docs.

Settings are the class attributes of :class:`ConsumerConfig`, each a :class:`Setting`
descriptor declared once below (Java name, Java default, parser/validator, doc). The defaults
are those of the Java KafkaConsumer (ConsumerConfig + CommonClientConfigs of Apache Kafka trunk,
4.x). A key may be given in its Java spelling (``"fetch.max.bytes"``) or in snake_case
(``fetch_max_bytes``); giving both spellings of one key is an error.

What pyconsumer does with the Java settings it cannot honour (see ``JAVA_ONLY_SETTINGS``):

* JVM plumbing that changes no consumer behaviour (metrics reporters, the metrics recording
  level, JCA providers, key/trust manager algorithms, Kerberos and SASL login refresh tuning)
  is *accepted and ignored*, so a Java properties file can be used as is. The ignored keys and
  values are kept in :attr:`ConsumerConfig.ignored_settings` and logged at INFO.
* Settings that name Java classes whose absence would change behaviour (``config.providers``,
  ``ssl.engine.factory.class``, ``sasl.login.class``, SASL callback handlers, the
  ``sasl.oauthbearer.*`` client-credentials flow) and the ShareConsumer-only ``share.*``
  settings are *refused* with a ConfigurationError saying what to use instead —
  unless their value is empty (None, "", []), which is accepted as "not set".

Where pyconsumer differs from Java on purpose (each also said in the setting's doc):

* ``key.deserializer``/``value.deserializer`` have no default in Java (required); here the
  default None returns the raw bytes. Values are Python callables ``(bytes | None) -> Any``
  or the name of a Java built-in deserializer (``StringDeserializer`` ...).
* ``interceptor.classes`` takes Python import paths (``module:Class`` or ``module.Class``) or
  classes; ``interceptors`` (pyconsumer only) takes interceptor objects.
* ``partition.assignment.strategy`` takes assignor protocol names (``range``, ``roundrobin``,
  ``sticky``, ``cooperative-sticky``), Java class names of the built-in assignors (mapped to
  those names), or assignor objects with a ``name`` attribute.
* SSL files are read as PEM; ``ssl.keystore.type``/``ssl.truststore.type`` explicitly set to
  JKS or PKCS12 together with a store location is refused.
* SASL (``security.protocol=SASL_PLAINTEXT``/``SASL_SSL``): ``sasl.mechanism`` PLAIN,
  SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or GSSAPI; the PLAIN/SCRAM credentials come from
  ``sasl.username``/``sasl.password`` (pyconsumer names, as librdkafka's) or from a
  PlainLoginModule/ScramLoginModule ``sasl.jaas.config`` (parsed by
  :mod:`pyconsumer.net.sasl.jaas`; a text that does not parse names the character position,
  never an excerpt). Passwords are never shown in reprs, errors or logs.
* Stricter than Java: ``group.instance.id`` without ``group.id``, ``fetch.min.bytes`` above
  ``fetch.max.bytes``, and non-positive ``session.timeout.ms``/``heartbeat.interval.ms`` or
  ``metrics.sample.window.ms`` are errors; an empty ``partition.assignment.strategy`` with a classic group fails at
  construction instead of at subscribe().

Settings in the table that pyconsumer accepts but that change nothing (each row's
``no_effect`` gives the reason; ``Setting.implemented`` is False):
``metadata.recovery.strategy``, ``metadata.recovery.rebootstrap.trigger.ms``,
``metadata.cluster.check.enable``, ``group.remote.assignor``, ``ssl.truststore.type``,
``ssl.keystore.type``, ``ssl.truststore.password`` and ``sasl.oauth.token.provider``. Setting one to
a value other than its default logs a WARNING naming it and the reason, once per process.
Every other setting is read by the consumer (``tests/unit/test_settings_truthful.py`` checks
both).
"""
from __future__ import annotations

import difflib
import importlib
import itertools
import logging
import operator
import re
import ssl
import struct
import uuid
from collections.abc import Callable, Iterable
from typing import Any, Generic, NoReturn, TypeVar, overload

from pyconsumer.errors import ConfigurationError

__all__ = [
    "ConsumerConfig",
    "Setting",
    "JAVA_ONLY_SETTINGS",
    "OffsetResetStrategy",
    "parse_bootstrap_servers",
    "parse_auto_offset_reset",
    "Deserializer",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: A value deserializer: raw bytes (None for a null key/value) -> anything.
Deserializer = Callable[[bytes | None], Any]

_REQUIRED: Any = object()  # default of a setting with no default (bootstrap.servers)


class _Invalid(ValueError):
    """Raised by a parser; ConsumerConfig turns it into a ConfigurationError naming the setting."""


# --------------------------------------------------------------------------- parsers
# Each parser takes the raw value (from Python or from a Java properties file) and returns the
# typed value or raises _Invalid. ``accepted`` says in words what the parser takes; it is shown
# in error messages and in the settings table.


class Parser(Generic[T]):
    """A callable ``raw -> T`` with a description of what it accepts."""

    def __init__(self, fn: Callable[[Any], T], accepted: str, type_name: str) -> None:
        self.fn = fn
        self.accepted = accepted
        self.type_name = type_name

    def __call__(self, raw: Any) -> T:
        return self.fn(raw)

    def __repr__(self) -> str:
        return f"<{self.type_name}: {self.accepted}>"


def _as_int(raw: Any, bits: int) -> int:
    # Java properties are strings, so "500" is accepted; bool is not an int here (True != 1 ms)
    if isinstance(raw, bool):
        raise _Invalid("a boolean is not an integer")
    if isinstance(raw, str) and re.fullmatch(r"[+-]?[0-9]+", raw.strip()):
        value = int(raw.strip())
    elif hasattr(type(raw), "__index__"):  # int, numpy integers; not float
        value = operator.index(raw)
    else:
        raise _Invalid(f"expected a {bits}-bit integer")
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    if not lo <= value <= hi:
        raise _Invalid(f"does not fit a {bits}-bit integer")
    return value


def _integer(bits: int, lo: int | None, hi: int | None) -> Parser[int]:
    if lo is not None and hi is not None:
        accepted = f"an integer in [{lo}, {hi}]"
    elif lo is not None:
        accepted = f"an integer >= {lo}"
    else:
        accepted = f"a {bits}-bit integer"

    def parse(raw: Any) -> int:
        value = _as_int(raw, bits)
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise _Invalid("out of range")
        return value

    return Parser(parse, accepted, "int" if bits == 32 else "long")


def int32(lo: int | None = None, hi: int | None = None) -> Parser[int]:
    """Java INT: a 32-bit integer (or its decimal string), optionally bounded."""
    return _integer(32, lo, hi)


def int64(lo: int | None = None, hi: int | None = None) -> Parser[int]:
    """Java LONG: a 64-bit integer (or its decimal string), optionally bounded."""
    return _integer(64, lo, hi)


def _parse_bool(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.strip().lower() in ("true", "false"):
        return raw.strip().lower() == "true"
    raise _Invalid("expected a boolean")


boolean: Parser[bool] = Parser(_parse_bool, "True/False or 'true'/'false'", "boolean")


def _as_str(raw: Any) -> str:
    if not isinstance(raw, str):
        raise _Invalid(f"expected a string, got {type(raw).__name__}")
    return raw.strip()  # Java trims string settings


def string(choices: Iterable[str] | None = None, *, case_insensitive: bool = False) -> Parser[str]:
    """Java STRING, not null; with ``choices``, one of them (Java's ``in(...)``)."""
    options = tuple(choices) if choices is not None else None
    accepted = f"one of {', '.join(options)}" if options else "a string"
    if options and case_insensitive:
        accepted += " (any case)"

    def parse(raw: Any) -> str:
        value = _as_str(raw)
        if options is not None:
            folded = {o.lower(): o for o in options} if case_insensitive else {o: o for o in options}
            key = value.lower() if case_insensitive else value
            if key not in folded:
                raise _Invalid("not one of the accepted values")
            value = folded[key]  # the canonical spelling
        return value

    return Parser(parse, accepted, "string")


def optional_string(check: Callable[[str], None] | None = None, accepted: str = "") -> Parser[str | None]:
    """Java STRING with default null: None, or a string (checked by ``check``)."""

    def parse(raw: Any) -> str | None:
        if raw is None:
            return None
        value = _as_str(raw)
        if check is not None:
            check(value)
        return value

    return Parser(parse, accepted or "a string or None", "string")


def _parse_password(raw: Any) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise _Invalid(f"expected a string, got {type(raw).__name__}")
    return raw  # passwords are not trimmed (Java's PASSWORD type keeps them as given)


password: Parser[str | None] = Parser(_parse_password, "a string or None (kept secret)", "password")


def _split_list(raw: Any) -> list[Any]:
    # Java LIST: "a, b,c" or a list; an empty string is an empty list
    if isinstance(raw, str):
        text = raw.strip()
        return [] if not text else [part.strip() for part in text.split(",")]
    if isinstance(raw, (list, tuple)):
        return [item.strip() if isinstance(item, str) else item for item in raw]
    raise _Invalid("expected a comma-separated string or a list")


def string_list(
    choices: Iterable[str] | None = None, *, allow_empty: bool = True
) -> Parser[list[str]]:
    """Java LIST of strings, no duplicates (Java's ``ValidList.anyNonDuplicateValues``)."""
    options = tuple(choices) if choices is not None else None
    accepted = "a comma-separated string or a list of strings"
    if options:
        accepted += f", each one of {', '.join(options)}"

    def parse(raw: Any) -> list[str]:
        items = _split_list(raw)
        for item in items:
            if not isinstance(item, str) or not item:
                raise _Invalid(f"entry {item!r} is not a non-empty string")
            if options is not None and item not in options:
                raise _Invalid(f"entry {item!r} is not accepted")
        if len(set(items)) != len(items):
            raise _Invalid("contains duplicate entries")
        if not items and not allow_empty:
            raise _Invalid("must not be empty")
        return items

    return Parser(parse, accepted, "list")


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
    items = _split_list(raw)
    servers: list[tuple[str, int]] = []
    for item in items:
        if not isinstance(item, str):
            raise _Invalid(f"entry {item!r} is not a string")
        if not item:
            continue
        match = _HOST_PORT.match(item)
        if match is None:
            if re.fullmatch(r"(?:[0-9a-zA-Z\-%._]*://)?(?:\[[^\]]*\]|[0-9a-zA-Z\-%._]+)", item):
                raise _Invalid(f"entry {item!r} has no port (expected host:port)")
            raise _Invalid(f"entry {item!r} is not host:port")
        host = match.group("v6") or match.group("host") or ""
        port = int(match.group("port"))
        if not host:
            raise _Invalid(f"entry {item!r} has no host")
        if not 0 < port <= 65535:
            raise _Invalid(f"entry {item!r} has port {port} outside 1..65535")
        if (host, port) in servers:
            raise _Invalid(f"entry {item!r} is given twice")
        servers.append((host, port))
    if not servers:
        raise _Invalid("no host:port given")
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
        raise _Invalid(f"{text!r} is not an ISO-8601 duration (PnDTnHnMn.nS)")
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
        raise _Invalid("a negative duration is not allowed")
    return total_ns // 1_000_000  # Java: now.minus(duration).toEpochMilli()


def parse_auto_offset_reset(raw: Any) -> OffsetResetStrategy:
    """Parse an ``auto.offset.reset`` value as Java's AutoOffsetResetStrategy does
    (lower-case names; ``by_duration:<ISO-8601 duration>``, not negative)."""
    value = _as_str(raw)
    if value in ("earliest", "latest", "none"):
        return OffsetResetStrategy(value)
    if value == "by_duration":
        raise _Invalid("the <duration> part of by_duration:<duration> is missing")
    if value.startswith("by_duration:"):
        return OffsetResetStrategy("by_duration", _iso_duration_ms(value[len("by_duration:") :]))
    raise _Invalid("unknown strategy")


def _check_auto_offset_reset(raw: Any) -> str:
    parse_auto_offset_reset(raw)
    return _as_str(raw)


auto_offset_reset_parser: Parser[str] = Parser(
    _check_auto_offset_reset,
    "one of earliest, latest, none, by_duration:<ISO-8601 duration, e.g. PT1H or P1DT12H>",
    "string",
)


# ---- group.instance.id (Java: Topic.validate rules)


def _check_group_instance_id(value: str) -> None:
    if not value:
        raise _Invalid("must not be empty")
    if value in (".", ".."):
        raise _Invalid("'.' and '..' are not allowed")
    if len(value) > 249:
        raise _Invalid("longer than 249 characters")
    if not re.fullmatch(r"[a-zA-Z0-9._-]+", value):
        raise _Invalid("may only contain ASCII letters, digits, '.', '_' and '-'")


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
        raise _Invalid("not a Java built-in deserializer")
    if callable(raw):
        return raw  # type: ignore[no-any-return]
    raise _Invalid("expected a callable (bytes | None) -> Any")


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
    for item in _split_list(raw):
        if isinstance(item, str):
            name = _JAVA_ASSIGNORS.get(item, item)
            if name not in ASSIGNOR_NAMES:
                raise _Invalid(f"unknown assignor {item!r}")
            result.append(name)
        elif isinstance(getattr(item, "name", None), str):
            result.append(item)  # a custom assignor object
        else:
            raise _Invalid(f"entry {item!r} is neither an assignor name nor an assignor object")
    names = [r if isinstance(r, str) else r.name for r in result]
    if len(set(names)) != len(names):
        raise _Invalid("contains duplicate assignors")
    return result


assignors_parser: Parser[list[Any]] = Parser(
    _parse_assignors,
    f"assignor names ({', '.join(ASSIGNOR_NAMES)}), Java class names of the built-in "
    "assignors, or assignor objects with a 'name' attribute",
    "list",
)


# ---- Python objects


def _parse_ssl_context(raw: Any) -> ssl.SSLContext | None:
    if raw is None or isinstance(raw, ssl.SSLContext):
        return raw
    raise _Invalid("expected an ssl.SSLContext or None")


ssl_context_parser: Parser[ssl.SSLContext | None] = Parser(
    _parse_ssl_context, "an ssl.SSLContext or None", "object"
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
        raise _Invalid(f"{path!r} is not an import path 'module:Class' or 'module.Class'")
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as e:
        raise _Invalid(f"cannot import module {module_name!r} of {path!r}: {e}") from e
    for part in attr_path.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise _Invalid(f"module {module_name!r} has no {attr_path!r} (from {path!r})") \
                from None
    if not isinstance(found, type):
        raise _Invalid(f"{path!r} is a {type(found).__name__}, not a class")
    return found


def _check_interceptor_type(cls: type, what: str) -> None:
    if not any(callable(getattr(cls, m, None)) for m in INTERCEPTOR_METHODS):
        raise _Invalid(f"{what} defines none of {', '.join(INTERCEPTOR_METHODS)}")


def _parse_interceptor_classes(raw: Any) -> list[type]:
    if raw is None:
        return []
    classes: list[type] = []
    for item in _split_list(raw):
        if isinstance(item, str) and item:
            cls = _load_class(item)
            _check_interceptor_type(cls, f"class {item!r}")
        elif isinstance(item, type):
            cls = item
            _check_interceptor_type(cls, f"class {cls.__qualname__}")
        else:
            raise _Invalid(f"entry {item!r} is neither an import path nor a class")
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
        raise _Invalid("expected a list of interceptor objects")
    for item in raw:
        if isinstance(item, type):
            raise _Invalid(f"entry {item.__qualname__} is a class: give an instance here, or "
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
    raise _Invalid("expected a callable, an object with a token() method, or None")


token_provider_parser: Parser[Any] = Parser(
    _parse_token_provider,
    "a callable () -> token (or (token, lifetime ms)), an object with token(), or None",
    "callable",
)

TLS_PROTOCOLS = ("TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3")
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI")


# --------------------------------------------------------------------------- the table


class Setting(Generic[T]):
    """One row of the settings table, and the descriptor that reads it from a config.

    ``name`` is the Java name (dotted), ``attr`` the snake_case attribute, ``default`` the raw
    Java default (parsed like any value), ``validator`` the parser (``validator.accepted`` in
    words), ``type`` the Java type name, ``unit`` ms/bytes/... and ``java`` False for a
    pyconsumer-only setting. ``no_effect`` is the reason a setting is accepted but changes
    nothing (None: implemented); ``quiet`` are values that say what pyconsumer does anyway
    and so are not warned about (compared case-insensitively for strings).
    """

    def __init__(
        self,
        name: str,
        default: Any,
        validator: Parser[T],
        doc: str,
        *,
        unit: str = "",
        java: bool = True,
        no_effect: str | None = None,
        quiet: tuple[Any, ...] = (),
    ) -> None:
        self.name = name
        self.attr = name.replace(".", "_")
        self.default = default
        self.validator = validator
        self.type = validator.type_name
        self.doc = doc
        self.unit = unit
        self.java = java
        self.no_effect = no_effect
        self.quiet = quiet
        self.required = default is _REQUIRED
        default_text = "required, no default" if self.required else f"default {default!r}"
        unit_text = f", unit {unit}" if unit else ""
        origin = "Java setting" if java else "pyconsumer setting"
        effect_text = f"; accepted, no effect: {no_effect}" if no_effect else ""
        self.__doc__ = f"{doc} ({origin} ``{name}``; {default_text}{unit_text}{effect_text})"

    @property
    def implemented(self) -> bool:
        """False for a setting that is accepted but has no effect (see ``no_effect``)."""
        return self.no_effect is None

    def is_quiet(self, value: Any) -> bool:
        """True when ``value`` needs no no-effect warning: the default, or a ``quiet`` one."""
        if value == self.validator(self.default):
            return True
        if isinstance(value, str):
            return value.upper() in {q.upper() for q in self.quiet if isinstance(q, str)}
        return value in self.quiet

    def __set_name__(self, owner: type, attr: str) -> None:
        if attr != self.attr:
            raise TypeError(f"setting {self.name} must be declared as {self.attr}, not {attr}")

    @overload
    def __get__(self, obj: None, owner: type) -> Setting[T]: ...
    @overload
    def __get__(self, obj: ConsumerConfig, owner: type) -> T: ...
    def __get__(self, obj: ConsumerConfig | None, owner: type) -> Setting[T] | T:
        if obj is None:
            return self
        return obj._values[self.name]  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"Setting({self.name!r}, default={self.default!r}, {self.validator!r})"


# Java-only settings pyconsumer recognises but does not implement: name -> (action, reason).
# "ignore": accepted, no effect. "refuse": an error unless the value is empty. A name ending
# in "." is a prefix.
JAVA_ONLY_SETTINGS: dict[str, tuple[str, str]] = {
    "metric.reporters": ("ignore", "JMX/metrics reporters are JVM classes"),
    "metrics.recording.level": (
        "ignore", "pyconsumer always records its metrics (Java's INFO level); none are DEBUG"),
    "enable.metrics.push": ("ignore", "pyconsumer does not push client telemetry (KIP-714)"),
    "security.providers": ("ignore", "JCA security providers are JVM classes"),
    "ssl.provider": ("ignore", "JSSE provider; Python uses OpenSSL"),
    "ssl.keymanager.algorithm": ("ignore", "JSSE key manager; Python uses OpenSSL"),
    "ssl.trustmanager.algorithm": ("ignore", "JSSE trust manager; Python uses OpenSSL"),
    "ssl.secure.random.implementation": ("ignore", "JCA SecureRandom; Python uses OpenSSL"),
    "sasl.kerberos.kinit.cmd": ("ignore", "GSSAPI takes tickets from a keytab or the ticket "
                                "cache through the gssapi package, never by running kinit"),
    "sasl.kerberos.min.time.before.relogin": ("ignore", "Java Kerberos login refresh tuning"),
    "sasl.kerberos.ticket.renew.": ("ignore", "Java Kerberos login refresh tuning"),
    "sasl.login.refresh.": ("ignore", "Java SASL login refresh tuning"),
    "sasl.login.connect.timeout.ms": ("ignore", "Java OAuth login tuning"),
    "sasl.login.read.timeout.ms": ("ignore", "Java OAuth login tuning"),
    "sasl.login.retry.backoff.": ("ignore", "Java OAuth login tuning"),
    "config.providers": ("refuse", "Java ConfigProvider classes; resolve values in Python"),
    "ssl.engine.factory.class": ("refuse", "a Java SslEngineFactory; pass ssl.context instead"),
    "sasl.login.class": ("refuse", "a Java Login class; not supported"),
    "sasl.login.callback.handler.class": (
        "refuse",
        "a Java callback handler; give sasl.username/sasl.password or sasl.jaas.config",
    ),
    "sasl.client.callback.handler.class": (
        "refuse",
        "a Java callback handler; give sasl.username/sasl.password or sasl.jaas.config",
    ),
    "sasl.oauthbearer.": (
        "refuse",
        "a tuning of Java's OAuth client that pyconsumer does not have; give "
        "sasl.oauthbearer.token.endpoint.url with clientId/clientSecret in sasl.jaas.config, or "
        "sasl.oauth.token.provider",
    ),
    "share.acknowledgement.mode": ("refuse", "applies to ShareConsumer only (Java refuses it too)"),
    "share.acquire.mode": ("refuse", "applies to ShareConsumer only (Java refuses it too)"),
}


def _java_only(name: str) -> tuple[str, str] | None:
    if name in JAVA_ONLY_SETTINGS:
        return JAVA_ONLY_SETTINGS[name]
    for key, entry in JAVA_ONLY_SETTINGS.items():
        if key.endswith(".") and name.startswith(key):
            return entry
    return None


_CLIENT_ID_SEQUENCE = itertools.count(1)  # Java: CONSUMER_CLIENT_ID_SEQUENCE, per process


def _fail(message: str) -> NoReturn:
    raise ConfigurationError(message)


#: no-effect settings already warned about in this process (warn once, not per consumer)
_NO_EFFECT_WARNED: set[str] = set()


def _warn_no_effect(setting: Setting[Any]) -> None:
    if setting.name in _NO_EFFECT_WARNED:
        return
    _NO_EFFECT_WARNED.add(setting.name)
    # no value in the message: it may be a password
    log.warning("setting %s is accepted but has no effect in pyconsumer: %s",
                setting.name, setting.no_effect)


class ConsumerConfig:
    """Validated consumer settings. Every setting is a snake_case attribute; see the module doc.

    ``ConsumerConfig(**settings)`` with Java names or snake_case keys; ``cfg["fetch.max.bytes"]``;
    ``cfg.as_dict()`` (Java name -> value); ``ConsumerConfig.settings()`` (the table).
    """

    # ---- connection and metadata
    bootstrap_servers = Setting(
        "bootstrap.servers",
        _REQUIRED,
        bootstrap_servers_parser,
        "Initial brokers to discover the cluster from, parsed to [(host, port)]",
    )
    client_dns_lookup = Setting(
        "client.dns.lookup",
        "use_all_dns_ips",
        string(("use_all_dns_ips", "resolve_canonical_bootstrap_servers_only")),
        "use_all_dns_ips: a connection tries each address its host resolves to, in turn "
        "(all address families, where Java keeps the first one's); "
        "resolve_canonical_bootstrap_servers_only: when the bootstrap hosts are resolved "
        "(see bootstrap.resolve.timeout.ms: by default when the consumer is built), each "
        "bootstrap host is replaced by the "
        "canonical (reverse DNS) names of its addresses, and a host that does not resolve is "
        "a ConfigurationError, as in Java",
    )
    bootstrap_resolve_timeout_ms = Setting(
        "bootstrap.resolve.timeout.ms",
        0,
        int64(0),
        "As Java (KIP-909). 0: the bootstrap hosts are resolved when the consumer is built; "
        "a host that does not resolve is dropped with a WARNING, and none resolving is a "
        "ConfigurationError naming them. > 0: the consumer is built without resolving them; "
        "the first calls that need the cluster look them up (reconnect.backoff.ms apart) for "
        "at most this long, then raise a ConfigurationError naming them, on that call and "
        "every later one (close the consumer and build a new one, as Java's "
        "BootstrapResolutionException asks). Either way each connection resolves its host "
        "again when it connects",
        unit="ms",
    )
    client_id = Setting(
        "client.id",
        "",
        string(),
        "Name sent with every request; empty means consumer-{group.id}-{group.instance.id or "
        "a per-process sequence number}, as Java generates it",
    )
    client_rack = Setting(
        "client.rack", "", string(), "Rack of this consumer, for fetching from the closest replica"
    )
    metadata_max_age_ms = Setting(
        "metadata.max.age.ms",
        300000,
        int64(0),
        "Refresh metadata at least this often, even without errors",
        unit="ms",
    )
    metadata_recovery_strategy = Setting(
        "metadata.recovery.strategy",
        "rebootstrap",
        string(("none", "rebootstrap"), case_insensitive=True),
        "Java: when no known broker is reachable, rebootstrap from bootstrap.servers, or none",
        no_effect="pyconsumer never rebootstraps: once a Metadata answer named the brokers it "
        "keeps asking them, even when none is reachable (Java's 'none')",
    )
    metadata_recovery_rebootstrap_trigger_ms = Setting(
        "metadata.recovery.rebootstrap.trigger.ms",
        300000,
        int64(0),
        "Java: rebootstrap after this long without being able to get metadata",
        unit="ms",
        no_effect="pyconsumer never rebootstraps (see metadata.recovery.strategy)",
    )
    metadata_cluster_check_enable = Setting(
        "metadata.cluster.check.enable",
        True,
        boolean,
        "Java (KIP-1242): send cluster and node ids when connecting, so brokers can detect a "
        "misrouted connection",
        no_effect="pyconsumer sends ApiVersions v4 at most, which carries no cluster or node "
        "id (the check needs v5)",
    )
    request_timeout_ms = Setting(
        "request.timeout.ms",
        30000,
        int32(0),
        "Fail (and maybe retry) a request that gets no response within this time",
        unit="ms",
    )
    default_api_timeout_ms = Setting(
        "default.api.timeout.ms",
        60000,
        int32(0),
        "Timeout of blocking calls that take no timeout argument (commit, position...)",
        unit="ms",
    )
    connections_max_idle_ms = Setting(
        "connections.max.idle.ms",
        540000,
        int64(),
        "Close connections idle for longer than this; negative: never",
        unit="ms",
    )
    reconnect_backoff_ms = Setting(
        "reconnect.backoff.ms",
        50,
        int64(0),
        "First wait before reconnecting to a broker (grows exponentially per failure)",
        unit="ms",
    )
    reconnect_backoff_max_ms = Setting(
        "reconnect.backoff.max.ms",
        1000,
        int64(0),
        "Largest reconnect wait; if only reconnect.backoff.ms is given it also becomes this "
        "(no exponential growth), as in Java",
        unit="ms",
    )
    retry_backoff_ms = Setting(
        "retry.backoff.ms",
        100,
        int64(0),
        "Wait before retrying a failed request (coordinator lookup, commits, offset "
        "lookups...); also the first metadata refresh backoff, which doubles while refreshes "
        "fail or change nothing",
        unit="ms",
    )
    retry_backoff_max_ms = Setting(
        "retry.backoff.max.ms",
        1000,
        int64(0),
        "Largest retry backoff: metadata refreshes and the retries of blocking calls (commit, "
        "committed, offsets lookups, finding the coordinator) wait retry.backoff.ms doubling "
        "up to this, with jitter; below retry.backoff.ms it is a constant backoff, as in Java",
        unit="ms",
    )
    socket_connection_setup_timeout_ms = Setting(
        "socket.connection.setup.timeout.ms",
        10000,
        int64(0),
        "Timeout of the first attempt to set a connection up (TCP, TLS, ApiVersions), with "
        "+-20 % jitter; it doubles per attempt that failed while connecting and falls back "
        "once a connection is up (Java ClusterConnectionStates)",
        unit="ms",
    )
    socket_connection_setup_timeout_max_ms = Setting(
        "socket.connection.setup.timeout.max.ms",
        30000,
        int64(0),
        "Largest connection setup timeout; below socket.connection.setup.timeout.ms it is a "
        "constant timeout, as in Java",
        unit="ms",
    )
    send_buffer_bytes = Setting(
        "send.buffer.bytes", 131072, int32(-1), "SO_SNDBUF; -1: the OS default", unit="bytes"
    )
    receive_buffer_bytes = Setting(
        "receive.buffer.bytes", -1, int32(-1),
        "SO_RCVBUF; -1: the OS default (autotuned). Java's default is 65536, which pins the TCP "
        "window at 64 KiB: the broker then stalls on a large Fetch response while the consumer "
        "decodes the previous one", unit="bytes"
    )
    max_in_flight_requests_per_connection = Setting(
        "max.in.flight.requests.per.connection",
        5,
        int32(1),
        "Most requests sent to one broker and not yet answered",
        java=False,
    )
    max_response_size = Setting(
        "max.response.size",
        256 * 1024 * 1024,
        int32(1),
        "Largest response frame accepted; a larger size prefix is a KafkaProtocolError and "
        "closes the connection. Must be >= fetch.max.bytes and max.partition.fetch.bytes",
        unit="bytes",
        java=False,
    )

    # ---- group membership
    group_id = Setting(
        "group.id",
        None,
        optional_string(),
        "Consumer group; None: no group (assign() only, no commits to Kafka)",
    )
    group_instance_id = Setting(
        "group.instance.id",
        None,
        optional_string(_check_group_instance_id, "None or a non-empty id of [a-zA-Z0-9._-]"),
        "Static membership id (KIP-345); needs group.id",
    )
    group_protocol = Setting(
        "group.protocol",
        "classic",
        string(("classic", "consumer"), case_insensitive=True),
        "classic: JoinGroup/SyncGroup rebalances; consumer: the KIP-848 protocol",
    )
    group_remote_assignor = Setting(
        "group.remote.assignor",
        None,
        optional_string(),
        "Server-side assignor for group.protocol=consumer (uniform, range); None: the "
        "broker's default",
    )
    session_timeout_ms = Setting(
        "session.timeout.ms",
        45000,
        int32(1),
        "Classic protocol: the member is removed if no heartbeat arrives within this time",
        unit="ms",
    )
    heartbeat_interval_ms = Setting(
        "heartbeat.interval.ms",
        3000,
        int32(1),
        "Classic protocol: time between heartbeats; must be below session.timeout.ms",
        unit="ms",
    )
    max_poll_interval_ms = Setting(
        "max.poll.interval.ms",
        300000,
        int32(1),
        "Leave the group if poll() is not called within this time (also the rebalance timeout)",
        unit="ms",
    )
    partition_assignment_strategy = Setting(
        "partition.assignment.strategy",
        ["range", "cooperative-sticky"],
        assignors_parser,
        "Classic protocol: assignors in order of preference (Java default RangeAssignor, "
        "CooperativeStickyAssignor)",
    )
    enable_auto_commit = Setting(
        "enable.auto.commit",
        True,
        boolean,
        "Commit consumed offsets every auto.commit.interval.ms; forced to False without a "
        "group.id unless explicitly set (then an error), as in Java",
    )
    auto_commit_interval_ms = Setting(
        "auto.commit.interval.ms", 5000, int32(0), "Auto-commit period", unit="ms"
    )

    # ---- fetching
    auto_offset_reset = Setting(
        "auto.offset.reset",
        "latest",
        auto_offset_reset_parser,
        "Where to start without a valid committed offset; see offset_reset_strategy",
    )
    fetch_min_bytes = Setting(
        "fetch.min.bytes",
        1,
        int32(0),
        "The broker waits (up to fetch.max.wait.ms) until this much data is available",
        unit="bytes",
    )
    fetch_max_bytes = Setting(
        "fetch.max.bytes",
        52428800,
        int32(0),
        "Most data per fetch response (the first batch is returned even if larger)",
        unit="bytes",
    )
    fetch_max_wait_ms = Setting(
        "fetch.max.wait.ms",
        500,
        int32(0),
        "Longest the broker holds a fetch waiting for fetch.min.bytes",
        unit="ms",
    )
    max_partition_fetch_bytes = Setting(
        "max.partition.fetch.bytes",
        1048576,
        int32(0),
        "Most data per partition in a fetch response (the first batch is returned even if "
        "larger)",
        unit="bytes",
    )
    max_poll_records = Setting(
        "max.poll.records", 500, int32(1), "Most records returned by one poll()"
    )
    isolation_level = Setting(
        "isolation.level",
        "read_uncommitted",
        string(("read_committed", "read_uncommitted")),
        "read_committed: only committed transactional records, up to the last stable offset",
    )
    check_crcs = Setting(
        "check.crcs", True, boolean, "Verify the CRC of every record batch consumed"
    )
    decode_threads = Setting(
        "decode.threads",
        0,
        int32(0, 64),
        "Threads poll_arrow() decodes buffered partitions on side by side (the GIL is released "
        "while a batch is filled): 1 decodes in the polling thread only; 0 picks one per core, "
        "at most 4. Partitions are taken side by side only when all their records fit in the "
        "call's max_records, so the result is the same as one by one",
        java=False,
    )
    exclude_internal_topics = Setting(
        "exclude.internal.topics",
        True,
        boolean,
        "Pattern subscriptions do not match internal topics (__consumer_offsets...)",
    )
    allow_auto_create_topics = Setting(
        "allow.auto.create.topics",
        True,
        boolean,
        "Let the broker create subscribed topics if it allows auto creation",
    )
    key_deserializer = Setting(
        "key.deserializer",
        None,
        deserializer_parser,
        "Turns key bytes into the record key; None keeps bytes (Java has no default: required)",
    )
    value_deserializer = Setting(
        "value.deserializer",
        None,
        deserializer_parser,
        "Turns value bytes into the record value; None keeps bytes (Java has no default: "
        "required)",
    )

    # ---- metrics and interceptors
    metrics_sample_window_ms = Setting(
        "metrics.sample.window.ms",
        30000,
        int64(1),
        "The window of one sample of the windowed metrics (avg, max, min, rate) of "
        "KafkaConsumer.metrics() (Java allows 0, which breaks its rates: >= 1 here)",
        unit="ms",
    )
    metrics_num_samples = Setting(
        "metrics.num.samples",
        2,
        int32(1),
        "How many samples the windowed metrics keep: they cover the last "
        "metrics.num.samples * metrics.sample.window.ms",
    )
    interceptor_classes = Setting(
        "interceptor.classes",
        [],
        interceptor_classes_parser,
        "Consumer interceptors, by import path ('module:Class' or 'module.Class') or class: "
        "each is built with no arguments, then configure(settings) if it defines it; see "
        "pyconsumer.consumer.interceptors. They run before those of 'interceptors'",
    )
    interceptors = Setting(
        "interceptors",
        [],
        interceptors_parser,
        "Consumer interceptor objects (on_consume, on_consume_arrow, on_commit, close, "
        "configure, each optional); they run after those of interceptor.classes",
        java=False,
    )

    # ---- security
    security_protocol = Setting(
        "security.protocol",
        "PLAINTEXT",
        string(SECURITY_PROTOCOLS, case_insensitive=True),
        "Transport: PLAINTEXT, SSL (TLS), SASL_PLAINTEXT (SASL authentication) or SASL_SSL "
        "(SASL over TLS)",
    )
    ssl_context = Setting(
        "ssl.context",
        None,
        ssl_context_parser,
        "A ready ssl.SSLContext; when given, the other ssl.* settings must not be",
        java=False,
    )
    ssl_protocol = Setting(
        "ssl.protocol",
        "TLSv1.3",
        string(("TLS",) + TLS_PROTOCOLS),
        "Highest TLS version used (TLS: no limit): as in Java, TLSv1.2 never speaks TLSv1.3 "
        "even if ssl.enabled.protocols lists it; none of those at or below it is an error",
    )
    ssl_enabled_protocols = Setting(
        "ssl.enabled.protocols",
        "TLSv1.2,TLSv1.3",
        string_list(TLS_PROTOCOLS, allow_empty=False),
        "TLS versions allowed (min and max of this list bound the handshake)",
    )
    ssl_cipher_suites = Setting(
        "ssl.cipher.suites",
        [],
        string_list(),
        "Cipher suites, in OpenSSL names; empty: OpenSSL's defaults",
    )
    ssl_endpoint_identification_algorithm = Setting(
        "ssl.endpoint.identification.algorithm",
        "https",
        optional_string(),
        "https: check the broker's certificate matches its host name; empty: do not check",
    )
    ssl_truststore_type = Setting(
        "ssl.truststore.type",
        "JKS",
        string(),
        "Format of ssl.truststore.location: files are read as PEM; an explicit JKS/PKCS12 "
        "with a location is refused",
        no_effect="trust store files are always read as PEM (an explicit JKS or PKCS12 with "
        "ssl.truststore.location is refused)",
        quiet=("PEM",),
    )
    ssl_truststore_location = Setting(
        "ssl.truststore.location",
        None,
        optional_string(),
        "PEM file of CA certificates; None and no ssl.truststore.certificates: system CAs",
    )
    ssl_truststore_certificates = Setting(
        "ssl.truststore.certificates", None, password, "CA certificates as PEM text"
    )
    ssl_truststore_password = Setting(
        "ssl.truststore.password",
        None,
        password,
        "Java trust store password",
        no_effect="PEM trust stores, the only kind pyconsumer reads, have no password",
    )
    ssl_keystore_type = Setting(
        "ssl.keystore.type",
        "JKS",
        string(),
        "Format of ssl.keystore.location: files are read as PEM; an explicit JKS/PKCS12 with "
        "a location is refused",
        no_effect="key store files are always read as PEM (an explicit JKS or PKCS12 with "
        "ssl.keystore.location is refused)",
        quiet=("PEM",),
    )
    ssl_keystore_location = Setting(
        "ssl.keystore.location",
        None,
        optional_string(),
        "PEM file with the client certificate chain and private key (mutual TLS)",
    )
    ssl_keystore_password = Setting(
        "ssl.keystore.password",
        None,
        password,
        "Java key store password; used for the PEM private key if ssl.key.password is unset",
    )
    ssl_key_password = Setting(
        "ssl.key.password", None, password, "Password of the (encrypted) PEM private key"
    )
    ssl_keystore_key = Setting(
        "ssl.keystore.key",
        None,
        password,
        "Client private key as PEM text (with ssl.keystore.certificate.chain)",
    )
    ssl_keystore_certificate_chain = Setting(
        "ssl.keystore.certificate.chain",
        None,
        password,
        "Client certificate chain as PEM text (with ssl.keystore.key)",
    )
    sasl_mechanism = Setting(
        "sasl.mechanism",
        "GSSAPI",
        string(),
        f"SASL mechanism for SASL_* protocols: one of {', '.join(SASL_MECHANISMS)} "
        f"(Java's default GSSAPI is Kerberos)",
    )
    sasl_jaas_config = Setting(
        "sasl.jaas.config",
        None,
        password,
        "A JAAS login module line (PlainLoginModule, ScramLoginModule, OAuthBearerLoginModule, "
        "Krb5LoginModule) matching sasl.mechanism; a Plain/Scram one gives the user name and "
        "password (instead of sasl.username/sasl.password)",
    )
    sasl_username = Setting(
        "sasl.username",
        None,
        optional_string(),
        "SASL PLAIN/SCRAM user name (or from sasl.jaas.config)",
        java=False,
    )
    sasl_password = Setting(
        "sasl.password",
        None,
        password,
        "SASL PLAIN/SCRAM password (or from sasl.jaas.config); never shown",
        java=False,
    )
    sasl_kerberos_service_name = Setting(
        "sasl.kerberos.service.name",
        None,
        optional_string(),
        "GSSAPI: the Kerberos service name of the brokers (their principal is "
        "<service>/<broker host>), or serviceName in sasl.jaas.config",
    )
    sasl_kerberos_principal = Setting(
        "sasl.kerberos.principal",
        None,
        optional_string(),
        "GSSAPI: the client principal (or principal in a Krb5LoginModule sasl.jaas.config); "
        "unset: the default of the keytab or ticket cache",
        java=False,
    )
    sasl_kerberos_keytab = Setting(
        "sasl.kerberos.keytab",
        None,
        optional_string(),
        "GSSAPI: a keytab file to get the client's tickets from (or keyTab with useKeyTab=true "
        "in a Krb5LoginModule sasl.jaas.config); unset: the ticket cache (kinit, KRB5CCNAME)",
        java=False,
    )
    sasl_oauth_token_provider = Setting(
        "sasl.oauth.token.provider",
        None,
        token_provider_parser,
        "OAUTHBEARER: a callable returning a token (a str, or (token, lifetime ms)), or an "
        "object with a token() method; called for each authentication",
        java=False,
    )
    sasl_oauthbearer_token_endpoint_url = Setting(
        "sasl.oauthbearer.token.endpoint.url",
        None,
        optional_string(),
        "OAUTHBEARER: an OAuth 2 token endpoint; tokens come from a client-credentials grant "
        "with clientId, clientSecret (and scope) from an OAuthBearerLoginModule sasl.jaas.config",
    )

    # ------------------------------------------------------------------ construction

    _values: dict[str, Any]
    _originals: dict[str, Any]  # Java name -> value as given, including ignored settings
    #: Java names given explicitly (either spelling)
    explicitly_set: frozenset[str]
    #: accepted-and-ignored Java-only settings (Java name -> value as given)
    ignored_settings: dict[str, Any]

    def __init__(self, **settings: Any) -> None:
        table = self._table()
        given: dict[str, Any] = {}
        spelled: dict[str, str] = {}
        ignored: dict[str, Any] = {}
        for key, raw in settings.items():
            name = key.replace("_", ".")
            if name in spelled:
                _fail(
                    f"Setting {name} is given twice, as {spelled[name]!r} and {key!r}; "
                    "give one spelling only"
                )
            spelled[name] = key
            if name in table:
                given[name] = raw
                continue
            java_only = _java_only(name)
            if java_only is None:
                _fail(self._unknown_message(key))
            action, reason = java_only
            if action == "ignore":
                ignored[name] = raw
                log.info("pyconsumer ignores Java-only setting %s (%s)", name, reason)
            elif raw not in (None, "", [], ()):
                _fail(f"Setting {name} is not supported by pyconsumer: {reason}")

        values: dict[str, Any] = {}
        for name, setting in table.items():
            if name in given:
                raw = given[name]
            elif setting.required:
                _fail(f"Missing required setting {name} ({setting.attr}), which has no default")
            else:
                raw = setting.default
            try:
                values[name] = setting.validator(raw)
            except _Invalid as exc:
                shown = "<hidden>" if setting.validator is password else repr(raw)
                _fail(
                    f"Invalid value {shown} for setting {name} ({setting.attr}): {exc}; "
                    f"accepted: {setting.validator.accepted}"
                )

        given_values = {name: values[name] for name in given}   # before the cross-checks
        object.__setattr__(self, "_originals", {**given, **ignored})
        object.__setattr__(self, "explicitly_set", frozenset(given))
        object.__setattr__(self, "ignored_settings", ignored)
        object.__setattr__(self, "_values", values)
        self._check_together(values)
        # only for a config that stands: a refused one says what is wrong instead
        for name in given:
            setting = table[name]
            if setting.no_effect is not None and not setting.is_quiet(given_values[name]):
                _warn_no_effect(setting)

    @staticmethod
    def _unknown_message(key: str) -> str:
        snake = "." not in key
        candidates = [s.attr if snake else s.name for s in ConsumerConfig.settings()]
        close = difflib.get_close_matches(key, candidates, n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        return f"Unknown setting {key!r}{hint}"

    def _check_together(self, v: dict[str, Any]) -> None:
        """Cross-setting rules (Java's postProcessParsedConfig and consumer constructor)."""
        explicit = self.explicitly_set
        group_id = v["group.id"]
        if group_id is not None and group_id == "":
            # Java: InvalidGroupIdException (values are trimmed, so whitespace is empty too)
            _fail("group.id should not be an empty string or whitespace; use None for no group")
        if v["group.instance.id"] is not None and group_id is None:
            _fail("group.instance.id is set but group.id is not: static membership needs a group")

        # Java maybeOverrideEnableAutoCommit: no group -> no auto commit
        if group_id is None:
            if "enable.auto.commit" not in explicit:
                v["enable.auto.commit"] = False
            elif v["enable.auto.commit"]:
                _fail("enable.auto.commit cannot be set to true when group.id is None")

        # Java checkUnsupportedConfigsPostProcess (with a group.id; Java's message names the
        # protocol by its enum name): with the consumer protocol the broker assigns and sets the
        # session and heartbeat timing
        if group_id is not None:
            if v["group.protocol"] == "consumer":
                bad = [
                    n
                    for n in ("partition.assignment.strategy", "heartbeat.interval.ms",
                              "session.timeout.ms")
                    if n in explicit
                ]
                if bad:
                    _fail(f"{', '.join(bad)} cannot be set when group.protocol=CONSUMER")
            elif v["group.remote.assignor"] is not None:
                _fail("group.remote.assignor cannot be set when group.protocol=CLASSIC")

        if group_id is not None and v["group.protocol"] == "classic":
            if v["heartbeat.interval.ms"] >= v["session.timeout.ms"]:
                _fail(
                    f"heartbeat.interval.ms ({v['heartbeat.interval.ms']}) must be lower than "
                    f"session.timeout.ms ({v['session.timeout.ms']})"
                )
            if not v["partition.assignment.strategy"]:
                _fail(
                    "partition.assignment.strategy is empty: a classic group needs at least "
                    "one assignor"
                )

        # Java postProcessReconnectBackoffConfigs
        if "reconnect.backoff.ms" in explicit and "reconnect.backoff.max.ms" not in explicit:
            v["reconnect.backoff.max.ms"] = v["reconnect.backoff.ms"]
        # Java only warns about these: the maximum becomes a static backoff/timeout
        for first, most in (
            ("retry.backoff.ms", "retry.backoff.max.ms"),
            ("socket.connection.setup.timeout.ms", "socket.connection.setup.timeout.max.ms"),
        ):
            if v[first] > v[most]:
                log.warning("%s (%d) is greater than %s (%d): a static %d ms is used",
                            first, v[first], most, v[most], v[most])
        if (
            v["group.protocol"] == "classic"
            and 0 <= v["connections.max.idle.ms"] < v["max.poll.interval.ms"]
        ):
            log.warning(
                "connections.max.idle.ms (%d) is lower than max.poll.interval.ms (%d): the "
                "coordinator connection may close during a rebalance",
                v["connections.max.idle.ms"], v["max.poll.interval.ms"],
            )

        if v["fetch.min.bytes"] > v["fetch.max.bytes"]:
            _fail(
                f"fetch.min.bytes ({v['fetch.min.bytes']}) must not exceed fetch.max.bytes "
                f"({v['fetch.max.bytes']})"
            )
        for limit in ("fetch.max.bytes", "max.partition.fetch.bytes"):
            if v["max.response.size"] < v[limit]:
                _fail(
                    f"max.response.size ({v['max.response.size']}) must be at least {limit} "
                    f"({v[limit]}), or legitimate fetch responses would be refused"
                )

        self._check_security(v)

        # Java maybeOverrideClientId
        if not v["client.id"]:
            part = v["group.instance.id"] or str(next(_CLIENT_ID_SEQUENCE))
            v["client.id"] = f"consumer-{'null' if group_id is None else group_id}-{part}"

    def _check_security(self, v: dict[str, Any]) -> None:
        explicit = self.explicitly_set
        protocol = v["security.protocol"]
        if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
            mechanism = v["sasl.mechanism"]
            if not mechanism:
                _fail("sasl.mechanism must be set when security.protocol enables SASL")
            if mechanism not in SASL_MECHANISMS:
                _fail(
                    f"sasl.mechanism {mechanism!r} is not supported; accepted: "
                    f"{', '.join(SASL_MECHANISMS)}"
                )
            jaas = v["sasl.jaas.config"]
            if jaas is not None:
                credentials = _parse_jaas(jaas, mechanism)
                if credentials is not None:
                    if v["sasl.username"] is not None or v["sasl.password"] is not None:
                        _fail("give either sasl.jaas.config or sasl.username/sasl.password, "
                              "not both")
                    v["sasl.username"], v["sasl.password"] = credentials
            if mechanism == "GSSAPI":
                # Kerberos credentials: a keytab or the ticket cache, not a password; the
                # brokers' service name must be known (Java fails the login without it)
                service = v["sasl.kerberos.service.name"]
                if service is None and jaas is not None:
                    from pyconsumer.net.sasl.jaas import parse_jaas
                    service = parse_jaas(jaas).options.get("serviceName")
                if not service:
                    _fail("sasl.mechanism=GSSAPI needs sasl.kerberos.service.name (the brokers' "
                          "Kerberos service name, usually 'kafka') or serviceName in "
                          "sasl.jaas.config")
            elif mechanism == "OAUTHBEARER":
                options = {}
                if jaas is not None:
                    from pyconsumer.net.sasl.jaas import parse_jaas
                    options = parse_jaas(jaas).options
                if v["sasl.oauth.token.provider"] is None and not (
                        v["sasl.oauthbearer.token.endpoint.url"] and options.get("clientId")
                        and options.get("clientSecret")) and not any(
                        k.startswith("unsecuredLogin") for k in options):
                    _fail("sasl.mechanism=OAUTHBEARER needs a token: sasl.oauth.token.provider, "
                          "sasl.oauthbearer.token.endpoint.url with clientId and clientSecret in "
                          "sasl.jaas.config, or an unsecured token (unsecuredLoginStringClaim_sub "
                          "in sasl.jaas.config)")
            elif v["sasl.username"] is None or v["sasl.password"] is None:
                _fail(
                    f"sasl.mechanism={mechanism} needs sasl.username and sasl.password "
                    "(or sasl.jaas.config)"
                )

        if v["ssl.context"] is not None:
            others = sorted(
                n for n in explicit if n.startswith("ssl.") and n != "ssl.context"
            )
            if others:
                _fail(f"ssl.context is given, so {', '.join(others)} must not be")
        for store in ("truststore", "keystore"):
            kind = v[f"ssl.{store}.type"].upper()
            if f"ssl.{store}.type" in explicit and kind != "PEM" and v[f"ssl.{store}.location"]:
                _fail(
                    f"ssl.{store}.type={kind} is not supported: pyconsumer reads PEM files "
                    f"only (convert the store, e.g. with keytool/openssl, and set "
                    f"ssl.{store}.type=PEM)"
                )
        if v["ssl.truststore.location"] and v["ssl.truststore.certificates"]:
            _fail("give either ssl.truststore.location or ssl.truststore.certificates, not both")
        key, chain = v["ssl.keystore.key"], v["ssl.keystore.certificate.chain"]
        if (key is None) != (chain is None):
            _fail("ssl.keystore.key and ssl.keystore.certificate.chain must be given together")
        if key is not None and v["ssl.keystore.location"]:
            _fail("give either ssl.keystore.location or ssl.keystore.key/certificate.chain")
        if v["ssl.endpoint.identification.algorithm"] not in (None, "", "https"):
            _fail(
                f"ssl.endpoint.identification.algorithm "
                f"{v['ssl.endpoint.identification.algorithm']!r} is not supported; "
                "accepted: https, or empty to disable host name checks"
            )

    # ------------------------------------------------------------------ access

    @classmethod
    def settings(cls) -> tuple[Setting[Any], ...]:
        """The settings table, in declaration order."""
        return tuple(cls._table().values())

    @classmethod
    def _table(cls) -> dict[str, Setting[Any]]:
        return _TABLE

    def __getitem__(self, key: str) -> Any:
        name = key.replace("_", ".")
        if name not in self._values:
            raise KeyError(self._unknown_message(key))
        return self._values[name]

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("ConsumerConfig is immutable; use with_overrides()")

    def as_dict(self) -> dict[str, Any]:
        """Java name -> value, for every setting."""
        return dict(self._values)

    def with_overrides(self, **settings: Any) -> ConsumerConfig:
        """A new config from the settings given to this one, updated by ``settings``."""
        base = dict(self._originals)
        for key, value in settings.items():
            base[key.replace("_", ".")] = value
        return ConsumerConfig(**base)

    @property
    def offset_reset_strategy(self) -> OffsetResetStrategy:
        """``auto.offset.reset`` parsed: kind and, for by_duration, duration_ms."""
        return parse_auto_offset_reset(self._values["auto.offset.reset"])

    def __repr__(self) -> str:
        secret = {n for n, s in self._table().items() if s.validator is password}
        shown = {
            n: ("********" if n in secret and val is not None else val)
            for n, val in self._values.items()
            if n in self.explicitly_set or n == "client.id"
        }
        return f"ConsumerConfig({shown})"


#: Java name -> Setting, in declaration order
_TABLE: dict[str, Setting[Any]] = {
    v.name: v for v in vars(ConsumerConfig).values() if isinstance(v, Setting)
}

def _parse_jaas(text: str, mechanism: str) -> tuple[str, str] | None:
    """Check a sasl.jaas.config line against sasl.mechanism: (username, password) of a
    PlainLoginModule/ScramLoginModule, None for the others (OAUTHBEARER, Kerberos)."""
    # imported here: pyconsumer.net imports this module
    from pyconsumer.net.sasl.jaas import PLAIN_MODULE, SCRAM_MODULE, check_module, parse_jaas

    entry = parse_jaas(text)
    check_module(entry, mechanism)
    if entry.module not in (PLAIN_MODULE, SCRAM_MODULE):
        return None
    if "username" not in entry.options or "password" not in entry.options:
        _fail("sasl.jaas.config must give username=\"...\" and password=\"...\"")
    return entry.options["username"], entry.options["password"]

