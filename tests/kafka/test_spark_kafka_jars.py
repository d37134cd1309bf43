"""spark_kafka_jars(): Spark's own Kafka connector fetched from Maven Central and loadable."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pyconsumer.testing import KafkaCluster, TestRecord, produce, spark_kafka_jars, spark_kafka_version

pytestmark = [pytest.mark.kafka, pytest.mark.spark]


def test_the_jars_are_the_connector_and_what_pyspark_lacks() -> None:
    names = sorted(Path(jar).name.rsplit("-", 1)[0] for jar in spark_kafka_jars())
    assert names == ["commons-pool2", "kafka-clients", "spark-sql-kafka-0-10_2.13",
                     "spark-token-provider-kafka-0-10_2.13"]
    assert all(Path(jar).is_file() for jar in spark_kafka_jars())
    version = spark_kafka_version()
    assert any(Path(jar).name == f"spark-sql-kafka-0-10_2.13-{version}.jar" for jar in spark_kafka_jars())


def test_a_refused_version_names_each_version_tried(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    monkeypatch.setenv("PYCONSUMER_CACHE", str(tmp_path))
    monkeypatch.setenv("PYCONSUMER_SPARK_KAFKA_VERSION", "0.0.1-none")
    from pyconsumer.testing import BrokerStartError
    with pytest.raises(BrokerStartError, match=r"no spark-sql-kafka-0-10_2.13 connector could be "
                                               r"fetched: 0\.0\.1-none: "):
        spark_kafka_jars()
    assert (tmp_path / "spark-kafka-0.0.1-none" / "refused").is_file()     # not asked again today
    with pytest.raises(BrokerStartError, match="refused spark-sql-kafka-0-10_2.13 0.0.1-none earlier"):
        spark_kafka_jars()


def test_format_kafka_reads_from_the_session(spark_kafka: Any, kafka: KafkaCluster) -> None:
    topic = kafka.create_topic(f"jars-{id(spark_kafka)}", 2)
    produce(kafka.bootstrap_servers, topic,
            [TestRecord(key=b"k%d" % i, value=b"v%d" % i, partition=i % 2, timestamp_ms=1_700_000_000_000 + i)
             for i in range(6)])
    rows = (spark_kafka.read.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap_servers)
            .option("subscribe", topic).load().orderBy("partition", "offset")
            .select("partition", "offset", "key", "value").collect())
    assert [tuple(r) for r in rows] == [(0, 0, b"k0", b"v0"), (0, 1, b"k2", b"v2"), (0, 2, b"k4", b"v4"),
                                        (1, 0, b"k1", b"v1"), (1, 1, b"k3", b"v3"), (1, 2, b"k5", b"v5")]
