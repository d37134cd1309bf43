"""Typed values through the ``pyconsumer`` Spark source on Apache Kafka, against Spark's own
Kafka source (``format("kafka")``) with ``from_json`` / spark-avro's ``from_avro`` on the same
topic: the same rows, the same DataFrame schema (``value`` typed, every other column as Spark's
Kafka source gives it), plus the bad-record modes end to end.

Avro records are written by confluent-kafka's AvroSerializer against a real registry (Apicurio,
one per module), two writer versions in one topic; the source reads them into the subject's
latest, fixed on the driver when the DataFrame is made. Spark's side strips the 5-byte framing
and calls from_avro per writer id with the latest as ``avroSchema``.

One deliberate difference, asserted where it shows: a bad JSON record is a null ``value`` here
(the issue's PERMISSIVE: the raw bytes in ``_corrupt_record``), where from_json gives a struct of
whatever fields it could read.
"""
from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pyconsumer.testing import ApicurioRegistry, KafkaCluster, TestRecord, produce, produce_avro
from pyconsumer.values.registry import SchemaRegistryClient

pytest.importorskip("confluent_kafka.schema_registry.avro")
# the fixture that adds spark-avro to the shared session (registered here under this name)
from tests.spark.test_values_avro_vs_spark import spark_avro as with_spark_avro  # noqa: E402,F401

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

BASE_TS = 1_700_000_000_000

ORDER_V1 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "item", "type": "string"},
    {"name": "price", "type": ["null", "double"], "default": None},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "status", "type": {"type": "enum", "name": "Status",
                                "symbols": ["NEW", "PAID", "SHIPPED"]}},
    {"name": "created", "type": {"type": "long", "logicalType": "timestamp-millis"}},
    {"name": "day", "type": {"type": "int", "logicalType": "date"}},
]}
#: v2: fields added with defaults (a reader of v2 fills them for v1 records), int promoted
ORDER_V2 = {**ORDER_V1, "fields": [
    *ORDER_V1["fields"],
    {"name": "qty", "type": "int", "default": 1},
    {"name": "note", "type": ["null", "string"], "default": None},
    {"name": "attrs", "type": {"type": "map", "values": "long"}, "default": {}},
]}
#: v3, registered after a DataFrame was made: that query keeps reading into v2
ORDER_V3 = {**ORDER_V2, "fields": [*ORDER_V2["fields"],
                                  {"name": "extra", "type": "string", "default": "x"}]}

JSON_DDL = "id BIGINT, name STRING, score DOUBLE, tags ARRAY<STRING>, at TIMESTAMP, " \
           "inner STRUCT<a: INT, b: BOOLEAN>"



def _ours(spark: Any, kafka: KafkaCluster, topic: str, **options: str) -> Any:
    reader = (spark.read.format("pyconsumer").option("kafka.bootstrap.servers", kafka.bootstrap)
              .option("subscribe", topic))
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def _sparks(spark: Any, kafka: KafkaCluster, topic: str) -> Any:
    return (spark.read.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap)
            .option("subscribe", topic).option("startingOffsets", "earliest").load())


def _rows(df: Any) -> list[dict[str, Any]]:
    return df.orderBy("partition", "offset").toArrow().to_pylist()


def _order(i: int, v2: bool) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "id": i * 7919 - 500, "item": f"item-{i}" * (i % 4), "price": None if i % 5 == 0 else i / 8,
        "tags": [f"t{j}" for j in range(i % 3)], "status": ["NEW", "PAID", "SHIPPED"][i % 3],
        "created": BASE_TS + i * 1001, "day": 19_000 + i,
    }
    if v2:
        rec.update(qty=i % 50, note=None if i % 2 else f"n{i}", attrs={f"a{i % 3}": i, "z": -i})
    return rec


def _avro_topic(kafka: KafkaCluster, make_kafka_topic: Callable[..., str],
                registry: ApicurioRegistry, partitions: int = 2) -> tuple[str, int]:
    """A topic of 120 v1 records, 120 v2 records and a tombstone, keyed; its record count."""
    topic = make_kafka_topic(partitions)
    v1 = [_order(i, False) for i in range(120)]
    v2 = [_order(i, True) for i in range(120, 240)]
    produce_avro(kafka.bootstrap, topic, v1, json.dumps(ORDER_V1), registry.url,
                 keys=[f"k{i}".encode() for i in range(120)])
    produce_avro(kafka.bootstrap, topic, [*v2, None], json.dumps(ORDER_V2), registry.url,
                 keys=[f"k{i}".encode() for i in range(120, 241)])
    return topic, 241


# ------------------------------------------------------------------------------- (a) Avro


@pytest.mark.usefixtures("with_spark_avro")
def test_avro_equals_spark_from_avro_on_the_same_topic(
        spark_kafka: Any, kafka: KafkaCluster,
        make_kafka_topic: Callable[..., str], apicurio: ApicurioRegistry) -> None:
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro

    topic, count = _avro_topic(kafka, make_kafka_topic, apicurio)
    client = SchemaRegistryClient(apicurio.url)
    v1, v2 = (client.version(f"{topic}-value", n) for n in (1, 2))
    assert v1.id != v2.id
    ours = _ours(spark_kafka, kafka, topic, valueFormat="avro",
                 **{"schema.registry.url": apicurio.url})

    # Spark's way: strip magic + id, decode each writer's rows with it into the latest (v2)
    raw = _sparks(spark_kafka, kafka, topic)
    wid = F.conv(F.hex(F.substring("value", 2, 4)), 16, 10).cast("int")
    body = F.expr("substring(value, 6)")
    reader = {"avroSchema": json.dumps(ORDER_V2), "mode": "PERMISSIVE"}
    value = (F.when(wid == v1.id, from_avro(body, v1.schema_text, reader))
             .when(wid == v2.id, from_avro(body, v2.schema_text, reader)))
    theirs = raw.select("key", value.alias("value"), "topic", "partition", "offset",
                        "timestamp", "timestampType")

    # one option moves a query over: the same schema, column for column (and the corrupt
    # record column, PERMISSIVE's)
    assert ours.schema.fieldNames() == [*theirs.schema.fieldNames(), "_corrupt_record"]
    typed = ours.drop("_corrupt_record")
    assert typed.schema.simpleString() == theirs.schema.simpleString()
    assert [f.dataType for f in typed.schema.fields] == [f.dataType for f in theirs.schema.fields]
    mine, spark_rows = _rows(ours), _rows(theirs)
    assert len(mine) == count
    assert [r.pop("_corrupt_record") for r in mine] == [None] * count
    assert [_unordered_maps(r) for r in mine] == [_unordered_maps(r) for r in spark_rows]
    # the v1 records did get v2's defaults, the tombstone stayed null
    by_key = {r["key"]: r["value"] for r in mine}
    assert by_key[b"k3"]["qty"] == 1 and by_key[b"k3"]["attrs"] == []
    assert by_key[b"k3"]["note"] is None and by_key[b"k3"]["tags"] == []
    assert by_key[b"k240"] is None
    assert by_key[b"k121"]["created"] == dt.datetime.fromtimestamp(
        (BASE_TS + 121 * 1001) / 1000, dt.timezone.utc)


def _unordered_maps(row: dict[str, Any]) -> dict[str, Any]:
    """Map entries sorted (Spark may hand a map out in hash order)."""
    if row["value"] is not None:
        row = {**row, "value": {**row["value"], "attrs": sorted(row["value"]["attrs"])}}
    return row


def test_avro_reader_is_fixed_when_the_dataframe_is_made(
        spark: Any, kafka: KafkaCluster, make_kafka_topic: Callable[..., str],
        apicurio: ApicurioRegistry) -> None:
    """A version registered after load() (and records written with it) is read into the
    version the DataFrame was typed with: every task decodes into that one schema."""
    topic, count = _avro_topic(kafka, make_kafka_topic, apicurio, partitions=1)
    df = _ours(spark, kafka, topic, valueFormat="avro", **{"schema.registry.url": apicurio.url})
    names = [f.name for f in df.schema["value"].dataType.fields]
    assert names[-3:] == ["qty", "note", "attrs"]
    produce_avro(kafka.bootstrap, topic, [{**_order(500, True), "extra": "new"}],
                 json.dumps(ORDER_V3), apicurio.url, keys=[b"v3"])
    assert SchemaRegistryClient(apicurio.url).latest(f"{topic}-value").version == 3
    rows = _rows(df)
    assert len(rows) == count + 1
    assert rows[-1]["key"] == b"v3"
    assert _unordered_maps(rows[-1])["value"] == {**_spark_order(500),
                                                  "attrs": [("a2", 500), ("z", -500)]}
    assert [f.name for f in df.schema["value"].dataType.fields] == names
    # a new DataFrame takes the new latest
    again = _ours(spark, kafka, topic, valueFormat="avro", **{"schema.registry.url": apicurio.url})
    assert again.schema["value"].dataType.fields[-1].name == "extra"


def _spark_order(i: int) -> dict[str, Any]:
    """_order(i, True) as Spark hands it back through Arrow."""
    rec = _order(i, True)
    rec["created"] = dt.datetime.fromtimestamp(rec["created"] / 1000, dt.timezone.utc)
    rec["day"] = dt.date(1970, 1, 1) + dt.timedelta(days=rec["day"])
    return rec


# ------------------------------------------------------------------------------- (b) JSON


def _json_records(n: int) -> tuple[list[TestRecord], set[int]]:
    """JSON values, some bad (truncated, wrong types, not JSON, an overflow), one null."""
    out, bad = [], set()
    for i in range(n):
        doc: dict[str, Any] = {"id": i, "name": f"n{i}", "score": i / 3, "tags": ["a", str(i)],
                               "at": f"2024-01-0{1 + i % 9}T0{i % 10}:00:00Z",
                               "inner": {"a": i, "b": i % 2 == 0}}
        if i % 7 == 0:
            del doc["inner"]                                   # missing: null, not bad
        if i % 11 == 0:
            doc["extra"] = [1, 2]                              # extra: ignored
        value: bytes | None = json.dumps(doc).encode()
        if i % 23 == 5:
            value = value[: len(value) // 2]                   # truncated
            bad.add(i)
        elif i % 23 == 9:
            value = json.dumps({**doc, "id": "seven"}).encode()  # a string for a BIGINT
            bad.add(i)
        elif i % 23 == 13:
            value = b"not json at all"
            bad.add(i)
        elif i % 23 == 17:
            value = json.dumps({**doc, "inner": {"a": 2**40}}).encode()  # INT overflow
            bad.add(i)
        elif i == 42:
            value = None                                       # a tombstone: null, not bad
        out.append(TestRecord(key=f"k{i}".encode(), value=value, partition=i % 2,
                              timestamp_ms=BASE_TS + i))
    return out, bad


def test_json_equals_spark_from_json_on_the_same_topic(
        spark_kafka: Any, kafka: KafkaCluster, make_kafka_topic: Callable[..., str]) -> None:
    from pyspark.sql import functions as F

    topic = make_kafka_topic(2)
    records, bad = _json_records(300)
    produce(kafka.bootstrap, topic, records)
    ours = _ours(spark_kafka, kafka, topic, valueFormat="json", valueSchema=JSON_DDL)
    raw = _sparks(spark_kafka, kafka, topic)
    theirs = raw.select("key", F.from_json(F.col("value").cast("string"), JSON_DDL).alias("value"),
                        "topic", "partition", "offset", "timestamp", "timestampType")
    # the line users write today, and ours: the same schema but the corrupt record column
    assert ours.schema.fieldNames() == [*theirs.schema.fieldNames(), "_corrupt_record"]
    assert ours.drop("_corrupt_record").schema == theirs.schema
    assert ours.schema["_corrupt_record"].dataType.simpleString() == "binary"

    # Spark marks its bad rows in a _corrupt_record field of the from_json schema
    marked = raw.select("partition", "offset", F.from_json(
        F.col("value").cast("string"), JSON_DDL + ", _corrupt_record STRING").alias("j"))
    spark_bad = {(r["partition"], r["offset"]): r["j"]["_corrupt_record"]
                 for r in _rows(marked) if r["j"] is not None and r["j"]["_corrupt_record"]}
    mine, spark_rows = _rows(ours), _rows(theirs)
    assert len(mine) == len(spark_rows) == 300
    our_bad = {}
    for m, s in zip(mine, spark_rows):
        where = (m["partition"], m["offset"])
        corrupt = m.pop("_corrupt_record")
        if corrupt is not None:
            our_bad[where] = corrupt
            assert m["value"] is None                  # deliberate: null, not a partial struct
            m["value"] = s["value"]
        assert m == s, where
    assert our_bad == {k: v.encode() for k, v in spark_bad.items()}
    want_bad = {records[i].value for i in bad}
    assert set(our_bad.values()) == want_bad and len(our_bad) == len(bad) > 40


def test_json_schema_as_struct_type_json(spark: Any, kafka: KafkaCluster,
                                         make_kafka_topic: Callable[..., str]) -> None:
    from pyspark.sql.types import StructType

    topic = make_kafka_topic(2)
    records, _ = _json_records(30)
    produce(kafka.bootstrap, topic, records)
    struct = StructType.fromDDL(JSON_DDL)
    by_json = _ours(spark, kafka, topic, valueFormat="json", valueSchema=struct.json())
    by_ddl = _ours(spark, kafka, topic, valueFormat="json", valueSchema=JSON_DDL)
    assert by_json.schema == by_ddl.schema
    assert _rows(by_json) == _rows(by_ddl)


# --------------------------------------------------------------------------- (c) the modes


def _avro_topic_with_bad_records(kafka: KafkaCluster, make_kafka_topic: Callable[..., str],
                                 registry: ApicurioRegistry) -> tuple[str, dict[int, bytes], int]:
    """One partition: good records, with bad ones at known offsets (bad magic, an unknown
    schema id, a truncated body, a short header). Returns the topic, offset -> raw bad value,
    and the record count."""
    topic = make_kafka_topic(1)
    good = produce_avro(kafka.bootstrap, topic, [_order(i, True) for i in range(60)],
                        json.dumps(ORDER_V2), registry.url, partition=0)
    sid = SchemaRegistryClient(registry.url).latest(f"{topic}-value").id
    assert sid is not None
    from pyconsumer.testing import produce as produce_raw
    import io

    import fastavro
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(ORDER_V2), _order(7, True))
    body = buf.getvalue()
    bad_values = [b"\x07" + sid.to_bytes(4, "big") + body,          # bad magic
                  b"\x00" + (987654).to_bytes(4, "big") + body,       # an id nobody registered
                  b"\x00" + sid.to_bytes(4, "big") + body[:9],        # truncated body
                  b"\x00\x00"]                                      # short header
    bad: dict[int, bytes] = {}
    for value in bad_values:
        (_, offset), = produce_raw(kafka.bootstrap, topic, [TestRecord(
            key=b"bad", value=value, partition=0, timestamp_ms=BASE_TS)])
        bad[offset] = value
    more = produce_avro(kafka.bootstrap, topic, [_order(i, True) for i in range(60, 90)],
                        json.dumps(ORDER_V2), registry.url, partition=0)
    assert len(good) + len(more) + len(bad) == 94
    return topic, bad, 94


def test_modes_end_to_end(spark: Any, kafka: KafkaCluster, make_kafka_topic: Callable[..., str],
                          apicurio: ApicurioRegistry) -> None:
    topic, bad, count = _avro_topic_with_bad_records(kafka, make_kafka_topic, apicurio)
    registry = {"schema.registry.url": apicurio.url}

    permissive = _rows(_ours(spark, kafka, topic, valueFormat="avro", **registry))
    assert len(permissive) == count
    corrupt = {r["offset"]: r["_corrupt_record"] for r in permissive if r["_corrupt_record"]}
    assert corrupt == bad                                   # the raw bytes, exactly
    assert all(r["value"] is None for r in permissive if r["offset"] in bad)
    good = [r for r in permissive if r["offset"] not in bad]
    assert [r["value"]["id"] for r in good] == [_order(i, True)["id"] for i in range(90)]

    named = _ours(spark, kafka, topic, valueFormat="avro", columnNameOfCorruptRecord="raw",
                  **registry)
    assert named.schema.fieldNames()[-1] == "raw"
    assert {r["offset"] for r in _rows(named) if r["raw"] is not None} == set(bad)

    dropped = _ours(spark, kafka, topic, valueFormat="avro", mode="DROPMALFORMED", **registry)
    assert "_corrupt_record" not in dropped.schema.fieldNames()
    rows = _rows(dropped)
    assert [r["offset"] for r in rows] == [r["offset"] for r in good]
    assert rows == [{k: v for k, v in r.items() if k != "_corrupt_record"} for r in good]

    failfast = _ours(spark, kafka, topic, valueFormat="avro", mode="failfast", **registry)
    first = min(bad)
    with pytest.raises(Exception, match=rf"topic {topic} partition 0 offset {first}: "):
        failfast.collect()
    # before the bad records, FAILFAST reads as the others do
    head = _ours(spark, kafka, topic, valueFormat="avro", mode="FAILFAST",
                 endingOffsets=json.dumps({topic: {"0": first}}), **registry)
    assert _rows(head) == [{k: v for k, v in r.items() if k != "_corrupt_record"}
                           for r in good if r["offset"] < first]


# ------------------------------------------------------------------------ (d) keyFormat=string


def test_key_format_string(spark: Any, kafka: KafkaCluster,
                           make_kafka_topic: Callable[..., str]) -> None:
    topic = make_kafka_topic(2)
    records = [TestRecord(key=f"clé-{i}".encode() if i % 9 else None, value=f"v{i}".encode(),
                          partition=i % 2, timestamp_ms=BASE_TS + i) for i in range(200)]
    records[50] = TestRecord(key=b"\xff\xfe bad utf-8", value=b"v", partition=0,
                             timestamp_ms=BASE_TS)
    delivered = produce(kafka.bootstrap, topic, records)
    df = _ours(spark, kafka, topic, keyFormat="string")
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
        ("key", "string"), ("value", "binary"), ("topic", "string"), ("partition", "int"),
        ("offset", "bigint"), ("timestamp", "timestamp"), ("timestampType", "int"),
        ("_corrupt_record_key", "binary")]
    want = sorted((p, o, r.key, r.value) for r, (p, o) in zip(records, delivered))
    rows = _rows(df)
    assert [(r["partition"], r["offset"], r["_corrupt_record_key"] or
             (None if r["key"] is None else r["key"].encode()), r["value"]) for r in rows] == want
    assert [r["_corrupt_record_key"] for r in rows if r["_corrupt_record_key"]] == \
        [b"\xff\xfe bad utf-8"]
    assert sum(r["key"] is None for r in rows) == sum(1 for i in range(200) if i % 9 == 0) + 1

    with_value = _ours(spark, kafka, topic, keyFormat="string", valueFormat="string",
                       mode="DROPMALFORMED", includeHeaders="true")
    kept = _rows(with_value)
    assert [(r["partition"], r["offset"], r["key"], r["value"]) for r in kept] == [
        (p, o, None if k is None else k.decode(), v.decode()) for p, o, k, v in want
        if k != b"\xff\xfe bad utf-8"]
    assert with_value.schema.fieldNames()[-1] == "headers"
    assert all(r["headers"] is None for r in kept)     # no headers were written


# ------------------------------------------------------------------------------- streaming


def test_streaming_json_available_now(spark: Any, kafka: KafkaCluster,
                                      make_kafka_topic: Callable[..., str], tmp_path: Path) -> None:
    topic = make_kafka_topic(2)
    records, bad = _json_records(120)
    produce(kafka.bootstrap, topic, records)
    out, ck = tmp_path / "out", tmp_path / "ck"
    stream = (spark.readStream.format("pyconsumer")
              .option("kafka.bootstrap.servers", kafka.bootstrap).option("subscribe", topic)
              .option("startingOffsets", "earliest").option("valueFormat", "json")
              .option("valueSchema", JSON_DDL).option("mode", "DROPMALFORMED").load())
    q = (stream.writeStream.format("parquet").option("path", str(out))
         .option("checkpointLocation", str(ck)).trigger(availableNow=True).start())
    q.awaitTermination(120)
    assert q.exception() is None, q.exception()
    rows = _rows(spark.read.parquet(str(out)))
    assert sorted(r["value"]["id"] for r in rows if r["value"] is not None) == \
        sorted(i for i in range(120) if i not in bad and i != 42)
    assert len(rows) == 120 - len(bad)


# ----------------------------------------------------------------------------- bad options


@pytest.mark.parametrize(("options", "message"), [
    ({"valueFormat": "xml"}, "Option 'valueFormat': must be one of binary, string, json, avro"),
    ({"valueFormat": "json"}, "Option 'valueSchema': valueFormat=json needs valueSchema"),
    ({"valueFormat": "json", "valueSchema": "a INTEGR"}, "Option 'valueSchema': is not a Spark DDL"),
    ({"valueFormat": "avro"}, "Option 'schema.registry.url': valueFormat=avro with Confluent"),
    ({"keyFormat": "string", "mode": "sloppy"}, "Option 'mode': must be PERMISSIVE, DROPMALFORMED"),
    ({"mode": "FAILFAST"}, "Option 'mode': applies only with valueFormat or keyFormat"),
])
def test_bad_options_fail_at_load_naming_the_option(spark: Any, options: dict[str, str],
                                                    message: str) -> None:
    reader = spark.read.format("pyconsumer").option("kafka.bootstrap.servers", "127.0.0.1:9") \
        .option("subscribe", "t")
    for k, v in options.items():
        reader = reader.option(k, v)
    with pytest.raises(Exception, match=message.replace("(", r"\(")):
        reader.load()
