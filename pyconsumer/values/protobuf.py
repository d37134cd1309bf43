"""Protobuf message schemas: descriptors in, Spark's types out, and the decoder's program.

One job: from a FileDescriptorSet (what ``protoc --include_imports --descriptor_set_out`` writes,
what Spark's ``from_protobuf`` takes) or the registry's .proto text, find a message, give its
Arrow type exactly as Spark's ``from_protobuf`` maps it (messages -> structs, repeated -> lists,
maps -> maps, enums -> strings or ints, Timestamp -> timestamp, Duration -> day-time interval,
recursion refused or cut at ``recursive.fields.max.depth``), and compile the tables the compiled
decoder (pyext/protobuf.pyx) interprets. The ``protobuf`` runtime reads descriptors only, never a
record.
"""
from __future__ import annotations

import base64
import os
import subprocess
import sys
import tempfile
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from pyconsumer._install import install_hint
from pyconsumer.errors import ConfigurationError, KafkaClientError

__all__ = [
    "ProtobufSchemaError", "ProtobufOptions", "Schema", "Program", "load_descriptor_set",
    "schema_from_file", "schema_from_registry_text", "message_by_indexes", "arrow_type",
    "compile_program",
]

# the output column kinds: the Avro decoder's, so both share one column builder
K_NULL, K_BOOL, K_I32, K_I64, K_F32, K_F64, K_BIN, K_DEC, K_STRUCT, K_LIST = range(10)

# field modes, targets and flags: mirrored in pyext/protobuf.pxd
M_SCALAR, M_MESSAGE, M_TIME, M_WRAP, M_MAP, M_SKIP, M_DUMMY = range(7)
T_I32, T_I64, T_F32, T_F64, T_BOOL, T_STR, T_BIN, T_DEC, T_ENUM_STR, T_ENUM_INT, T_U32_I64 = range(11)
F_REPEATED, F_PRESENCE, F_HAS_DEFAULT, F_CLOSED_ENUM, F_PACKABLE, F_REQUIRED = 1, 2, 4, 8, 16, 32
NODE_WORDS, FIELD_WORDS = 8, 16
NODE_MAP_ENTRY = 1
LUT_LIMIT = 2048

# descriptor types (FieldDescriptor.TYPE_*)
_DOUBLE, _FLOAT, _INT64, _UINT64, _INT32, _FIXED64, _FIXED32, _BOOL, _STRING, _GROUP, _MESSAGE, \
    _BYTES, _UINT32, _ENUM, _SFIXED32, _SFIXED64, _SINT32, _SINT64 = range(1, 19)

_TYPE_NAMES = {_DOUBLE: "double", _FLOAT: "float", _INT64: "int64", _UINT64: "uint64",
               _INT32: "int32", _FIXED64: "fixed64", _FIXED32: "fixed32", _BOOL: "bool",
               _STRING: "string", _GROUP: "group", _MESSAGE: "message", _BYTES: "bytes",
               _UINT32: "uint32", _ENUM: "enum", _SFIXED32: "sfixed32", _SFIXED64: "sfixed64",
               _SINT32: "sint32", _SINT64: "sint64"}
_WRAPPERS = {
    "google.protobuf.BoolValue", "google.protobuf.Int32Value", "google.protobuf.UInt32Value",
    "google.protobuf.Int64Value", "google.protobuf.UInt64Value", "google.protobuf.StringValue",
    "google.protobuf.BytesValue", "google.protobuf.FloatValue", "google.protobuf.DoubleValue",
}
_DUMMY_FIELD = "__dummy_field_in_empty_struct"


class ProtobufSchemaError(KafkaClientError, ValueError):
    """A descriptor set, message name or message index that cannot be used."""


@dataclass(frozen=True)
class ProtobufOptions:
    """Spark ``from_protobuf``'s options that change the type or the values (same names)."""

    enums_as_ints: bool = False               # enums.as.ints
    emit_default_values: bool = False         # emit.default.values
    upcast_unsigned_ints: bool = False        # upcast.unsigned.ints
    unwrap_wrappers: bool = False             # unwrap.primitive.wrapper.types
    recursive_max_depth: int = -1             # recursive.fields.max.depth
    retain_empty_messages: bool = False       # retain.empty.message.types


@dataclass(eq=False)
class Schema:
    """A descriptor pool and the files of one schema (the last is the schema's own file)."""

    pool: Any
    files: list[Any]
    text: str = ""

    def message(self, name: str) -> Any:
        """The message descriptor of ``name`` (full name, a leading dot allowed)."""
        name = name.lstrip(".")
        try:
            return self.pool.FindMessageTypeByName(name)
        except KeyError:
            pass
        known = sorted(m.full_name for f in self.files for m in _all_messages(f))
        raise ProtobufSchemaError(f"no message {name!r} in the schema (it has "
                                  f"{', '.join(known[:20]) or 'no messages'})")


def _all_messages(file: Any) -> list[Any]:
    out: list[Any] = []

    def visit(m: Any) -> None:
        out.append(m)
        for n in m.nested_types:
            visit(n)
    for m in file.message_types_by_name.values():
        visit(m)
    return out


def _runtime() -> Any:
    try:
        from google.protobuf import descriptor_pb2, descriptor_pool
    except ImportError:
        raise ConfigurationError(
            f"Protobuf values need the protobuf package: {install_hint('protobuf')}") from None
    return descriptor_pb2, descriptor_pool


def load_descriptor_set(data: bytes, what: str = "the descriptor set") -> Schema:
    """A Schema from a serialized FileDescriptorSet (every import included)."""
    descriptor_pb2, descriptor_pool = _runtime()
    fds = descriptor_pb2.FileDescriptorSet()
    try:
        fds.ParseFromString(data)
    except Exception as e:
        raise ProtobufSchemaError(f"{what} is not a FileDescriptorSet: {e}") from None
    if not fds.file:
        raise ProtobufSchemaError(f"{what} holds no file")
    pool = descriptor_pool.DescriptorPool()
    files = []
    try:
        for fp in _in_dependency_order(list(fds.file), what):
            files.append(pool.Add(fp) and pool.FindFileByName(fp.name))
    except ProtobufSchemaError:
        raise
    except Exception as e:
        raise ProtobufSchemaError(f"{what} does not build: {e}") from None
    return Schema(pool, files)


def _in_dependency_order(files: list[Any], what: str) -> list[Any]:
    by_name = {f.name: f for f in files}
    done: dict[str, bool] = {}
    out: list[Any] = []

    def visit(f: Any) -> None:
        state = done.get(f.name)
        if state:
            return
        if state is False:
            raise ProtobufSchemaError(f"{what}: import cycle through {f.name}")
        done[f.name] = False
        for dep in f.dependency:
            if dep not in by_name and dep.startswith("google/protobuf/"):
                known = _well_known(dep)          # registries leave these out (skip.known.types)
                if known is not None:
                    by_name[dep] = known
            if dep not in by_name:
                raise ProtobufSchemaError(f"{what}: {f.name} imports {dep}, which it does not hold "
                                          "(write it with protoc --include_imports)")
            visit(by_name[dep])
        done[f.name] = True
        out.append(f)
    for f in files:
        visit(f)
    return out


def _well_known(name: str) -> Any:
    """The FileDescriptorProto of a well-known type's file the protobuf runtime ships."""
    import importlib
    descriptor_pb2, _ = _runtime()
    module = "google.protobuf." + name[len("google/protobuf/"):-len(".proto")].replace("/", ".") + "_pb2"
    try:
        file = importlib.import_module(module).DESCRIPTOR
    except ImportError:
        return None
    fp = descriptor_pb2.FileDescriptorProto()
    file.CopyToProto(fp)
    return fp


def schema_from_file(path: str) -> Schema:
    """A Schema from a descriptor set file (``protoc --include_imports --descriptor_set_out``)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as e:
        raise ProtobufSchemaError(f"cannot read the descriptor file {path}: {e.strerror}") from None
    return load_descriptor_set(data, f"the descriptor file {path}")


def schema_from_registry_text(text: str, references: Sequence[tuple[str, str]], what: str) -> Schema:
    """A Schema from the registry's answer: .proto text (compiled by grpcio-tools' protoc with
    the references as files under their names, a dependency first) or a base64
    FileDescriptorProto (what confluent-kafka's ProtobufSerializer registers, and the
    ``format=serialized`` answer), the references likewise."""
    descriptor_pb2, _ = _runtime()
    main = _serialized(text)
    if main is None:
        return _compile_proto(text, references, what)
    fds = descriptor_pb2.FileDescriptorSet()
    seen: set[str] = set()
    for k, (name, body) in enumerate(references):
        fp = _serialized(body)
        if fp is None:
            # a reference given as text: compiled with the ones before it
            compiled = _compile_proto(body, references[:k], f"{what}'s reference {name}")
            protos = [descriptor_pb2.FileDescriptorProto.FromString(_file_proto(f))
                      for f in compiled.files]
            protos[-1].name = name
        else:
            protos = [fp]
        for p in protos:
            if p.name not in seen:
                seen.add(p.name)
                fds.file.add().CopyFrom(p)
    if main.name in seen:
        raise ProtobufSchemaError(f"{what}: file {main.name} is also one of its references")
    fds.file.add().CopyFrom(main)
    return load_descriptor_set(fds.SerializeToString(), what)


def _serialized(text: str) -> Any:
    """A base64 FileDescriptorProto's message, or None when the text is not one."""
    descriptor_pb2, _ = _runtime()
    stripped = text.strip()
    if not stripped or _looks_like_proto(stripped):
        return None
    try:
        fp = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(stripped, validate=True))
    except Exception:
        return None
    return fp if fp.name else None


def _looks_like_proto(text: str) -> bool:
    # base64 has no spaces or semicolons; .proto text has one of these
    return any(w in text for w in (" ", ";", "\n", "{"))


def _file_proto(f: Any) -> bytes:
    descriptor_pb2, _ = _runtime()
    fp = descriptor_pb2.FileDescriptorProto()
    f.CopyToProto(fp)
    return bytes(fp.SerializeToString())


def _compile_proto(text: str, references: Sequence[tuple[str, str]], what: str) -> Schema:
    try:
        import grpc_tools
    except ImportError:
        raise ConfigurationError(
            f"{what} is .proto text: compiling it needs grpcio-tools: "
            f"{install_hint('protobuf')}") from None
    includes = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    with tempfile.TemporaryDirectory(prefix="pyconsumer-proto-") as tmp:
        names = []
        for name, body in (*references, ("__schema__.proto", text)):
            if name.startswith("google/protobuf/") and os.path.exists(os.path.join(includes, name)):
                continue                  # a well-known type: protoc's own copy
            if os.path.isabs(name) or ".." in name.split("/"):
                raise ProtobufSchemaError(f"{what}: reference name {name!r} is not a relative path")
            target = os.path.join(tmp, name)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "w", encoding="utf-8") as fh:
                fh.write(body)
            names.append(name)
        out = os.path.join(tmp, "__set__.pb")
        # protoc in a child process: its errors go to stderr, and a crash stays there
        proc = subprocess.run(
            [sys.executable, "-m", "grpc_tools.protoc", f"-I{tmp}", f"-I{includes}",
             "--include_imports", f"--descriptor_set_out={out}", "__schema__.proto"],
            capture_output=True, text=True, cwd=tmp, check=False)
        if proc.returncode != 0:
            detail = (proc.stderr or proc.stdout).strip().replace(tmp + os.sep, "")
            raise ProtobufSchemaError(f"{what} does not compile: {detail}")
        with open(out, "rb") as fh:
            data = fh.read()
    schema = load_descriptor_set(data, what)
    schema.text = text
    return schema


def message_by_indexes(schema: Schema, indexes: Sequence[int]) -> Any:
    """The message a Confluent message-index array names in the schema's own file (the last):
    ``message_type[i0].nested_type[i1]...``; ``[]`` is ``[0]``."""
    path = list(indexes) or [0]
    file = schema.files[-1]
    level = list(file.message_types_by_name.values())
    msg: Any = None
    for depth, i in enumerate(path):
        if not 0 <= i < len(level):
            where = file.name if depth == 0 else msg.full_name
            raise ProtobufSchemaError(f"message index {path} names no message: {where} has "
                                      f"{len(level)} message(s) at level {depth}, index {i}")
        msg = level[i]
        level = list(msg.nested_types)
    return msg


# --------------------------------------------------------------------------- Arrow types

@dataclass
class Column:
    """One output column (an Arrow node) of a program; children by column index."""

    kind: int
    type: pa.DataType
    children: list[int] = field(default_factory=list)
    width: int = 0


_WIDTH = {K_I32: 4, K_I64: 8, K_F32: 4, K_F64: 8, K_DEC: 16}


def _is_time(m: Any, name: str) -> bool:
    fs = list(m.fields)
    return m.name == name and len(fs) == 2 and fs[0].name == "seconds" and fs[1].name == "nanos"


def _scalar(fd: Any, opts: ProtobufOptions) -> tuple[int, pa.DataType, int]:
    t = fd.type
    if t in (_INT32, _SINT32, _SFIXED32):
        return K_I32, pa.int32(), T_I32
    if t in (_UINT32, _FIXED32):
        return (K_I64, pa.int64(), T_U32_I64) if opts.upcast_unsigned_ints else (K_I32, pa.int32(), T_I32)
    if t in (_INT64, _SINT64, _SFIXED64):
        return K_I64, pa.int64(), T_I64
    if t in (_UINT64, _FIXED64):
        return (K_DEC, pa.decimal128(20, 0), T_DEC) if opts.upcast_unsigned_ints else (K_I64, pa.int64(), T_I64)
    if t == _FLOAT:
        return K_F32, pa.float32(), T_F32
    if t == _DOUBLE:
        return K_F64, pa.float64(), T_F64
    if t == _BOOL:
        return K_BOOL, pa.bool_(), T_BOOL
    if t == _STRING:
        return K_BIN, pa.string(), T_STR
    if t == _BYTES:
        return K_BIN, pa.binary(), T_BIN
    if t == _ENUM:
        return (K_I32, pa.int32(), T_ENUM_INT) if opts.enums_as_ints else (K_BIN, pa.string(), T_ENUM_STR)
    raise ProtobufSchemaError(f"field {fd.full_name}: type {t} has no Spark type")


@dataclass
class _Field:
    fd: Any
    name: str
    mode: int
    target: int = 0
    kind: int = 0
    type: pa.DataType = pa.null()
    sub: _Node | None = None
    inner: Any = None             # M_WRAP: the wrapper's value field


@dataclass
class _Node:
    desc: Any
    fields: list[_Field]
    map_entry: bool = False
    col: int = -1
    index: int = -1

    def arrow(self) -> pa.DataType:
        return pa.struct([pa.field(f.name, f.type, nullable=not f.fd.is_required
                                   if f.mode != M_DUMMY else True) for f in self.fields
                          if f.mode != M_SKIP])


class _Mapper:
    """Spark's SchemaConverters over the descriptors: the tree of nodes, recursion unrolled."""

    def __init__(self, opts: ProtobufOptions) -> None:
        self.opts = opts

    def node(self, desc: Any, seen: dict[str, int], map_entry: bool = False) -> _Node:
        fields = [f for f in (self.field(fd, seen) for fd in desc.fields)]
        n = _Node(desc, fields, map_entry)
        if not any(f.mode != M_SKIP for f in fields) and self.opts.retain_empty_messages:
            n.fields.append(_Field(None, _DUMMY_FIELD, M_DUMMY, T_STR, K_BIN, pa.string()))
        return n

    def field(self, fd: Any, seen: dict[str, int]) -> _Field:
        opts = self.opts
        if fd.type not in (_MESSAGE, _GROUP):     # a proto2 group is a message, as in Java
            kind, t, target = _scalar(fd, opts)
            f = _Field(fd, fd.name, M_SCALAR, target, kind, t)
        else:
            m = fd.message_type
            if _is_time(m, "Duration"):
                f = _Field(fd, fd.name, M_TIME, T_I64, K_I64, pa.duration("us"))
            elif _is_time(m, "Timestamp"):
                f = _Field(fd, fd.name, M_TIME, T_I64, K_I64, pa.timestamp("us", tz="UTC"))
            elif m.full_name in _WRAPPERS and opts.unwrap_wrappers:
                inner = m.fields[0]
                kind, t, target = _scalar(inner, opts)
                f = _Field(fd, fd.name, M_WRAP, target, kind, t, inner=inner)
            elif fd.is_repeated and m.GetOptions().map_entry:
                entry = self.node(m, seen, map_entry=True)
                key, value = entry.fields[0], entry.fields[1]
                if key.mode == M_SKIP or value.mode == M_SKIP:
                    return _Field(fd, fd.name, M_SKIP)
                mt = pa.map_(pa.field("key", key.type, nullable=False),
                             pa.field("value", value.type, nullable=False))
                return _Field(fd, fd.name, M_MAP, 0, K_LIST, mt, sub=entry)
            else:
                name = m.full_name
                depth = seen.get(name, 0)
                limit = opts.recursive_max_depth
                if name in seen and (limit <= 0 or limit > 10):
                    raise ProtobufSchemaError(
                        f"found recursive reference in Protobuf schema, which can not be processed "
                        f"by Spark by default: {fd.full_name} (set recursive.fields.max.depth to 1..10 "
                        "to cut it)")
                if name in seen and depth >= limit:
                    return _Field(fd, fd.name, M_SKIP)
                sub = self.node(m, {**seen, name: depth + 1})
                if not any(f.mode != M_SKIP for f in sub.fields):
                    return _Field(fd, fd.name, M_SKIP)    # Spark drops a field left empty
                f = _Field(fd, fd.name, M_MESSAGE, 0, K_STRUCT, sub.arrow(), sub=sub)
        if fd.is_repeated:
            f.type = pa.list_(pa.field("element", f.type, nullable=False))
        return f


def _root(desc: Any, opts: ProtobufOptions) -> _Node:
    return _Mapper(opts).node(desc, {desc.full_name: 1})


def arrow_type(desc: Any, opts: ProtobufOptions | None = None) -> pa.DataType:
    """The Arrow type of a message as Spark's ``from_protobuf`` gives it (a struct)."""
    return _root(desc, opts or ProtobufOptions()).arrow()


# --------------------------------------------------------------------------- the program

@dataclass(eq=False)
class Program:
    """The decoder's tables of one (message, options): nodes, fields, aux, blob, columns."""

    message: str
    nodes: array[int]
    fields: array[int]
    aux: array[int]
    blob: bytes
    columns: list[Column]
    names: list[str]
    arrow_type: pa.DataType
    cache: dict[str, Any] = field(default_factory=dict)

    @property
    def layout(self) -> tuple[tuple[int, int], ...]:
        return tuple((c.kind, c.children[0] if c.kind == K_LIST else -1) for c in self.columns)


def _wire_type(t: int) -> int:
    """The wire type a value of descriptor type t has outside a packed run."""
    if t in (_DOUBLE, _FIXED64, _SFIXED64):
        return 1
    if t in (_FLOAT, _FIXED32, _SFIXED32):
        return 5
    if t in (_STRING, _BYTES, _MESSAGE):
        return 2
    return 3 if t == _GROUP else 0


def _wire_default(fd: Any, target: int) -> int:
    """A scalar default as the int64 the decoder writes (float bits for floats)."""
    import struct
    v = fd.default_value
    if target == T_F32:
        return int.from_bytes(struct.pack("<f", v), "little")
    if target == T_F64:
        return int.from_bytes(struct.pack("<d", v), "little", signed=True)
    if target in (T_ENUM_STR, T_ENUM_INT):
        return int(v)
    if target == T_BOOL:
        return int(bool(v))
    v = int(v)
    return v - (1 << 64) if v >= (1 << 63) else v


class _Compiler:
    def __init__(self, opts: ProtobufOptions) -> None:
        self.opts = opts
        self.cols: list[Column] = []
        self.nodes: list[_Node] = []
        self.node_words: list[int] = []
        self.field_words: list[int] = []
        self.aux: list[int] = []
        self.blob = bytearray()
        self.names: list[str] = []

    def col(self, kind: int, t: pa.DataType) -> int:
        self.cols.append(Column(kind, t, [], _WIDTH.get(kind, 0)))
        return len(self.cols) - 1

    def text(self, s: str | bytes) -> tuple[int, int]:
        b = s.encode() if isinstance(s, str) else s
        at = len(self.blob)
        self.blob += b
        return at, len(b)

    def assign(self, node: _Node, col: int | None = None) -> None:
        """Columns in pre-order: the node's struct, then each field's."""
        node.col = self.col(K_STRUCT, node.arrow()) if col is None else col
        node.index = len(self.nodes)
        self.nodes.append(node)
        for f in node.fields:
            if f.mode == M_SKIP:
                continue
            fcol = self.col(K_LIST if f.fd is not None and f.fd.is_repeated or f.mode == M_MAP
                            else f.kind, f.type)
            self.cols[node.col].children.append(fcol)
            f_item = fcol
            if f.mode == M_MAP:
                assert f.sub is not None
                entries = self.col(K_STRUCT, f.sub.arrow())
                self.cols[fcol].children.append(entries)
                self.assign(f.sub, entries)
                f.col = fcol                              # type: ignore[attr-defined]
                continue
            if f.fd is not None and f.fd.is_repeated:
                f_item = self.col(f.kind, f.type.value_type)
                self.cols[fcol].children.append(f_item)
            if f.mode == M_MESSAGE:
                assert f.sub is not None
                self.assign(f.sub, f_item)
            f.col = fcol                                  # type: ignore[attr-defined]

    def emit(self) -> None:
        for node in self.nodes:
            start = len(self.field_words) // FIELD_WORDS
            real = [f for f in node.fields if f.fd is not None]
            oneofs: dict[str, int] = {}
            for f in node.fields:
                self.field_words += self.field_row(node, f, oneofs)
            nums = [f.fd.number for f in real]
            lut_len = min(max(nums, default=0) + 1, LUT_LIMIT)
            lut_start = len(self.aux)
            lut = [-1] * lut_len
            for i, f in enumerate(node.fields):
                if f.fd is not None and f.fd.number < lut_len:
                    lut[f.fd.number] = i
            self.aux += lut
            self.node_words += [node.col, start, len(node.fields), lut_start, lut_len, len(oneofs),
                                NODE_MAP_ENTRY if node.map_entry else 0, 0]

    def field_row(self, node: _Node, f: _Field, oneofs: dict[str, int]) -> list[int]:
        self.names.append(f"{node.desc.full_name}.{f.name}" if f.fd is None else
                          f"{f.fd.full_name} (number {f.fd.number}, {_TYPE_NAMES[f.fd.type]})")
        if f.mode == M_DUMMY:
            return [0, _STRING, M_DUMMY, getattr(f, "col", -1), -1, T_STR, 0, -1] + [0] * 8
        fd = f.fd
        value_fd = f.inner if f.mode == M_WRAP else fd
        flags = 0
        if fd.is_repeated:
            flags |= F_REPEATED
        if fd.has_presence and not fd.is_repeated:
            flags |= F_PRESENCE
        if fd.is_required:
            flags |= F_REQUIRED
        if value_fd.type not in (_STRING, _BYTES, _MESSAGE, _GROUP):
            flags |= F_PACKABLE
        enum_start = enum_count = 0
        unk_at = unk_len = 0
        if value_fd.type == _ENUM:
            et = value_fd.enum_type
            if getattr(et, "is_closed", False):
                flags |= F_CLOSED_ENUM
            enum_start = len(self.aux)
            values = sorted({v.number: v.name for v in reversed(et.values)}.items())
            for number, name in values:
                at, n = self.text(name)
                self.aux += [number, at, n]
            enum_count = len(values)
            unk_at, unk_len = self.text(f"UNKNOWN_ENUM_VALUE_{et.name}_")
        default = dlen = 0
        if f.mode in (M_SCALAR, M_WRAP) and not value_fd.is_repeated:
            if value_fd.type in (_STRING, _BYTES):
                dv = value_fd.default_value
                default, dlen = self.text(dv.encode() if isinstance(dv, str) else dv)
            else:
                default = _wire_default(value_fd, f.target)
            if f.mode == M_SCALAR and fd.has_default_value and not fd.is_repeated:
                flags |= F_HAS_DEFAULT
        oneof = -1
        group = fd.containing_oneof
        if group is not None and not getattr(group, "is_synthetic", False):
            oneof = oneofs.setdefault(group.name, len(oneofs))
        col = getattr(f, "col", -1) if f.mode != M_SKIP else -1
        sub = f.sub.index if f.sub is not None else -1
        return [fd.number, value_fd.type, f.mode, col, sub, f.target, flags, oneof, enum_start,
                enum_count, default, dlen, unk_at, unk_len, _wire_type(fd.type), 0]

    def nulls_of(self, c: int) -> list[int]:
        """A column and, for a struct, its children's (they stay aligned with it)."""
        out = [c]
        if self.cols[c].kind == K_STRUCT:
            for ch in self.cols[c].children:
                out += self.nulls_of(ch)
        return out

    def null_lists(self) -> list[int]:
        lists = [self.nulls_of(k) for k in range(len(self.cols))]
        head: list[int] = []
        body: list[int] = []
        base = 2 * len(lists)
        for lst in lists:
            head += [base + len(body), len(lst)]
            body += lst
        return head + body


def compile_program(desc: Any, opts: ProtobufOptions | None = None) -> Program:
    """The decoder's program of message ``desc`` (a message descriptor)."""
    opts = opts or ProtobufOptions()
    root = _root(desc, opts)
    c = _Compiler(opts)
    c.assign(root)
    nulls = c.null_lists()
    c.aux = nulls                  # null lists open aux, as the shared column builder reads them
    c.emit()
    return Program(desc.full_name, array("q", c.node_words), array("q", c.field_words),
                   array("q", c.aux), bytes(c.blob), c.cols, c.names, root.arrow())
