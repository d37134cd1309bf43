"""Protobuf values through KafkaConsumer on Apache Kafka, written by confluent-kafka's
ProtobufSerializer into a real registry (Apicurio), read back against the protobuf runtime's own
parse of every record (tests/protodata.spark_row: the values Spark's ``from_protobuf`` gives).

The schema spans two files (an import, registered as a reference) with nested messages, maps,
repeated fields, a oneof, enums, Timestamp and wrappers; the message is the file's second (index
array ``[1]``: the message the records name, unless ``value.protobuf.message`` names one). Exact
records (partition, offset, key, typed value, timestamp, headers) in order per partition, the
schema from the registry or from a descriptor set file, decode threads 1 and 2,
Spark's ``enums.as.ints`` / ``emit.default.values`` mapped, and bad framing or bodies in the three
modes (FAILFAST names the offset and skips nothing).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.consumer.fetch import decode
from pyconsumer.testing import ApicurioRegistry, KafkaCluster, TestRecord, produce, produce_protobuf
from pyconsumer.values import MalformedValueError
from pyconsumer.values.formats import FORMATS
from tests.kafka.test_typed_consumer_on_kafka import read_arrow, rows
from tests.protodata import MESSAGE, PROTOS, orders, spark_row

pytest.importorskip("grpc_tools")
pytest.importorskip("confluent_kafka.schema_registry.protobuf")

pytestmark = [pytest.mark.kafka]

if "protobuf" not in FORMATS:
    pytest.skip("the protobuf value format is not registered (pyconsumer.values.formats)",
                allow_module_level=True)

COLS = ("partition", "offset", "key", "value", "timestamp", "headers")
MAPS = ("counts", "prices")


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """The runtime classes of tests/protodata's schema, and its descriptor set file."""
    from pyconsumer.testing import compile_protos, message_classes
    path = tmp_path_factory.mktemp("proto") / "shop.desc"
    return message_classes(compile_protos(PROTOS, out=path)), path


def _sorted_maps(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """Map entries by key: the wire keeps the writer's order, the oracle sorts."""
    if value is None:
        return None
    return {k: sorted(v) if k in MAPS and v is not None else v for k, v in value.items()}


def _topic(kafka: KafkaCluster, make_kafka_topic: Callable[..., str], registry_url: str,
           classes: dict[str, Any]) -> tuple[str, list[Any]]:
    """2 partitions: 60 Orders keyed a0.. in 0, 40 keyed b0.. and a tombstone in 1."""
    topic = make_kafka_topic(2)
    first, second = orders(classes, 60), orders(classes, 40, start=60)
    produce_protobuf(kafka.bootstrap, topic, first, registry_url, partition=0,
                     keys=[b"a%d" % i for i in range(60)])
    produce_protobuf(kafka.bootstrap, topic, [*second, None], registry_url, partition=1,
                     keys=[b"b%d" % i for i in range(41)], message_type=classes[MESSAGE])
    return topic, [*first, *second]


def _expected(binary: list[pa.RecordBatch], classes: dict[str, Any], produced: list[Any],
              **spark_options: bool) -> list[tuple[Any, ...]]:
    """The binary read with each value parsed by the protobuf runtime (after the 7 framing bytes:
    magic, id, index array [1]) in from_protobuf's shape; each parse is also the message sent."""
    out = []
    for p, o, k, v, t, h in rows(binary, *COLS):
        if v is None:
            out.append((p, o, k, None, t, h))
            continue
        assert v[0] == 0 and v[5:7] == b"\x02\x02"
        parsed = classes[MESSAGE].FromString(v[7:])
        assert parsed == produced[o if p == 0 else 60 + o]
        out.append((p, o, k, spark_row(parsed, **spark_options), t, h))
    return out


def _typed(batches: list[pa.RecordBatch]) -> list[tuple[Any, ...]]:
    return [(p, o, k, _sorted_maps(v), t, h) for p, o, k, v, t, h in rows(batches, *COLS)]


@pytest.mark.parametrize("message", [None, MESSAGE], ids=["message-by-indexes", "message-named"])
def test_protobuf_by_a_real_registry_equals_the_runtime_record_for_record(
        kafka: KafkaCluster, make_kafka_topic: Callable[..., str], apicurio: ApicurioRegistry,
        shop: tuple[dict[str, Any], Path], monkeypatch: pytest.MonkeyPatch, message: str | None) -> None:
    monkeypatch.setattr(decode, "min_bytes", 0)        # partitions side by side however small
    classes, _ = shop
    topic, produced = _topic(kafka, make_kafka_topic, apicurio.url, classes)
    tps = [TopicPartition(topic, p) for p in range(2)]
    total = 101
    binary, plain = read_arrow(kafka, tps, total)
    plain.close()
    expect = _expected(binary, classes, produced)
    assert [(p, o) for p, o, *_ in expect] == [(0, o) for o in range(60)] + [(1, o) for o in range(41)]

    # the message: the one the record's indexes name ([1]: Order, not the file's first), or
    # the one named by value.protobuf.message
    named = {} if message is None else {"value_protobuf_message": message}
    got: dict[int, pa.Table] = {}
    for threads in (1, 2):
        batches, c = read_arrow(kafka, tps, total, decode_threads=threads, value_format="protobuf",
                                schema_registry_url=apicurio.url, **named)
        try:
            value_type = batches[0].schema.field("value").type
            assert {b.schema.field("value").type for b in batches} == {value_type}
            assert _typed(batches) == expect
            assert rows(batches, "partition", "offset", "_corrupt_record") == [
                (p, o, None) for p, o, *_ in expect]
        finally:
            c.close()
        got[threads] = pa.Table.from_batches(batches).sort_by(
            [("partition", "ascending"), ("offset", "ascending")])
    assert got[1].equals(got[2])

    # the types Spark's from_protobuf gives the fields (the Spark test compares the whole type)
    t = got[1].schema.field("value").type
    kinds = {t.field(i).name: t.field(i).type for i in range(t.num_fields)}
    assert (kinds["id"], kinds["item"], kinds["status"], kinds["channel"]) == (
        pa.int64(), pa.string(), pa.string(), pa.string())
    assert kinds["created"] == pa.timestamp("us", tz="UTC")
    assert kinds["tags"].value_type == pa.string() and pa.types.is_list(kinds["tags"])
    assert pa.types.is_map(kinds["counts"]) and kinds["counts"].key_type == pa.string()
    assert (kinds["weight"], kinds["big"], kinds["f32"], kinds["blob"]) == (
        pa.float32(), pa.int64(), pa.int32(), pa.binary())


def test_protobuf_from_a_descriptor_file_and_spark_options(
        kafka: KafkaCluster, make_kafka_topic: Callable[..., str], apicurio: ApicurioRegistry,
        shop: tuple[dict[str, Any], Path]) -> None:
    classes, desc = shop
    topic, produced = _topic(kafka, make_kafka_topic, apicurio.url, classes)
    tps = [TopicPartition(topic, p) for p in range(2)]
    binary, plain = read_arrow(kafka, tps, 101)
    plain.close()
    by_file = {"value_format": "protobuf", "value_protobuf_descriptor_file": str(desc),
               "value_protobuf_message": MESSAGE}
    batches, c = read_arrow(kafka, tps, 101, **by_file)
    c.close()
    assert _typed(batches) == _expected(binary, classes, produced)

    batches, c = read_arrow(kafka, tps, 101, value_protobuf_enums_as_ints=True,
                            value_protobuf_emit_default_values=True, **by_file)
    c.close()
    assert _typed(batches) == _expected(binary, classes, produced, enums_as_ints=True,
                                        emit_default_values=True)


def test_bad_protobuf_records_in_the_three_modes(
        kafka: KafkaCluster, kafka_topic: str, apicurio: ApicurioRegistry,
        shop: tuple[dict[str, Any], Path]) -> None:
    classes, _ = shop
    good = orders(classes, 6, start=1)
    produce_protobuf(kafka.bootstrap, kafka_topic, good[:3], apicurio.url, partition=0)
    tp = TopicPartition(kafka_topic, 0)
    first, plain = read_arrow(kafka, [tp], 3)
    plain.close()
    framed = first[0].column("value")[0].as_py()
    prefix = framed[:7]
    body = good[0].SerializeToString()
    bad = [
        prefix + body[:-3],                   # 3: the body cut short
        prefix[:5] + b"\x02\x0a" + body,      # 4: message index 5: no such message in the file
        b"\x00\x00\x01\x86\xa0\x00" + body,   # 5: schema id 100000: not in the registry
        prefix + b"\x0a\xff\xff\xff\xff\x0f",  # 6: a length past the end
    ]
    from google.protobuf.message import DecodeError
    for cut in (bad[0], bad[3]):                # the runtime refuses those bodies too
        with pytest.raises(DecodeError):
            classes[MESSAGE].FromString(cut[7:])
    produce(kafka.bootstrap, kafka_topic, [TestRecord(value=v, partition=0) for v in bad])
    produce_protobuf(kafka.bootstrap, kafka_topic, good[3:], apicurio.url, partition=0)
    expect = [spark_row(m) for m in good]
    typed = {"value_format": "protobuf", "schema_registry_url": apicurio.url,
             "value_protobuf_message": MESSAGE}

    batches, c = read_arrow(kafka, [tp], 10, include_headers=False, **typed)
    c.close()
    values = dict(rows(batches, "offset", "value"))
    corrupt = dict(rows(batches, "offset", "_corrupt_record"))
    assert [_sorted_maps(values[o]) for o in (0, 1, 2, 7, 8, 9)] == expect
    assert [values[o] for o in (3, 4, 5, 6)] == [None] * 4           # never a half-read struct
    assert [corrupt[o] for o in range(10)] == [None] * 3 + bad + [None] * 3

    batches, c = read_arrow(kafka, [tp], 6, include_headers=False, bad_records_mode="DROPMALFORMED",
                            **typed)
    c.close()
    assert [o for o, _ in rows(batches, "offset", "partition")] == [0, 1, 2, 7, 8, 9]

    with KafkaConsumer(**kafka.client_settings(auto_offset_reset="earliest", fetch_max_wait_ms=100,
                                               bad_records_mode="FAILFAST", **typed)) as c:
        c.assign([tp])
        seen: list[int] = []
        failures: list[int] = []
        deadline = time.monotonic() + 60
        while c.position(tp) < 10:
            assert time.monotonic() < deadline
            try:
                seen += [r.offset for r in c.poll(500).get(tp, [])]
            except MalformedValueError as e:
                assert (e.topic, e.partition) == (kafka_topic, 0)
                assert f"topic {kafka_topic} partition 0 offset {e.offset}" in str(e)
                assert c.position(tp) == e.offset               # not moved past it
                failures.append(e.offset)
                c.seek(tp, e.offset + 1)
        assert seen == [0, 1, 2, 7, 8, 9]                       # every good record, once
        assert failures == [3, 4, 5, 6]


def test_protobuf_with_the_schema_guid_in_a_header(kafka: KafkaCluster, kafka_topic: str,
                                                   shop: tuple[dict[str, Any], Path]) -> None:
    """confluent-kafka's header variant: ``__value_schema_id`` is 0x01 + the GUID + the
    message-index array, the value the bare message (FakeSchemaRegistry: Apicurio serves no
    GUIDs); each record equals the runtime's parse."""
    from pyconsumer.testing import FakeSchemaRegistry

    classes, _ = shop
    sent = orders(classes, 12, start=3)
    tp = TopicPartition(kafka_topic, 0)
    with FakeSchemaRegistry() as registry:
        produce_protobuf(kafka.bootstrap, kafka_topic, sent, registry.url, partition=0,
                         use_guid_header=True)
        binary, plain = read_arrow(kafka, [tp], 12)
        plain.close()
        for headers in (h for b in binary for h in b.column("headers").to_pylist()):
            assert [h["key"] for h in headers] == ["__value_schema_id"]
            assert headers[0]["value"][0] == 1 and headers[0]["value"][17:] == b"\x02\x02"
        assert [v for b in binary for v in b.column("value").to_pylist()] == [
            m.SerializeToString() for m in sent]
        batches, c = read_arrow(kafka, [tp], 12, include_headers=False, value_format="protobuf",
                                schema_registry_url=registry.url, value_protobuf_message=MESSAGE)
        c.close()
    assert [(o, _sorted_maps(v)) for o, v in rows(batches, "offset", "value")] == [
        (i, spark_row(m)) for i, m in enumerate(sent)]
    assert [r for _, r in rows(batches, "offset", "_corrupt_record")] == [None] * 12
