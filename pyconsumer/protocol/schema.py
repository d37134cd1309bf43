"""The message declarations parsed into :class:`Message` and :class:`Field` objects."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pyconsumer.protocol.declarations import DECLARATIONS

NO_VERSIONS = (1, 0)  # an empty range
PRIMITIVES = frozenset(
    {"int8", "int16", "int32", "int64", "uint16", "float64", "bool", "string", "bytes",
     "records", "uuid"}
)


def parse_versions(text: str) -> tuple[int, int]:
    if text == "none":
        return NO_VERSIONS
    if text.endswith("+"):
        return int(text[:-1]), 0x7FFF
    if "-" in text:
        lo, hi = text.split("-")
        return int(lo), int(hi)
    return int(text), int(text)


def in_range(version: int, rng: tuple[int, int]) -> bool:
    return rng[0] <= version <= rng[1]


_SNAKE_1 = re.compile(r"(.)([A-Z][a-z]+)")
_SNAKE_2 = re.compile(r"([a-z0-9])([A-Z])")


def snake_case(name: str) -> str:
    """ThrottleTimeMs -> throttle_time_ms (the dict key of a field)."""
    return _SNAKE_2.sub(r"\1_\2", _SNAKE_1.sub(r"\1_\2", name)).lower()


@dataclass(eq=False)
class Field:
    name: str
    type: str                         # "int32", "[]int32", "[]Topic", "ReplicaState"
    versions: tuple[int, int]
    nullable: tuple[int, int] = NO_VERSIONS
    tag: int | None = None
    tagged: tuple[int, int] = NO_VERSIONS
    default: Any = None               # parsed "default=" or None when not declared
    has_default: bool = False
    fields: list[Field] = field(default_factory=list)

    @property
    def key(self) -> str:
        return snake_case(self.name)

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.element not in PRIMITIVES


@dataclass(eq=False)
class Message:
    name: str                         # "FetchRequest"
    api_key: int
    versions: tuple[int, int]
    flexible: tuple[int, int]
    fields: list[Field]

    @property
    def is_request(self) -> bool:
        return self.name.endswith("Request")


def _parse_default(text: str) -> Any:
    if text == "null":
        return None
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text, 0)
    except ValueError:
        return text


def _parse_field(line: str) -> Field:
    name, typ, versions, *attrs = line.split()
    f = Field(name, typ, parse_versions(versions))
    for attr in attrs:
        k, _, v = attr.partition("=")
        if k == "nullable":
            f.nullable = parse_versions(v)
        elif k == "tag":
            tag, _, tagged = v.partition("@")
            f.tag, f.tagged = int(tag), parse_versions(tagged)
        elif k == "default":
            f.default, f.has_default = _parse_default(v), True
        else:
            raise ValueError(f"unknown attribute {attr!r} in declaration {line!r}")
    return f


def parse(text: str) -> dict[str, Message]:
    messages: dict[str, Message] = {}
    stack: list[tuple[int, list[Field]]] = []
    for raw in text.splitlines():
        if not raw.strip():
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        if indent == 0:
            name, key, versions, flexible = raw.split()
            msg = Message(name, int(key), parse_versions(versions),
                          parse_versions(flexible.partition("=")[2]), [])
            messages[name] = msg
            stack = [(0, msg.fields)]
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        f = _parse_field(raw.strip())
        stack[-1][1].append(f)
        stack.append((indent, f.fields))
    return messages


MESSAGES: dict[str, Message] = parse(DECLARATIONS)
