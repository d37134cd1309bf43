"""``pyconsumer ingest`` with typed values on real Apache Kafka: JSON written by confluent-kafka's
producer, Avro written by confluent-kafka's AvroSerializer against a real Schema Registry
(Apicurio), bad records written raw beside them.

Exact rows everywhere: the output (offsets, keys, typed values, timestamps) and, with
--bad-records, the rejected-records dataset (offset, raw key and value bytes, the reason naming
the problem); every record is in exactly one of the two, in a batch run and in a checkpointed
--once run (two queries). FAILFAST exits 1 naming topic, partition and offset; DROPMALFORMED
writes the good rows alone; a registry that does not answer fails before Spark starts, its
credentials never shown.
"""
from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pyconsumer.cli import main
from pyconsumer.console import human_bytes
from pyconsumer.testing import (
    ApicurioRegistry,
    KafkaCluster,
    TestRecord,
    free_port,
    produce,
    produce_avro,
)

from tests.kafka.test_spark_on_kafka import KEEP, oracle_rows

pytestmark = pytest.mark.spark

fastavro = pytest.importorskip("fastavro")
pytest.importorskip("confluent_kafka.schema_registry.avro")

TS = 1_700_000_000_000

#: a row as these tests compare it: (partition, offset, key, value, timestamp ms, timestampType)
Out = tuple[int, int, Any, Any, int, int]
#: a rejected row: (partition, offset, raw key, raw value, timestamp ms, timestampType, reason)
Rejected = tuple[int, int, bytes | None, bytes | None, int, int, str]



def _ms(ts: Any) -> int:
    import datetime as dt

    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=dt.timezone.utc)
    return (ts - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(milliseconds=1)


def _table(path: str) -> Any:
    import pyarrow.parquet as pq

    return pq.read_table(path)


def output_rows(path: str) -> list[Out]:
    return sorted((r["partition"], r["offset"], r["key"], r["value"], _ms(r["timestamp"]),
                   r["timestampType"]) for r in _table(path).to_pylist())


def rejected_rows(path: str) -> list[Rejected]:
    return sorted((r["partition"], r["offset"], r["key"], r["value"], _ms(r["timestamp"]),
                   r["timestampType"], r["reason"]) for r in _table(path).to_pylist())


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ------------------------------------------------------------------------------------ JSON

DDL = "id long, item string, price double"
#: (partition, key, value, the decoded value or the reason it is rejected)
JSON_RECORDS: list[tuple[int, bytes | None, bytes | None, Any]] = [
    (0, b"k0", b'{"id": 1, "item": "apple", "price": 0.5}', {"id": 1, "item": "apple", "price": 0.5}),
    (0, b"k1", b'{"id": "two", "item": "pear"}',
     "value: field id: expected an integer for BIGINT, got 'two'"),
    (0, None, None, None),                                          # a tombstone: a null value
    (0, b"k3", b'{"id": 3, "item": "fig", "extra": true}', {"id": 3, "item": "fig", "price": None}),
    (0, b"\xff", b'{"id": 4}', "key: invalid UTF-8 at byte 0: invalid start byte"),
    (1, b"k5", b"not json", "value: not valid JSON: Expecting value (character 0)"),
    (1, b"k6", b'{"id": 6, "item": "kiwi", "price": 2}', {"id": 6, "item": "kiwi", "price": 2.0}),
    (1, b"k7", b'{"id": 7, "item": "lime"',
     "value: not valid JSON: Expecting ',' delimiter (character 24)"),
    (1, b"k8", b"", None),                                          # empty: a null value too
]


def _json_topic(kafka: KafkaCluster, make_topic: Callable[..., str]) -> tuple[str, list[Out],
                                                                            list[Rejected]]:
    topic = make_topic(2, config=KEEP)
    records = [TestRecord(key=k, value=v, partition=p, timestamp_ms=TS + i)
               for i, (p, k, v, _) in enumerate(JSON_RECORDS)]
    delivered = produce(kafka.bootstrap_servers, topic, records)
    good: list[Out] = []
    bad: list[Rejected] = []
    for (p, key, value, want), (partition, offset), rec in zip(JSON_RECORDS, delivered, records):
        assert partition == p and rec.timestamp_ms is not None
        if isinstance(want, str):
            bad.append((p, offset, key, value, rec.timestamp_ms, 0, want))
        else:
            good.append((p, offset, None if key is None else key.decode(), want,
                         rec.timestamp_ms, 0))
    return topic, sorted(good), sorted(bad)


def test_json_good_rows_to_the_output_and_rejected_ones_apart(
        spark: Any, kafka: KafkaCluster, make_kafka_topic: Callable[..., str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Batch and --once: the output holds the decoded rows (string key, struct value) and no
    corrupt or reason column; the rejected dataset the others, raw, with the reason; the
    summary counts both per partition. A second --once run adds nothing to either."""
    topic, good, bad = _json_topic(kafka, make_kafka_topic)
    (tmp_path / "schema.ddl").write_text(DDL + "\n")
    flags = ["--value-format", "json", "--value-schema", f"@{tmp_path / 'schema.ddl'}",
             "--key-format", "STRING"]
    out, rejected = str(tmp_path / "out"), str(tmp_path / "bad")
    code, stdout, stderr = _run(["ingest", "-b", kafka.bootstrap_servers, "-t", topic,
                                 "--output", out, "--bad-records", rejected, *flags], capsys)
    assert code == 0, stderr
    assert output_rows(out) == good
    assert _table(out).column_names == ["key", "value", "topic", "partition", "offset",
                                        "timestamp", "timestampType"]
    assert str(_table(out).schema.field("value").type) == \
        "struct<id: int64, item: string, price: double>"
    assert rejected_rows(rejected) == bad
    assert _table(rejected).column_names == ["topic", "partition", "offset", "timestamp",
                                             "timestampType", "key", "value", "reason"]
    assert set(_table(rejected).column("topic").to_pylist()) == {topic}
    assert re.search(rf"{topic}\s+0\s+0-3\s+3\s", stdout), stdout      # offsets 0, 2, 3
    assert re.search(rf"{topic}\s+1\s+1-3\s+2\s", stdout), stdout      # offsets 1, 3
    assert "  5 good and 4 rejected records (" in stdout, stdout
    assert re.search(rf"{topic}\s+0\s+1-4\s+2\n", stdout), stdout      # rejected 1, 4
    assert re.search(rf"{topic}\s+1\s+0-2\s+2(\n|$)", stdout), stdout  # rejected 0, 2
    # the bytes of the good records as read (the value decoded into a struct counts its JSON)
    good_bytes = sum(len(k or b"") + len(v or b"") for _, k, v, want in JSON_RECORDS
                     if not isinstance(want, str))
    assert f"  5 records, {human_bytes(good_bytes)} (key + value) in " in stdout, stdout

    stream_out, stream_bad, ck = (str(tmp_path / n) for n in ("s-out", "s-bad", "ck"))
    args = ["ingest", "-b", kafka.bootstrap_servers, "-t", topic, "--output", stream_out,
            "--bad-records", stream_bad, "--checkpoint", ck, "--once", *flags]
    code, stdout, stderr = _run(args, capsys)
    assert code == 0, stderr
    assert output_rows(stream_out) == good
    assert rejected_rows(stream_bad) == bad
    assert "  5 good and 4 rejected records (" in stdout, stdout
    assert (tmp_path / "ck" / "rejected" / "offsets").is_dir()     # the second query's own
    code, stdout, stderr = _run(args, capsys)
    assert code == 0, stderr
    assert "  0 good and 0 rejected records (0 Parquet files added to " in stdout, stdout
    assert output_rows(stream_out) == good and rejected_rows(stream_bad) == bad


def test_json_failfast_and_dropmalformed(spark: Any, kafka: KafkaCluster,
                                         make_kafka_topic: Callable[..., str], tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    topic, good, _ = _json_topic(kafka, make_kafka_topic)
    base = ["ingest", "-b", kafka.bootstrap_servers, "-t", topic, "--value-format", "json",
            "--value-schema", DDL, "--key-format", "string"]
    code, stdout, stderr = _run([*base, "--output", str(tmp_path / "ff"), "--mode", "failfast"],
                                capsys)
    assert code == 1 and stdout == ""
    # the first bad record of whichever partition's task failed first (partition 0's first
    # bad value comes before its bad key)
    assert re.search(rf"^pyconsumer ingest: MalformedValueError: topic {topic} partition "
                     r"(0 offset 1: field id: expected an integer for BIGINT, got 'two'"
                     r"|1 offset 0: not valid JSON: Expecting value \(character 0\))$",
                     stderr, re.M), stderr
    assert "Traceback" not in stderr
    assert not (tmp_path / "ff").exists()          # the folder it made is removed: no data

    code, stdout, stderr = _run([*base, "--output", str(tmp_path / "drop"), "--mode",
                                 "DROPMALFORMED"], capsys)
    assert code == 0, stderr
    assert output_rows(str(tmp_path / "drop")) == good
    assert re.search(r"total\s+5\s", stdout), stdout
    assert "  5 good and 4 rejected records (left out: --mode DROPMALFORMED)" in stdout, stdout


# ------------------------------------------------------------------------------------ Avro

ORDER = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "item", "type": "string"},
    {"name": "price", "type": ["null", "double"], "default": None}]}
ORDERS = [{"id": 1, "item": "apple", "price": 0.5},
          {"id": 2, "item": "pear", "price": None},
          {"id": -3, "item": "fig" * 40, "price": -1e300}]


def _body(record: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(ORDER), record)
    return out.getvalue()


def test_avro_from_the_registry_with_bad_records(
        spark: Any, kafka: KafkaCluster, make_kafka_topic: Callable[..., str],
        apicurio: ApicurioRegistry, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """confluent-kafka's AvroSerializer writes three orders and a tombstone (the reader: the
    subject's latest); then raw values: an unknown schema id, a bad magic byte, a header cut
    short, a body cut short. Output and rejected rows exact; FAILFAST names the first bad
    offset."""
    topic = make_kafka_topic(1, config=KEEP)
    bootstrap = kafka.bootstrap_servers
    delivered = produce_avro(bootstrap, topic, [*ORDERS, None], json.dumps(ORDER), apicurio.url,
                             partition=0, keys=[b"k1", b"k2", None, b"k4"])
    assert delivered == [(0, 0), (0, 1), (0, 2), (0, 3)]
    from pyconsumer.values.registry import SchemaRegistryClient

    schema_id = SchemaRegistryClient(apicurio.url).latest(f"{topic}-value").id
    assert schema_id is not None and schema_id != 999_999
    framed = b"\x00" + schema_id.to_bytes(4, "big")
    raw = [(b"u", b"\x00" + (999_999).to_bytes(4, "big") + _body(ORDERS[0])),
           (b"m", b"\x07garbage"), (None, b"\x00\x00"), (b"t", framed + _body(ORDERS[1])[:3])]
    produce(bootstrap, topic, [TestRecord(key=k, value=v, partition=0, timestamp_ms=TS + i)
                               for i, (k, v) in enumerate(raw)])
    oracle = oracle_rows(bootstrap, topic, 1, headers=False)
    assert [r[2] for r in oracle] == list(range(8))
    good: list[Out] = [(0, r[2], r[3], value, r[5], r[6])
                       for r, value in zip(oracle[:4], [*ORDERS, None])]
    reasons = ["value: unknown schema id 999999 (",
               "value: bad magic byte 0x07 (Confluent framing has 0x00 or 0x01)",
               "value: value of 2 bytes is shorter than its Confluent header",
               "value: truncated value at byte 7"]
    out, rejected = str(tmp_path / "out"), str(tmp_path / "bad")
    flags = ["--value-format", "avro", "--schema-registry", apicurio.url]
    code, stdout, stderr = _run(["ingest", "-b", bootstrap, "-t", topic, "--output", out,
                                 "--bad-records", rejected, *flags], capsys)
    assert code == 0, stderr
    assert output_rows(out) == good
    got = rejected_rows(rejected)
    assert [g[:6] for g in got] == [(0, r[2], r[3], r[4], r[5], r[6]) for r in oracle[4:]]
    assert got[0][6].startswith(reasons[0]) and [g[6] for g in got[1:]] == reasons[1:], got
    assert "  4 good and 4 rejected records (" in stdout, stdout

    code, stdout, stderr = _run(["ingest", "-b", bootstrap, "-t", topic, "--output",
                                 str(tmp_path / "ff"), "--mode", "FAILFAST", *flags], capsys)
    assert code == 1 and stdout == ""
    assert re.search(rf"^pyconsumer ingest: MalformedValueError: topic {topic} partition 0 "
                     r"offset 4: unknown schema id 999999 ", stderr, re.M), stderr


def test_a_registry_that_does_not_answer_fails_before_spark(
        kafka: KafkaCluster, make_kafka_topic: Callable[..., str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Avro without --value-schema asks the registry for the topic's latest schema before
    Spark starts: exit 1 naming the registry by its URL alone; the password in the URL and the
    one given with --schema-registry-auth (from a file) appear nowhere."""
    topic = make_kafka_topic(1)
    port = free_port()
    secret = tmp_path / "auth"
    secret.write_text("alice:s3cret-a\n")
    code, stdout, stderr = _run([
        "ingest", "-b", kafka.bootstrap_servers, "-t", topic, "--output", str(tmp_path / "o"),
        "--value-format", "avro", "--schema-registry", f"http://127.0.0.1:{port}",
        "--schema-registry-auth", f"@{secret}", "-o", "schema.registry.max.retries=1",
        "-o", "schema.registry.retries.wait.ms=10"], capsys)
    assert code == 1 and stdout == ""
    assert stderr.startswith(f"pyconsumer ingest: --schema-registry http://127.0.0.1:{port}: "), \
        stderr
    assert "s3cret" not in stderr and "starting Spark" not in stderr
    assert not (tmp_path / "o").exists()
    code, stdout, stderr = _run([
        "ingest", "-b", kafka.bootstrap_servers, "-t", topic, "--output", str(tmp_path / "o"),
        "--value-format", "avro", "--schema-registry", f"http://bob:s3cret-b@127.0.0.1:{port}",
        "-o", "schema.registry.max.retries=0"], capsys)
    assert code == 1 and "s3cret" not in stderr, stderr
    assert stderr.startswith(f"pyconsumer ingest: --schema-registry http://127.0.0.1:{port}: "), \
        stderr


# ------------------------------------------------------------------------------------ Protobuf


def _protobuf_registered() -> bool:
    from pyconsumer.values.formats import FORMATS
    return "protobuf" in FORMATS


def _utc_created(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """A decoded Order as compared: maps by key, the nested timestamp in UTC."""
    import datetime as dt

    if value is None:
        return None
    out = {k: sorted(v) if k in ("counts", "prices") and v is not None else v for k, v in value.items()}
    created = out["created"]
    if created is not None:
        out["created"] = (created.replace(tzinfo=dt.timezone.utc) if created.tzinfo is None
                          else created.astimezone(dt.timezone.utc))
    return out


@pytest.mark.skipif(not _protobuf_registered(), reason="the protobuf value format is not registered")
def test_protobuf_from_the_registry_into_delta_and_from_a_descriptor_file(
        spark: Any, kafka: KafkaCluster, make_kafka_topic: Callable[..., str],
        apicurio: ApicurioRegistry, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """confluent-kafka's ProtobufSerializer writes 45 Orders (a schema over two files, message
    index [1]) and a tombstone into two partitions, then a body cut short: ``ingest
    --value-format protobuf`` lands them from the registry in a Delta table (read back by
    deltalake; DROPMALFORMED leaves the bad record out), and from the descriptor set file into
    Parquet (read back by pyarrow) with the bad record apart, every value equal to the protobuf
    runtime's own parse of what was sent."""
    pytest.importorskip("grpc_tools")
    pytest.importorskip("confluent_kafka.schema_registry.protobuf")
    deltalake = pytest.importorskip("deltalake")
    from pyconsumer.testing import compile_protos, message_classes, produce_protobuf
    from tests.protodata import MESSAGE, PROTOS, orders, spark_row

    desc = tmp_path / "shop.desc"
    classes = message_classes(compile_protos(PROTOS, out=desc))
    topic = make_kafka_topic(2, config=KEEP)
    bootstrap = kafka.bootstrap_servers
    sent = orders(classes, 45)
    produce_protobuf(bootstrap, topic, sent[:25], apicurio.url, partition=0,
                     keys=[b"o%d" % i for i in range(25)])
    produce_protobuf(bootstrap, topic, [*sent[25:], None], apicurio.url, partition=1,
                     keys=[b"o%d" % i for i in range(25, 46)], message_type=classes[MESSAGE])
    oracle = oracle_rows(bootstrap, topic, 2, headers=False)
    framing = oracle[0][4][:7]
    cut = framing + sent[3].SerializeToString()[:-2]
    produce(bootstrap, topic, [TestRecord(key=b"cut", value=cut, partition=1, timestamp_ms=TS)])
    oracle = oracle_rows(bootstrap, topic, 2, headers=False)
    assert len(oracle) == 47
    good = [(r[1], r[2], r[3].decode(),
             None if r[4] is None else spark_row(classes[MESSAGE].FromString(r[4][7:])), r[5], r[6])
            for r in oracle if r[3] != b"cut"]
    assert [g[3] for g in good if g[3] is not None] == [spark_row(m) for m in sent[:25]] + \
        [spark_row(m) for m in sent[25:]]
    bad_offset = next(r[2] for r in oracle if r[3] == b"cut")

    table, rejected = str(tmp_path / "delta"), str(tmp_path / "bad")
    code, stdout, stderr = _run(["ingest", "-b", bootstrap, "-t", topic, "--output", table,
                                 "--table-format", "delta", "--value-format", "protobuf",
                                 "--schema-registry", apicurio.url, "--key-format", "string",
                                 "--value-protobuf-message", MESSAGE, "--mode", "DROPMALFORMED"],
                                capsys)
    assert code == 0, stderr
    landed = sorted((r["partition"], r["offset"], r["key"], _utc_created(r["value"]),
                     _ms(r["timestamp"]), r["timestampType"])
                    for r in deltalake.DeltaTable(table).to_pyarrow_table().to_pylist())
    assert landed == sorted(good)

    out = str(tmp_path / "parquet")
    code, stdout, stderr = _run(["ingest", "-b", bootstrap, "-t", topic, "--output", out,
                                 "--value-format", "protobuf", "--key-format", "string",
                                 "--value-protobuf-descriptor-file", str(desc),
                                 "--value-protobuf-message", MESSAGE, "--bad-records", rejected],
                                capsys)
    assert code == 0, stderr
    assert sorted((p, o, k, _utc_created(v), t, tt) for p, o, k, v, t, tt in output_rows(out)) == \
        sorted(good)
    got = rejected_rows(rejected)
    assert [g[:6] for g in got] == [(1, bad_offset, b"cut", cut, TS, 0)]
    assert got[0][6].startswith("value: "), got
