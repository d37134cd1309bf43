"""Avro values (Confluent-framed or not) decoded into one typed Arrow array.

One job: run compiled Avro programs (:mod:`pyconsumer.values.avro`) over a column of values
in the compiled decoder (``avro_decode`` of pyconsumer._records, pyext/avro.pyx) and give a
:class:`~pyconsumer.values.result.Decoded`. Framing: ``"confluent"`` reads each value's
prefix (0x00 + 4-byte big-endian schema id, or 0x01 + 16-byte GUID) and asks a
:class:`SchemaSource` for the program of each id seen; ``"none"`` runs one writer schema
for every value; per-row ids (the ``__value_schema_id`` header) replace the prefix of the
rows that have one. Every writer decodes into the one reader schema.

A bad row (short header, bad magic byte, unknown id, bad varint, truncated value, trailing
bytes, union index out of range, invalid UTF-8, ...) is null with its reason in
``errors``; a null value (a tombstone) is null and no error. An unknown id is a row error
only when the source raises :class:`UnknownSchemaError`; anything else it raises (a registry
that is down) propagates: an outage is not bad data.
"""
from __future__ import annotations

import functools
import uuid
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import ModuleType
from typing import Any, Literal, Protocol, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

from pyconsumer import errors
from pyconsumer import records
from pyconsumer.errors import KafkaClientError
from pyconsumer.values.avro import (
    K_BOOL, K_LIST, K_NULL, K_STRUCT, Array, AvroSchemaError, Enum, Fixed, Map, Primitive,
    Program, Record, Schema, UnionSchema, compile_decoder, parse_schema,
)
from pyconsumer.values.result import Decoded

__all__ = [
    "SchemaId", "SchemaSource", "UnknownSchemaError", "WriterSchemas", "decode_avro",
    "schema_id_from_header", "set_error_classes",
]

#: a Confluent schema id, or a schema GUID (the 0x01 framing)
SchemaId: TypeAlias = int | uuid.UUID


_SCHEMA_TYPES = (Primitive, Record, Enum, Fixed, Array, Map, UnionSchema)


class UnknownSchemaError(KafkaClientError, LookupError):
    """The source has no schema under this id: the rows that name it are bad rows."""


class SchemaSource(Protocol):
    """Where the programs of writer schema ids come from (a registry client, or a fixed map).

    ``program_for`` returns the program of that writer schema against the reader schema of
    the decode (:func:`~pyconsumer.values.avro.compile_decoder`), raising
    :class:`UnknownSchemaError` for an id it does not know; any other error (the registry
    cannot be reached) propagates out of :func:`decode_avro`."""

    def program_for(self, schema_id: SchemaId) -> Program: ...


class WriterSchemas:
    """A SchemaSource over writer schemas: a mapping by id or GUID, or a function that
    fetches one (a registry client); each compiled against the one reader schema on first
    use and kept. A function raises UnknownSchemaError for an id it does not know, or one of
    ``not_found`` (a registry's "not found" error), which counts the same; anything else it
    raises (the registry is down) propagates."""

    def __init__(self, writers: Mapping[SchemaId, Schema | str | dict[str, Any]]
                 | Callable[[SchemaId], Schema | str | dict[str, Any]],
                 reader: Schema | str | dict[str, Any], *,
                 not_found: tuple[type[BaseException], ...] = ()) -> None:
        self.reader = reader if isinstance(reader, _SCHEMA_TYPES) else parse_schema(reader)
        self._writers = writers
        self._not_found = not_found
        self._programs: dict[SchemaId, Program] = {}

    def program_for(self, schema_id: SchemaId) -> Program:
        prog = self._programs.get(schema_id)
        if prog is None:
            writer = self._writer(schema_id)
            w = writer if isinstance(writer, _SCHEMA_TYPES) else parse_schema(writer)
            prog = self._programs[schema_id] = compile_decoder(w, self.reader)
        return prog

    def _writer(self, schema_id: SchemaId) -> Schema | str | dict[str, Any]:
        if callable(self._writers):
            try:
                return self._writers(schema_id)
            except UnknownSchemaError:
                raise
            except self._not_found as e:
                raise UnknownSchemaError(f"{_unknown(schema_id)} ({e})") from e
        writer = self._writers.get(schema_id)
        if writer is None:
            raise UnknownSchemaError(_unknown(schema_id))
        return writer


def _name(schema_id: SchemaId) -> str:
    if isinstance(schema_id, uuid.UUID):
        return f"schema GUID {schema_id}"
    return f"schema id {schema_id}"


def _unknown(schema_id: SchemaId) -> str:
    return f"unknown {_name(schema_id)}"


def schema_id_from_header(value: bytes) -> SchemaId:
    """The schema id a ``__value_schema_id`` / ``__key_schema_id`` header carries: 0x00 + a
    4-byte big-endian id, or 0x01 + a 16-byte GUID (ValueError otherwise)."""
    if len(value) == 5 and value[0] == 0:
        return int.from_bytes(value[1:5], "big")
    if len(value) == 17 and value[0] == 1:
        return uuid.UUID(bytes=bytes(value[1:17]))
    raise ValueError(f"a schema id header is 0x00 + 4 bytes or 0x01 + 16 bytes, got "
                     f"{bytes(value[:20]).hex()}")


def _backend() -> ModuleType:
    """pyconsumer.records: the compiled decoder with pyconsumer.errors' classes injected
    (values sits above records in the layers)."""
    return records


def set_error_classes(mod: ModuleType) -> None:
    """Give a build of the decoder pyconsumer.errors' classes (its reader faults raise them,
    and the decoder turns them into row errors); the same classes pyconsumer.records gives
    it, so calling both, in either order, is the same."""
    mod._set_error_classes(errors.CorruptRecordError, errors.UnsupportedCodecError,
                           errors.RecordDeserializationError)


def _pin(program: Program, backend: ModuleType) -> Any:
    """The extension's AvroProgram of a Program (made once per backend)."""
    key = f"pinned:{backend.__name__}"
    pinned = program.cache.get(key)
    if pinned is None:
        cols = program.columns
        pinned = backend.AvroProgram(
            array("q", program.code), array("q", program.aux), program.blob,
            [c.kind for c in cols], [c.children[0] if c.kind == K_LIST else -1 for c in cols],
            [c.width for c in cols], program.reasons)
        program.cache[key] = pinned
    return pinned


@functools.lru_cache(maxsize=256)
def _compiled(writer: Schema, reader: Schema) -> Program:
    # schemas hash by identity: a caller that keeps its parsed schemas (as integration does)
    # compiles each pair once; JSON given anew each call is parsed and compiled anew
    return compile_decoder(writer, reader)


def _as_binary(values: pa.Array | pa.ChunkedArray | Iterable[bytes | None]) -> pa.Array:
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if not isinstance(values, pa.Array):
        return pa.array(list(values), pa.binary())
    if pa.types.is_binary(values.type):
        return values
    if pa.types.is_large_binary(values.type) or pa.types.is_string(values.type) or \
            pa.types.is_large_string(values.type):
        return values.cast(pa.binary())
    raise TypeError(f"Avro values come as binary, got an array of {values.type}")


def _assemble(program: Program, raw: list[tuple[int, Any, Any, Any]]) -> pa.Array:
    cols = program.columns

    def build(k: int) -> pa.Array:
        spec = cols[k]
        n, valid, data, body = raw[k]
        if spec.kind == K_NULL:
            return pa.nulls(n)
        if spec.kind == K_STRUCT:
            return pa.Array.from_buffers(spec.type, n, [valid],
                                         children=[build(c) for c in spec.children])
        if spec.kind == K_LIST:
            return pa.Array.from_buffers(spec.type, n, [valid, data],
                                         children=[build(spec.children[0])])
        if pa.types.is_time64(spec.type):
            return _into_the_day(pa.Array.from_buffers(pa.int64(), n, [valid, data]))
        if spec.kind == K_BOOL or body is None:
            return pa.Array.from_buffers(spec.type, n, [valid, data])
        return pa.Array.from_buffers(spec.type, n, [valid, data, body])

    out = build(0)
    out.validate()               # lengths and buffer sizes (cheap): a bad program is an error
    return out


_DAY_NS = 86_400_000_000_000


def _into_the_day(ns: pa.Array) -> pa.Array:
    """time-micros as Spark reads it: nanoseconds wrapped into the day (floor modulo)."""
    lo, hi = pc.min_max(ns).values()
    if lo.is_valid and (lo.as_py() < 0 or hi.as_py() >= _DAY_NS):
        rem = pc.subtract(ns, pc.multiply(pc.divide(ns, _DAY_NS), _DAY_NS))  # truncated
        ns = pc.if_else(pc.less(rem, 0), pc.add(rem, _DAY_NS), rem)
    return ns.cast(pa.time64("ns"))


def decode_avro(
    values: pa.Array | pa.ChunkedArray | Iterable[bytes | None],
    *,
    framing: Literal["confluent", "none"] = "confluent",
    reader: Schema | str | dict[str, Any] | None = None,
    writer: Schema | str | dict[str, Any] | None = None,
    source: SchemaSource | None = None,
    schema_ids: pa.Array | Sequence[SchemaId | None] | None = None,
    backend: ModuleType | None = None,
) -> Decoded:
    """Decode Avro values into one Arrow array of ``reader``'s type (see
    :func:`~pyconsumer.values.avro.arrow_type`).

    ``framing="none"``: every value is a bare Avro body written with ``writer`` (``reader``
    defaults to it). ``framing="confluent"``: ``source`` gives the program of each schema
    id or GUID the prefixes name (compiled against ``reader``, which is required). Per-row
    ``schema_ids`` (ints or UUIDs, None where a row has no header) mark rows whose body
    has no prefix. ``backend`` is the compiled module (default pyconsumer.records, the real build).
    Pass parsed schemas (:func:`~pyconsumer.values.avro.parse_schema`) to compile a
    (writer, reader) pair once for all calls.
    """
    mod = backend if backend is not None else _backend()
    arr = _as_binary(values)
    if framing == "none":
        if writer is None:
            raise ValueError('framing="none" needs the writer schema')
        if schema_ids is not None:
            raise ValueError('schema_ids name writer schemas: framing="confluent" only')
        w = writer if isinstance(writer, _SCHEMA_TYPES) else parse_schema(writer)
        r = w if reader is None else (
            reader if isinstance(reader, _SCHEMA_TYPES) else parse_schema(reader))
        prog = _compiled(w, r)
        raw, errs = mod.avro_decode(arr, [_pin(prog, mod)], None, None, 0)
        return Decoded(_assemble(prog, raw), dict(errs))
    if framing != "confluent":
        raise ValueError(f'framing is "confluent" or "none", got {framing!r}')
    if source is None or reader is None:
        raise ValueError('framing="confluent" needs a schema source and the reader schema')
    r = reader if isinstance(reader, _SCHEMA_TYPES) else parse_schema(reader)
    base = _compiled(r, r)                 # the columns every program must write
    slots_b, skips_b, keys = mod.avro_frame_scan(arr)
    ids: list[SchemaId] = [k if isinstance(k, int) else uuid.UUID(bytes=k) for k in keys]
    used: set[int] | None = None
    if schema_ids is not None:
        slots_b, skips_b = _apply_header_ids(arr, schema_ids, ids, slots_b, skips_b)
        # the prefix scan read "ids" from header rows' bodies too: look up only those in use
        used = set(pc.unique(_int32s(slots_b, len(arr))).to_pylist())
    entries: list[Any] = []
    for k, sid in enumerate(ids):
        if used is not None and k not in used:
            entries.append("unused")
            continue
        try:
            prog = source.program_for(sid)
        except UnknownSchemaError as e:
            entries.append(str(e) or _unknown(sid))
            continue
        except AvroSchemaError as e:
            # a writer schema that does not parse or resolve: its rows cannot be read into
            # the reader schema, which the bad-record mode reports (or fails on)
            entries.append(f"the writer schema of {_name(sid)} does not resolve to the "
                           f"reader schema: {e}")
            continue
        if prog.layout != base.layout:
            raise ValueError(f"the program of schema {sid} writes {prog.arrow_type}, not the "
                             f"reader schema's {base.arrow_type}")
        entries.append(_pin(prog, mod))
    entries.append(_pin(base, mod))        # gives the layout when no id resolved
    raw, errs = mod.avro_decode(arr, entries, slots_b, skips_b, 0)
    return Decoded(_assemble(base, raw), dict(errs))


def _int32s(data: bytes, n: int) -> pa.Array:
    return pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(data)])


def _apply_header_ids(arr: pa.Array, schema_ids: pa.Array | pa.ChunkedArray
                      | Sequence[SchemaId | None], ids: list[SchemaId], slots_b: bytes,
                      skips_b: bytes) -> tuple[bytes, bytes]:
    """Rows with a header id run that id's program over the whole value (no prefix); new
    (slots, skips). A tombstone stays a null value."""
    n = len(arr)
    if isinstance(schema_ids, pa.ChunkedArray):
        schema_ids = schema_ids.combine_chunks()
    if isinstance(schema_ids, pa.Array) and pa.types.is_integer(schema_ids.type):
        col = schema_ids
        if len(col) != n:
            raise ValueError(f"schema_ids has {len(col)} entries for {n} values")
        uniq = pc.unique(col.drop_null()).to_pylist()
        for u in uniq:
            if u not in ids:
                ids.append(u)
        slot_of = pa.array([ids.index(u) for u in uniq], pa.int32())
        mapped = pc.take(slot_of, pc.index_in(col, pa.array(uniq, col.type)))
        scan = _int32s(slots_b, n)
        use = pc.and_(col.is_valid(), pc.not_equal(scan, -1)).fill_null(False)
        slots = pc.if_else(use, mapped, scan)
        skips = pc.if_else(use, pa.scalar(0, pa.uint8()),
                           pa.Array.from_buffers(pa.uint8(), n, [None, pa.py_buffer(skips_b)]))
        return (slots.buffers()[1].to_pybytes()[: 4 * n],
                skips.buffers()[1].to_pybytes()[:n])
    seq = list(schema_ids)
    if len(seq) != n:
        raise ValueError(f"schema_ids has {len(seq)} entries for {n} values")
    slot_list = array("i")
    slot_list.frombytes(slots_b)
    skip_list = bytearray(skips_b)
    for i, sid in enumerate(seq):
        if sid is None or slot_list[i] == -1:
            continue
        if not isinstance(sid, (int, uuid.UUID)) or isinstance(sid, bool):
            raise TypeError(f"a schema id is an int or a UUID, got {sid!r}")
        if sid not in ids:
            ids.append(sid)
        slot_list[i] = ids.index(sid)
        skip_list[i] = 0
    return slot_list.tobytes(), bytes(skip_list)
