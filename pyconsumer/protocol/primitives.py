"""Kafka's primitive wire types: a bounds-checked reader and an appending writer.

Every read from the wire goes through :class:`Reader`; running past the end, a negative or
oversized length, or invalid UTF-8 raises :class:`DecodeError` (turned into
:class:`pyconsumer.errors.KafkaProtocolError` with the message, version and field by the codec).
Lengths are checked against the bytes that remain before anything is allocated.
"""
from __future__ import annotations

import struct
import uuid

Buffer = bytes | bytearray | memoryview

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_F64 = struct.Struct(">d")

ZERO_UUID = uuid.UUID(int=0)


class DecodeError(Exception):
    """Malformed bytes; ``path`` is filled in as the error travels out through the fields."""

    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos
        self.path: list[str] = []


class Reader:
    """A cursor over one frame. ``data`` stays referenced: byte slices are zero-copy views."""

    __slots__ = ("buf", "pos", "end")

    def __init__(self, data: Buffer, pos: int = 0) -> None:
        view = data if isinstance(data, memoryview) else memoryview(data)
        if view.format != "B" or view.ndim != 1:
            view = view.cast("B")
        self.buf = view
        self.pos = pos
        self.end = len(view)

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def _need(self, n: int, what: str) -> int:
        pos = self.pos
        if n < 0 or self.end - pos < n:
            raise DecodeError(f"{what} needs {n} bytes, {self.end - pos} left", pos)
        self.pos = pos + n
        return pos

    def int8(self) -> int:
        value: int = _I8.unpack_from(self.buf, self._need(1, "int8"))[0]
        return value

    def int16(self) -> int:
        value: int = _I16.unpack_from(self.buf, self._need(2, "int16"))[0]
        return value

    def uint16(self) -> int:
        value: int = _U16.unpack_from(self.buf, self._need(2, "uint16"))[0]
        return value

    def int32(self) -> int:
        value: int = _I32.unpack_from(self.buf, self._need(4, "int32"))[0]
        return value

    def uint32(self) -> int:
        value: int = _U32.unpack_from(self.buf, self._need(4, "uint32"))[0]
        return value

    def int64(self) -> int:
        value: int = _I64.unpack_from(self.buf, self._need(8, "int64"))[0]
        return value

    def float64(self) -> float:
        value: float = _F64.unpack_from(self.buf, self._need(8, "float64"))[0]
        return value

    def boolean(self) -> bool:
        return self.buf[self._need(1, "boolean")] != 0

    def uuid(self) -> uuid.UUID:
        at = self._need(16, "uuid")
        return uuid.UUID(bytes=bytes(self.buf[at:at + 16]))

    def unsigned_varint(self) -> int:
        """Up to 5 bytes (32 bits), as Kafka's ByteUtils.readUnsignedVarint."""
        buf, pos, end = self.buf, self.pos, self.end
        value = shift = 0
        while True:
            if pos >= end:
                raise DecodeError("unsigned varint runs past the end", self.pos)
            b = buf[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
            if shift > 28:
                raise DecodeError("unsigned varint longer than 5 bytes", self.pos)
        self.pos = pos
        return value

    def varint(self) -> int:
        v = self.unsigned_varint()
        return (v >> 1) ^ -(v & 1)

    def varlong(self) -> int:
        buf, pos, end = self.buf, self.pos, self.end
        value = shift = 0
        while True:
            if pos >= end:
                raise DecodeError("varlong runs past the end", self.pos)
            b = buf[pos]
            pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
            if shift > 63:
                raise DecodeError("varlong longer than 10 bytes", self.pos)
        self.pos = pos
        return (value >> 1) ^ -(value & 1)

    def raw(self, n: int, what: str = "bytes") -> memoryview:
        at = self._need(n, what)
        return self.buf[at:at + n]

    def text(self, n: int) -> str:
        at = self._need(n, "string")
        try:
            return str(self.buf[at:at + n], "utf-8")
        except UnicodeDecodeError as e:
            raise DecodeError(f"string is not valid UTF-8 ({e.reason})", at) from None

    def length(self, compact: bool, what: str) -> int:
        """A length prefix: -1 for null; compact ones are unsigned varint n+1 (0 = null)."""
        if compact:
            return self.unsigned_varint() - 1
        return self.int16() if what == "string" else self.int32()


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


class Writer:
    """Appends encoded primitives to one bytearray."""

    __slots__ = ("out",)

    def __init__(self) -> None:
        self.out = bytearray()

    def int8(self, v: int) -> None:
        self.out += _I8.pack(v)

    def int16(self, v: int) -> None:
        self.out += _I16.pack(v)

    def uint16(self, v: int) -> None:
        self.out += _U16.pack(v)

    def int32(self, v: int) -> None:
        self.out += _I32.pack(v)

    def uint32(self, v: int) -> None:
        self.out += _U32.pack(v)

    def int64(self, v: int) -> None:
        self.out += _I64.pack(v)

    def float64(self, v: float) -> None:
        self.out += _F64.pack(v)

    def boolean(self, v: bool) -> None:
        self.out.append(1 if v else 0)

    def uuid(self, v: uuid.UUID) -> None:
        self.out += v.bytes

    def unsigned_varint(self, v: int) -> None:
        if v < 0 or v > 0xFFFFFFFF:
            raise ValueError(f"unsigned varint out of range: {v}")
        self.out += _uvarint(v)

    def varint(self, v: int) -> None:
        if not -(1 << 31) <= v < (1 << 31):
            raise ValueError(f"varint out of range: {v}")
        self.out += _uvarint(((v << 1) ^ (v >> 31)) & 0xFFFFFFFF)

    def varlong(self, v: int) -> None:
        if not -(1 << 63) <= v < (1 << 63):
            raise ValueError(f"varlong out of range: {v}")
        self.out += _uvarint(((v << 1) ^ (v >> 63)) & 0xFFFFFFFFFFFFFFFF)

    def length(self, n: int, compact: bool, what: str) -> None:
        if compact:
            self.unsigned_varint(n + 1)
        elif what == "string":
            self.int16(n)
        else:
            self.int32(n)

    def raw(self, data: Buffer) -> None:
        self.out += data


def encode_unsigned_varint(value: int) -> bytes:
    w = Writer()
    w.unsigned_varint(value)
    return bytes(w.out)


def encode_varint(value: int) -> bytes:
    w = Writer()
    w.varint(value)
    return bytes(w.out)


def encode_varlong(value: int) -> bytes:
    w = Writer()
    w.varlong(value)
    return bytes(w.out)
