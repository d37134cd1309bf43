"""Benchmark input (decode-performance.md §1): concatenated v2 batches from aiokafka's Cython builder."""
from __future__ import annotations

import argparse
import json
import struct
from pathlib import Path

from aiokafka.record.default_records import DefaultRecordBatchBuilder

DATA = Path(__file__).parent / "data"
#: one Protobuf field of a generated message: (name, FieldDescriptorProto type, message type name)
ProtoField = tuple[str, int, str]
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
KINDS = {"v100": (100, 1000), "v10": (10, 1000), "v10k": (10240, 100)}  # value bytes, records per batch


def _value(i: int, size: int) -> bytes:
    v = b'{"user":%d,"event":"click","page":"/p/%d","ts":%d}' % (i % 99991, i % 977, i)
    return (v * (size // len(v) + 1))[:size]


def event_descriptor_set(fields: tuple[ProtoField, ...]) -> bytes:
    """The serialized FileDescriptorSet of ``bench/event.proto``: message ``bench.Event`` with
    ``fields`` (numbered from 1, proto3), and the Timestamp file it imports; built as a
    descriptor, as a tool that generates no code would."""
    from google.protobuf import descriptor_pb2, timestamp_pb2

    event = descriptor_pb2.FileDescriptorProto(
        name="bench/event.proto", package="bench", syntax="proto3",
        dependency=["google/protobuf/timestamp.proto"])
    message = event.message_type.add(name="Event")
    for number, (name, kind, type_name) in enumerate(fields, start=1):
        field = message.field.add(name=name, number=number, type=kind, json_name=name,
                                  label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
        if type_name:
            field.type_name = type_name
    files = descriptor_pb2.FileDescriptorSet()
    files.file.add().ParseFromString(timestamp_pb2.DESCRIPTOR.serialized_pb)
    files.file.append(event)
    return bytes(files.SerializeToString())


def build(kind: str, codec: str, payload_mb: int) -> Path:
    path = DATA / f"{kind}_{codec}_{payload_mb}.bin"
    if path.exists():
        return path
    vsize, per = KINDS[kind]
    n = payload_mb * (1 << 20) // (vsize + 10) // per * per
    parts, ts0 = [], 1_700_000_000_000
    for base in range(0, n, per):
        b = DefaultRecordBatchBuilder(2, CODECS[codec], 0, -1, -1, -1, 1 << 30)
        for j in range(per):
            i = base + j
            b.append(j, ts0 + i, b"user-%05d" % (i % 100000), _value(i, vsize), [])
        buf = b.build()
        struct.pack_into(">q", buf, 0, base)
        struct.pack_into(">i", buf, 12, 5)  # leader epoch
        parts.append(bytes(buf))
    DATA.mkdir(exist_ok=True)
    path.write_bytes(b"".join(parts))
    path.with_suffix(".json").write_text(json.dumps({"records": n, "batches": len(parts)}))
    return path


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--kind", nargs="*", default=list(KINDS))
    ap.add_argument("--codec", nargs="*", default=list(CODECS))
    ap.add_argument("--mb", type=int, default=100)
    a = ap.parse_args()
    for k in a.kind:
        for c in a.codec:
            print(build(k, c, a.mb))
