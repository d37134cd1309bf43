"""The independent side of the Protobuf decoder tests: descriptors built with descriptor_pb2,
messages made and parsed by the ``protobuf`` runtime, and Spark ``from_protobuf``'s rules
(ProtobufDeserializer.getFieldValue: repeated always, present fields, proto2 defaults, and
with ``emit.default.values`` the defaults of implicit-presence scalars) applied to the
runtime's parse, written here on their own from Spark's documented behaviour."""
from __future__ import annotations

import datetime
import decimal
import struct
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.descriptor import FieldDescriptor as FD

from pyconsumer.values.protobuf import ProtobufOptions, Schema

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


def pool_of(*files: descriptor_pb2.FileDescriptorProto) -> Schema:
    """A Schema over FileDescriptorProtos (a dependency first)."""
    pool = descriptor_pool.DescriptorPool()
    out = []
    for fp in files:
        pool.Add(fp)
        out.append(pool.FindFileByName(fp.name))
    return Schema(pool, out)


def descriptor_set(*files: descriptor_pb2.FileDescriptorProto) -> bytes:
    fds = descriptor_pb2.FileDescriptorSet()
    for fp in files:
        fds.file.add().CopyFrom(fp)
    return fds.SerializeToString()


def message_class(desc: Any) -> Any:
    return message_factory.GetMessageClass(desc)


def _is_time(m: Any, name: str) -> bool:
    return m.name == name and [f.name for f in m.fields] == ["seconds", "nanos"]


def _f32(v: float) -> float:
    return struct.unpack("<f", struct.pack("<f", v))[0]


def _scalar(fd: Any, v: Any, opts: ProtobufOptions) -> Any:
    t = fd.type
    if t == FD.TYPE_ENUM:
        if opts.enums_as_ints:
            return int(v)
        ev = fd.enum_type.values_by_number.get(int(v))
        return ev.name if ev is not None else f"UNKNOWN_ENUM_VALUE_{fd.enum_type.name}_{int(v)}"
    if t in (FD.TYPE_UINT32, FD.TYPE_FIXED32):
        return v if opts.upcast_unsigned_ints else (v - (1 << 32) if v >= (1 << 31) else v)
    if t in (FD.TYPE_UINT64, FD.TYPE_FIXED64):
        if opts.upcast_unsigned_ints:
            return decimal.Decimal(v)
        return v - (1 << 64) if v >= (1 << 63) else v
    if t == FD.TYPE_FLOAT:
        return _f32(v)
    return v


def _time(msg: Any, duration: bool) -> Any:
    us = msg.seconds * 1_000_000 + int(msg.nanos / 1000)
    if duration:
        return datetime.timedelta(microseconds=us)
    return _EPOCH + datetime.timedelta(microseconds=us)


def expected(msg: Any, opts: ProtobufOptions | None = None, entry: bool = False) -> dict[str, Any]:
    """Spark's row for a parsed message (fields cut by recursion are not handled here)."""
    opts = opts or ProtobufOptions()
    desc = msg.DESCRIPTOR
    out: dict[str, Any] = {}
    listed = {f.number for f, _ in msg.ListFields()}
    for fd in desc.fields:
        value = getattr(msg, fd.name)
        m = fd.message_type
        if fd.is_repeated and m is not None and m.GetOptions().map_entry:
            kf, vf = m.fields_by_name["key"], m.fields_by_name["value"]
            out[fd.name] = sorted(((_value(kf, k, opts, True), _value(vf, value[k], opts, True))
                                   for k in value), key=lambda kv: kv[0])
            continue
        if fd.is_repeated:
            out[fd.name] = [_value(fd, v, opts, True) for v in value]
            continue
        present = (msg.HasField(fd.name) if fd.has_presence else fd.number in listed)
        if present or entry:
            out[fd.name] = _value(fd, value, opts, entry or fd.has_presence)
        elif fd.has_default_value or (opts.emit_default_values and not fd.has_presence):
            out[fd.name] = _value(fd, value, opts, True)
        else:
            out[fd.name] = None
    return out


def _value(fd: Any, v: Any, opts: ProtobufOptions, keep_default: bool) -> Any:
    m = fd.message_type
    if m is None:
        return _scalar(fd, v, opts)
    if _is_time(m, "Timestamp"):
        return _time(v, False)
    if _is_time(m, "Duration"):
        return _time(v, True)
    return expected(v, opts)
