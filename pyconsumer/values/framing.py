"""Confluent's framing of a value: the schema id in a prefix (0x00 + a 4-byte id, or 0x01 + a
16-byte GUID) or in a header (``__value_schema_id`` / ``__key_schema_id``), read for the
decoders and the metrics; and confluent-kafka's JSONSerializer prefix taken off JSON values.
"""
from __future__ import annotations

import uuid

import pyarrow as pa
import pyarrow.compute as pc

from pyconsumer.values.arrays import bools, int_scalar
from pyconsumer.values.avro_decode import SchemaId, schema_id_from_header
from pyconsumer.values.result import as_binary

__all__ = ["SCHEMA_ID_HEADERS", "header_ids", "prefix_ids", "unframed_json"]

#: the headers that carry a record's writer schema id when the body has no prefix
SCHEMA_ID_HEADERS = {"key": "__key_schema_id", "value": "__value_schema_id"}

_FALSE = bools((False,))[0]
_ZERO = int_scalar(0, pa.int32())
_ID_PREFIX = int_scalar(5, pa.int32())


def header_ids(batch: pa.RecordBatch, name: str) -> list[SchemaId | None] | None:
    """Per-row schema ids from the ``name`` header (None where a row has none), or None when the
    batch carries no headers or no row has one. A header that is not an id is a bad row of the
    decode (its body then has no readable prefix either)."""
    if "headers" not in batch.schema.names:
        return None
    headers = batch.column("headers")
    if pc.sum(pc.list_value_length(headers).fill_null(_ZERO)).as_py() in (0, None):
        return None
    out: list[SchemaId | None] = []
    seen = False
    for row in headers.to_pylist():
        sid: SchemaId | None = None
        for entry in row or ():
            if entry["key"] == name and entry["value"] is not None:
                try:
                    sid = schema_id_from_header(entry["value"])
                except ValueError:
                    sid = None
                seen = True
        out.append(sid)
    return out if seen else None


def unframed_json(raw: pa.Array, ids: set[SchemaId]) -> pa.Array:
    """JSON values with confluent-kafka's JSONSerializer framing (0x00 + a 4-byte schema id)
    without it; plain JSON as it is. No JSON text starts with a NUL byte, so the prefix is
    recognised without a setting; a framed value too short for its id stays as it is (and is a
    bad row)."""
    binary = as_binary(raw, "JSON values")
    framed = pc.fill_null(pc.and_(pc.starts_with(binary, pattern="\x00"),
                                  pc.greater_equal(pc.binary_length(binary), _ID_PREFIX)), _FALSE)
    if not pc.any(framed).as_py():
        return binary
    ids.update(prefix_ids(pc.filter(binary, framed), None))
    # a stop is given: binary_slice without one failed on such arrays (negative buffer resize)
    return pc.if_else(framed, pc.binary_slice(binary, 5, (1 << 31) - 1), binary)


def prefix_ids(raw: pa.Array, header_ids: list[SchemaId | None] | None) -> set[SchemaId]:
    """The schema ids the rows name (for the metrics): magic-0 prefixes, 0x01 GUIDs, header ids."""
    found: set[SchemaId] = set(i for i in header_ids or () if i is not None)
    binary = as_binary(raw, "Avro values")
    if found:
        # a row whose id came in a header has a bare body: its first bytes are data, not an id
        assert header_ids is not None
        binary = pc.filter(binary, bools(i is None for i in header_ids))
    for magic, width in ((b"\x00", 4), (b"\x01", 16)):
        framed = pc.fill_null(pc.starts_with(binary, pattern=magic.decode("latin-1")), _FALSE)
        if not pc.any(framed).as_py():
            continue
        for head in pc.unique(pc.binary_slice(pc.filter(binary, framed), 1, 1 + width)).to_pylist():
            if head is not None and len(head) == width:
                found.add(int.from_bytes(head, "big") if width == 4 else uuid.UUID(bytes=head))
    return found
