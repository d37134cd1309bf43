"""pyconsumer's PySpark data source: Spark's Kafka source options and schema, read into Arrow.

```python
from pyconsumer.spark import register
register(spark)                                   # once per SparkSession
df = (spark.read.format("pyconsumer")             # was: format("kafka")
      .option("kafka.bootstrap.servers", "host:9092").option("subscribe", "orders").load())
```

Needs the ``spark`` extra (PySpark 4.x, Java 17). The option parsing and planning modules
import without PySpark; :class:`KafkaDataSource` and :func:`register` load it on first use.
"""
from __future__ import annotations

from typing import Any

from pyconsumer.spark.session import SPARK_MISSING

__all__ = ["KafkaDataSource", "kafka_schema", "register"]


def __getattr__(name: str) -> Any:
    if name in ("KafkaDataSource", "kafka_schema", "KafkaInputPartition"):
        try:
            from pyconsumer.spark import source
        except ImportError as exc:
            if exc.name is not None and exc.name.split(".")[0] == "pyspark":
                raise ImportError(SPARK_MISSING) from exc
            raise
        return getattr(source, name)
    raise AttributeError(f"module 'pyconsumer.spark' has no attribute {name!r}")


def register(spark: Any) -> None:
    """Register the ``pyconsumer`` format with ``spark`` (a SparkSession)."""
    from pyconsumer.spark.source import KafkaDataSource

    spark.dataSource.register(KafkaDataSource)
