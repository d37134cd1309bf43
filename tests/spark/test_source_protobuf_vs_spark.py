"""Protobuf values through the ``pyconsumer`` Spark source on Apache Kafka, against Spark's own
Kafka source (``format("kafka")``) on the same topic: with spark-protobuf's ``from_protobuf``
(Maven Central, PySpark's version; Confluent framing skipped with ``substring``) the same
DataFrame schema and the same rows; and always, the bytes Spark's own source reads parsed by the
protobuf runtime (tests/protodata.spark_row), row for row.

Records are written by confluent-kafka's ProtobufSerializer into a real registry (Apicurio): a
schema across two files (an import), nested messages, maps, repeated fields, a oneof, enums,
Timestamp and wrappers; the message is the file's second (index array ``[1]``, 7 framing bytes).
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pyconsumer.testing import ApicurioRegistry, KafkaCluster, produce_protobuf
from pyconsumer.values.formats import FORMATS
from tests.protodata import MESSAGE, PROTOS, orders, spark_row

pytest.importorskip("grpc_tools")
pytest.importorskip("confluent_kafka.schema_registry.protobuf")

pytestmark = [pytest.mark.spark, pytest.mark.kafka]

if "protobuf" not in FORMATS:
    pytest.skip("the protobuf value format is not registered (pyconsumer.values.formats)",
                allow_module_level=True)

FRAMING = 7                   # magic, 4-byte id, index array [1] (0x02 0x02)
MAPS = ("counts", "prices")


@pytest.fixture(scope="module")
def with_spark_protobuf(spark: Any) -> Any:
    """The shared session with spark-protobuf added (ADD JAR: the session is already up)."""
    from pyconsumer.testing import spark_protobuf_jar
    try:
        jar = spark_protobuf_jar()
    except Exception as exc:
        # not a CI failure: Maven Central as reached from this project's machines serves no
        # spark-protobuf at all, so the comparison runs only where it does
        pytest.skip(f"spark-protobuf (from_protobuf) is not available: {exc}")
    spark.sql(f"ADD JAR '{jar}'")
    return spark


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    from pyconsumer.testing import compile_protos, message_classes
    path = tmp_path_factory.mktemp("proto") / "shop.desc"
    return message_classes(compile_protos(PROTOS, out=path)), path


def _topic(kafka: KafkaCluster, make_kafka_topic: Callable[..., str], registry: ApicurioRegistry,
           classes: dict[str, Any]) -> tuple[str, int]:
    """2 partitions: 70 and 50 keyed Orders, a tombstone in partition 1; the record count."""
    topic = make_kafka_topic(2)
    produce_protobuf(kafka.bootstrap, topic, orders(classes, 70), registry.url, partition=0,
                     keys=[b"a%d" % i for i in range(70)])
    produce_protobuf(kafka.bootstrap, topic, [*orders(classes, 50, start=70), None], registry.url,
                     partition=1, keys=[b"b%d" % i for i in range(51)], message_type=classes[MESSAGE])
    return topic, 121


#: where the source takes the schema and the message: the registry and the records' message
#: indexes (refused when the schema has several messages: the types are fixed before any record
#: is read), the registry and a named message, a descriptor set file and a named message
SCHEMA_SOURCES = ("registry", "registry, message named", "descriptor file")


def _schema_options(source: str, apicurio: ApicurioRegistry, desc: Path) -> dict[str, str]:
    if source == "registry":
        return {"schema.registry.url": apicurio.url}
    if source == "registry, message named":
        return {"schema.registry.url": apicurio.url, "valueProtobufMessage": MESSAGE}
    return {"valueProtobufMessage": MESSAGE, "valueProtobufDescriptorFile": str(desc)}


def _ours(spark: Any, kafka: KafkaCluster, topic: str, **options: str) -> Any:
    reader = (spark.read.format("pyconsumer").option("kafka.bootstrap.servers", kafka.bootstrap)
              .option("subscribe", topic).option("valueFormat", "protobuf"))
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load()


def _sparks(spark: Any, kafka: KafkaCluster, topic: str) -> Any:
    return (spark.read.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap)
            .option("subscribe", topic).option("startingOffsets", "earliest").load())


def _rows(df: Any) -> list[dict[str, Any]]:
    out = df.orderBy("partition", "offset").toArrow().to_pylist()
    for row in out:
        value = row["value"]
        if isinstance(value, dict):
            row["value"] = {k: sorted(v) if k in MAPS and v is not None else v for k, v in value.items()}
    return out


@pytest.mark.usefixtures("with_spark_protobuf")
def test_protobuf_equals_spark_from_protobuf_on_the_same_topic(
        spark_kafka: Any, kafka: KafkaCluster, make_kafka_topic: Callable[..., str],
        apicurio: ApicurioRegistry, shop: tuple[dict[str, Any], Path]) -> None:
    from pyspark.sql import functions as F
    from pyspark.sql.protobuf.functions import from_protobuf

    classes, desc = shop
    topic, count = _topic(kafka, make_kafka_topic, apicurio, classes)
    raw = _sparks(spark_kafka, kafka, topic)
    columns = ("key", "value", "topic", "partition", "offset", "timestamp", "timestampType")
    for options in ({}, {"enums.as.ints": "true", "emit.default.values": "true"}):
        body = F.expr(f"substring(value, {FRAMING + 1})")
        theirs = raw.withColumn("value", from_protobuf(body, MESSAGE, str(desc), options)).select(*columns)
        for source in SCHEMA_SOURCES[1:]:
            ours = _ours(spark_kafka, kafka, topic, **_schema_options(source, apicurio, desc), **options)
            # one option moves a query over: the same schema column for column, plus PERMISSIVE's
            # corrupt record column
            assert ours.schema.fieldNames() == [*columns, "_corrupt_record"]
            typed = ours.drop("_corrupt_record")
            assert typed.schema.simpleString() == theirs.schema.simpleString()
            assert [f.dataType for f in typed.schema.fields] == [f.dataType for f in theirs.schema.fields]
            mine, spark_rows = _rows(ours), _rows(theirs)
            assert len(mine) == count
            assert [r.pop("_corrupt_record") for r in mine] == [None] * count
            assert mine == spark_rows


@pytest.mark.parametrize("source", SCHEMA_SOURCES[1:])
def test_protobuf_source_equals_the_runtime_on_sparks_own_read(
        spark_kafka: Any, kafka: KafkaCluster, make_kafka_topic: Callable[..., str],
        apicurio: ApicurioRegistry, shop: tuple[dict[str, Any], Path], source: str) -> None:
    classes, desc = shop
    topic, count = _topic(kafka, make_kafka_topic, apicurio, classes)
    raw = _rows(_sparks(spark_kafka, kafka, topic))
    assert len(raw) == count
    for options, spark_options in (({}, {}),
                                   ({"enums.as.ints": "true", "emit.default.values": "true"},
                                    {"enums_as_ints": True, "emit_default_values": True})):
        expect = []
        for row in raw:
            value = row["value"]
            if value is not None:
                assert value[:FRAMING] == value[:5] + b"\x02\x02"
                value = spark_row(classes[MESSAGE].FromString(value[FRAMING:]), **spark_options)
            expect.append({**row, "value": value})
        mine = _rows(_ours(spark_kafka, kafka, topic, **_schema_options(source, apicurio, desc), **options))
        assert [r.pop("_corrupt_record") for r in mine] == [None] * count
        assert mine == expect


def test_a_registry_schema_of_several_messages_needs_the_message_named(
        spark: Any, kafka: KafkaCluster, make_kafka_topic: Callable[..., str],
        apicurio: ApicurioRegistry, shop: tuple[dict[str, Any], Path]) -> None:
    """The Spark source fixes its types before reading a record: with a registry schema of two
    top-level messages and none named, the query is refused naming the option and the messages."""
    classes, _ = shop
    topic, _ = _topic(kafka, make_kafka_topic, apicurio, classes)
    with pytest.raises(Exception) as err:
        _ours(spark, kafka, topic, **_schema_options("registry", apicurio, Path())).collect()
    assert ("Option 'valueProtobufMessage': valueProtobufMessage is needed: the registry's schema "
            "has the messages Header, Order; name the one the values are") in str(err.value)


def test_protobuf_source_option_errors(spark: Any, kafka: KafkaCluster, kafka_topic: str,
                                       tmp_path: Path, shop: tuple[dict[str, Any], Path]) -> None:
    """A descriptor file that is missing or not a descriptor set, or a message it lacks: an error
    naming the path or the message, before any record is read."""
    missing = tmp_path / "nowhere.desc"
    with pytest.raises(Exception) as err:
        _ours(spark, kafka, kafka_topic, valueProtobufMessage=MESSAGE,
              valueProtobufDescriptorFile=str(missing)).collect()
    assert str(missing) in str(err.value)
    not_a_set = tmp_path / "text.desc"
    not_a_set.write_text("not a descriptor set")
    with pytest.raises(Exception) as err:
        _ours(spark, kafka, kafka_topic, valueProtobufMessage=MESSAGE,
              valueProtobufDescriptorFile=str(not_a_set)).collect()
    assert str(not_a_set) in str(err.value)
    with pytest.raises(Exception) as err:
        _ours(spark, kafka, kafka_topic, valueProtobufMessage="shop.Nope",
              valueProtobufDescriptorFile=str(shop[1])).collect()
    assert "shop.Nope" in str(err.value)
