"""Generate :mod:`pyconsumer.protocol.bodies`: a TypedDict for every message body and struct.

Usage::

    python -m pyconsumer.protocol.generate_stubs            # rewrite bodies.py
    python -m pyconsumer.protocol.generate_stubs --check    # exit 1 if bodies.py is stale
    python -m pyconsumer.protocol.generate_stubs --dry-run  # print it

One TypedDict per struct of the declarations, keys as the codec uses them (snake_case). A key
is ``NotRequired`` when some version in which its struct exists lacks the field, and
``X | None`` when some such version lets it be null (or its default is null). A struct is
named by its declared type name; when that name stands for different structs in different
messages, each is prefixed with its message's name (``FetchResponseEpochEndOffset``).
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

from pyconsumer.protocol.schema import MESSAGES, Field, Message

OUTPUT = Path(__file__).with_name("bodies.py")
UNBOUNDED = 0x7FFF

_PYTHON_TYPES: dict[str, str] = {
    "int8": "int", "int16": "int", "int32": "int", "int64": "int", "uint16": "int",
    "float64": "float", "bool": "bool", "string": "str", "bytes": "bytes",
    "records": "bytes | memoryview",   # decoded as a zero-copy memoryview of the frame
    "uuid": "uuid.UUID",
}

Versions = tuple[int, int]


def _intersect(a: Versions, b: Versions) -> Versions:
    return max(a[0], b[0]), min(a[1], b[1])


def _empty(v: Versions) -> bool:
    return v[0] > v[1]


def _covers(outer: Versions, inner: Versions) -> bool:
    """``outer`` holds every version of (non-empty) ``inner``."""
    return outer[0] <= inner[0] and inner[1] <= outer[1]


def _text(v: Versions) -> str:
    lo, hi = v
    if hi == UNBOUNDED:
        return f"v{lo}+"
    return f"v{lo}" if lo == hi else f"v{lo}-{hi}"


@dataclass(eq=False)
class Struct:
    """One struct (or a message's top level) as it appears in one place."""

    message: Message
    path: str                          # "topics[].partitions[]" ("" for the top level)
    type_name: str                     # declared type ("FetchPartition"), or the message name
    fields: list[Field]
    scope: Versions                    # the versions in which this struct exists
    children: dict[str, Struct] = field(default_factory=dict)   # by field key
    name: str = ""

    def signature(self) -> tuple[object, ...]:
        """What the TypedDict says; equal signatures may share one TypedDict."""
        return tuple(
            (f.key, *_field_parts(f, self.scope),
             self.children[f.key].signature() if f.key in self.children else None)
            for f in self.fields
        )


def _field_parts(f: Field, scope: Versions) -> tuple[bool, bool, str]:
    """(required, nullable, comment) of a field in a struct existing in ``scope``."""
    present = _intersect(scope, f.versions)
    required = not _empty(present) and _covers(f.versions, scope)
    nullable_at = _intersect(present, f.nullable)
    nullable = not _empty(nullable_at) or (f.has_default and f.default is None) \
        or f.type == "records"
    notes: list[str] = []
    if not required:
        notes.append(_text(f.versions) if not _empty(present) else "no version")
    if not _empty(nullable_at) and nullable_at != present:
        notes.append(f"null {_text(_intersect(f.nullable, f.versions))}")
    if f.tag is not None:
        notes.append("tagged")
    if f.has_default and f.default is not None:
        d = f.default
        notes.append("default " + (repr(d) if isinstance(d, str) else str(d).lower()
                                   if isinstance(d, bool) else str(d)))
    return required, nullable, ", ".join(notes)


def _collect(message: Message) -> list[Struct]:
    """The message's top level and every nested struct, parents before children."""
    top = Struct(message, "", message.name, message.fields, message.versions)
    out = [top]

    def walk(parent: Struct) -> None:
        for f in parent.fields:
            if not f.is_struct:
                continue
            path = f"{parent.path}.{f.key}" if parent.path else f.key
            child = Struct(message, path + ("[]" if f.is_array else ""), f.element, f.fields,
                           _intersect(parent.scope, f.versions))
            parent.children[f.key] = child
            out.append(child)
            walk(child)

    walk(top)
    return out


def _name_structs(structs: list[Struct]) -> None:
    by_type: dict[str, set[tuple[object, ...]]] = {}
    for s in structs:
        if s.path:
            by_type.setdefault(s.type_name, set()).add(s.signature())
    taken: dict[str, tuple[object, ...]] = {}
    for s in structs:
        if not s.path:
            s.name = s.message.name
        elif len(by_type[s.type_name]) == 1 and s.type_name not in MESSAGES:
            s.name = s.type_name
        else:
            s.name = s.message.name + s.type_name
        sig = s.signature()
        if taken.setdefault(s.name, sig) != sig:
            raise ValueError(f"two different structs would both be named {s.name}")


def _annotation(f: Field, child: Struct | None, scope: Versions) -> tuple[str, str]:
    required, nullable, comment = _field_parts(f, scope)
    t = child.name if child is not None else _PYTHON_TYPES[f.element]
    if f.is_array:
        t = f"list[{t}]"
    if nullable:
        t = f"{t} | None"
    if not required:
        t = f"NotRequired[{t}]"
    return t, comment


def _place(s: Struct) -> str:
    """Where a struct sits, with its versions when not all of the message's."""
    where = f"{s.message.name}.{s.path}"
    if s.scope == s.message.versions:
        return where
    lo, hi = s.scope
    return f"{where} (v{lo}+)" if hi == s.message.versions[1] else f"{where} ({_text(s.scope)})"


def _class(s: Struct, uses: list[Struct]) -> list[str]:
    if not s.path:
        m = s.message
        what = f"api key {m.api_key}" if m.api_key >= 0 else "embedded in group messages"
        flexible = "none" if _empty(m.flexible) else _text(m.flexible)
        doc = f"{m.name} body: {what}, {_text(m.versions)}, flexible {flexible}."
    else:
        doc = "; ".join(_place(u) for u in uses) + "."
    lines = [f"class {s.name}(TypedDict):", f'    """{doc}"""', ""]
    if len(lines[1]) > 99:   # keep lines short: one place per line
        lines[1:2] = ['    """'] + [f"    {_place(u)}" for u in uses] + ['    """']
    lines.pop()                              # no blank line before the first key
    for f in s.fields:
        t, comment = _annotation(f, s.children.get(f.key), s.scope)
        line = f"    {f.key}: {t}"
        lines.append(f"{line}  # {comment}" if comment else line)
    return lines


HEADER = '''\
"""TypedDicts of every message body and nested struct. Generated: do not edit.

Made from :mod:`pyconsumer.protocol.declarations` by ``python -m
pyconsumer.protocol.generate_stubs`` (``--check`` exits 1 when this file is stale). Keys are
the codec's dict keys. ``NotRequired``: some version of the struct lacks the field (the
encoder ignores it there; a decoded body still holds it, at its default). ``X | None``: some
version lets it be null, or its default is null. Comments give the versions that have a field
when not all do, those that let it be null when not all do, and declared defaults.
"""
from __future__ import annotations

import sys
import uuid
from typing import TYPE_CHECKING, TypedDict

if sys.version_info >= (3, 11):
    from typing import NotRequired
elif TYPE_CHECKING:   # annotations are strings at run time (PEP 563): only checkers need it
    from typing_extensions import NotRequired
'''


def generate() -> str:
    structs = [s for m in MESSAGES.values() for s in _collect(m)]
    _name_structs(structs)
    uses: dict[str, list[Struct]] = {}
    for s in structs:
        uses.setdefault(s.name, []).append(s)
    out = [HEADER.rstrip("\n")]
    for n in uses:
        out += ["", ""] + _class(uses[n][0], uses[n])
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Generate pyconsumer/protocol/bodies.py")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    mode.add_argument("--dry-run", action="store_true", help="print instead of writing")
    ap.add_argument("--output", type=Path, default=OUTPUT, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    text = generate()
    if args.dry_run:
        sys.stdout.write(text)
        return 0
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else None
        if current != text:
            print(f"{args.output} is stale: run python -m pyconsumer.protocol.generate_stubs",
                  file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
