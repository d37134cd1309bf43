"""decode_json throughput: 8-field JSON records (~150 B) against json.loads per row and bare pyarrow.json.

Run: ``python -m benchmarks.bench_values_json [--records N] [--repeat R]``. Prints records/s
(best of R) for: json.loads per row (dicts only), json.loads + pa.array (typed Arrow), bare
``pyarrow.json.read_json`` on an already-joined clean NDJSON buffer (the floor decode_json builds
on), and decode_json on clean input, with one bad row in the middle, with 1 % of rows cut short and with 1 % of rows
holding a string where the schema wants an INT.
"""
from __future__ import annotations

import argparse
import io
import json
import random
from collections.abc import Callable

import pyarrow as pa
import pyarrow.json as pajson

from timing import best  # noqa: E402  (benchmarks/ is on sys.path when run)
from pyconsumer.values.json import decode_json
from pyconsumer.values.schema import parse_ddl

DDL = "id BIGINT, user STRING, score DOUBLE, active BOOLEAN, country STRING, qty INT, ts TIMESTAMP, tags ARRAY<STRING>"


def records(n: int, seed: int = 7) -> list[bytes]:
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n = args.records
    values = records(n)
    print(f"{n} records, mean {sum(map(len, values)) / n:.0f} B")
    schema = parse_ddl(DDL)
    array = pa.array(values, pa.binary())
    one_bad = values.copy()
    one_bad[n // 2] = b'{"id": "oops"}'
    one_bad_array = pa.array(one_bad, pa.binary())
    many_bad = values.copy()
    for i in range(0, n, 100):
        many_bad[i] = values[i][:-5]  # truncated
    many_bad_array = pa.array(many_bad, pa.binary())
    wrong_type = values.copy()
    for i in range(0, n, 100):
        wrong_type[i] = values[i].replace(b'"qty":', b'"qty":"', 1).replace(b',"ts"', b'","ts"', 1)  # a string
    wrong_type_array = pa.array(wrong_type, pa.binary())
    ndjson = b"\n".join(values) + b"\n"
    parse = pajson.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    arrow_type = pa.struct(list(schema))

    def loads_only() -> None:
        for v in values:
            json.loads(v)

    def loads_to_arrow() -> None:
        rows = [json.loads(v) for v in values]
        for r in rows:
            r["ts"] = r["ts"][:-1]
        pa.array(rows, type=pa.struct([f if f.name != "ts" else pa.field("ts", pa.string()) for f in schema]))

    def bare_pyarrow(threads: bool) -> Callable[[], object]:
        opts = pajson.ReadOptions(use_threads=threads, block_size=1 << 20)
        return lambda: pajson.read_json(io.BytesIO(ndjson), read_options=opts, parse_options=parse)

    assert decode_json(one_bad_array, schema).errors.keys() == {n // 2}
    assert len(decode_json(many_bad_array, schema).errors) == len(range(0, n, 100))
    assert len(decode_json(wrong_type_array, schema).errors) == len(range(0, n, 100))
    assert decode_json(array, schema).array.type == arrow_type
    cases: list[tuple[str, Callable[[], object]]] = [
        ("json.loads per row (dicts)", loads_only),
        ("json.loads + pa.array", loads_to_arrow),
        ("pyarrow.json.read_json, clean NDJSON, 1 thread", bare_pyarrow(False)),
        ("pyarrow.json.read_json, clean NDJSON, threads", bare_pyarrow(True)),
        ("decode_json, clean, 1 thread", lambda: decode_json(array, schema)),
        ("decode_json, clean, threads", lambda: decode_json(array, schema, use_threads=True)),
        ("decode_json, 1 bad row in the middle", lambda: decode_json(one_bad_array, schema)),
        ("decode_json, 1% rows cut short", lambda: decode_json(many_bad_array, schema)),
        ("decode_json, 1% rows with a wrong type", lambda: decode_json(wrong_type_array, schema)),
    ]
    for name, fn in cases:
        repeat = 1 if "1%" in name or "json.loads" in name else args.repeat
        seconds = best(fn, repeat)
        print(f"{name:48s} {n / seconds / 1e6:7.3f} M rec/s  ({seconds:.3f} s)")


if __name__ == "__main__":
    main()
