"""Protobuf values (Confluent-framed or bare) decoded into one typed Arrow array.

One job: run the compiled program of one message (:mod:`pyconsumer.values.protobuf`) over a
column of values in the compiled decoder (``protobuf_decode`` of pyconsumer._records,
pyext/protobuf.pyx) and give a :class:`~pyconsumer.values.result.Decoded`. Framing
``"confluent"``: each value's prefix (0x00 + 4-byte schema id, or 0x01 + a GUID, then the
message-index array; or that prefix in a ``__value_schema_id`` header, the value bare) is read,
and a :class:`WriterCheck` says per distinct (id, indexes) whether those rows were written
as the message read (a reason otherwise, and the rows are bad); ``"none"``: bare messages.

A bad row is null with its reason in ``errors``; a null value (a tombstone) is null and no
error. Whatever the check raises besides :class:`UnknownSchemaError` (a registry that is
down) propagates: an outage is not bad data.
"""
from __future__ import annotations

import uuid
from types import ModuleType
from typing import Any, Literal, Protocol

import pyarrow as pa
import pyarrow.compute as pc

from pyconsumer import records
from pyconsumer.values.avro_decode import SchemaId, UnknownSchemaError
from pyconsumer.values.protobuf import K_LIST, K_STRUCT, Program
from pyconsumer.values.result import Decoded, as_binary

__all__ = ["WriterCheck", "decode_protobuf", "parse_prefix"]


class WriterCheck(Protocol):
    """Whether rows framed with a schema id and message indexes can be read as the message of
    the decode: None if so, else the reason they cannot; :class:`UnknownSchemaError` for an
    id it does not know (a bad row too); anything else propagates."""

    def __call__(self, schema_id: SchemaId, indexes: list[int]) -> str | None: ...


def parse_prefix(key: bytes) -> tuple[SchemaId, list[int]]:
    """The schema id and message indexes of a prefix the frame scan found (its checks passed)."""
    if key[0] == 0:
        sid: SchemaId = int.from_bytes(key[1:5], "big")
        at = 5
    else:
        sid = uuid.UUID(bytes=bytes(key[1:17]))
        at = 17
    nums: list[int] = []
    shift = value = 0
    for b in key[at:]:
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            nums.append((value >> 1) ^ -(value & 1))
            shift = value = 0
    return sid, (nums[1:] if nums and nums[0] else [0])


def _pin(program: Program, backend: ModuleType, emit_defaults: bool) -> Any:
    key = f"pinned:{backend.__name__}:{emit_defaults}"
    pinned = program.cache.get(key)
    if pinned is None:
        cols = program.columns
        pinned = backend.ProtobufProgram(
            program.nodes, program.fields, program.aux, program.blob,
            [c.kind for c in cols], [c.children[0] if c.kind == K_LIST else -1 for c in cols],
            [c.width for c in cols], program.names, emit_defaults)
        program.cache[key] = pinned
    return pinned


def _assemble(program: Program, raw: list[tuple[int, Any, Any, Any]]) -> pa.Array:
    cols = program.columns

    def build(k: int) -> pa.Array:
        spec = cols[k]
        n, valid, data, body = raw[k]
        if spec.kind == K_STRUCT:
            return pa.Array.from_buffers(spec.type, n, [valid], children=[build(c) for c in spec.children])
        if spec.kind == K_LIST:
            if pa.types.is_map(spec.type):
                entries = build(spec.children[0])
                return pa.Array.from_buffers(spec.type, n, [valid, data], children=[entries])
            return pa.Array.from_buffers(spec.type, n, [valid, data], children=[build(spec.children[0])])
        if body is None:
            return pa.Array.from_buffers(spec.type, n, [valid, data])
        return pa.Array.from_buffers(spec.type, n, [valid, data, body])

    out = build(0)
    out.validate()
    return out


def header_prefixes(batch: pa.RecordBatch, name: str) -> pa.Array | None:
    """Per row, the value of the ``name`` header (confluent-kafka's header framing puts the
    magic byte, the schema id or GUID and the message indexes there, the bare message in the
    value; the last one counts), null where a row has none; None when no row has one. Only the
    matching entries are visited: a batch without such headers costs two kernels."""
    if "headers" not in batch.schema.names or batch.num_rows == 0:
        return None
    headers = batch.column("headers")
    if pc.sum(pc.list_value_length(headers).fill_null(0)).as_py() in (0, None):
        return None
    entries = pc.list_flatten(headers)
    match = pc.fill_null(pc.equal(entries.field("key"), name), False)
    if not pc.any(match).as_py():
        return None
    rows = pc.filter(pc.list_parent_indices(headers), match).to_pylist()
    found = pc.filter(entries.field("value"), match).to_pylist()
    out: list[bytes | None] = [None] * batch.num_rows
    for row, value in zip(rows, found):
        if value is not None:
            out[row] = value
    return pa.array(out, pa.binary())


def decode_protobuf(
    values: pa.Array | pa.ChunkedArray,
    program: Program,
    *,
    framing: Literal["confluent", "none"] = "confluent",
    check: WriterCheck | None = None,
    headers: pa.Array | None = None,
    ids: set[SchemaId] | None = None,
    emit_default_values: bool = False,
    backend: ModuleType | None = None,
) -> Decoded:
    """Decode Protobuf messages into one Arrow array of the program's struct type.

    ``framing="none"``: bare messages. ``"confluent"``: each prefix skipped, and the rows of
    each distinct (schema id, indexes) read if ``check`` passes them (all rows when None).
    ``headers``: per row the prefix a ``__value_schema_id`` header carries (null where a row
    has none; :func:`header_prefixes`), whose value is then the bare message. The schema ids
    of the prefixes read are added to ``ids``. ``emit_default_values``: Spark's option: unset
    implicit-presence scalars give their defaults instead of null."""
    mod = backend if backend is not None else records
    arr = as_binary(values, "Protobuf values")
    if pa.types.is_large_binary(arr.type):
        arr = arr.cast(pa.binary())
    pinned = _pin(program, mod, emit_default_values)
    if framing == "none":
        raw, errs = mod.protobuf_decode(arr, [pinned], None, None)
        return Decoded(_assemble(program, raw), dict(errs))
    if framing != "confluent":
        raise ValueError(f'framing is "confluent" or "none", got {framing!r}')
    if headers is not None and len(headers) != len(arr):
        raise ValueError(f"headers has {len(headers)} entries for {len(arr)} values")
    slots_b, skips_b, keys = mod.protobuf_frame_scan(arr, headers)
    entries: list[Any] = []
    for key in keys:
        sid, indexes = parse_prefix(key)
        if ids is not None:
            ids.add(sid)
        reason: str | None = None
        if check is not None:
            try:
                reason = check(sid, indexes)
            except UnknownSchemaError as e:
                reason = str(e)
        entries.append(pinned if reason is None else reason)
    entries.append(pinned)              # gives the layout when no key passed
    raw, errs = mod.protobuf_decode(arr, entries, slots_b, skips_b)
    return Decoded(_assemble(program, raw), dict(errs))
