"""decode_avro throughput: 8-field Avro records (~40 B) against the per-row decoders and pyruhvro.

Run: ``python -m benchmarks.bench_values_avro [--records N] [--repeat R]``. Prints records/s
(best of R, one core) for: decode_avro unframed and Confluent-framed (one writer id, and two
writer versions mixed), pyruhvro's ``deserialize_array`` (Rust, Avro -> Arrow, one schema,
unframed), fastavro per row into dicts, fastavro + ``pa.Table.from_pylist``, and
confluent-kafka's AvroDeserializer per message (mock registry). Contenders not installed are
skipped; the per-row ones run on a sample of N/20 records. The decoder is pyconsumer._records,
or the scratch build a directory in ``PYCONSUMER_AVRO_DEV`` holds (``_avro_dev``).
"""
from __future__ import annotations

import argparse
import importlib
import io
import json
import os
import random
import struct
import sys
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pyarrow as pa

from timing import best  # noqa: E402  (benchmarks/ is on sys.path when run)
from pyconsumer.values.avro_decode import WriterSchemas, decode_avro, set_error_classes

SCHEMA: dict[str, Any] = {"type": "record", "name": "Event", "namespace": "bench", "fields": [
    {"name": "id", "type": "long"},
    {"name": "user", "type": "string"},
    {"name": "score", "type": "double"},
    {"name": "qty", "type": "int"},
    {"name": "active", "type": "boolean"},
    {"name": "country", "type": "string"},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "note", "type": ["null", "string"], "default": None},
]}
# an older writer version: no note, qty still an int
OLD = dict(SCHEMA, fields=[f for f in SCHEMA["fields"] if f["name"] != "note"])


def backend() -> ModuleType:
    from pyconsumer import _records
    if hasattr(_records, "avro_decode"):
        set_error_classes(_records)
        return _records
    dev = os.environ.get("PYCONSUMER_AVRO_DEV")
    if not dev:
        sys.exit("pyconsumer._records has no Avro decoder: rebuild it or set PYCONSUMER_AVRO_DEV")
    sys.path.insert(0, dev)
    mod = importlib.import_module("_avro_dev")
    set_error_classes(mod)
    return mod


def records(n: int, schema: dict[str, Any], seed: int = 7) -> list[bytes]:
    import fastavro
    parsed = fastavro.parse_schema(schema)
    rng = random.Random(seed)
    names = {f["name"] for f in schema["fields"]}
    distinct = []
    for i in range(min(n, 10_000)):
        rec = {"id": rng.randrange(2 ** 40), "user": f"user-{rng.randint(0, 99999):05d}",
               "score": rng.uniform(0, 1000), "qty": rng.randint(0, 5000),
               "active": rng.random() < 0.5, "country": rng.choice(["DE", "FR", "US", "JP"]),
               "ts": 1_790_000_000_000 + i, "note": None if i % 3 else "hello"}
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, {k: v for k, v in rec.items() if k in names})
        distinct.append(buf.getvalue())
    return [distinct[i % len(distinct)] for i in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    n = args.records
    mod = backend()
    bodies = records(n, SCHEMA)
    old = records(n, OLD, seed=8)
    print(f"{n} records, mean {sum(map(len, bodies)) / n:.1f} B")
    unframed = pa.array(bodies, pa.binary())
    framed = pa.array([b"\x00" + struct.pack(">I", 1) + b for b in bodies], pa.binary())
    mixed = pa.array([b"\x00" + struct.pack(">I", 1 + (i & 1)) + (bodies[i] if i & 1 == 0
                                                                   else old[i])
                      for i in range(n)], pa.binary())
    source = WriterSchemas({1: SCHEMA, 2: OLD}, SCHEMA)
    check = decode_avro(mixed, reader=SCHEMA, source=source, backend=mod)
    assert not check.errors and len(check.array) == n
    sample = bodies[: max(1, n // 20)]

    cases: list[tuple[str, Callable[[], object], int]] = [
        ("decode_avro, unframed", lambda: decode_avro(unframed, framing="none", writer=SCHEMA,
                                                      backend=mod), n),
        ("decode_avro, Confluent framing, 1 id", lambda: decode_avro(
            framed, reader=SCHEMA, source=source, backend=mod), n),
        ("decode_avro, Confluent, 2 writer versions", lambda: decode_avro(
            mixed, reader=SCHEMA, source=source, backend=mod), n),
    ]
    try:
        import pyruhvro
    except ImportError:
        print("(pyruhvro not installed: skipped)")
    else:
        text = json.dumps(SCHEMA)
        cases.append(("pyruhvro.deserialize_array (Rust), unframed",
                      lambda: pyruhvro.deserialize_array(bodies, text), n))
    import fastavro
    parsed = fastavro.parse_schema(SCHEMA)

    def fa_dicts() -> list[Any]:
        return [fastavro.schemaless_reader(io.BytesIO(b), parsed, None) for b in sample]

    cases.append(("fastavro per row (dicts)", fa_dicts, len(sample)))
    cases.append(("fastavro per row + pa.Table.from_pylist",
                  lambda: pa.Table.from_pylist(fa_dicts()), len(sample)))
    try:
        from confluent_kafka.schema_registry import Schema
        from confluent_kafka.schema_registry._sync.mock_schema_registry_client import (
            MockSchemaRegistryClient,
        )
        from confluent_kafka.schema_registry.avro import AvroDeserializer
        from confluent_kafka.serialization import MessageField, SerializationContext
    except ImportError:
        print("(confluent-kafka's schema registry extras not installed: skipped)")
    else:
        client = MockSchemaRegistryClient({"url": "mock://bench"})
        sid = client.register_schema("t-value", Schema(json.dumps(SCHEMA), "AVRO"))
        prefix = b"\x00" + struct.pack(">I", sid)
        msgs = [prefix + b for b in sample]
        des = AvroDeserializer(client)
        ctx = SerializationContext("t", MessageField.VALUE)
        cases.append(("confluent-kafka AvroDeserializer per message",
                      lambda: [des(m, ctx) for m in msgs], len(sample)))

    # the full-size cases run interleaved, one of each a round, so that the machine's drift
    # (a shared machine) hits all of them alike; the ratio to pyruhvro is the median of the
    # rounds' ratios
    full = [c for c in cases if c[2] == n]
    times: dict[str, list[float]] = {name: [] for name, _, _ in full}
    for _ in range(args.repeat):
        for name, fn, _count in full:
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    rust = times.get("pyruhvro.deserialize_array (Rust), unframed")
    for name, fn, count in cases:
        seconds = min(times[name]) if name in times else best(fn, 1)
        line = f"{name:48s} {count / seconds / 1e6:8.3f} M rec/s  ({seconds:.3f} s for {count})"
        if rust and name in times:
            ratios = sorted(r / t for r, t in zip(rust, times[name]))
            line += f"  {ratios[len(ratios) // 2]:.2f}x pyruhvro (median of rounds)"
        print(line)


if __name__ == "__main__":
    main()
