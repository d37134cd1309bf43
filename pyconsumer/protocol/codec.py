"""The one engine that encodes and decodes every declared message, at every version.

For a (message, version) pair the declarations are compiled once into a list of per-field
reader and writer functions (fields absent at that version are filled with their defaults on
decode and ignored on encode); flexible versions use compact lengths and tagged fields.
Encoding refuses a body key that names no field of its struct at any version (a typo would
otherwise encode the field's default silently); a key of a field that only other versions
have is accepted and ignored, so one body can serve several versions.
"""
from __future__ import annotations

import difflib
import operator
import struct
import uuid
from collections.abc import Callable, Collection, Mapping
from functools import cache
from typing import Any

from pyconsumer.errors import KafkaProtocolError
from pyconsumer.protocol.primitives import ZERO_UUID, DecodeError, Reader, Writer
from pyconsumer.protocol.schema import Field, Message, in_range

ReadFn = Callable[[Reader], Any]
WriteFn = Callable[[Writer, Any], None]
DefaultFn = Callable[[], Any]

_MISSING = object()


class Encoded(bytes):
    """A struct, or an array of structs, already encoded at the version being written (see
    :func:`struct_codec`, :func:`encoded_array`): written as is where it is expected. A
    caller that sends the same entries again (a Fetch's partitions) encodes each once instead
    of field by field every time."""

    __slots__ = ()


class EncodeError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.path: list[str] = []


class UnknownKeysError(EncodeError):
    """Body keys that name no field of the struct at any version of the message."""

    def __init__(self, unknown: Collection[object], known: Collection[str]) -> None:
        self.unknown = sorted(unknown, key=repr)
        names = [_suggest(k, known) for k in self.unknown]
        listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        super().__init__(f"unknown key{'s' if len(names) > 1 else ''} {listed}")


def _suggest(key: object, known: Collection[str]) -> str:
    close = difflib.get_close_matches(str(key), known, n=3) if isinstance(key, str) else []
    if not close:
        return repr(key)
    return f"{key!r} (did you mean {' or '.join(repr(c) for c in close)}?)"


_FIXED: dict[str, tuple[str, Any]] = {
    "int8": ("int8", 0), "int16": ("int16", 0), "int32": ("int32", 0), "int64": ("int64", 0),
    "uint16": ("uint16", 0), "float64": ("float64", 0.0), "bool": ("boolean", False),
    "uuid": ("uuid", ZERO_UUID),
}
#: struct format characters of the fixed-width types: a run of such fields is read with one
#: ``unpack_from`` and an array of them in one call (bool: ``?`` is ``byte != 0``, as Reader's)
_FORMAT: dict[str, str] = {
    "int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint16": "H", "float64": "d",
    "bool": "?",
}
#: of those, the ones a run may write with one ``pack`` (ints, checked to be exact ints first)
_INT_FORMATS = frozenset("bhiqH")
_JUST_INT = {int}

#: a step of StructCodec.read: (None, key, reader, None) for one field, or (run, "?", None,
#: {key: reader}) for a run of fixed-width fields read with ``run`` (Any: the loop reads
#: whichever the step has without a check per field)
_ReadStep = tuple[struct.Struct | None, str, Any, Any]
#: a step of StructCodec.write: (None, key, writer, default, ()) for one field, or (run, "?",
#: None, None, ((key, writer, default), ...)) for a run of int fields packed with ``run``
_WriteStep = tuple[struct.Struct | None, str, Any, Any, tuple[tuple[str, WriteFn, DefaultFn], ...]]


def _read_steps(regular: list[tuple[str, ReadFn, WriteFn, DefaultFn, bool]],
                formats: list[str | None]) -> list[_ReadStep]:
    steps: list[_ReadStep] = []
    run: dict[str, ReadFn] = {}
    fmt = ""
    for (key, read, _w, _d, _c), f in zip(regular, formats):
        if f is not None:
            run[key] = read
            fmt += f
            continue
        if run:
            steps.append((struct.Struct(">" + fmt), "?", None, run))
            run, fmt = {}, ""
        steps.append((None, key, read, None))
    if run:
        steps.append((struct.Struct(">" + fmt), "?", None, run))
    return steps


def _write_steps(regular: list[tuple[str, ReadFn, WriteFn, DefaultFn, bool]],
                 formats: list[str | None]) -> list[_WriteStep]:
    steps: list[_WriteStep] = []
    run: list[tuple[str, WriteFn, DefaultFn]] = []
    fmt = ""
    for (key, _r, write, default, _c), f in zip(regular, formats):
        if f is not None and f in _INT_FORMATS:
            run.append((key, write, default))
            fmt += f
            continue
        if run:
            steps.append((struct.Struct(">" + fmt), "?", None, None, tuple(run)))
            run, fmt = [], ""
        steps.append((None, key, write, default, ()))
    if run:
        steps.append((struct.Struct(">" + fmt), "?", None, None, tuple(run)))
    return steps


_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-(1 << 7), (1 << 7) - 1), "int16": (-(1 << 15), (1 << 15) - 1),
    "int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1),
    "uint16": (0, 0xFFFF),
}


class StructCodec:
    """Readers/writers for one struct's fields at one version.

    Consecutive fixed-width fields (ints, float64, bool) are read as one run with a single
    ``struct.unpack_from`` (and ints written with one ``pack``); when the frame is too short
    for the run, or a value does not fit, the fields are done one by one instead, which
    raises exactly the error (message, byte, field) the one-by-one path always gives."""

    __slots__ = ("regular", "tagged", "absent", "flexible", "known", "_read_steps", "_packed",
                 "_write_steps", "_tag_defaults")

    def __init__(self, fields: list[Field], version: int, flexible: bool, *,
                 runs: bool = True) -> None:
        """``runs`` False: every field on its own, arrays element by element and tagged
        fields always parsed (the reference the runs are tested against)."""
        self.flexible = flexible
        # every field of the struct at any version: the keys a body may hold
        self.known = frozenset(f.key for f in fields)
        self.regular: list[tuple[str, ReadFn, WriteFn, DefaultFn, bool]] = []
        self.tagged: dict[int, tuple[str, ReadFn, WriteFn, DefaultFn]] = {}
        self.absent: list[tuple[str, DefaultFn]] = []
        formats: list[str | None] = []
        for f in fields:
            read, write, default = _field_codec(f, version, flexible, runs)
            if not in_range(version, f.versions):
                self.absent.append((f.key, default))
            elif f.tag is not None and flexible and in_range(version, f.tagged):
                self.tagged[f.tag] = (f.key, read, write, default)
            else:
                self.regular.append((f.key, read, write, default, f.is_struct or f.is_array))
                formats.append(None if f.is_array or f.is_struct or not runs
                               else _FORMAT.get(f.type))
        self._tag_defaults = [(key, default) for key, _r, _w, default in self.tagged.values()
                              ] if runs else None
        self._read_steps = _read_steps(self.regular, formats)
        self._write_steps = _write_steps(self.regular, formats)
        packer = self.fixed_packer()
        #: an all-int struct: (keys in wire order, their pack, their defaults, the keys a value
        #: may hold for it: any but a tagged field's) for encode_struct
        self._packed = None if packer is None else (
            packer[0], packer[1], tuple(d() for _k, _r, _w, d, _c in self.regular),
            self.known - {key for key, _r, _w, _d in self.tagged.values()})

    def read(self, r: Reader) -> dict[str, Any]:
        out: dict[str, Any] = {}
        key = "?"
        try:
            for run, key, read, fields in self._read_steps:
                if run is None:
                    out[key] = read(r)
                    continue
                pos = r.pos
                if r.end - pos >= run.size:
                    out.update(zip(fields, run.unpack_from(r.buf, pos)))
                    r.pos = pos + run.size
                else:                   # too short: field by field, for the exact error
                    for key, fread in fields.items():
                        out[key] = fread(r)
            if self.flexible:
                key = "_tagged_fields"
                pos = r.pos
                if pos < r.end and r.buf[pos] == 0 and self._tag_defaults is not None:
                    # no tagged fields: the usual case
                    r.pos = pos + 1
                    for key, default in self._tag_defaults:
                        out[key] = default()
                else:
                    self._read_tags(r, out)
        except DecodeError as e:
            e.path.append(key)
            raise
        for key, default in self.absent:
            out[key] = default()
        return out

    def _read_tags(self, r: Reader, out: dict[str, Any]) -> None:
        count = r.unsigned_varint()
        if count > r.remaining:
            raise DecodeError(f"{count} tagged fields in {r.remaining} bytes", r.pos)
        last = -1
        for _ in range(count):
            tag = r.unsigned_varint()
            if tag <= last:
                raise DecodeError(f"tagged field {tag} out of order (after {last})", r.pos)
            last = tag
            size = r.unsigned_varint()
            data = r.raw(size, f"tagged field {tag}")
            known = self.tagged.get(tag)
            if known is not None:      # unknown tags are skipped, as Kafka's readers do
                sub = Reader(data)
                try:
                    out[known[0]] = known[1](sub)
                except DecodeError as e:
                    e.path.append(known[0])
                    raise
        for key, _r, _w, default in self.tagged.values():
            if key not in out:
                out[key] = default()

    def write(self, w: Writer, value: Any) -> None:
        if not isinstance(value, (dict, Mapping)):    # dict first: the common, cheap check
            if type(value) is Encoded:
                w.raw(value)
                return
            raise EncodeError(f"expected a dict, got {type(value).__name__}")
        if not self.known.issuperset(value):
            raise UnknownKeysError(value.keys() - self.known, self.known)
        key = "?"
        try:
            for run, key, write, default, fields in self._write_steps:
                if run is None:
                    v = value.get(key, _MISSING)
                    write(w, default() if v is _MISSING else v)
                    continue
                values = [d() if (v := value.get(k, _MISSING)) is _MISSING else v
                          for k, _w, d in fields]
                # exact ints that fit: one pack; anything else (None, bool, another type, out
                # of range) field by field, which accepts or refuses it as it always did
                if {*map(type, values)} == _JUST_INT:
                    try:
                        w.out += run.pack(*values)
                        continue
                    except struct.error:
                        pass
                # (key names the field an EncodeError is about)
                for (key, fwrite, _d), v in zip(fields, values):  # noqa: B007
                    fwrite(w, v)
            if self.flexible:
                key = "_tagged_fields"
                if not self.tagged and self._tag_defaults is not None:
                    w.out.append(0)              # no tagged fields at this version
                    return
                present = []
                for tag in sorted(self.tagged):
                    key, _r, write, default = self.tagged[tag]
                    v = value.get(key, _MISSING)
                    if v is _MISSING or v == default():
                        continue               # tagged fields at their default are left out
                    sub = Writer()
                    write(sub, v)
                    present.append((tag, sub.out))
                w.unsigned_varint(len(present))
                for tag, data in present:
                    w.unsigned_varint(tag)
                    w.unsigned_varint(len(data))
                    w.raw(data)
        except EncodeError as e:
            e.path.append(key)
            raise

    def fixed_packer(self) -> tuple[tuple[str, ...], Callable[..., bytes]] | None:
        """For a struct whose regular fields are all ints (one packed run): the keys in wire
        order and a function packing their values, in that order, into the bytes
        :meth:`write` gives for them with every tagged field at its default (struct.error
        when a value does not fit: write it then, for the error it gives). None otherwise."""
        steps = self._write_steps
        if len(steps) != 1 or steps[0][0] is None:
            return None
        run, _k, _w, _d, fields = steps[0]
        assert run is not None
        keys = tuple(k for k, _fw, _fd in fields)
        pack = run.pack
        if not self.flexible:
            return keys, pack
        return keys, lambda *values: pack(*values) + b"\x00"     # no tagged field

    def defaults(self) -> dict[str, Any]:
        out = {key: d() for key, _r, _w, d, _c in self.regular}
        out.update({key: d() for key, _r, _w, d in self.tagged.values()})
        out.update({key: d() for key, d in self.absent})
        return out


def _field_codec(f: Field, version: int, flexible: bool, runs: bool = True
                 ) -> tuple[ReadFn, WriteFn, DefaultFn]:
    nullable = in_range(version, f.nullable)
    if f.is_array:
        elem_read, elem_write, _ = _element_codec(f, version, flexible, runs=runs)
        fixed = None if f.is_struct or not runs else _FORMAT.get(f.element)
        read = _array_reader(elem_read, flexible, nullable, fixed)
        write = _array_writer(elem_write, flexible, nullable)
        if f.has_default and f.default is None:
            return read, write, lambda: None
        return read, write, list
    read, write, default = _element_codec(f, version, flexible, nullable, runs)
    if f.has_default:
        value = f.default
        if f.type == "uuid" and value is not None:
            value = uuid.UUID(value)
        return read, write, (lambda v=value: v)
    return read, write, default


def _element_codec(
    f: Field, version: int, flexible: bool, nullable: bool = False, runs: bool = True
) -> tuple[ReadFn, WriteFn, DefaultFn]:
    t = f.element
    if f.is_struct:
        codec = StructCodec(f.fields, version, flexible, runs=runs)
        if nullable and not f.is_array:
            return _nullable_struct(codec)
        return codec.read, codec.write, codec.defaults
    if t in _FIXED:
        method, zero = _FIXED[t]
        return _fixed_reader(method), _fixed_writer(method, t), (lambda z=zero: z)
    if t == "string":
        return _string_reader(flexible, nullable), _string_writer(flexible, nullable), str
    if t == "bytes":
        return _bytes_reader(flexible, nullable, False), _bytes_writer(flexible, nullable), bytes
    if t == "records":
        return _bytes_reader(flexible, True, True), _bytes_writer(flexible, True), lambda: None
    raise ValueError(f"unknown type {t!r} of field {f.name}")


def _nullable_struct(codec: StructCodec) -> tuple[ReadFn, WriteFn, DefaultFn]:
    """A nullable struct field (e.g. ConsumerGroupHeartbeatResponse.Assignment): an int8
    marker, -1 for null, 1 followed by the struct."""
    def read(r: Reader) -> dict[str, Any] | None:
        pos = r.pos
        marker = r.int8()
        if marker == -1:
            return None
        if marker != 1:
            raise DecodeError(f"nullable struct marker {marker} (expected -1 or 1)", pos)
        return codec.read(r)

    def write(w: Writer, v: Any) -> None:
        if v is None:
            w.int8(-1)
            return
        w.int8(1)
        codec.write(w, v)

    return read, write, lambda: None


def _fixed_reader(method: str) -> ReadFn:
    unbound = getattr(Reader, method)
    return unbound  # type: ignore[no-any-return]


def _fixed_writer(method: str, t: str) -> WriteFn:
    unbound = getattr(Writer, method)
    bounds = _RANGES.get(t)

    def write(w: Writer, v: Any) -> None:
        if v is None:
            raise EncodeError(f"{t} cannot be null")
        if bounds is not None:
            if not isinstance(v, int):
                raise EncodeError(f"{t} needs an int, got {type(v).__name__}")
            if not bounds[0] <= v <= bounds[1]:
                raise EncodeError(f"{v} out of range for {t}")
        elif t == "uuid" and not isinstance(v, uuid.UUID):
            raise EncodeError(f"uuid needs uuid.UUID, got {type(v).__name__}")
        unbound(w, v)

    return write


def _string_reader(flexible: bool, nullable: bool) -> ReadFn:
    def read(r: Reader) -> str | None:
        n = r.length(flexible, "string")
        if n < 0:
            if n == -1 and nullable:
                return None
            raise DecodeError(f"string length {n}" + ("" if nullable else " (not nullable)"),
                              r.pos)
        return r.text(n)

    return read


def _string_writer(flexible: bool, nullable: bool) -> WriteFn:
    def write(w: Writer, v: Any) -> None:
        if v is None:
            if not nullable:
                raise EncodeError("string is not nullable at this version")
            w.length(-1, flexible, "string")
            return
        if not isinstance(v, str):
            raise EncodeError(f"string needs str, got {type(v).__name__}")
        data = v.encode("utf-8")
        if not flexible and len(data) > 0x7FFF:
            raise EncodeError(f"string of {len(data)} bytes is longer than 32767")
        w.length(len(data), flexible, "string")
        w.raw(data)

    return write


def _bytes_reader(flexible: bool, nullable: bool, zero_copy: bool) -> ReadFn:
    def read(r: Reader) -> Any:
        n = r.length(flexible, "bytes")
        if n < 0:
            if n == -1 and nullable:
                return None
            raise DecodeError(f"bytes length {n}" + ("" if nullable else " (not nullable)"),
                              r.pos)
        view = r.raw(n)
        return view if zero_copy else bytes(view)

    return read


def _bytes_writer(flexible: bool, nullable: bool) -> WriteFn:
    def write(w: Writer, v: Any) -> None:
        if v is None:
            if not nullable:
                raise EncodeError("bytes are not nullable at this version")
            w.length(-1, flexible, "bytes")
            return
        if not isinstance(v, (bytes, bytearray, memoryview)):
            raise EncodeError(f"bytes needs a bytes-like object, got {type(v).__name__}")
        n = v.nbytes if isinstance(v, memoryview) else len(v)
        w.length(n, flexible, "bytes")
        w.raw(v)

    return write


def _array_reader(elem: ReadFn, flexible: bool, nullable: bool, fixed: str | None = None
                  ) -> ReadFn:
    """``fixed``: the struct format character of a fixed-width element type, whose arrays are
    read with one ``unpack_from`` when the frame holds them all."""
    width = 0 if fixed is None else struct.calcsize(">" + fixed)

    def read(r: Reader) -> list[Any] | None:
        pos = r.pos
        if flexible and pos < r.end and r.buf[pos] < 0x80:
            n = r.buf[pos] - 1            # a one-byte compact length: the usual case
            r.pos = pos + 1
        else:
            n = r.length(flexible, "array")
        if n < 0:
            if n == -1 and nullable:
                return None
            raise DecodeError(f"array length {n}" + ("" if nullable else " (not nullable)"),
                              r.pos)
        pos = r.pos
        left = r.end - pos
        if n > left:        # every element takes at least one byte: refuse, don't allocate
            raise DecodeError(f"array of {n} elements in {left} bytes", pos)
        if width and n * width <= left:
            r.pos = pos + n * width
            return list(struct.unpack_from(f">{n}{fixed}", r.buf, pos))
        # (a fixed-width array cut short: element by element, which names element and byte)
        out = []
        for i in range(n):
            try:
                out.append(elem(r))
            except DecodeError as e:
                e.path.append(f"[{i}]")
                raise
        return out

    return read


def _array_writer(elem: WriteFn, flexible: bool, nullable: bool) -> WriteFn:
    def write(w: Writer, v: Any) -> None:
        if v is None:
            if not nullable:
                raise EncodeError("array is not nullable at this version")
            w.length(-1, flexible, "array")
            return
        if isinstance(v, (str, bytes, dict, Mapping)):
            if type(v) is Encoded:      # the whole array, length prefix included
                w.raw(v)
                return
            raise EncodeError(f"array needs a sequence, got {type(v).__name__}")
        items = list(v)
        w.length(len(items), flexible, "array")
        for i, item in enumerate(items):
            try:
                elem(w, item)
            except EncodeError as e:
                e.path.append(f"[{i}]")
                raise

    return write


@cache
def compiled(message: Message, version: int) -> StructCodec:
    return StructCodec(message.fields, version, in_range(version, message.flexible))


@cache
def reference(message: Message, version: int) -> StructCodec:
    """The codec of ``message`` without runs: each field read and written on its own, the
    behaviour :func:`compiled`'s runs must give exactly (tests compare the two)."""
    return StructCodec(message.fields, version, in_range(version, message.flexible),
                       runs=False)


@cache
def struct_codec(message: Message, version: int, path: tuple[str, ...]) -> StructCodec:
    """The codec of the struct at ``path`` (body keys, e.g. ("topics", "partitions")) of
    ``message`` at ``version``: what it writes is the bytes an :class:`Encoded` stands for."""
    fields = message.fields
    for key in path:
        f = next(f for f in fields if f.key == key)
        if not f.is_struct:
            raise ValueError(f"{message.name}: {key} is not a struct")
        fields = f.fields
    return StructCodec(fields, version, in_range(version, message.flexible))


def encode_struct(codec: StructCodec, value: Mapping[str, Any]) -> Encoded:
    """``value`` encoded by ``codec`` (from :func:`struct_codec`), to be written again as is.
    A struct of ints only (a Fetch request's partition entry) is packed in one call when every
    value is an int that fits: the bytes :meth:`StructCodec.write` gives, which anything else
    goes through (for its errors too)."""
    packed = codec._packed
    if packed is not None and packed[3].issuperset(value):
        keys, pack, defaults, _ = packed
        values = [value.get(k, d) for k, d in zip(keys, defaults)]
        if {*map(type, values)} == _JUST_INT:
            try:
                return Encoded(pack(*values))
            except struct.error:
                pass
    w = Writer()
    try:
        codec.write(w, value)
    except EncodeError as e:       # as encode_body says it, for the connection to report
        raise KafkaProtocolError(f"Cannot encode {_where(e.path)}: {e.message}") from None
    except (ValueError, OverflowError) as e:
        raise KafkaProtocolError(f"Cannot encode: {e}") from None
    return Encoded(w.out)


def struct_packer(codec: StructCodec, names: tuple[str, ...]
                  ) -> Callable[..., Encoded | None] | None:
    """For an all-int struct whose fields are among ``names`` or keep their defaults: a
    function of the values of ``names``, positional in that order, giving the Encoded
    :func:`encode_struct` gives for ``dict(zip(names, values))``, or None when a value is not
    an int that fits (encode_struct then, for its bytes or its error). Without a dict per
    call: a Fetch request's changed partition entries, thousands a second. None when the
    struct is not all ints or ``names`` holds a key it does not (encode_struct's written way
    for every value)."""
    packed = codec._packed
    if packed is None:
        return None
    keys, pack, defaults, known = packed
    if not known.issuperset(names):
        return None
    at = {name: i for i, name in enumerate(names)}
    fixed: list[Any] = []
    order = []
    for key, default in zip(keys, defaults):
        if key in at:
            order.append(at[key])
        else:                                   # at its default: after the values given
            order.append(len(names) + len(fixed))
            fixed.append(default)
    if {*map(type, fixed)} - _JUST_INT:
        return None
    extra = tuple(fixed)
    pick = operator.itemgetter(*order)
    single = len(order) == 1

    def pack_values(*values: Any) -> Encoded | None:
        if len(values) != len(names) or {*map(type, values)} != _JUST_INT:
            return None
        picked = pick(values + extra)
        try:
            return Encoded(pack(picked) if single else pack(*picked))
        except struct.error:
            return None
    return pack_values


def encoded_array(entries: list[Encoded], flexible: bool) -> Encoded:
    """An array of already encoded structs, with its length prefix (compact when
    ``flexible``)."""
    w = Writer()
    w.length(len(entries), flexible, "array")
    return Encoded(bytes(w.out) + b"".join(entries))


def _where(path: list[str]) -> str:
    out = ""
    for part in reversed(path):
        out += part if part.startswith("[") or not out else "." + part
    return out or "<message>"


def decode_body(message: Message, version: int, r: Reader) -> dict[str, Any]:
    try:
        body = compiled(message, version).read(r)
    except DecodeError as e:
        raise KafkaProtocolError(
            f"Malformed {message.name} v{version}: {e.message} at field {_where(e.path)} "
            f"(byte {e.pos})"
        ) from None
    # Bytes after the body are ignored, as Kafka's own readers do: a broker that appends a
    # stray byte to a flexible response is still understood.
    return body


def encode_body(message: Message, version: int, body: Mapping[str, Any], w: Writer) -> None:
    try:
        compiled(message, version).write(w, body)
    except UnknownKeysError as e:
        where = f"in {_where(e.path)}" if e.path else "at the top level"
        them = "them" if len(e.unknown) > 1 else "it"
        raise KafkaProtocolError(
            f"Cannot encode {message.name} v{version}: {e.message} {where}; "
            f"no version of {message.name} has {them}"
        ) from None
    except EncodeError as e:
        raise KafkaProtocolError(
            f"Cannot encode {message.name} v{version}: {e.message} at field {_where(e.path)}"
        ) from None
    except (ValueError, OverflowError) as e:
        raise KafkaProtocolError(f"Cannot encode {message.name} v{version}: {e}") from None


def default_body(message: Message, version: int) -> dict[str, Any]:
    return compiled(message, version).defaults()
