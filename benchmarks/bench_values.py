"""Typed values decoded alone, in memory (issues 25 and 39): Avro, JSON and Protobuf into Arrow.

Avro: 8-field records (~40 B: long, string, double, int, boolean, string, timestamp-millis,
``["null", "string"]``), written once with fastavro (10,000 distinct bodies repeated), as bare
bodies and Confluent-framed (0x00 + 4-byte id). Contenders:

* ``pc_avro_confluent`` ``values.decode_avro``, Confluent framing, one schema id
* ``pc_avro_2ids``      the same, two writer versions (ids 1 and 2) alternating, each resolved
                        to the newer reader schema
* ``pc_avro_none``      ``decode_avro`` on bare bodies with one writer schema
* ``pyruhvro``          pyruhvro's ``deserialize_array`` (Rust, Avro -> Arrow, one thread, bare
                        bodies: it reads no framing)
* ``fastavro_pylist``   fastavro's ``schemaless_reader`` per body + ``pa.RecordBatch.from_pylist``
* ``ck_avro``           confluent-kafka's ``AvroDeserializer`` per message (Confluent-framed,
                        its mock registry: no network), dicts only, no Arrow built

JSON: 8-field objects (~130 B: BIGINT, STRING, DOUBLE, BOOLEAN, STRING, INT, TIMESTAMP,
ARRAY<STRING>) into a struct of that DDL. Contenders:

* ``pc_json``           ``values.decode_json`` (one thread: the consumer's decode threads run
                        several at once): the compiled parser (pyext/json.pyx) for this schema
* ``pc_json_pyarrow``   ``values.decode_json_pyarrow``: the pyarrow path alone (pyarrow.json, bad
                        rows isolated, the Python reader for them), decode_json's path before the
                        compiled parser and still its path for schemas the parser leaves to it
* ``pc_json_1bad``, ``pc_json_cut1pct``, ``pc_json_type1pct``: ``decode_json`` with one bad row
                        in the middle, 1 % of rows cut short, 1 % with a string for the INT
* ``pyarrow_json``      bare ``pyarrow.json.read_json`` on the values already joined into one
                        clean NDJSON buffer (the floor decode_json builds on; not a reader of
                        Kafka values: it cannot tell one bad row from its block)
* ``loads_pylist``      ``json.loads`` per value + ``pa.RecordBatch.from_pylist`` (+ the
                        timestamp column cast from its ISO text)

Protobuf: 8-field messages (~50 B: int64, string, double, int32, bool, string,
google.protobuf.Timestamp, string; the file built as a descriptor, no generated code), written by
the protobuf runtime (10,000 distinct messages repeated), Confluent-framed (0x00 + 4-byte id +
the message-index array, ``0x00`` for the file's first message) and bare. Contenders:

* ``pc_protobuf_confluent`` ``values.protobuf_decode.decode_protobuf``, Confluent framing
* ``pc_protobuf_none``  ``decode_protobuf`` on bare messages
* ``ptars``             ptars' ``array_to_record_batch`` (Rust, Protobuf -> Arrow, one thread),
                        Confluent framing stripped by ptars itself (``confluent_wire_policy``
                        ``protobuf``), timestamps in microseconds as ours
* ``ck_protobuf``       confluent-kafka's ``ProtobufDeserializer`` per message (Confluent-framed,
                        its mock registry: no network), message objects only, no Arrow built

Per-row contenders (fastavro_pylist, ck_avro, loads_pylist, ck_protobuf) decode a sample of a twentieth of
the records (rates are per record). Each round runs every contender once (best of
``repeat`` back-to-back runs), in an order rotated from round to round, after one untimed
warm-up run of each.

Run alone: ``python benchmarks/bench_values.py [--records N] [--rounds R] [--formats avro json protobuf]``;
``python -m benchmarks --cases values`` puts the same rows in RESULTS.md.
"""
from __future__ import annotations

import argparse
import io
import json
import random
import statistics
import struct
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from timing import best  # noqa: E402  (benchmarks/ is on sys.path when run)
import gen_data  # noqa: E402
from pyconsumer.values.avro import parse_schema
from pyconsumer.values.avro_decode import WriterSchemas, decode_avro
from pyconsumer.values.json import decode_json, decode_json_pyarrow
from pyconsumer.values.schema import parse_ddl

#: (the function, how many records one call decodes)
Contender = tuple[Callable[[], object], int]

AVRO_SCHEMA: dict[str, Any] = {"type": "record", "name": "Event", "namespace": "bench", "fields": [
    {"name": "id", "type": "long"},
    {"name": "user", "type": "string"},
    {"name": "score", "type": "double"},
    {"name": "qty", "type": "int"},
    {"name": "active", "type": "boolean"},
    {"name": "country", "type": "string"},
    {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "note", "type": ["null", "string"], "default": None},
]}
#: an older writer version of the same record: no ``note`` yet
AVRO_OLD = dict(AVRO_SCHEMA, fields=[f for f in AVRO_SCHEMA["fields"] if f["name"] != "note"])

JSON_DDL = ("id BIGINT, user STRING, score DOUBLE, active BOOLEAN, country STRING, qty INT, "
            "ts TIMESTAMP, tags ARRAY<STRING>")

AVRO_DESCRIPTIONS = {
    "pc_avro_confluent": "pyconsumer decode_avro, Confluent framing, one schema id",
    "pc_avro_2ids": "decode_avro, Confluent framing, two writer versions alternating",
    "pc_avro_none": "decode_avro, bare bodies, one writer schema",
    "pyruhvro": "pyruhvro.deserialize_array (Rust, one thread), bare bodies",
    "fastavro_pylist": "fastavro schemaless_reader per body + pa.RecordBatch.from_pylist",
    "ck_avro": "confluent-kafka AvroDeserializer per message (mock registry), dicts",
}
JSON_DESCRIPTIONS = {
    "pc_json": "pyconsumer decode_json, one thread",
    "pc_json_pyarrow": "decode_json_pyarrow: the pyarrow.json path alone",
    "pc_json_1bad": "decode_json, one bad row in the middle",
    "pc_json_cut1pct": "decode_json, 1 % of rows cut short",
    "pc_json_type1pct": "decode_json, 1 % of rows with a string for the INT",
    "pyarrow_json": "bare pyarrow.json.read_json on one clean NDJSON buffer",
    "loads_pylist": "json.loads per value + pa.RecordBatch.from_pylist",
}
PROTOBUF_DESCRIPTIONS = {
    "pc_protobuf_confluent": "pyconsumer decode_protobuf, Confluent framing (id + message indexes)",
    "pc_protobuf_none": "decode_protobuf, bare messages",
    "ptars": "ptars array_to_record_batch (Rust, one thread), Confluent framing stripped by ptars",
    "ck_protobuf": "confluent-kafka ProtobufDeserializer per message (mock registry), messages",
}
#: contenders run on a sample (per-row decoders): a twentieth of the records
SAMPLED = ("fastavro_pylist", "ck_avro", "loads_pylist", "ck_protobuf")
#: the Protobuf message: (name, FieldDescriptorProto type, message type) in field-number order
PROTOBUF_FIELDS = (("id", 3, ""), ("user", 9, ""), ("score", 1, ""), ("qty", 5, ""), ("active", 8, ""),
                   ("country", 9, ""), ("ts", 11, ".google.protobuf.Timestamp"), ("note", 9, ""))
PROTOBUF_MESSAGE = "bench.Event"


def sample_size(n: int) -> int:
    return max(1000, n // 20)


# ------------------------------------------------------------------------------ the data

def avro_bodies(n: int, schema: dict[str, Any], seed: int = 7) -> list[bytes]:
    """``n`` bare Avro bodies of ``schema`` written by fastavro (10,000 distinct, repeated)."""
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


def framed(schema_id: int, body: bytes) -> bytes:
    """Confluent's wire format: magic byte 0, the big-endian schema id, the body."""
    return b"\x00" + struct.pack(">I", schema_id) + body


def json_values(n: int, seed: int = 7) -> list[bytes]:
    rng = random.Random(seed)
    countries = ["DE", "FR", "US", "JP", "BR", "IN"]
    out = []
    for i in range(n):
        out.append(json.dumps({
            "id": i, "user": f"user-{rng.randint(0, 99999):05d}", "score": round(rng.uniform(0, 1000), 3),
            "active": rng.random() < 0.5, "country": rng.choice(countries), "qty": rng.randint(0, 5000),
            "ts": f"2026-11-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00Z",
            "tags": rng.sample(["a", "bb", "ccc", "dddd"], rng.randint(0, 2)),
        }, separators=(",", ":")).encode())
    return out


def protobuf_descriptor_set() -> bytes:
    """The serialized FileDescriptorSet of ``bench/event.proto`` (:data:`PROTOBUF_MESSAGE`, the
    fields of :data:`PROTOBUF_FIELDS`) with the Timestamp file it imports."""
    return gen_data.event_descriptor_set(PROTOBUF_FIELDS)


def protobuf_messages(n: int, event_class: Any, seed: int = 7) -> list[Any]:
    """``n`` Events (10,000 distinct, repeated), the Avro records' values."""
    rng = random.Random(seed)
    distinct = []
    for i in range(min(n, 10_000)):
        m = event_class(id=rng.randrange(2 ** 40), user=f"user-{rng.randint(0, 99999):05d}",
                        score=rng.uniform(0, 1000), qty=rng.randint(0, 5000), active=rng.random() < 0.5,
                        country=rng.choice(["DE", "FR", "US", "JP"]), note="" if i % 3 else "hello")
        m.ts.seconds, m.ts.nanos = 1_790_000_000 + i, (i % 1000) * 1_000_000
        distinct.append(m)
    return [distinct[i % len(distinct)] for i in range(n)]


# ------------------------------------------------------------------------------ contenders

def avro_contenders(n: int) -> tuple[dict[str, Contender], list[str]]:
    """The Avro contenders over ``n`` records (each checked once: same row count, no
    errors), and notes on what is missing."""
    notes: list[str] = []
    bodies = avro_bodies(n, AVRO_SCHEMA)
    old = avro_bodies(n, AVRO_OLD, seed=8)
    # parsed once, as the consumer keeps them: each (writer, reader) pair compiles once
    reader, older = parse_schema(AVRO_SCHEMA), parse_schema(AVRO_OLD)
    unframed = pa.array(bodies, pa.binary())
    one_id = pa.array([framed(1, b) for b in bodies], pa.binary())
    two_ids = pa.array([framed(1, bodies[i]) if i & 1 == 0 else framed(2, old[i]) for i in range(n)],
                       pa.binary())
    source = WriterSchemas({1: reader, 2: older}, reader)
    out: dict[str, Contender] = {
        "pc_avro_confluent": (lambda: decode_avro(one_id, reader=reader, source=source), n),
        "pc_avro_2ids": (lambda: decode_avro(two_ids, reader=reader, source=source), n),
        "pc_avro_none": (lambda: decode_avro(unframed, framing="none", writer=reader), n),
    }
    for name, arr, kw in (("pc_avro_confluent", one_id, {"reader": reader, "source": source}),
                          ("pc_avro_2ids", two_ids, {"reader": reader, "source": source}),
                          ("pc_avro_none", unframed, {"framing": "none", "writer": reader})):
        got = decode_avro(arr, **kw)
        if got.errors or len(got.array) != n:
            raise RuntimeError(f"{name}: {len(got.errors)} bad rows of {n}: {list(got.errors.items())[:3]}")
    try:
        import pyruhvro
    except ImportError:
        notes.append("pyruhvro is not installed (pip install -e '.[bench]'): no pyruhvro row")
    else:
        text = json.dumps(AVRO_SCHEMA)
        got = pyruhvro.deserialize_array(bodies, text)
        if got.num_rows != n:
            raise RuntimeError(f"pyruhvro gave {got.num_rows} rows of {n}")
        out["pyruhvro"] = (lambda: pyruhvro.deserialize_array(bodies, text), n)

    import fastavro
    parsed = fastavro.parse_schema(AVRO_SCHEMA)
    sample = bodies[:sample_size(n)]
    out["fastavro_pylist"] = (lambda: pa.RecordBatch.from_pylist(
        [fastavro.schemaless_reader(io.BytesIO(b), parsed, None) for b in sample]), len(sample))
    try:
        from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
        from confluent_kafka.schema_registry.avro import AvroDeserializer
        from confluent_kafka.serialization import MessageField, SerializationContext
    except ImportError:
        notes.append("confluent-kafka's Avro serializers are not installed "
                     "(pip install -e '.[bench]'): no ck_avro row")
    else:
        client = SchemaRegistryClient.new_client({"url": "mock://bench-values"})   # in memory
        sid = client.register_schema("bench-value", Schema(json.dumps(AVRO_SCHEMA), "AVRO"))
        msgs = [framed(sid, b) for b in sample]
        des = AvroDeserializer(client)
        ctx = SerializationContext("bench", MessageField.VALUE)
        out["ck_avro"] = (lambda: [des(m, ctx) for m in msgs], len(msgs))
    return out, notes


def json_contenders(n: int) -> tuple[dict[str, Contender], list[str]]:
    """The JSON contenders over ``n`` values (decode_json's error counts checked once)."""
    values = json_values(n)
    schema = parse_ddl(JSON_DDL)
    clean = pa.array(values, pa.binary())
    one_bad = list(values)
    one_bad[n // 2] = b'{"id": "oops"}'
    cut = list(values)
    wrong = list(values)
    for i in range(0, n, 100):
        cut[i] = values[i][:-5]
        wrong[i] = values[i].replace(b'"qty":', b'"qty":"', 1).replace(b',"ts"', b'","ts"', 1)
    arrays = {"pc_json_1bad": pa.array(one_bad, pa.binary()), "pc_json_cut1pct": pa.array(cut, pa.binary()),
              "pc_json_type1pct": pa.array(wrong, pa.binary())}
    bad = {"pc_json_1bad": {n // 2}, "pc_json_cut1pct": set(range(0, n, 100)),
           "pc_json_type1pct": set(range(0, n, 100))}
    for name, arr in arrays.items():
        errors = decode_json(arr, schema).errors
        if set(errors) != bad[name]:
            raise RuntimeError(f"{name}: decode_json found bad rows {sorted(errors)[:5]}..., "
                               f"expected {sorted(bad[name])[:5]}...")
    check = decode_json(clean, schema)
    if check.errors or check.array.type != pa.struct(list(schema)):
        raise RuntimeError(f"pc_json: {len(check.errors)} bad rows, type {check.array.type}")

    ndjson = b"\n".join(values) + b"\n"
    parse = pajson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    read = pajson.ReadOptions(use_threads=False, block_size=1 << 20)
    sample = values[:sample_size(n)]
    # from_pylist cannot parse the timestamp text: it is read as a string and cast after
    as_text = pa.schema([f if f.name != "ts" else pa.field("ts", pa.string()) for f in schema])
    ts_at = as_text.get_field_index("ts")

    def loads_pylist() -> pa.RecordBatch:
        batch = pa.RecordBatch.from_pylist([json.loads(v) for v in sample], schema=as_text)
        return batch.set_column(ts_at, "ts", pc.cast(batch.column(ts_at), schema.field("ts").type))

    return {
        "pc_json": (lambda: decode_json(clean, schema), n),
        "pc_json_pyarrow": (lambda: decode_json_pyarrow(clean, schema), n),
        **{name: ((lambda a=arr: decode_json(a, schema)), n) for name, arr in arrays.items()},
        "pyarrow_json": (lambda: pajson.read_json(io.BytesIO(ndjson), read_options=read,
                                                  parse_options=parse), n),
        "loads_pylist": (loads_pylist, len(sample)),
    }, []


def protobuf_contenders(n: int) -> tuple[dict[str, Contender], list[str]]:
    """The Protobuf contenders over ``n`` messages (each checked once against the runtime's
    own reading of the first messages), and notes on what is missing."""
    from pyconsumer.testing import message_classes
    from pyconsumer.values.protobuf import compile_program, load_descriptor_set
    from pyconsumer.values.protobuf_decode import decode_protobuf

    notes: list[str] = []
    described = protobuf_descriptor_set()
    event = message_classes(described)[PROTOBUF_MESSAGE]
    messages = protobuf_messages(n, event)
    distinct = {id(m): m.SerializeToString() for m in messages[:10_000]}
    bodies = [distinct[id(m)] for m in messages]
    prefix = framed(1, b"\x00")                 # id 1, message indexes [0]: the single byte 0
    bare = pa.array(bodies, pa.binary())
    confluent = pa.array([prefix + b for b in bodies], pa.binary())
    program = compile_program(load_descriptor_set(described).message(PROTOBUF_MESSAGE))
    want = [{"id": m.id, "user": m.user, "score": m.score, "qty": m.qty, "active": m.active,
             "country": m.country, "note": m.note or None} for m in messages[:100]]

    def first_rows(array: Any) -> list[dict[str, Any]]:
        return [{k: v for k, v in row.items() if k != "ts"} for row in array.to_pylist()[:100]]

    for name, arr, framing in (("pc_protobuf_confluent", confluent, "confluent"),
                               ("pc_protobuf_none", bare, "none")):
        got = decode_protobuf(arr, program, framing=framing)
        if got.errors or len(got.array) != n:
            raise RuntimeError(f"{name}: {len(got.errors)} bad rows of {n}: {list(got.errors.items())[:3]}")
        # a proto3 zero is not on the wire: from_protobuf (and so we) give null for it
        expect = [{k: (v if v not in (0, False, "") else None) for k, v in row.items()} for row in want]
        if first_rows(got.array) != expect:
            raise RuntimeError(f"{name}: the first rows differ from the runtime's: {first_rows(got.array)[:2]}")
    out: dict[str, Contender] = {
        "pc_protobuf_confluent": (lambda: decode_protobuf(confluent, program), n),
        "pc_protobuf_none": (lambda: decode_protobuf(bare, program, framing="none"), n),
    }
    try:
        from ptars import HandlerPool, PtarsConfig
    except ImportError:
        notes.append("ptars is not installed (pip install -e '.[bench]'): no ptars row")
    else:
        pool = HandlerPool([event.DESCRIPTOR.file],
                           config=PtarsConfig(confluent_wire_policy="protobuf", timestamp_unit="us"))
        handler = pool.get_for_message(event.DESCRIPTOR)
        got = handler.array_to_record_batch(confluent)
        if got.num_rows != n or first_rows(got) != [{k: (v if k != "note" else v or "") for k, v in row.items()}
                                                   for row in want]:
            raise RuntimeError(f"ptars gave {got.num_rows} rows of {n}, first {first_rows(got)[:2]}")
        out["ptars"] = (lambda: handler.array_to_record_batch(confluent), n)
    sample = [prefix + b for b in bodies[:sample_size(n)]]
    try:
        from confluent_kafka.schema_registry import SchemaRegistryClient
        from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
        from confluent_kafka.serialization import MessageField, SerializationContext
    except ImportError:
        notes.append("confluent-kafka's Protobuf serializers are not installed "
                     "(pip install -e '.[bench]'): no ck_protobuf row")
    else:
        client = SchemaRegistryClient.new_client({"url": "mock://bench-values-protobuf"})   # in memory
        ctx = SerializationContext("bench", MessageField.VALUE)
        first = ProtobufSerializer(event, client)(messages[0], ctx)
        sid = first[1:5]
        msgs = [b"\x00" + sid + b"\x00" + b for b in bodies[:len(sample)]]
        des = ProtobufDeserializer(event, {}, client)
        if des(msgs[0], ctx) != messages[0]:
            raise RuntimeError("ck_protobuf: the first message differs from the one written")
        out["ck_protobuf"] = (lambda: [des(m, ctx) for m in msgs], len(msgs))
    return out, notes


# ------------------------------------------------------------------------------ the rounds

def run_order(names: list[str], rnd: int) -> list[str]:
    k = rnd % len(names)
    return names[k:] + names[:k]


def measure(contenders: dict[str, Contender], rounds: int, repeat: int = 3,
            report: Callable[[int, str, float], None] | None = None) -> dict[str, list[float]]:
    """Records/s of each contender per round (best of ``repeat`` runs in a row), every
    contender once a round in a rotated order, after one untimed run of each."""
    for fn, _ in contenders.values():
        fn()
    rates: dict[str, list[float]] = {k: [] for k in contenders}
    for rnd in range(rounds):
        for name in run_order(list(contenders), rnd):
            fn, count = contenders[name]
            rate = count / best(fn, repeat)
            rates[name].append(rate)
            if report is not None:
                report(rnd, name, rate)
    return rates


def median_ratio(rates: dict[str, list[float]], name: str, ref: str) -> float:
    return statistics.median(a / b for a, b in zip(rates[name], rates[ref]))


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3, help="runs in a row per round (the best counts)")
    ap.add_argument("--formats", nargs="*", choices=["avro", "json", "protobuf"],
                    default=["avro", "json", "protobuf"])
    args = ap.parse_args()
    for fmt in args.formats:
        t0 = time.perf_counter()
        build = {"avro": avro_contenders, "json": json_contenders, "protobuf": protobuf_contenders}[fmt]
        contenders, notes = build(args.records)
        print(f"{fmt}: {args.records:,} records built in {time.perf_counter() - t0:.1f} s", flush=True)
        for note in notes:
            print(f"  ({note})")
        rates = measure(contenders, args.rounds, args.repeat)
        refs = [r for r in {"avro": ("pyruhvro", "ck_avro"), "json": ("pyarrow_json", "loads_pylist"),
                            "protobuf": ("ptars", "ck_protobuf")}[fmt] if r in rates]
        for name, rs in rates.items():
            print(f"  {name:18s} {max(rs) / 1e6:8.3f} M rec/s best  " + "  ".join(
                f"{median_ratio(rates, name, r):7.2f}x {r}" for r in refs))


if __name__ == "__main__":
    main()
