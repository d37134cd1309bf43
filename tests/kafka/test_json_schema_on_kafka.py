"""JSON values read with the subject's JSON Schema from a real registry (Apicurio), on Apache Kafka:
confluent-kafka's JSONSerializer registers the schema and frames the values (magic 0 + id); the
consumer, given value.format=json and the registry but no schema, decodes them into the Arrow
types the JSON Schema maps to, row for row equal to the values written; a given DDL still wins."""
from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.testing import ApicurioRegistry, KafkaCluster, produce_json
from pyconsumer.values.schema import TIMESTAMP

pytest.importorskip("confluent_kafka.schema_registry.json_schema")

SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#", "title": "Order", "type": "object",
    "definitions": {"Line": {"type": "object", "properties": {
        "sku": {"type": "string"}, "qty": {"type": "integer"}}, "required": ["sku"]}},
    "properties": {
        "id": {"type": "integer"},
        "item": {"type": "string"},
        "price": {"type": ["number", "null"]},
        "paid": {"type": "boolean"},
        "at": {"type": "string", "format": "date-time"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "lines": {"type": "array", "items": {"$ref": "#/definitions/Line"}},
        "attrs": {"type": "object", "additionalProperties": {"type": "string"}},
    },
    "required": ["id", "item"],
}
ARROW = pa.struct([
    ("id", pa.int64()), ("item", pa.string()), ("price", pa.float64()), ("paid", pa.bool_()),
    ("at", TIMESTAMP), ("tags", pa.list_(pa.string())),
    ("lines", pa.list_(pa.struct([("sku", pa.string()), ("qty", pa.int64())]))),
    ("attrs", pa.map_(pa.string(), pa.string())),
])


def order(i: int) -> dict[str, Any]:
    out: dict[str, Any] = {"id": i, "item": f"item-{i}"}
    if i % 2:
        out.update(price=i / 4, paid=i % 3 == 0, at=f"2026-11-29T01:{i % 60:02d}:07.250Z",
                   tags=[f"t{i}", "x"], lines=[{"sku": f"s{i}", "qty": i}, {"sku": "z"}],
                   attrs={"k": str(i)})
    elif i % 4 == 0:
        out["price"] = None
    return out


def expected(value: dict[str, Any]) -> dict[str, Any]:
    """What decoding gives for ``value``: every field, absent ones null, times as datetimes."""
    out = {name: value.get(name) for name in ARROW.names}
    if out["at"] is not None:
        out["at"] = dt.datetime.fromisoformat(out["at"].replace("Z", "+00:00"))
    if out["lines"] is not None:
        out["lines"] = [{"sku": line["sku"], "qty": line.get("qty")} for line in out["lines"]]
    if out["attrs"] is not None:
        out["attrs"] = list(out["attrs"].items())
    return out


def read_values(kafka: KafkaCluster, topic: str, count: int, **settings: Any) -> pa.RecordBatch:
    consumer = KafkaConsumer(**kafka.client_settings(auto_offset_reset="earliest",
                                                      fetch_max_wait_ms=100, **settings))
    try:
        consumer.assign([TopicPartition(topic, 0)])
        batches: list[pa.RecordBatch] = []
        deadline = time.monotonic() + 60
        while sum(b.num_rows for b in batches) < count:
            assert time.monotonic() < deadline, "the records did not all arrive"
            batch = consumer.poll_arrow(500)
            if batch.num_rows:
                batches.append(batch)
        return pa.Table.from_batches(batches).combine_chunks().to_batches()[0]
    finally:
        consumer.close()


def test_values_decode_into_the_subjects_json_schema(
        kafka: KafkaCluster, make_kafka_topic: Callable[..., str], apicurio: ApicurioRegistry) -> None:
    topic = make_kafka_topic(1)
    values = [order(i) for i in range(30)]
    produce_json(kafka.bootstrap, topic, values, json.dumps(SCHEMA), apicurio.url, partition=0)
    batch = read_values(kafka, topic, len(values), value_format="json",
                        schema_registry_url=apicurio.url)
    assert batch.schema.field("value").type == ARROW
    assert batch.column("offset").to_pylist() == list(range(len(values)))
    assert batch.column("value").to_pylist() == [expected(v) for v in values]
    assert batch.column("_corrupt_record").null_count == len(values)

    # a given DDL still wins over the registry's schema
    given = read_values(kafka, topic, len(values), value_format="json",
                        schema_registry_url=apicurio.url, value_schema="id BIGINT, item STRING")
    assert given.schema.field("value").type == pa.struct([("id", pa.int64()), ("item", pa.string())])
    assert given.column("value").to_pylist() == [{"id": v["id"], "item": v["item"]} for v in values]
