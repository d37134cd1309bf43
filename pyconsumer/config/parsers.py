"""The parser kit of the settings table: a :class:`Parser` is a callable ``raw -> value`` with
a description of what it accepts; the Java types (INT, LONG, BOOLEAN, STRING, PASSWORD,
LIST) are built from it. A parser raises :class:`Invalid`, which ConsumerConfig turns into a
ConfigurationError naming the setting."""
from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable
from typing import Any, Generic, NoReturn, TypeVar

from pyconsumer.errors import ConfigurationError

T = TypeVar("T")

REQUIRED: Any = object()  # default of a setting with no default (bootstrap.servers)


class Invalid(ValueError):
    """Raised by a parser; ConsumerConfig turns it into a ConfigurationError naming the setting."""


def fail(message: str) -> NoReturn:
    raise ConfigurationError(message)


# --------------------------------------------------------------------------- parsers
# Each parser takes the raw value (from Python or from a Java properties file) and returns the
# typed value or raises Invalid. ``accepted`` says in words what the parser takes; it is shown
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
        raise Invalid("a boolean is not an integer")
    if isinstance(raw, str) and re.fullmatch(r"[+-]?[0-9]+", raw.strip()):
        value = int(raw.strip())
    elif hasattr(type(raw), "__index__"):  # int, numpy integers; not float
        value = operator.index(raw)
    else:
        raise Invalid(f"expected a {bits}-bit integer")
    lo, hi = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    if not lo <= value <= hi:
        raise Invalid(f"does not fit a {bits}-bit integer")
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
            raise Invalid("out of range")
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
    raise Invalid("expected a boolean")


boolean: Parser[bool] = Parser(_parse_bool, "True/False or 'true'/'false'", "boolean")


def as_str(raw: Any) -> str:
    if not isinstance(raw, str):
        raise Invalid(f"expected a string, got {type(raw).__name__}")
    return raw.strip()  # Java trims string settings


def string(choices: Iterable[str] | None = None, *, case_insensitive: bool = False) -> Parser[str]:
    """Java STRING, not null; with ``choices``, one of them (Java's ``in(...)``)."""
    options = tuple(choices) if choices is not None else None
    accepted = f"one of {', '.join(options)}" if options else "a string"
    if options and case_insensitive:
        accepted += " (any case)"

    def parse(raw: Any) -> str:
        value = as_str(raw)
        if options is not None:
            folded = {o.lower(): o for o in options} if case_insensitive else {o: o for o in options}
            key = value.lower() if case_insensitive else value
            if key not in folded:
                raise Invalid("not one of the accepted values")
            value = folded[key]  # the canonical spelling
        return value

    return Parser(parse, accepted, "string")


def optional_string(check: Callable[[str], None] | None = None, accepted: str = "") -> Parser[str | None]:
    """Java STRING with default null: None, or a string (checked by ``check``)."""

    def parse(raw: Any) -> str | None:
        if raw is None:
            return None
        value = as_str(raw)
        if check is not None:
            check(value)
        return value

    return Parser(parse, accepted or "a string or None", "string")


def _parse_password(raw: Any) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise Invalid(f"expected a string, got {type(raw).__name__}")
    return raw  # passwords are not trimmed (Java's PASSWORD type keeps them as given)


password: Parser[str | None] = Parser(_parse_password, "a string or None (kept secret)", "password")


def split_list(raw: Any) -> list[Any]:
    # Java LIST: "a, b,c" or a list; an empty string is an empty list
    if isinstance(raw, str):
        text = raw.strip()
        return [] if not text else [part.strip() for part in text.split(",")]
    if isinstance(raw, (list, tuple)):
        return [item.strip() if isinstance(item, str) else item for item in raw]
    raise Invalid("expected a comma-separated string or a list")


def string_list(
    choices: Iterable[str] | None = None, *, allow_empty: bool = True
) -> Parser[list[str]]:
    """Java LIST of strings, no duplicates (Java's ``ValidList.anyNonDuplicateValues``)."""
    options = tuple(choices) if choices is not None else None
    accepted = "a comma-separated string or a list of strings"
    if options:
        accepted += f", each one of {', '.join(options)}"

    def parse(raw: Any) -> list[str]:
        items = split_list(raw)
        for item in items:
            if not isinstance(item, str) or not item:
                raise Invalid(f"entry {item!r} is not a non-empty string")
            if options is not None and item not in options:
                raise Invalid(f"entry {item!r} is not accepted")
        if len(set(items)) != len(items):
            raise Invalid("contains duplicate entries")
        if not items and not allow_empty:
            raise Invalid("must not be empty")
        return items

    return Parser(parse, accepted, "list")
