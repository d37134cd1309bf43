"""Typed values through KafkaConsumer on Apache Kafka, written by confluent-kafka (the independent
writer: its AvroSerializer against a real registry, Apicurio, and its plain producer for JSON).

Exact records (partition, offset, key, typed value, headers, timestamp) in order per partition,
compared with the binary read of the same topic; two writer versions resolved into the
subject's latest; decode.threads 1 and 2 equal; all three bad-record modes, FAILFAST never
skipping; the GUID header variant and a registry outage on FakeSchemaRegistry (the outage
raises after the retries and moves no position: nothing is lost)."""
from __future__ import annotations

import datetime
import json
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.consumer.fetch import decode
from pyconsumer.metrics import find
from pyconsumer.testing import ApicurioRegistry, FakeSchemaRegistry, KafkaCluster, produce_avro
from pyconsumer.testing import TestRecord, produce
from pyconsumer.values import MalformedValueError
from pyconsumer.values.registry import SchemaRegistryUnavailableError

pytest.importorskip("confluent_kafka.schema_registry.avro")

V1: dict[str, Any] = {"type": "record", "name": "Order", "namespace": "shop", "fields": [
    {"name": "id", "type": "long"},
    {"name": "item", "type": "string"},
    {"name": "price", "type": ["null", "double"], "default": None}]}
# the next version: a field added with a default (v1 records read with v2 get it)
V2 = {**V1, "fields": [*V1["fields"], {"name": "note", "type": "string", "default": "-"}]}
ORDER = pa.struct([("id", pa.int64()), ("item", pa.string()), ("price", pa.float64()),
                   ("note", pa.string())])
COLS = ("partition", "offset", "key", "value", "timestamp", "headers")


def read_arrow(kafka: KafkaCluster, tps: list[TopicPartition], rows: int, timeout: float = 60.0,
               include_headers: bool = True, **settings: Any) -> tuple[list[pa.RecordBatch], KafkaConsumer]:
    """Every row of ``tps`` through poll_arrow() (the consumer is left open for more)."""
    c = KafkaConsumer(**kafka.client_settings(auto_offset_reset="earliest", fetch_max_wait_ms=100,
                                              **settings))
    c.assign(tps)
    out: list[pa.RecordBatch] = []
    deadline = time.monotonic() + timeout
    while sum(b.num_rows for b in out) < rows:
        assert time.monotonic() < deadline, f"read {sum(b.num_rows for b in out)} of {rows} rows"
        batch = c.poll_arrow(500, include_headers=include_headers)
        if batch.num_rows:
            out.append(batch)
    return out, c


def rows(batches: list[pa.RecordBatch], *names: str) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for b in batches:
        out += zip(*(b.column(n).to_pylist() for n in names))
    return sorted(out, key=lambda r: (r[0], r[1]))


def test_avro_by_a_real_registry_exact_records_and_threads_1_and_2(
        kafka: KafkaCluster, make_kafka_topic: Callable[..., str], apicurio: ApicurioRegistry,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(decode, "min_bytes", 0)        # partitions side by side however small
    topic = make_kafka_topic(2)
    tps = [TopicPartition(topic, p) for p in range(2)]
    v1 = [{"id": i, "item": f"item{i}", "price": None if i % 3 else i / 4} for i in range(40)]
    v2 = [{"id": 100 + i, "item": "x" * i, "price": 1.5, "note": f"n{i}"} for i in range(20)]
    produce_avro(kafka.bootstrap, topic, v1[:20], json.dumps(V1), apicurio.url, partition=0,
                 keys=[b"a%d" % i for i in range(20)])
    produce_avro(kafka.bootstrap, topic, [*v1[20:], None], json.dumps(V1), apicurio.url,
                 partition=1, keys=[b"b%d" % i for i in range(21)])
    produce_avro(kafka.bootstrap, topic, v2, json.dumps(V2), apicurio.url, partition=0,
                 keys=[b"c%d" % i for i in range(20)])
    total = 61
    binary, plain = read_arrow(kafka, tps, total)
    plain.close()
    want_values: dict[int, list[Any]] = {0: [{**r, "note": "-"} for r in v1[:20]] + v2,
                                         1: [{**r, "note": "-"} for r in v1[20:]] + [None]}
    # the binary read with its key decoded and its value replaced by the expected record
    expect = [(p, o, k.decode(), want_values[p][o], t, h)
              for p, o, k, _, t, h in rows(binary, *COLS)]
    assert [(p, o) for p, o, *_ in expect] == [(0, o) for o in range(40)] + [(1, o) for o in range(21)]

    got: dict[int, list[pa.RecordBatch]] = {}
    for threads in (1, 2):
        batches, c = read_arrow(kafka, tps, total, decode_threads=threads, value_format="avro",
                                key_format="string", schema_registry_url=apicurio.url)
        try:
            assert {b.schema.field("value").type for b in batches} == {ORDER}
            assert rows(batches, *COLS) == expect
            assert rows(batches, "partition", "offset", "_corrupt_record") == [
                (p, o, None) for p, o, *_ in expect]
            m = c.metrics()
            assert (find(m, "records-decoded-total"), find(m, "records-malformed-total"),
                    find(m, "schema-ids-seen")) == (float(total), 0.0, 2.0)
            assert c.poll_arrow(0, include_headers=True).schema == batches[0].schema  # empty: the same
        finally:
            c.close()
        got[threads] = batches
    assert pa.Table.from_batches(got[1]).sort_by([("partition", "ascending"), ("offset", "ascending")]).equals(
        pa.Table.from_batches(got[2]).sort_by([("partition", "ascending"), ("offset", "ascending")]))

    # poll(): the same plan, Python values
    with KafkaConsumer(**kafka.client_settings(auto_offset_reset="earliest", fetch_max_wait_ms=100,
                                               value_format="avro",
                                               schema_registry_url=apicurio.url)) as c:
        c.assign(tps)
        records: list[Any] = []
        deadline = time.monotonic() + 60
        while len(records) < total:
            assert time.monotonic() < deadline
            for part in c.poll(500).values():
                records += part
        assert sorted((r.partition, r.offset, r.key, r.value) for r in records if r.partition == 1)[-2:] == [
            (1, 19, b"b19", {**v1[39], "note": "-"}), (1, 20, b"b20", None)]
        assert [(r.offset, r.value) for r in records if r.partition == 0][38:] == [
            (38, v2[18]), (39, v2[19])]


def json_rows(kafka: KafkaCluster, topic: str) -> list[TestRecord]:
    recs = [TestRecord(key=b"k%d" % i, value=b'{"id": %d, "tags": ["t%d"]}' % (i, i), partition=0,
                       timestamp_ms=1_700_000_000_000 + i) for i in range(8)]
    recs[3].value = b'{"id": 3, "tags": '                   # cut short
    recs[6].value = b'{"id": "six"}'                        # not a BIGINT
    produce(kafka.bootstrap, topic, recs)
    return recs


def test_json_in_the_three_modes(kafka: KafkaCluster, kafka_topic: str) -> None:
    recs = json_rows(kafka, kafka_topic)
    tp = TopicPartition(kafka_topic, 0)
    typed: dict[str, Any] = {"value_format": "json", "value_schema": "id BIGINT, tags ARRAY<STRING>"}

    def good(i: int) -> dict[str, Any]:
        return {"id": i, "tags": [f"t{i}"]}

    batches, c = read_arrow(kafka, [tp], 8, include_headers=False, **typed)
    c.close()
    assert rows(batches, "offset", "value", "_corrupt_record") == [
        (i, None if i in (3, 6) else good(i), recs[i].value if i in (3, 6) else None)
        for i in range(8)]
    assert pa.Table.from_batches(batches).column("timestamp").to_pylist() == [
        datetime.datetime(2023, 11, 14, 22, 13, 20, i * 1000, tzinfo=datetime.timezone.utc)
        for i in range(8)]

    c = KafkaConsumer(**kafka.client_settings(auto_offset_reset="earliest", fetch_max_wait_ms=100,
                                              bad_records_mode="DROPMALFORMED", **typed))
    with c:
        c.assign([tp])
        got: list[pa.RecordBatch] = []
        deadline = time.monotonic() + 30
        while c.position(tp) < 8:
            assert time.monotonic() < deadline
            got.append(c.poll_arrow(500))
        assert rows(got, "offset", "value") == [(i, good(i)) for i in range(8) if i not in (3, 6)]
        assert "_corrupt_record" not in got[0].schema.names
        assert find(c.metrics(), "records-dropped-total") == 2.0

    with KafkaConsumer(**kafka.client_settings(auto_offset_reset="earliest", fetch_max_wait_ms=100,
                                               bad_records_mode="FAILFAST", **typed)) as c:
        c.assign([tp])
        seen: list[int] = []
        failures: list[int] = []
        deadline = time.monotonic() + 30
        while c.position(tp) < 8:
            assert time.monotonic() < deadline
            try:
                seen += [r.offset for r in c.poll(500).get(tp, [])]
            except MalformedValueError as e:
                assert (e.topic, e.partition) == (kafka_topic, 0)
                assert c.position(tp) == e.offset               # not moved past it
                failures.append(e.offset)
                if failures.count(e.offset) == 2:               # it raised again: go on past it
                    c.seek(tp, e.offset + 1)
        assert seen == [0, 1, 2, 4, 5, 7]                       # every other record, once
        assert failures == [3, 3, 6, 6]


def test_guid_headers_and_a_registry_outage_lose_nothing(kafka: KafkaCluster, kafka_topic: str) -> None:
    tp = TopicPartition(kafka_topic, 0)
    with FakeSchemaRegistry() as registry:
        orders = [{"id": i, "item": f"i{i}", "price": None} for i in range(5)]
        produce_avro(kafka.bootstrap, kafka_topic, orders, json.dumps(V1), registry.url, partition=0,
                     use_guid_header=True)
        settings = kafka.client_settings(
            auto_offset_reset="earliest", fetch_max_wait_ms=100, value_format="avro",
            value_schema=json.dumps(V2), schema_registry_url=registry.url,
            schema_registry_max_retries=1, schema_registry_retries_wait_ms=0,
            schema_registry_timeout=2)
        with KafkaConsumer(**settings) as c:
            c.assign([tp])
            registry.down()
            deadline = time.monotonic() + 30
            with pytest.raises(SchemaRegistryUnavailableError):
                while time.monotonic() < deadline:
                    c.poll_arrow(500)
            assert c.position(tp) == 0                          # nothing handed out, nothing lost
            with pytest.raises(SchemaRegistryUnavailableError):
                while time.monotonic() < deadline:
                    c.poll(500)
            assert c.position(tp) == 0
            registry.up()
            got: list[pa.RecordBatch] = []
            while c.position(tp) < 5:
                assert time.monotonic() < deadline
                got.append(c.poll_arrow(500))
            # the GUID came in a header (no prefix); headers not asked for: not in the batch
            assert "headers" not in got[0].schema.names
            assert rows(got, "partition", "offset", "value") == [
                (0, i, {**o, "note": "-"}) for i, o in enumerate(orders)]
            assert find(c.metrics(), "schema-ids-seen") == 1.0
