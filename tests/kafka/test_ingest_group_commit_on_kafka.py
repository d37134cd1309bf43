"""``-o commitOffsetsToKafka=true`` on a table ingest: after each table commit the offsets the
table holds are committed to ``kafka.group.id`` on Apache Kafka, so lag tools (and any Kafka
consumer asking the group) see the job's progress; the table stays what a rerun resumes from."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pyconsumer import KafkaConsumer, TopicPartition
from pyconsumer.cli import main
from pyconsumer.testing import KafkaCluster, produce, sample_records

pytestmark = [pytest.mark.kafka, pytest.mark.spark]

deltalake = pytest.importorskip("deltalake")


def _committed(kafka: KafkaCluster, group: str, topic: str, partitions: int) -> dict[int, int | None]:
    with KafkaConsumer(bootstrap_servers=kafka.bootstrap_servers, group_id=group) as c:
        got = c.committed([TopicPartition(topic, p) for p in range(partitions)])
    return {tp.partition: (None if om is None else om.offset) for tp, om in got.items()}


def test_the_tables_offsets_are_committed_to_the_group_after_each_commit(
        spark: Any, kafka: KafkaCluster, make_kafka_topic: Callable[..., str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    topic = make_kafka_topic(2)
    group = f"lag-{topic}"
    produce(kafka.bootstrap_servers, topic, sample_records(60, partitions=2, seed=81))
    table = str(tmp_path / "events")
    args = ["ingest", "-b", kafka.bootstrap_servers, "-t", topic, "--output", table,
            "--table-format", "delta", "-o", "commitOffsetsToKafka=true",
            "-o", f"kafka.group.id={group}"]
    assert _committed(kafka, group, topic, 2) == {0: None, 1: None}

    # the first run stops partition 0 at 10: the group gets exactly what the table holds
    code = main([*args, "--ending-offsets", '{"%s": {"0": 10, "1": -1}}' % topic])
    err = capsys.readouterr().err
    assert code == 0, err
    assert _committed(kafka, group, topic, 2) == {0: 10, 1: 30}

    produce(kafka.bootstrap_servers, topic, sample_records(20, partitions=2, seed=82))
    code = main(args)
    err = capsys.readouterr().err
    assert code == 0, err
    assert _committed(kafka, group, topic, 2) == {0: 40, 1: 40}
    table_offsets = deltalake.DeltaTable(table)
    assert {p: table_offsets.transaction_version(f"pyconsumer-{topic}-{p}") for p in (0, 1)} == {0: 40, 1: 40}

    # without the option nothing goes to the group
    other = f"none-{topic}"
    code = main(["ingest", "-b", kafka.bootstrap_servers, "-t", topic, "--output",
                 str(tmp_path / "other"), "--table-format", "delta", "-o", f"kafka.group.id={other}"])
    assert code == 0, capsys.readouterr().err
    assert _committed(kafka, other, topic, 2) == {0: None, 1: None}


def test_commit_offsets_to_kafka_without_a_group_is_refused_before_spark(
        kafka: KafkaCluster, make_kafka_topic: Callable[..., str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    topic = make_kafka_topic(1)
    code = main(["ingest", "-b", kafka.bootstrap_servers, "-t", topic, "--output",
                 str(tmp_path / "t"), "--table-format", "delta", "-o", "commitOffsetsToKafka=true"])
    err = capsys.readouterr().err
    assert code != 0
    assert "kafka.group.id" in err and "Traceback" not in err
    assert not (tmp_path / "t").exists()
