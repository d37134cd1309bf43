"""The benchmark suite's typed-values rows (issue 25) without a broker: the values case's
targets (decode_avro against pyruhvro and confluent-kafka's AvroDeserializer), the Spark typed
sets' tables (each typed row against format('kafka') + from_json/from_avro and against the
binary read, same workload) and targets met or missed at the exact threshold, and the values
case's rounds (every contender once a round, in a rotated order, after one untimed run)."""
from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]



@pytest.fixture(scope="module")
def bench_values(suite: ModuleType) -> ModuleType:
    return importlib.import_module("bench_values")


def test_values_targets_at_the_threshold(suite: ModuleType) -> None:
    """decode_avro framed and bare against pyruhvro (>= 1x) and framed against confluent-kafka
    (>= 50x), the median of per-round ratios; exactly the wanted ratio is met."""
    rates = {"pc_avro_confluent": [10.0, 12.0, 9.0],     # x pyruhvro 1.0, 1.2, 0.9: median 1.0
             "pc_avro_none": [9.0, 11.0, 8.0],           # 0.9, 1.1, 0.8: median 0.9
             "pyruhvro": [10.0, 10.0, 10.0],
             "ck_avro": [0.2, 0.25, 0.18]}               # framed x ck 50, 48, 50: median 50
    case = suite.Case("values_avro", "Avro", rates, ["pyruhvro", "ck_avro"], {})
    assert suite.targets({"values_avro": case}) == [
        ("decode_avro (Confluent framing) vs pyruhvro", "-", ">= 1x", "1.00x", "met"),
        ("decode_avro (bare bodies) vs pyruhvro", "-", ">= 1x", "0.90x", "missed"),
        ("decode_avro (Confluent framing) vs confluent-kafka's AvroDeserializer", "-", ">= 50x", "50.00x", "met"),
    ]


def test_values_without_pyruhvro_gives_no_pyruhvro_target(suite: ModuleType) -> None:
    """A reference that did not run (pyruhvro not installed) leaves its target rows out rather
    than reporting a ratio to nothing."""
    rates = {"pc_avro_confluent": [10.0], "pc_avro_none": [9.0], "ck_avro": [0.1]}
    case = suite.Case("values_avro", "Avro", rates, ["ck_avro"], {})
    assert suite.targets({"values_avro": case}) == [
        ("decode_avro (Confluent framing) vs confluent-kafka's AvroDeserializer", "-", ">= 50x", "100.00x", "met"),
    ]


def test_measure_runs_each_contender_once_a_round_rotated(bench_values: ModuleType) -> None:
    """One untimed run of each first, then per round every contender once (best of
    ``repeat`` runs in a row), the order rotated by one each round; a rate per round each."""
    calls: list[str] = []

    def contender(name: str) -> tuple[object, int]:
        return (lambda: calls.append(name)), 1000

    contenders = {k: contender(k) for k in ("a", "b", "c")}
    seen: list[tuple[int, str]] = []
    rates = bench_values.measure(contenders, 3, repeat=2, report=lambda rnd, name, rate: seen.append((rnd, name)))
    assert calls == ["a", "b", "c"] + ["a", "a", "b", "b", "c", "c"] + ["b", "b", "c", "c", "a", "a"] \
        + ["c", "c", "a", "a", "b", "b"]
    assert seen == [(0, "a"), (0, "b"), (0, "c"), (1, "b"), (1, "c"), (1, "a"), (2, "c"), (2, "a"), (2, "b")]
    assert list(rates) == ["a", "b", "c"] and all(len(v) == 3 and min(v) > 0 for v in rates.values())


def test_json_contenders_check_their_bad_rows(bench_values: ModuleType) -> None:
    """The JSON contenders are built over the same values, decode_json's bad rows checked
    once (one in the middle, every 100th cut short, every 100th with a string for qty); the
    per-row one reads a sample of a twentieth (at least 1,000)."""
    contenders, notes = bench_values.json_contenders(2000)
    assert notes == []
    assert list(contenders) == ["pc_json", "pc_json_pyarrow", "pc_json_1bad", "pc_json_cut1pct",
                                "pc_json_type1pct", "pyarrow_json", "loads_pylist"]
    assert {k: n for k, (_, n) in contenders.items()} == {**{k: 2000 for k in contenders}, "loads_pylist": 1000}
    batch = contenders["loads_pylist"][0]()
    decoded = contenders["pc_json"][0]()
    # the per-row path gives the same typed rows as decode_json for its sample
    assert batch.to_struct_array().to_pylist() == decoded.array.slice(0, 1000).to_pylist()


def test_avro_contenders_decode_the_same_records(bench_values: ModuleType) -> None:
    """decode_avro framed, bare and over two writer versions, and fastavro's per-row path, give
    the records fastavro wrote (the older writer's rows with note null)."""
    contenders, _ = bench_values.avro_contenders(1000)
    framed = contenders["pc_avro_confluent"][0]().array.to_pylist()
    assert contenders["pc_avro_none"][0]().array.to_pylist() == framed
    per_row = contenders["fastavro_pylist"][0]().to_pylist()
    assert [{**r, "ts": r["ts"]} for r in framed] == per_row
    mixed = contenders["pc_avro_2ids"][0]().array.to_pylist()
    assert mixed[0] == framed[0] and mixed[1]["note"] is None and mixed[1]["user"] != framed[1]["user"]


def test_protobuf_values_targets_at_the_threshold(suite: ModuleType) -> None:
    """decode_protobuf framed against ptars (>= 1x) and confluent-kafka's ProtobufDeserializer
    (>= 50x), medians of per-round ratios, met at exactly the threshold."""
    rates = {"pc_protobuf_confluent": [10.0, 12.0, 9.0],  # x ptars 1.0, 1.2, 0.9: median 1.0
             "pc_protobuf_none": [9.0, 11.0, 8.0],
             "ptars": [10.0, 10.0, 10.0],
             "ck_protobuf": [0.25, 0.2, 0.2]}              # 40, 60, 45: median 45
    case = suite.Case("values_protobuf", "Protobuf", rates, ["ptars", "ck_protobuf"], {})
    assert suite.targets({"values_protobuf": case}) == [
        ("decode_protobuf (Confluent framing) vs ptars", "-", ">= 1x", "1.00x", "met"),
        ("decode_protobuf (Confluent framing) vs confluent-kafka's ProtobufDeserializer", "-",
         ">= 50x", "45.00x", "missed"),
    ]


def test_protobuf_contenders_decode_the_messages_written(bench_values: ModuleType) -> None:
    """decode_protobuf framed and bare, ptars and confluent-kafka's deserializer read the same
    messages: ours as from_protobuf renders them (a proto3 zero is null), ptars' with zeros."""
    pytest.importorskip("google.protobuf")
    contenders, notes = bench_values.protobuf_contenders(1000)
    framed = contenders["pc_protobuf_confluent"][0]().array.to_pylist()
    assert contenders["pc_protobuf_none"][0]().array.to_pylist() == framed
    assert [r["note"] for r in framed[:6]] == ["hello", None, None, "hello", None, None]
    assert len(framed) == 1000 and all(r["ts"] is not None for r in framed)
    if "ptars" in contenders:
        theirs = contenders["ptars"][0]().to_pylist()
        assert [{k: None if v in (0, False, "") else v for k, v in r.items()} for r in theirs] == framed
    else:
        assert any("ptars" in n for n in notes)
    if "ck_protobuf" in contenders:
        fn, count = contenders["ck_protobuf"]
        parsed = fn()
        assert count == 1000 and [m.user for m in parsed] == [r["user"] for r in framed]


SPARK_TYPED_OUTPUT = """\
spark kafka connector: 4.2.0 (PySpark 4.3.0)
round 0 json_typed kafka noop          1,000,000 records    4.00 s       250 krec/s   CPU s: ...
round 0 json_typed pyconsumer noop     1,000,000 records    1.00 s     1,000 krec/s   CPU s: ...
round 0 json_typed binary noop         1,000,000 records    0.50 s     2,000 krec/s   CPU s: ...
round 0 json_typed kafka fields        1,000,000 records    5.00 s       200 krec/s   CPU s: ...
round 0 json_typed pyconsumer fields   1,000,000 records    2.00 s       500 krec/s   CPU s: ...
round 0 avro_typed kafka noop          1,000,000 records    3.00 s       333 krec/s   CPU s: ...
round 0 avro_typed pyconsumer noop     1,000,000 records    1.00 s     1,000 krec/s   CPU s: ...
round 0 avro_typed binary noop         1,000,000 records    0.70 s     1,429 krec/s   CPU s: ...
"""


def test_spark_typed_sets_compare_with_from_json_avro_and_the_binary_read(suite: ModuleType,
                                                                          tmp_path: Path) -> None:
    """Each typed set is a table: the typed row's peer is format('kafka') + from_json/from_avro
    on the same workload, and a second column its binary read (rows without one show '-'; the
    binary rows have no from_json peer);
    the targets: >= 3x the former, >= 0.7x the latter, met at exactly the threshold."""
    cases = suite.spark_cases(SPARK_TYPED_OUTPUT, "kafka")
    assert [c.name for c in cases] == ["spark-json_typed-kafka", "spark-avro_typed-kafka"]
    json_case, avro_case = cases
    assert json_case.peer_ratio("pyconsumer noop") == 4.0
    assert json_case.columns == [("x binary, same workload", {"pyconsumer noop": "binary noop"})]
    assert suite.targets({c.name: c for c in cases}) == [
        ("Spark json_typed: typed format('pyconsumer') vs format('kafka') + from_json, noop", "Apache Kafka",
         ">= 3x", "4.00x", "met"),
        ("Spark json_typed: typed format('pyconsumer') vs format('kafka') + from_json, fields", "Apache Kafka",
         ">= 3x", "2.50x", "missed"),
        ("Spark json_typed: typed format('pyconsumer') vs its binary read, noop", "Apache Kafka",
         ">= 0.7x", "0.50x", "missed"),
        ("Spark avro_typed: typed format('pyconsumer') vs format('kafka') + from_avro, noop", "Apache Kafka",
         ">= 3x", "3.00x", "met"),
        ("Spark avro_typed: typed format('pyconsumer') vs its binary read, noop", "Apache Kafka",
         ">= 0.7x", "0.70x", "met"),
    ]
    out = tmp_path / "RESULTS.md"
    suite.write_results(out, cases, [], "python -m benchmarks --cases spark", 60.0, False, [])
    lines = out.read_text().splitlines()
    assert ("| contender | what | records/s best | records/s median | x format('kafka'), same workload | "
            "x binary, same workload |") in lines
    assert ("| pyconsumer noop | format('pyconsumer'), valueFormat json, valueSchema DDL, write.format('noop') | "
            "1,000,000 | 1,000,000 | 4.00 | 0.50 |") in lines
    assert ("| kafka fields | format('kafka') + from_json(value, DDL), groupBy(country) over all 8 typed fields "
            "(value.*) | 200,000 | 200,000 | 1.00 | - |") in lines
    assert ("| binary noop | spark.read.format('pyconsumer'), value left binary, write.format('noop') | "
            "2,000,000 | 2,000,000 | - | - |") in lines
    assert "## Broker -> Spark, 1,000,000 Confluent-framed Avro records of 8 fields read into typed fields " \
           "over 6 partitions (local[2], Spark's Kafka connector 4.2.0 in PySpark 4.3.0)" in lines


def test_the_spark_data_sets_are_bench_sparks(suite: ModuleType) -> None:
    """--spark-datasets offers exactly bench_spark.py's data sets, and each contender runs
    only where it has a meaning (no binary row on the untyped sets, nor a fields aggregate of
    a binary value; the typed sets run only kafka, pyconsumer and binary)."""
    pytest.importorskip("pyspark")
    bench_spark = importlib.import_module("bench_spark")
    assert suite.SPARK_DATASETS == tuple(bench_spark.WORKLOADS)
    typed = {(ds, c, w) for ds in bench_spark.TYPED_SETS for c in bench_spark.CONTENDERS
             for w in bench_spark.WORKLOADS[ds] if bench_spark.runs(ds, c, w)}
    assert typed == {(ds, c, w) for ds in ("json_typed", "avro_typed", "protobuf_typed") for c, w in
                     [("kafka", "noop"), ("kafka", "count"), ("kafka", "fields"), ("kafka", "parquet"),
                      ("pyconsumer", "noop"), ("pyconsumer", "count"), ("pyconsumer", "fields"),
                      ("pyconsumer", "parquet"), ("binary", "noop"), ("binary", "count"), ("binary", "parquet")]}
    assert not any(bench_spark.runs(ds, "binary", w) for ds in ("bytes", "json") for w in bench_spark.WORKLOADS[ds])
    assert bench_spark.runs("bytes", "arrow_mem", "agg") and not bench_spark.runs("json", "arrow_mem", "noop")
    # a peer whose connector Maven Central does not serve here is left out, the rest still runs
    bench_spark.UNAVAILABLE[("protobuf_typed", "kafka")] = "not served"
    try:
        assert not bench_spark.runs("protobuf_typed", "kafka", "noop")
        assert bench_spark.runs("protobuf_typed", "pyconsumer", "noop")
    finally:
        bench_spark.UNAVAILABLE.clear()


def test_a_spark_peer_left_out_is_named_in_its_table(suite: ModuleType) -> None:
    """bench_spark.py leaves format('kafka') + from_protobuf out where Maven Central serves no
    spark-protobuf: the protobuf_typed table says so, and no ratio to it is made up."""
    output = ("protobuf_typed: format('kafka') + from_protobuf left out: no spark-protobuf_2.13 "
              "could be fetched: 4.2.0: not found\n"
              "round 0 protobuf_typed pyconsumer noop     1,000,000 records    1.00 s     1,000 krec/s   CPU s: ...\n"
              "round 0 protobuf_typed binary noop         1,000,000 records    0.80 s     1,250 krec/s   CPU s: ...\n")
    (case,) = suite.spark_cases(output, "kafka")
    assert "format('kafka') + from_protobuf is not in this table: no spark-protobuf_2.13 could be " \
        "fetched: 4.2.0: not found" in case.notes
    assert case.ratio("pyconsumer noop", "kafka noop") is None
