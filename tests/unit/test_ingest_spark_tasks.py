"""How many Spark tasks a table ingest's round runs its tasks in (ingest.tables._spark_tasks)."""
from __future__ import annotations

from pyconsumer.ingest.tables import SPARK_TASK_OFFSETS, _spark_tasks
from pyconsumer.spark.planning import OffsetRange
from pyconsumer.spark.source import KafkaInputPartition


def tasks(*sizes: int) -> list[KafkaInputPartition]:
    return [KafkaInputPartition(OffsetRange("t", p, 100, 100 + n)) for p, n in enumerate(sizes)]


def test_small_tasks_are_packed_one_spark_task_per_core() -> None:
    assert _spark_tasks(tasks(*[166_000] * 6), None, 2) == 2
    assert _spark_tasks(tasks(*[10] * 3), None, 8) == 3           # never more than the tasks
    assert _spark_tasks(tasks(5), None, 0) == 1


def test_large_tasks_keep_one_spark_task_each_for_sparks_balancing() -> None:
    big = SPARK_TASK_OFFSETS
    assert _spark_tasks(tasks(*[big] * 6), None, 2) == 6
    # in between: Spark tasks of about SPARK_TASK_OFFSETS offsets, at least one per core
    assert _spark_tasks(tasks(*[big // 2] * 12), None, 2) == 6


def test_min_partitions_asks_for_one_spark_task_each() -> None:
    assert _spark_tasks(tasks(*[10] * 6), 6, 2) == 6
